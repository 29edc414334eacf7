"""The clock: decision points, arrivals, completions, rounds and ticks, and the utilization integrals up to
the current time. Progress between events is :mod:`.job_progress`'s; what a completion changes is
:mod:`.lifecycle`'s."""

from __future__ import annotations

import math
from heapq import heappop

import numpy as np

from .actions import StalledError
from .counters import Counters
from .events import FINISH, IDLE, ROUND, TICK
from .job_progress import Progress
from .job_queue import JobQueue
from .lifecycle import Lifecycle
from .state import RUNNING, EngineState

COMPACT_MIN = 4096
"""The least heap size at which the clock retires cancelled completions from the event heap."""


class Clock:
    """Runs an :class:`~gpucluster_env.engine.state.EngineState` forward to its next decision point. Owns the
    times of the next round and tick, the idle-wait count and the time up to which utilization is counted, and
    of the state the time (``now``), the utilization integrals (``busy_gpu_s``, ``shared_gpu_s``,
    ``sm_active_gpu_s``) and the passing of the event queue's cancelled completions (``events``). Arrivals are
    queued by :class:`JobQueue`, completions handled by :class:`Lifecycle`, decisions counted by
    :class:`Counters`."""

    def __init__(self, state: EngineState, progress: Progress, lifecycle: Lifecycle, queue: JobQueue,
                 counters: Counters) -> None:
        self.state = state
        self.progress = progress
        self.lifecycle = lifecycle
        self.queue = queue
        self.counters = counters
        self.next_round: float | None = None
        self.next_tick: float | None = None
        self.idle_ticks = 0  # consecutive idle waits
        self.acc_t = 0.0  # utilization is counted up to this time
        self.last_reasons: tuple[str, ...] = ()
        self.compact_at = COMPACT_MIN  # heap size at which cancelled completions are retired (EventQueue.retire)

    def start(self) -> None:
        """The clock at time 0 (after the state's reset): push the first round boundary and calibration tick."""
        s = self.state
        cfg = s.config
        self.next_round = cfg.round_s
        self.next_tick = cfg.tick_s
        self.idle_ticks = 0
        self.acc_t = 0.0
        self.last_reasons = ()
        self.compact_at = COMPACT_MIN
        if self.next_round is not None:
            s.events.push(self.next_round, ROUND, -1, 0)
        if self.next_tick is not None:
            s.events.push(self.next_tick, TICK, -1, 0)

    def resume(self, other: Clock) -> None:
        """Take the times and counts of ``other`` (the clock of the engine this one's state was cloned from)."""
        self.next_round, self.next_tick = other.next_round, other.next_tick
        self.idle_ticks, self.acc_t, self.last_reasons = other.idle_ticks, other.acc_t, other.last_reasons
        self.compact_at = other.compact_at

    def _next_time(self) -> float:
        """The time of the next event or arrival (inf: none)."""
        s = self.state
        q = s.events
        t = q.next_time()
        i = q.stale_at
        if i < len(q.stale) and q.stale[i] <= t:  # at a tie too: a completion's time comes first, as in the heap
            t = np.float64(q.stale[i])
        i = s.next_arrival
        if i < s.n_jobs and s.submit_l[i] < t:  # min(t, submit[i])
            t = s.submit[i]
        return t

    def accumulate_util(self, t: float) -> None:
        """Add the busy, shared and active-SM GPU time from the last count up to ``t``."""
        dt = t - self.acc_t
        if dt > 0:
            s = self.state
            s.busy_gpu_s += dt * s.busy_gpus
            s.shared_gpu_s += dt * s.shared_gpus
            s.sm_active_gpu_s += dt * s.sm_activity.total(s.slot_job_flat, s.slot_share_flat)
            self.acc_t = t

    def advance(self, until: float | None = None) -> tuple[str, ...]:
        """Run time forward to the next decision point (the ``wait`` action) and return its reasons:
        some of ``arrival``, ``completion``, ``round``, ``tick``, ``idle``. Returns ``()`` when done.

        ``until``: a time limit. When the next decision point lies past it, the clock stops at ``until``
        exactly (utilization and progress count up to it, no event past it happens) and the reason is
        ``("limit",)``; an event exactly at ``until`` still happens. A run truncated there reports the jobs
        finished by the limit, not those an event jump past it would have finished."""
        s = self.state
        self.counters.decision()
        q = s.events
        heap = q.heap
        if len(heap) > self.compact_at:
            self._compact()
        while s.n_done != s.n_jobs:  # not s.done
            if (heap and heap[0][1] == FINISH) or q.stale_at < len(q.stale):
                self._skip_stale(until)
            t = self._next_time()
            if t == math.inf:
                if s.running_set:
                    raise RuntimeError("engine invariant broken: running jobs but no completion event")
                s.events.push(s.now + s.config.idle_tick_s, IDLE, -1, 0)
                continue
            if until is not None and t > until:
                if until > s.now:
                    self.accumulate_util(until)
                    s.now = until
                self.last_reasons = ("limit",)
                return self.last_reasons
            reasons = self._process_time(t)
            if reasons:
                self.last_reasons = tuple(reasons)
                return self.last_reasons
        self.last_reasons = ()
        return ()

    def _compact(self) -> None:
        """Retire the cancelled completions from the heap (:meth:`EventQueue.retire
        <gpucluster_env.engine.events.EventQueue.retire>`), all found at once over arrays."""
        s = self.state
        heap = s.events.heap
        n = len(heap)
        kind = np.fromiter((e[1] for e in heap), np.int64, n)
        job = np.fromiter((e[3] for e in heap), np.int64, n)  # -1 for events of no job: masked by kind
        ver = np.fromiter((e[4] for e in heap), np.int64, n)
        dead = (kind == FINISH) & ((s.version[job] != ver) | (s.status[job] != RUNNING))
        s.events.retire(dead.tolist())
        self.compact_at = max(COMPACT_MIN, 2 * len(heap))

    def _skip_stale(self, until: float | None) -> None:
        """Pass the cancelled completions that come next (at the head of the heap, or retired to the queue's
        ``stale`` times), each a time the clock stops at with nothing to do (what :meth:`_process_time` does there:
        utilization counted up to it, ``now`` set, the idle count cleared if jobs run), as long as each comes before
        the next arrival and not after ``until``; the same sums in the same order, without the general path."""
        s = self.state
        q = s.events
        heap, stale = q.heap, q.stale
        at, n_stale = q.stale_at, len(stale)
        i = s.next_arrival
        lim = s.submit_l[i] if i < s.n_jobs else math.inf  # a time with an arrival takes the general path
        if until is not None and until < lim:
            lim = math.nextafter(until, math.inf)  # times up to until (an event at until still happens)
        version, status = s.version, s.status
        acc = float(self.acc_t)  # Python floats: the same IEEE sums as numpy's scalars, faster
        busy = shared = sm = 0.0
        busy_s = shared_s = sm_s = None  # the sums, read at the first stop that counts time
        t = None
        inf, finish, running = math.inf, FINISH, RUNNING  # locals in the loop over the cancelled completions
        while True:
            if at == n_stale and q.far:  # the next retired times (EventQueue.refill)
                q.stale_at = at
                q.refill()
                stale, at, n_stale = q.stale, 0, len(q.stale)
            ts = stale[at] if at < n_stale else inf
            if heap and heap[0][0] <= ts:
                e = heap[0]
                t_e = e[0]
                if not (e[1] == finish and t_e < lim):
                    break
                j = e[3]
                if version.item(j) == e[4] and status.item(j) == running:
                    break  # a live completion
                heappop(heap)
            elif ts < lim:
                t_e = ts
                at += 1
            else:
                break
            t = t_e
            dt = t - acc
            if dt > 0:
                if busy_s is None:
                    busy, shared = s.busy_gpus, s.shared_gpus
                    sm = s.sm_activity.total(s.slot_job_flat, s.slot_share_flat)
                    busy_s, shared_s, sm_s = float(s.busy_gpu_s), float(s.shared_gpu_s), float(s.sm_active_gpu_s)
                busy_s += dt * busy
                shared_s += dt * shared
                sm_s += dt * sm
                acc = t
        q.stale_at = at
        q.refill()
        if t is not None:
            s.now = np.float64(t)  # the time as the general path has it
            if busy_s is not None:
                self.acc_t = np.float64(acc)
                s.busy_gpu_s, s.shared_gpu_s, s.sm_active_gpu_s = (
                    np.float64(busy_s), np.float64(shared_s), np.float64(sm_s))
            if s.running_set:
                self.idle_ticks = 0

    def _process_time(self, t: float) -> list[str]:
        s = self.state
        self.accumulate_util(t)
        s.now = t
        s.events.pass_stale(t)  # cancelled completions at t: nothing to do
        reasons: list[str] = ["arrival"] if self.queue.arrive(t) else []
        pop_due = s.events.pop_due
        while (ev := pop_due(t)) is not None:
            _, kind, _, j, ver, _ = ev
            if kind == FINISH:
                if s.version.item(j) != ver or s.status.item(j) != RUNNING:
                    continue
                if j in s.copy_progress and not self.progress.copy_event(j, t):
                    continue  # a copy's quota done or its start-up over (job_progress), not the job's end
                self.lifecycle.finish(j, t)
                if "completion" not in reasons:
                    reasons.append("completion")
            elif kind == ROUND:
                self._round_boundary(t)
                reasons.append("round")
            elif kind == TICK:
                if not s.done:
                    self.next_tick = t + s.config.tick_s  # type: ignore[operator]
                    s.events.push(self.next_tick, TICK, -1, 0)
                reasons.append("tick")
            elif kind == IDLE:
                reasons.append("idle")
        self._count_idle(t, reasons)
        return reasons

    def _count_idle(self, t: float, reasons: list[str]) -> None:
        """A decision point with no arrival or completion, nothing running and jobs waiting is an idle wait
        (idle ticks, and round or calibration ticks in scenarios that have them). A time with only stale
        events (a completion its job's preemption cancelled) is no decision point and counts neither way, so
        a policy that starts and preempts a job at every instant is still stalled after max_idle_ticks."""
        s = self.state
        if "arrival" in reasons or "completion" in reasons or s.running_set:
            self.idle_ticks = 0
        elif reasons:
            self.idle_ticks += 1
            if self.idle_ticks > s.config.max_idle_ticks:
                raise StalledError(
                    f"episode stalled at t={t:.0f}s: {len(s.pending_queue)} pending jobs, nothing running, "
                    f"and {s.config.max_idle_ticks} consecutive waits"
                )

    def count_rejected(self) -> bool:
        """Count an action the engine rejected at a decision point with nothing running and jobs waiting toward
        the stall bound, as an idle wait counts (so a policy that only sends rejected actions is stalled after
        ``max_idle_ticks`` such steps and waits, not after that many idle waits of 32 rejections each); True
        once the bound is passed."""
        s = self.state
        if s.running_set or not s.pending_queue:
            return False
        self.idle_ticks += 1
        return self.idle_ticks > s.config.max_idle_ticks

    def _round_boundary(self, t: float) -> None:
        s = self.state
        if not s.done:
            self.next_round = t + s.config.round_s  # type: ignore[operator]
            s.events.push(self.next_round, ROUND, -1, 0)
        s.log.add(t, "round", -1)
        c = s.config.consolidation_s
        pr = self.progress
        for j in sorted(s.forked_set):
            if len(s.copies[j]) > 1:
                # HadarE's consolidation: the copies' steps are summed (already, in remaining), the job pays the
                # overhead, and its remaining steps are split among its copies again by their throughput
                pr.settle(j, t)
                pr.split(j)
                if c > 0:
                    pr.pause(j, t, t + c)
                pr.rerate([j], t)
