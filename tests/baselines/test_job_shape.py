"""The start shape (baselines/parts/job_shape.py): Lucid, Gandiva and Gavel+Gimbal skip a queued job whose shape already
found nothing in the same state, which is exact only if every start question reads nothing else of the job; and the
least-utilized host they ask (gimbal_rules.least_utilized_host) walks hosts by demand to the same answer as a scan."""

from __future__ import annotations

from typing import Any

from gpucluster_env.baselines.gandiva_gimbal import GandivaGimbal
from gpucluster_env.baselines.parts.gimbal_rules import _scan, least_utilized_host
from gpucluster_env.baselines.parts.job_shape import start_shape

from gpucluster_env.policy import run_episode


class _Checked(GandivaGimbal):
    """Gandiva+Gimbal that, at its first 30 decisions where two pending jobs share a shape, asks every pending
    job where it would start (free GPUs under the rule, and the least-utilized host) and records the answers by
    shape."""

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.answers: list[dict[tuple[int, int, int], set[Any]]] = []
        self.shared = 0  # (state, shape) pairs with several pending jobs

    def act(self, observation: Any, env: Any) -> Any:
        view = self.view(env)
        shapes = [start_shape(view, j) for j in view.pending_jobs().tolist()]
        if len(self.answers) < 30 and len(set(shapes)) < len(shapes):
            by_shape: dict[tuple[int, int, int], set[Any]] = {}
            for j in view.pending_jobs().tolist():
                g = view.plan_place(j)
                place = None if g is None or not self.host.rule.allows(j, g) else tuple(g.tolist())
                a = self.host.pack(view, j)
                host = None if a is None else (a.partner, a.gpus)
                by_shape.setdefault(start_shape(view, j), set()).add((place, host))
            self.answers.append(by_shape)
            self.shared += sum(shapes.count(s) > 1 for s in set(shapes))
        return super().act(observation, env)


def test_jobs_of_one_shape_get_one_answer() -> None:
    pol = _Checked()
    run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": 400})
    groups = [ans for state in pol.answers for shape, ans in state.items()]
    assert len(pol.answers) == 30 and pol.shared >= 30
    assert all(len(ans) == 1 for ans in groups)  # one answer per shape and state
    # the check saw shapes shared by several jobs that found hosts or GPUs, and some that found nothing
    found = [next(iter(a)) for a in groups]
    assert any(p is not None or h is not None for p, h in found)
    assert any(p is None and h is None for p, h in found)


class _Walked(GandivaGimbal):
    """Gandiva+Gimbal that asks, at each decision, every pending job's least-utilized host both ways: the
    ordered walk of :func:`least_utilized_host` and a scan of every running job in running order."""

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.asked = self.found = 0

    def act(self, observation: Any, env: Any) -> Any:
        view = self.view(env)
        host = self.host
        run = view.running_jobs()
        for j in view.pending_jobs().tolist()[:8]:
            for unequal in (True, False):
                demand = lambda p, t: host.facts.demand(view, p, t)  # noqa: E731
                got = least_utilized_host(view, host.rule, j, unequal, demand)
                ref = _scan(view, host.rule, j, unequal, demand, run, list(range(len(run))))
                assert (got is None) == (ref is None)
                if ref is not None:
                    assert (got.partner, got.gpus) == (int(run[ref[1]]), tuple(int(x) for x in ref[2]))
                self.asked += 1
                self.found += ref is not None
        return super().act(observation, env)


def test_least_utilized_host_walk_matches_a_scan_in_running_order() -> None:
    pol = _Walked()
    run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": 150})
    assert pol.asked > 500 and 50 < pol.found < pol.asked
