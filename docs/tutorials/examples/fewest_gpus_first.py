"""A scheduling policy of your own: start the pending job that asks for the fewest GPUs first.

Run it from this folder (the current folder is on the import path of ``module:Class`` references):

    gpucluster run --scenario tiny --policy fewest_gpus_first:FewestGPUsFirst --seed 0
    gpucluster leaderboard run --scenarios tiny --policies fewest_gpus_first:FewestGPUsFirst,fifo,sjf --seeds 3

or from Python: ``python fewest_gpus_first.py``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from gpucluster_env.engine import Action, Place, Wait
from gpucluster_env.policy import Policy, run_episode


class FewestGPUsFirst(Policy):
    """Fewest GPUs first: at each decision point, start the pending job that asks for the fewest GPUs (ties:
    the one that has waited longest) on free GPUs, exclusively; never preempt, never share a GPU."""

    description: ClassVar[str] = "Fewest GPUs first, exclusive GPUs, non-preemptive (a tutorial policy)"
    kind: ClassVar[str] = "user"

    def act(self, observation: Any, env: Any) -> Action:
        """One action for the current decision point: start a job, or wait for the next event."""
        view = self.view(env)  # the read-only view of the cluster: queue, jobs, free GPUs, placement plans
        free = view.num_free()
        # pending_jobs() is in queue order; a stable sort by GPUs asked keeps that order among equals
        for job in sorted(view.pending_jobs().tolist(), key=lambda j: view.req_gpus[j]):
            if view.req_gpus[job] > free:
                break  # the rest ask for even more GPUs than are free
            gpus = view.plan_place(job)  # the engine's placement rule: fewest nodes first, or None
            if gpus is not None:
                return Place(job, gpus=tuple(gpus.tolist()))
        return Wait()  # nothing fits: let time run to the next arrival or finish


def compare(scenario: str = "tiny", seed: int = 0) -> dict[str, dict[str, Any]]:
    """One episode of each of FewestGPUsFirst, FIFO and SJF on the same job table, by policy name."""
    return {name: run_episode(scenario, policy, seed)
            for name, policy in (("fewest-gpus-first", FewestGPUsFirst()), ("fifo", "fifo"), ("sjf", "sjf"))}


if __name__ == "__main__":
    for name, result in compare().items():
        print(f"{name:18} jobs done {result['jobs_done']}/{result['jobs']}  avg JCT {result['avg_jct_s']:,.0f} s")
