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
        self._running: list[int] = []

    def reset(self, env: Any) -> None:
        view = self.view(env)
        self._attained = np.zeros(view.n_jobs)
        self._last_run = np.zeros(view.n_jobs)
        self._promoted = np.zeros(view.n_jobs, dtype=bool)
        self._first = np.full(view.n_jobs, np.inf)  # when each job first started (inf: never)
        self._t = view.now
        self._running = []

    def _account(self, view: ClusterView) -> None:
        """Add the GPU-time the jobs running since the last call have attained."""
        dt = view.now - self._t
        if dt > 0:
            for j in self._running:
                run = dt if view.is_running(j) else max(0.0, view.finish_time(j) - self._t)
                self._attained[j] += (view.req_gpus[j] if self.service == "gpu" else 1) * run
                self._last_run[j] += run
            self._t = view.now
        self._running = [int(j) for j in view.running_jobs()]

    def queue_of(self, j: int) -> int:
        """Index of the priority queue job ``j`` belongs to (0 = highest)."""
        if self._promoted[j]:
            return 0
        return int(np.searchsorted(self.thresholds, self._attained[j], side="right"))

    def queues_of(self, jobs: np.ndarray) -> np.ndarray:
        """:meth:`queue_of` of each of ``jobs``, in one pass."""
        q = np.searchsorted(self.thresholds, self._attained[jobs], side="right")
        return np.where(self._promoted[jobs], 0, q)

    def _by_priority(self, view: ClusterView, jobs: list[int]) -> list[int]:
        """``jobs`` in priority order: by queue, then by ``order`` within a queue (module docstring), then by
        index (one sort over arrays; every key ends with the unique index, so the order is total)."""
        js = np.array(jobs, dtype=np.int64)
        q, submit = self.queues_of(js), view.submit[js]
        if self.order == "start":
            waiting = np.array([not view.is_running(j) for j in jobs], dtype=bool)
            keys: tuple[np.ndarray, ...] = (js, submit, self._first[js], waiting, q)
        else:
            keys = (js, submit, q)
        return js[np.lexsort(keys)].tolist()

    def act(self, observation: Any, env: Any) -> Action | int:
        view = self.view(env)
        self._account(view)
        pending = view.pending_jobs().tolist()
        if not pending:
            return Wait()
        if self.starve_factor is not None:
            for j in pending:
                waited = view.now - view.pending_since(j)
                if self._last_run[j] > 0 and waited > self.starve_factor * self._last_run[j]:
                    self._promoted[j] = True
        active = self._by_priority(view, pending + self._running)
        req = view.req_gpus
        cap = view.num_gpus
        desired: set[int] = set()
        for j in active:
            if req[j] <= cap:
                desired.add(j)
                cap -= int(req[j])
        to_start = [j for j in active if j in desired and view.is_pending(j)]
        if not to_start:
            return Wait()
        for j in to_start:
            if view.plan_place(j) is not None:
                self._start_bookkeeping(j)
                self._first[j] = min(self._first[j], view.now)
                return Place(j)
        victims = [j for j in active if j not in desired and view.is_running(j)]
        if victims:
            v = victims[-1]  # lowest priority first
            self._running.remove(v)
            return Preempt(v)
        return Wait()

    def _start_bookkeeping(self, j: int) -> None:
        self._running.append(j)
        self._promoted[j] = False
        self._last_run[j] = 0.0
