"""Tiresias (Gu et al., NSDI'19): discretized two-dimensional least-attained-service scheduling (2D-LAS).

A job's attained service is GPUs x time it has run. Jobs sit in ``len(thresholds) + 1`` priority queues by
attained service (two by default: below / above ``thresholds[0]`` GPU-seconds); within a queue, first come
first served. The default threshold is the one of Pollux's Tiresias (``3600 x 16`` GPU-seconds, artifact
``simulator/tiresias.py``): Castor and SJF-BSBF both say they follow Pollux's settings. At every
decision point the policy computes the set of jobs that should run (walking jobs in
priority order and taking each that fits in the cluster's remaining GPU count) and moves the cluster toward
it: it preempts running jobs outside the set (the engine charges each preempted job ``EngineConfig.restart_s``
when it starts again) and starts waiting jobs inside it. Exclusive GPUs; no prior knowledge of durations.

``order`` sets the order within a queue: ``"submit"`` (default, Pollux's Tiresias: by submission) or
``"start"``, the order of Tiresias' own simulator (artifact ``simulator/run_sim.py``, ``dlas_sim_jobs``): the
jobs running stay ahead of the waiting ones in their queue, which follow by the time they first started (never
started last), then by submission. So under ``"start"`` a waiting job never preempts a running job of its own
queue. With every job submitted at once (hadar-philly) the two orders differ most: ``"submit"`` then breaks
ties by trace index and swaps equal-priority jobs in and out.

``service`` sets what attained service counts: ``"gpu"`` (default, Tiresias' 2D-LAS and Pollux's Tiresias: GPUs x
time run) or ``"time"``, the time run whatever the GPU count (Tiresias' simulator's ``dlas`` mode, and the
Tiresias of the Castor/SJF-BSBF authors' testbed scheduler, Lai-JX/Scheduler ``scheduler_impl/schedulers.py``,
which compares the executed seconds with its 700 s limit; docs/causes/tiresias-configuration.md).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import numpy as np
from gpucluster_env.baselines.parts.fit_set import greedy_fit, move_toward

from gpucluster_env.engine import Action, Place, Preempt, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy, register_policy
from gpucluster_env.policy_options import OptionSpec


@register_policy
class Tiresias(Policy):
    """2D-LAS with discretized priority queues (Tiresias), preemptive, exclusive GPUs."""

    name: ClassVar[str] = "tiresias"
    description: ClassVar[str] = (
        "Tiresias 2D-LAS: two priority queues by attained GPU-service, FIFO within a queue, preemptive "
        "(restart overhead), exclusive"
    )
    paper: ClassVar[str] = "Tiresias (NSDI'19); castor §9.1 / sjf-bsbf §VI-A3 baseline"

    def __init__(self, thresholds: tuple[float, ...] = (16 * 3600.0,), starve_factor: float | None = None,
                 order: Annotated[str, OptionSpec(choices=("submit", "start"))] = "submit",
                 service: Annotated[str, OptionSpec(choices=("gpu", "time"))] = "gpu") -> None:
        """``thresholds``: attained-service limits (GPU-seconds) between consecutive queues.
        ``starve_factor``: Tiresias' STARVELIMIT; a job waiting longer than that multiple of its last run is
        promoted back to the top queue (None: off). ``order``: ``"submit"`` or ``"start"``; ``service``: ``"gpu"``
        (GPU-seconds) or ``"time"`` (seconds run), what ``thresholds`` are compared with (module docstring)."""
        self.thresholds = tuple(float(x) for x in thresholds)
        self.starve_factor = starve_factor
        self.order = order
        self.service = service
        self._first = np.zeros(0)
        self._attained = np.zeros(0)
        self._last_run = np.zeros(0)
        self._promoted = np.zeros(0, dtype=bool)
        self._t = 0.0
        self._running = np.zeros(0, dtype=np.int64)

    def reset(self, env: Any) -> None:
        view = self.view(env)
        self._attained = np.zeros(view.n_jobs)
        self._last_run = np.zeros(view.n_jobs)
        self._promoted = np.zeros(view.n_jobs, dtype=bool)
        self._first = np.full(view.n_jobs, np.inf)  # when each job first started (inf: never)
        self._t = view.now
        self._running = np.zeros(0, dtype=np.int64)

    def _account(self, view: ClusterView) -> None:
        """Add the GPU-time the jobs running since the last call have attained."""
        dt = view.now - self._t
        if dt > 0:
            js = self._running
            still = view.running_of(js)
            ended = np.maximum(np.nan_to_num(view.finish_time_of(js) - self._t, nan=0.0), 0.0)
            run = np.where(still, dt, ended)
            weight = view.req_gpus[js] if self.service == "gpu" else 1
            self._attained[js] += weight * run
            self._last_run[js] += run
            self._t = view.now
        self._running = view.running_jobs().astype(np.int64)

    def queue_of(self, j: int) -> int:
        """Index of the priority queue job ``j`` belongs to (0 = highest)."""
        if self._promoted[j]:
            return 0
        return int(np.searchsorted(self.thresholds, self._attained[j], side="right"))

    def queues_of(self, jobs: np.ndarray) -> np.ndarray:
        """:meth:`queue_of` of each of ``jobs``, in one pass."""
        q = np.searchsorted(self.thresholds, self._attained[jobs], side="right")
        return np.where(self._promoted[jobs], 0, q)

    def _by_priority(self, view: ClusterView, js: np.ndarray) -> np.ndarray:
        """Jobs ``js`` in priority order: by queue, then by ``order`` within a queue (module docstring), then by
        index (one sort over arrays; every key ends with the unique index, so the order is total)."""
        q, submit = self.queues_of(js), view.submit[js]
        if self.order == "start":
            keys: tuple[np.ndarray, ...] = (js, submit, self._first[js], ~view.running_of(js), q)
        else:
            keys = (js, submit, q)
        return js[np.lexsort(keys)]

    def act(self, observation: Any, env: Any) -> Action | int:
        view = self.view(env)
        self._account(view)
        pending = view.pending_jobs()
        if not pending.size:
            return Wait()
        if self.starve_factor is not None:
            for j in pending.tolist():
                waited = view.now - view.pending_since(j)
                if self._last_run[j] > 0 and waited > self.starve_factor * self._last_run[j]:
                    self._promoted[j] = True
        active = self._by_priority(view, np.concatenate([pending, self._running]))
        running = view.running_of(active)
        desired = greedy_fit(view.req_gpus[active], view.num_gpus)
        a = move_toward(view, active, running, desired)  # the lowest priority preempted first
        if isinstance(a, Place):
            self._start_bookkeeping(a.job)
            self._first[a.job] = min(self._first[a.job], view.now)
        elif isinstance(a, Preempt):
            self._running = self._running[self._running != a.job]
        return a

    def _start_bookkeeping(self, j: int) -> None:
        self._running = np.append(self._running, np.int64(j))
        self._promoted[j] = False
        self._last_run[j] = 0.0
