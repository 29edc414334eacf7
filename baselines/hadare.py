"""HadarE (Sultana et al., hadar-hadare §V): Hadar (:mod:`gpucluster_env.baselines.hadar`) with forking.

HadarE adds forking (§V): after Hadar's starts at a round boundary, free nodes take extra copies of running
jobs (``Fork``; the engine splits each round's steps among the copies by their throughput, charges a new copy
its start-up and every round the consolidation overhead), the job with the most time left first, a copy on
nodes its other copies do not use, any GPU type. While jobs wait, a round begins by dropping the extra copies
(``DropCopy``) so the waiting jobs compete for those nodes.
"""

from __future__ import annotations

from typing import Any, ClassVar

from gpucluster_env.baselines.hadar import Hadar

from gpucluster_env.engine import Action, DropCopy, Fork, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import register_policy


@register_policy
class HadarE(Hadar):
    """HadarE: Hadar plus forking running jobs onto otherwise idle nodes each round."""

    name: ClassVar[str] = "hadare"
    description: ClassVar[str] = (
        "HadarE: Hadar, then copies of running jobs forked onto idle nodes every round (any GPU type), progress "
        "added up with a consolidation overhead per round; throughputs estimated from GPU specs until measured"
    )
    paper: ClassVar[str] = "HadarE (hadar-hadare §V)"
    default_estimate: ClassVar[str] = "spec"
    forks: ClassVar[bool] = True

    @classmethod
    def applies_to(cls, scenario: Any) -> bool:
        """Forking needs a round-based scenario."""
        return scenario.config.round_s is not None

    @classmethod
    def not_applicable_because(cls, scenario: Any) -> str:
        """Why HadarE cannot run on ``scenario``."""
        return "forks jobs every round: needs a round-based scenario (round_s), this one is event-driven"

    def reset(self, env: Any) -> None:
        super().reset(env)
        self._dropped_at: float | None = None

    def act(self, observation: Any, env: Any) -> Action | int | list[Action]:
        view = self.view(env)
        now = view.now
        if self._acted_at != now and self._dropped_at != now and now >= self._next_round - 1e-9:
            self._observe(view)
            self._dropped_at = now
            drops = self._drops(view)
            if drops:
                return drops
        return super().act(observation, env)

    def _drops(self, view: ClusterView) -> list[Action]:
        """At a round boundary with jobs waiting, every extra copy is dropped first (``DropCopy``), so the
        round's allocation sees all jobs, copies of the running ones included, on an equal footing; idle nodes
        get copies again after it."""
        if view.num_pending == 0:
            return []
        out: list[Action] = []
        for j in view.running_jobs().tolist():
            n = len(view.copies_of(j))
            out.extend(DropCopy(j, i) for i in range(n - 1, 0, -1))
        return out

    def _after_starts(self, view: ClusterView) -> Action:
        run = view.running_jobs().tolist()
        if not run or view.num_free() == 0:
            return Wait()
        rem = view.remaining_now()
        tput = {j: self.tputs.of(j).max() for j in run}
        for j in sorted(run, key=lambda j: (-(rem[j] / tput[j]) if tput[j] > 0 else 0.0, j)):
            g = view.plan_fork(j)
            if g is not None:
                return Fork(j, gpus=tuple(int(x) for x in g))
        return Wait()
