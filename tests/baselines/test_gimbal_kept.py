"""What Gimbal's coordinator and Gavel+Gimbal's leftover packing keep or shortcut (baselines/parts/
gimbal_throughput.py: rates kept from tick to tick, departure times over Python floats; gavel_gimbal.py: the leftover
queue filtered over arrays before job_shape.py's walk) gives, at every decision of a real run, the answers of the
plain computations."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from gpucluster_env.baselines.gavel_gimbal import GavelGimbal
from gpucluster_env.baselines.parts.gimbal_hosts import fitting_hosts
from gpucluster_env.baselines.parts.gimbal_rules import packing_sets, partner_gpus
from gpucluster_env.baselines.parts.gimbal_search import local_objective
from gpucluster_env.baselines.parts.gimbal_throughput import ThroughputModel, departure_times

from gpucluster_env.engine import Colocate, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import run_episode
from tests.baselines.test_decision_memory import _plain_times, plain_walk


def array_departure_times(rem: np.ndarray, rates: list[float], jobs: tuple[int, ...],
                          rate_after: Callable[[int, frozenset[int]], float], partners: list[set[int]]) -> np.ndarray:
    """Oracle: the departure walk over numpy arrays (the form the coordinator used before its float walk)."""
    out = np.zeros(len(jobs))
    left = list(range(len(jobs)))
    gone: frozenset[int] = frozenset()
    rate = dict(enumerate(rates))
    t = 0.0
    with np.errstate(all="ignore"):
        while left:
            r = np.array([rate[i] for i in left])
            dt = rem[left] / r
            k = int(np.argmin(dt))
            step = float(dt[k])
            t += step
            rem[left] -= r * step
            i = left.pop(k)
            out[i] = t
            gone = gone | {jobs[i]}
            for o in left:
                if jobs[i] in partners[o]:
                    rate[o] = rate_after(o, gone)
    return out


def test_departure_times_over_floats_are_the_array_form() -> None:
    rng = np.random.default_rng(7)
    odd = [0.0, -0.0, math.inf, math.nan]
    for case in range(400):
        n = int(rng.integers(1, 6))
        rem = rng.uniform(0, 1e5, n).tolist()
        if case % 5 == 0:  # ties: equal work at equal rates
            rem = [rem[0]] * n
        if case % 7 == 0:  # no work left
            rem[0] = 0.0
        rates = rng.uniform(0.01, 5.0, n).tolist() if case % 5 else [1.5] * n
        if case % 3 == 0:  # zero, infinite and NaN rates: numpy's division rules
            rates[int(rng.integers(n))] = odd[case % 4]
        partners = [{0} if i else set(range(1, n)) for i in range(n)]  # J_max (0) shares with every other
        after = {(o, g): float(rng.uniform(0.01, 5.0)) if (o + g + case) % 6 else odd[(o + g) % 4]
                 for o in range(n) for g in range(n)}

        def rate_after(o: int, gone: frozenset[int], after: dict[tuple[int, int], float] = after) -> float:
            return after[(o, min(gone))]

        got = departure_times(list(rem), rates, tuple(range(n)), rate_after, partners)
        want = array_departure_times(np.array(rem), rates, tuple(range(n)), rate_after, partners)
        assert np.array_equal(np.array(got), want, equal_nan=True), case


def test_largest_lateness_over_floats_is_the_array_form() -> None:
    rng = np.random.default_rng(11)
    odd = [0.0, -0.0, math.inf, -math.inf, math.nan]
    for case in range(600):
        n = int(rng.integers(1, 10))
        times = rng.uniform(0, 1e5, n).tolist()
        slack = rng.uniform(-1e5, 1e5, n).tolist()
        if case % 2:  # no deadline (NaN), none set (infinite), zero, NaN and infinite times
            slack[int(rng.integers(n))] = odd[case % 5]
        if case % 3 == 0:
            times[int(rng.integers(n))] = odd[(case // 3) % 5]
        if case % 4 == 0:  # ties: every job exactly on time
            slack = list(times)
        want = float(np.maximum(0.0, np.array(times) - np.nan_to_num(np.array(slack), nan=math.inf)).max())
        got = local_objective("deadline", times, slack)
        assert got == want or (math.isnan(got) and math.isnan(want)), case
        assert local_objective("deadline", np.array(times), np.array(slack)) == got or math.isnan(got), case


def plain_least_utilized_host(view: ClusterView, rule: Any, unequal: bool, j: int) -> Colocate | None:
    """Oracle: least_utilized_host as a scan of every running job (partner_gpus asked afresh, fits_on on every GPU
    offered, the least profiled demand, ties: the lowest index), the form it had before the kept order."""
    best: tuple[float, int, np.ndarray] | None = None
    hosts = [(p, g) for p in view.running_jobs().tolist() if (g := partner_gpus(view, rule, j, p, unequal)) is not None]
    for p, g in fitting_hosts(view, j, hosts):
        u = view.demand(p, int(view.gpu_type[g[0]]))
        if best is None or u < best[0]:
            best = (u, p, g)
    return None if best is None else Colocate(j, best[1], accumulation=1, gpus=tuple(int(x) for x in best[2]))


class _Checked(GavelGimbal):
    """Gavel+Gimbal that, at every search step, compares the coordinator's kept rates and remaining times on every
    packing set with a fresh model's, and at every leftover packing compares its walk with the plain one."""

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.rates_checked = self.walks_checked = self.packed = self.memo_checked = 0
        host = self.host
        follow = host._follow_up

        def checked_follow_up(view: Any) -> Any:
            want = None
            if not host._starts and len(host._queue):
                order = [j for j in host._queue.tolist() if view.is_pending(j)]
                want = plain_walk(view, order, lambda v, j: plain_least_utilized_host(v, host.rule, host.unequal, j))
            got = follow(view)
            if want is not None:
                assert got == want
                self.walks_checked += 1
                self.packed += not isinstance(got, Wait)
            return got

        host._follow_up = checked_follow_up

    def act(self, observation: Any, env: Any) -> Any:
        view = self.view(env)
        coord = self.coordinator
        if view.now >= self._next_tick and coord is not None and coord.model is not None:
            fresh = ThroughputModel(view, coord.demand)
            with coord.model.held():
                for s in packing_sets(view):
                    kept = [coord.model.rate(j, coord.shares) for j in s.jobs]
                    assert kept == [fresh.rate(j, coord.shares) for j in s.jobs]
                    times = coord.model.remaining_times(s.jobs, coord.shares)
                    assert np.array_equal(times, _plain_times(fresh, s.jobs, coord.shares))
                    self.rates_checked += len(s.jobs)
                    # a search's kept rates at its best point, while the members' inputs stay: those of a fresh model
                    st = coord.searches.get(s.jmax)
                    if st is not None and st.members == s.jobs and st.best_rates[0] == coord.model.inputs(s.jobs):
                        for (j, gone), r in st.best_rates[1].items():
                            assert r == fresh.rate(j, st.best_shares, gone)
                            self.memo_checked += 1
        return super().act(observation, env)


def test_gavel_gimbal_kept_rates_and_packing_walk_match_plain_ones() -> None:
    pol = _Checked()
    run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": 200})
    assert pol.rates_checked > 200 and pol.walks_checked > 100 and pol.packed > 30 and pol.memo_checked > 50, \
        (pol.rates_checked, pol.walks_checked, pol.packed, pol.memo_checked)


def test_gavel_gimbal_packing_on_mixed_gpu_types_matches_the_plain_scan() -> None:
    """The kept order of hosts by demand (gimbal_hosts.HostsByDemand) on three GPU types, where a host's demand
    depends on the type of the GPUs it offers."""
    pol = _Checked()
    run_episode("hadar-philly", pol, 0, scenario_options={"num_jobs": 120})
    assert pol.walks_checked > 100 and pol.packed > 100
