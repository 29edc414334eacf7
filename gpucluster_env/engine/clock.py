"""The clock: decision points, arrivals, completions, rounds and ticks, and the utilization integrals up to
the current time. Progress between events is :mod:`.job_progress`'s; what a completion changes is
:mod:`.lifecycle`'s."""

from __future__ import annotations

import math

from .actions import StalledError
from .events import FINISH, IDLE, ROUND, TICK
from .job_progress import Progress
from .lifecycle import Lifecycle
from .state import PENDING, RUNNING, EngineState


class Clock:
    """Runs an :class:`~gpucluster_env.engine.state.EngineState` forward to its next decision point. Owns the
    times of the next round and tick, the idle-wait count and the time up to which utilization is counted."""

    def __init__(self, state: EngineState, progress: Progress, lifecycle: Lifecycle) -> None:
        self.state = state
        self.progress = progress
        self.lifecycle = lifecycle
        self.next_round: float | None = None
        self.next_tick: float | None = None
        self.idle_ticks = 0  # consecutive idle waits
        self.acc_t = 0.0  # utilization is counted up to this time
        self.last_reasons: tuple[str, ...] = ()

    def start(self) -> None:
        """The clock at time 0 (after the state's reset): push the first round boundary and calibration tick."""
        s = self.state
        cfg = s.config
        self.next_round = cfg.round_s
        self.next_tick = cfg.tick_s
        self.idle_ticks = 0
        self.acc_t = 0.0
        self.last_reasons = ()
        if self.next_round is not None:
            s.events.push(self.next_round, ROUND, -1, 0)
        if self.next_tick is not None:
            s.events.push(self.next_tick, TICK, -1, 0)

    def resume(self, other: Clock) -> None:
        """Take the times and counts of ``other`` (the clock of the engine this one's state was cloned from)."""
        self.next_round, self.next_tick = other.next_round, other.next_tick
        self.idle_ticks, self.acc_t, self.last_reasons = other.idle_ticks, other.acc_t, other.last_reasons

    def _next_time(self) -> float:
        """The time of the next event or arrival (inf: none)."""
        s = self.state
        t = s.events.next_time()
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
        s.counts["decisions"] += 1
        while s.n_done != s.n_jobs:  # not s.done
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

    def _arrive(self, t: float) -> bool:
        """Queue every job submitted by ``t``; True if any arrived."""
        s = self.state
        arrived = False
        while s.next_arrival < s.n_jobs and s.submit_l[s.next_arrival] <= t:
            j = s.next_arrival
            s.next_arrival += 1
            s.status[j] = PENDING
            s.pending_queue[j] = None
            s.queue_version += 1
            s.pending_since[j] = s.submit[j]
            s.log.add(t, "arrive", j)
            arrived = True
        return arrived

    def _process_time(self, t: float) -> list[str]:
        s = self.state
        self.accumulate_util(t)
        s.now = t
        reasons: list[str] = ["arrival"] if self._arrive(t) else []
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
