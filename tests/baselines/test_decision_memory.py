"""What the packing schedulers keep from one decision to the next (baselines/parts/job_shape.py FailedShapes,
gimbal_rules.py PartnerCache, packing_sets and KeptSets, gimbal_throughput.py ThroughputModel.held,
packing_walk.py HostRows' tables and partners and FreeStarts, gimbal_search.py's ended searches passed over)
gives, at every decision of real runs, the answers of the plain per-question computations they replace."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpucluster_env.baselines.gandiva import Gandiva
from gpucluster_env.baselines.gandiva_gimbal import GandivaGimbal
from gpucluster_env.baselines.lucid_gimbal import LucidGimbal
from gpucluster_env.baselines.parts.gimbal_rules import JobSet, KeptSets, packing_sets, partner_gpus
from gpucluster_env.baselines.parts.gimbal_throughput import ThroughputModel
from gpucluster_env.baselines.parts.job_shape import start_shape
from gpucluster_env.baselines.parts.packing_walk import HostRows, free_start

from gpucluster_env.engine import Action, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import run_episode


def plain_walk(view: ClusterView, order: list[int], start: Any) -> Action:
    """The queue walk without memory: each job in order, a shape that found nothing in this walk skipped."""
    failed: set[tuple[int, int, int]] = set()
    for j in order:
        if start_shape(view, j) in failed:
            continue
        a = start(view, j)
        if a is not None:
            return a
        failed.add(start_shape(view, j))
    return Wait()


def plain_sets(view: ClusterView) -> list[JobSet]:
    """Packing sets by walking each running job's partners."""
    seen: set[int] = set()
    out = []
    for j in view.running_jobs().tolist():
        if j in seen or not view.partners_of(j):
            continue
        comp, stack = {j}, [j]
        while stack:
            for p in view.partners_of(stack.pop()):
                if p not in comp:
                    comp.add(p)
                    stack.append(p)
        seen |= comp
        jmax = min(comp, key=lambda x: (-int(view.req_gpus[x]), x))
        out.append(JobSet(jmax, tuple(sorted(comp - {jmax}))))
    return sorted(out, key=lambda s: s.jmax)


def check_kept(host: Any, counts: dict[str, int]) -> None:
    """Make packing ``host`` (Lucid or Gandiva, after its reset) compare, at every walk, its partners worked out
    over kept tables and kept answers with those of a fresh :class:`HostRows` (nothing kept), and every kept
    free start with :func:`free_start` asked afresh (counted in ``counts``)."""
    prepare, kept_start = host._prepare, host.free.start

    def checked_prepare(view: ClusterView, jobs: np.ndarray) -> None:
        prepare(view, jobs)
        got = host._partner
        rows, host.rows = host.rows, HostRows(view, host.hosts)
        try:
            prepare(view, jobs)
        finally:
            host.rows = rows
        assert host._partner == got
        host._partner = got
        counts["partners"] = counts.get("partners", 0) + len(jobs)

    def checked_start(state: Any, j: int, code: int) -> Any:
        got = kept_start(state, j, code)
        assert got == free_start(host.free.view, host.rule, j)
        counts["free"] = counts.get("free", 0) + 1
        return got

    host._prepare, host.free.start = checked_prepare, checked_start


def check_ticks(coord: Any, counts: dict[str, int]) -> None:
    """Make Gimbal's coordinator check after every tick what lets the next one pass over sets: every packing set
    it holds as ended has an ended search started for its very members, and no search is kept for a set gone."""
    tick = coord.tick

    def checked_tick(view: ClusterView) -> list[Action]:
        acts = tick(view)
        sets = packing_sets(view)
        assert coord._ticked == sets and set(coord.searches) <= {s.jmax for s in sets}
        assert set(coord._ended) <= {id(s) for s in coord._ticked}
        for s in coord._ticked:
            if id(s) in coord._ended:
                st = coord.searches[s.jmax]
                assert st.done and st.members == s.jobs
                counts["passed"] = counts.get("passed", 0) + 1
        return acts

    coord.tick = checked_tick


class _Compared:
    """Counts of the decisions a checked policy compared with the plain walk, and of those that started a job."""

    compared = 0
    started = 0

    def check(self, got: Any, want: Any) -> Any:
        """``got``, once it is ``want`` (counted)."""
        assert got == want
        self.compared += 1
        self.started += not isinstance(got, Wait)
        return got


class _CheckedLucid(_Compared, LucidGimbal):
    """Lucid+Gimbal that, before each host decision, works it out by the plain walk and compares (and checks its
    kept partners, free starts and ticks: :func:`check_kept`, :func:`check_ticks`)."""

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.counts: dict[str, int] = {}
        check_kept(self.host, self.counts)
        check_ticks(self.coordinator, self.counts)

    def act(self, observation: Any, env: Any) -> Any:
        view = self.view(env)
        if view.now < self._next_tick and view.num_pending:
            want = plain_walk(view, self.host.order(view)[0].tolist(), self.host.start)
            return self.check(super().act(observation, env), want)
        return super().act(observation, env)


class _CheckedGandivaWalk(_Compared, Gandiva):
    """Gandiva that, before each decision, works it out by the plain walk over ``start`` and compares (its walk
    answers the same questions over arrays, baselines/parts/packing_walk.py; its kept partners and free starts:
    :func:`check_kept`)."""

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.counts: dict[str, int] = {}
        check_kept(self, self.counts)

    def act(self, observation: Any, env: Any) -> Any:
        view = self.view(env)
        if view.now < self._next_check and view.num_pending:
            want = plain_walk(view, self.order(view).tolist(), self.start)
            return self.check(super().act(observation, env), want)
        return super().act(observation, env)


class _CheckedGandiva(GandivaGimbal):
    """Gandiva+Gimbal that checks its partner answers against partner_gpus, its packing sets against the
    partners walk, and its coordinator's rates inside a tick against rates asked afresh."""

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.hosts_checked = 0
        self.sets_checked = 0
        self.decisions_seen = 0
        self.sparse: KeptSets | None = None
        self.rates_checked = 0
        self.counts: dict[str, int] = {}
        check_kept(self.host, self.counts)
        check_ticks(self.coordinator, self.counts)

    def act(self, observation: Any, env: Any) -> Any:
        view = self.view(env)
        host = self.host
        host.hosts.sync()
        run = view.running_jobs()
        for j in view.pending_jobs()[:3].tolist():
            want = [(p, g) for p in run.tolist()
                    if (g := partner_gpus(view, host.rule, j, p, host.unequal)) is not None]
            got = host.hosts.hosts(j, run)
            assert [p for p, _ in got] == [p for p, _ in want]
            assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(got, want, strict=True))
            self.hosts_checked += len(want)
        sets = packing_sets(view)
        assert sets == plain_sets(view)
        self.sets_checked += len(sets)
        self.decisions_seen += 1
        if self.sparse is None or self.sparse.view is not view:
            self.sparse = KeptSets(view)
        for kept, every in ((self.host.sets, 1), (self.sparse, 7)):  # read at every decision, or a few
            if self.decisions_seen % every == 0:
                assert kept.now() == sets
        coord = self.coordinator
        if coord is not None and coord.model is not None and sets:
            fresh = ThroughputModel(view, coord.demand)
            jobs = sets[0].jobs
            with coord.model.held():
                for _ in range(2):  # the second round reads what the first kept
                    held = [coord.model.rate(j, coord.shares) for j in jobs]
                    times = coord.model.remaining_times(jobs, coord.shares)
            assert held == [fresh.rate(j, coord.shares) for j in jobs]
            assert np.array_equal(times, _plain_times(fresh, jobs, coord.shares))
            self.rates_checked += len(jobs)
        return super().act(observation, env)


def _plain_times(model: ThroughputModel, jobs: tuple[int, ...], shares: dict[tuple[int, int], int]) -> np.ndarray:
    """Remaining times with every rate asked again after each departure."""
    rem = model.view.remaining_now()[list(jobs)].astype(float)
    out = np.zeros(len(jobs))
    left = list(range(len(jobs)))
    gone: frozenset[int] = frozenset()
    t = 0.0
    while left:
        r = np.array([model.rate(jobs[i], shares, gone) for i in left])
        dt = rem[left] / r
        k = int(np.argmin(dt))
        t += float(dt[k])
        rem[left] -= r * float(dt[k])
        i = left.pop(k)
        out[i] = t
        gone = gone | {jobs[i]}
    return out


def test_lucid_walk_with_memory_is_the_plain_walk() -> None:
    pol = _CheckedLucid()
    run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": 250})
    assert pol.compared > 200 and pol.started > 50
    assert pol.counts["partners"] > 200 and pol.counts["free"] > 200 and pol.counts["passed"] > 10


def test_gandiva_walk_over_arrays_is_the_plain_walk() -> None:
    pol = _CheckedGandivaWalk()
    run_episode("gimbal-philly", pol, 0)  # packs that lose: harmful model pairs skipped
    assert pol.compared > 100 and pol.started > 50 and pol.unpacked > 0
    assert pol.counts["partners"] > 100 and pol.counts["free"] > 100


@pytest.mark.parametrize("jobs", [200])
def test_partner_answers_sets_and_held_rates_match_plain_ones(jobs: int) -> None:
    pol = _CheckedGandiva()
    run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": jobs})
    assert pol.hosts_checked > 100 and pol.sets_checked > 50 and pol.rates_checked > 50
    assert pol.counts["partners"] > 100 and pol.counts["free"] > 100 and pol.counts["passed"] > 10
