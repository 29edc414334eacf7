"""The start shape (baselines/parts/job_shape.py): Lucid, Gandiva and Gavel+Gimbal skip a queued job whose shape already
found nothing in the same state, which is exact only if every start question reads nothing else of the job."""

from __future__ import annotations

from typing import Any

from gpucluster_env.baselines.gandiva_gimbal import GandivaGimbal
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
