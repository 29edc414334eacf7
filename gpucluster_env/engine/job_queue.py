"""Where each job is in its life: future, pending, running or done, the pending queue and the running set in
their orders, and the times and counts of each move between them. :class:`JobQueue` is the one writer of
these fields of the :class:`~gpucluster_env.engine.state.EngineState`; the clock queues arrivals and the
lifecycle starts, finishes and preempts through it. Reading the queue as an array is
:class:`~gpucluster_env.engine.queue_read.QueueRead`'s."""

from __future__ import annotations

import math

from .state import DONE, PENDING, RUNNING, EngineState


class JobQueue:
    """The jobs' statuses, the pending queue and the running set (``status``, ``pending_queue``,
    ``running_set``, ``queue_version``, ``next_arrival``, ``n_done``) and the times and counts of the moves
    between them (``pending_since``, ``queue_s``, ``first_start``, ``last_start``, ``finish_t``, ``n_preempt``)
    on an :class:`~gpucluster_env.engine.state.EngineState`."""

    def __init__(self, state: EngineState) -> None:
        self.state = state

    def arrive(self, t: float) -> bool:
        """Queue every job submitted by ``t`` (at the back, in submit order); True if any arrived."""
        s = self.state
        arrived = False
        while s.next_arrival < s.n_jobs and s.submit_l[s.next_arrival] <= t:
            j = s.next_arrival
            s.next_arrival += 1
            self._enqueue(j, s.submit[j])
            s.log.add(t, "arrive", j)
            arrived = True
        return arrived

    def _enqueue(self, j: int, since: float) -> None:
        """Job ``j`` joins the back of the queue, waiting from ``since``."""
        s = self.state
        s.status[j] = PENDING
        s.pending_queue[j] = None
        s.queue_version += 1
        s.pending_since[j] = since

    def close_arrivals(self) -> None:
        """No job that has not arrived yet ever will (a search's rollout that plays only the jobs at hand)."""
        self.state.next_arrival = self.state.n_jobs

    def start(self, j: int, t: float) -> None:
        """Pending job ``j`` leaves the queue and runs from ``t``: its wait is added to its queueing time."""
        s = self.state
        s.pending_queue.pop(j, None)
        s.running_set[j] = None
        s.queue_version += 1
        s.status[j] = RUNNING
        s.queue_s[j] = s.queue_s.item(j) + (t - s.pending_since.item(j))  # queue_s[j] += ...
        if math.isnan(s.first_start.item(j)):
            s.first_start[j] = t
        s.last_start[j] = t

    def finish(self, j: int, t: float) -> None:
        """Running job ``j`` is done at ``t``."""
        s = self.state
        s.running_set.pop(j, None)
        s.queue_version += 1
        s.status[j] = DONE
        s.finish_t[j] = t
        s.n_done += 1

    def requeue(self, j: int, t: float) -> None:
        """Running job ``j`` is preempted at ``t``: back to the end of the queue."""
        s = self.state
        s.running_set.pop(j, None)
        self._enqueue(j, t)
        s.n_preempt[j] = s.n_preempt.item(j) + 1
