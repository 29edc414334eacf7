"""The event queue of the clock: completions, round boundaries, calibration ticks and idle ticks in time order.

An event is ``(time as a Python float, kind, sequence, job, version, time as given)``: events compare by the
float time, then the kind (at equal times completions come first, then rounds, ticks, idle: a job done exactly
at a round boundary must not pay that round's consolidation), then the sequence number (unique, so the order is
total and never reaches the job). The time as given keeps its type for the clock (``None`` for completions,
whose time is a numpy float rebuilt from the Python float, the same value). A completion carries the version its
job had when it was predicted; a later rate change moves the version and so invalidates it.

A cancelled completion is still a time the clock stops at (with nothing to do there but count utilization up to
it: the sums, and so the metrics, keep their last bits). Most completions are cancelled by a rate change long
before their time (a preemption, a partner's start), and in the heap they make every push and pop slower; so the
clock moves them now and then (:meth:`EventQueue.retire`) to ``stale``, a sorted list of their times, read from
``stale_at`` on. Only the nearest of them are in that list (at most about :data:`STALE_NEAR` past a retirement,
those up to ``horizon``); the later ones wait in ``far``, a heap, and the next :data:`STALE_NEAR` of them fill
the list when it is all passed (:meth:`EventQueue.refill`), so a retirement merges into a short list however many
cancelled completions lie far ahead (a preempted long job's).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right
from typing import Any

import numpy as np

FINISH, ROUND, TICK, IDLE = 1, 2, 3, 4  # event kinds; at equal times they run in this order

Event = tuple[float, int, int, int, int, float | None]

STALE_NEAR = 4096
"""How many retired times ``stale`` holds when it is cut or filled (the rest wait in ``far``)."""


class EventQueue:
    """A heap of events (see the module docstring) with its sequence counter."""

    __slots__ = ("heap", "seq", "stale", "stale_at", "far", "horizon")

    def __init__(self) -> None:
        self.heap: list[Event] = []
        self.seq = 0
        self.stale: list[float] = []  # times of cancelled completions taken off the heap, ascending
        self.stale_at = 0  # stale[:stale_at] are passed
        self.far: list[float] = []  # a heap of the retired times after ``horizon`` (all of stale's are up to it)
        self.horizon = math.inf

    def __deepcopy__(self, memo: dict[int, Any]) -> EventQueue:
        """A copy with its own heap and ``stale`` lists of the same events and times (an event is a tuple of
        numbers, never changed once queued), at the cost of two list copies instead of one deep copy per event
        (what :meth:`~gpucluster_env.engine.simulator.ClusterEngine.clone` pays for a queue of running jobs)."""
        out = EventQueue.__new__(EventQueue)
        out.heap, out.seq, out.stale, out.stale_at = self.heap[:], self.seq, self.stale[:], self.stale_at
        out.far, out.horizon = self.far[:], self.horizon
        return out

    def retire(self, dead: list[bool]) -> None:
        """Take the events flagged in ``dead`` (parallel to ``heap``: cancelled completions) off the heap and keep
        their times in ``stale``. The heap keeps its list object and its order (events compare totally)."""
        heap = self.heap
        gone = sorted(e[0] for e, d in zip(heap, dead, strict=True) if d)
        heap[:] = [e for e, d in zip(heap, dead, strict=True) if not d]
        heapq.heapify(heap)
        k = bisect_right(gone, self.horizon)
        rest = self.stale[self.stale_at:]
        if k:
            rest += gone[:k]
            rest.sort()  # two sorted runs: a merge
        far = self.far
        for t in gone[k:]:
            heapq.heappush(far, t)
        if len(rest) > 2 * STALE_NEAR:  # the later ones wait in far
            for t in rest[STALE_NEAR:]:
                heapq.heappush(far, t)
            del rest[STALE_NEAR:]
            self.horizon = rest[-1]
        self.stale = rest
        self.stale_at = 0
        self.refill()

    def refill(self) -> None:
        """When every time in ``stale`` is passed and ``far`` holds some: the next :data:`STALE_NEAR` of them
        make ``stale`` (so a time not passed is in ``stale`` whenever there is one)."""
        far = self.far
        if self.stale_at < len(self.stale) or not far:
            return
        pop = heapq.heappop
        self.stale = [pop(far) for _ in range(min(STALE_NEAR, len(far)))]
        self.stale_at = 0
        self.horizon = self.stale[-1] if far else math.inf

    def next_stale(self) -> float:
        """The earliest time in ``stale`` not passed (inf: none)."""
        i = self.stale_at
        return self.stale[i] if i < len(self.stale) else math.inf

    def pass_stale(self, t: float) -> None:
        """Pass every time in ``stale`` at or before ``t`` (the clock has stopped there)."""
        while True:
            st, i = self.stale, self.stale_at
            n = len(st)
            while i < n and st[i] <= t:
                i += 1
            self.stale_at = i
            if i < n or not self.far:
                return
            self.refill()

    def push(self, t: float, kind: int, job: int, version: int) -> None:
        """Queue an event of ``kind`` at time ``t`` (kept as given for the clock)."""
        self.seq += 1
        heapq.heappush(self.heap, (float(t), kind, self.seq, job, version, t))

    def push_finish(self, t: float, job: int, version: int) -> None:
        """Queue the predicted completion of ``job`` at version ``version`` at the Python float ``t``."""
        self.seq += 1
        heapq.heappush(self.heap, (t, FINISH, self.seq, job, version, None))

    def next_time(self) -> float:
        """The time of the earliest event (a numpy float for a completion), or inf when there is none."""
        heap = self.heap
        if not heap:
            return math.inf
        t = heap[0][5]
        return np.float64(heap[0][0]) if t is None else t

    def pop_due(self, t: float) -> Event | None:
        """The earliest event at or before ``t``, taken off the queue, or None."""
        heap = self.heap
        if heap and heap[0][0] <= t:
            return heapq.heappop(heap)
        return None
