"""Shortest remaining service first (SRSF), the preemptive oracle Tiresias (Gu et al., NSDI'19, §5) measures
itself against: a job's remaining service is its remaining solo run time times the GPUs it asks for.

At every decision point the policy computes the set of jobs that should run, walking all jobs in the system
(pending and running) by remaining service and taking each that fits in the cluster's remaining GPU count, and
moves the cluster toward it: it starts waiting jobs inside the set and preempts running jobs outside it (each
pays the scenario's restart overhead on its next start). A job that has run less than ``min_run_s`` since it
last started is not preempted (the environment's run quantum, ``GPUClusterEnv(min_run_s=...)``, default 600 s,
so every action of this policy is one an agent in the default environment can take). Exclusive GPUs; oracle
durations, as SJF's.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import numpy as np

from gpucluster_env.engine import Action, Place, Preempt, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy, register_policy
from gpucluster_env.policy_options import NON_NEGATIVE


@register_policy
class SRSF(Policy):
    """Preemptive shortest-remaining-GPU-service first with a minimum run quantum, exclusive GPUs."""

    name: ClassVar[str] = "srsf"
    description: ClassVar[str] = (
        "Shortest remaining GPU-service first (oracle durations), preemptive after a 600 s run quantum, "
        "exclusive"
    )
    paper: ClassVar[str] = "Tiresias (NSDI'19) §5 oracle baseline"

    def __init__(self, min_run_s: Annotated[float, NON_NEGATIVE] = 600.0) -> None:
        """``min_run_s``: a running job is not preempted before it has run this long since its last start."""
        self.min_run_s = float(min_run_s)

    def remaining_service(self, view: ClusterView, jobs: list[int]) -> dict[int, float]:
        """Each of ``jobs``' remaining solo run time (fastest type) times the GPUs it asks for, in GPU-seconds (read
        for the jobs in the system only: the work grows with them, not with the trace)."""
        idx = np.asarray(jobs, dtype=np.int64)
        return dict(zip(jobs, (view.remaining_solo_time(idx) * view.req_gpus[idx]).tolist(), strict=True))

    def act(self, observation: Any, env: Any) -> Action:
        view = self.view(env)
        pending = view.pending_jobs().tolist()
        if not pending:
            return Wait()
        running = [int(j) for j in view.running_jobs()]
        pinned = [j for j in running if view.now - view.last_start(j) < self.min_run_s]
        service = self.remaining_service(view, pending + running)
        req = view.req_gpus
        cap = view.num_gpus - sum(int(req[j]) for j in pinned)
        desired = set(pinned)
        movable = sorted((j for j in pending + running if j not in desired), key=lambda j: (service[j], j))
        for j in movable:
            if req[j] <= cap:
                desired.add(j)
                cap -= int(req[j])
        to_start = [j for j in movable if j in desired and view.is_pending(j)]
        if not to_start:
            return Wait()
        for j in to_start:
            if view.plan_place(j) is not None:
                return Place(j)
        victims = [j for j in movable if j not in desired and view.is_running(j)]
        if victims:
            return Preempt(victims[-1])  # the most remaining service first
        return Wait()
