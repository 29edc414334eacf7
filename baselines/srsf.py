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
from gpucluster_env.baselines.parts.fit_set import greedy_fit, move_toward

from gpucluster_env.engine import Action, Wait
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

    def act(self, observation: Any, env: Any) -> Action:
        view = self.view(env)
        pending = view.pending_jobs()
        if not pending.size:
            return Wait()
        running = view.running_jobs()
        req = view.req_gpus
        pinned = view.now - view.last_start_of(running) < self.min_run_s
        movable = np.concatenate([pending, running[~pinned]])
        was_running = np.arange(movable.size) >= pending.size
        service = view.remaining_solo_time(movable) * req[movable]
        order = np.lexsort((movable, service))  # by remaining service, ties by index
        movable, was_running = movable[order], was_running[order]
        desired = greedy_fit(req[movable], view.num_gpus - int(req[running[pinned]].sum()))
        return move_toward(view, movable, was_running, desired)  # the most remaining service preempted first
