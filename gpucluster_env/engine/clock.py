"""The clock and its events: decision points, arrivals, completions, rounds and ticks, and exact progress.

Each running job has a piecewise-constant rate (iterations per second); progress is settled lazily, only for
the jobs whose rate changes, and a job's completion time is computed exactly and pushed as an event with a
version number, so that a rate change invalidates the old prediction. Nothing steps through time in fixed
ticks.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .actions import StalledError
from .events import FINISH, IDLE, ROUND, TICK
from .state import PENDING, RUNNING


class Clock:
    """Events, decision points and progress of :class:`~gpucluster_env.engine.simulator.ClusterEngine` (a
    mixin over :class:`~gpucluster_env.engine.state.EngineState`)."""

    config: Any

    def _start_clock(self) -> None:
        """Push the first round boundary and calibration tick (at reset)."""
        self._next_round = self.config.round_s
        self._next_tick = self.config.tick_s
        if self._next_round is not None:
            self.events.push(self._next_round, ROUND, -1, 0)
        if self._next_tick is not None:
            self.events.push(self._next_tick, TICK, -1, 0)

    @property
    def done(self) -> bool:
        """Every job of the episode has finished."""
        return self.n_done == self.n_jobs

    def _next_time(self) -> float:
        """The time of the next event or arrival (inf: none)."""
        t = self.events.next_time()
        i = self._next_arrival
        if i < self.n_jobs and self._submit_l[i] < t:  # min(t, submit[i])
            t = self.submit[i]
        return t

    def _accumulate_util(self, t: float) -> None:
        dt = t - self._acc_t
        if dt > 0:
            self.busy_gpu_s += dt * self.busy_gpus
            self.shared_gpu_s += dt * self.shared_gpus
            self.sm_active_gpu_s += dt * self._sm.total(self._sj_flat, self._ss_flat)
            self._acc_t = t

    def advance(self, until: float | None = None) -> tuple[str, ...]:
        """Run time forward to the next decision point (the ``wait`` action) and return its reasons:
        some of ``arrival``, ``completion``, ``round``, ``tick``, ``idle``. Returns ``()`` when done.

        ``until``: a time limit. When the next decision point lies past it, the clock stops at ``until``
        exactly (utilization and progress count up to it, no event past it happens) and the reason is
        ``("limit",)``; an event exactly at ``until`` still happens. A run truncated there reports the jobs
        finished by the limit, not those an event jump past it would have finished."""
        self.counts["decisions"] += 1
        while self.n_done != self.n_jobs:  # not self.done
            t = self._next_time()
            if t == math.inf:
                if self._running:
                    raise RuntimeError("engine invariant broken: running jobs but no completion event")
                self.events.push(self.now + self.config.idle_tick_s, IDLE, -1, 0)
                continue
            if until is not None and t > until:
                if until > self.now:
                    self._accumulate_util(until)
                    self.now = until
                self.last_reasons = ("limit",)
                return self.last_reasons
            reasons = self._process_time(t)
            if reasons:
                self.last_reasons = tuple(reasons)
                return self.last_reasons
        self.last_reasons = ()
        return ()

    def _process_time(self, t: float) -> list[str]:
        self._accumulate_util(t)
        self.now = t
        reasons: list[str] = []
        while self._next_arrival < self.n_jobs and self._submit_l[self._next_arrival] <= t:
            j = self._next_arrival
            self._next_arrival += 1
            self.status[j] = PENDING
            self._pending[j] = None
            self.queue_version += 1
            self.pending_since[j] = self.submit[j]
            self.log.add(t, "arrive", j)
            if "arrival" not in reasons:
                reasons.append("arrival")
        pop_due = self.events.pop_due
        while (ev := pop_due(t)) is not None:
            _, kind, _, j, ver, _ = ev
            if kind == FINISH:
                if self.version.item(j) != ver or self.status.item(j) != RUNNING:
                    continue
                if j in self._cp and not self._cp_event(j, t):
                    continue  # a copy's quota done or its start-up over (engine.copies), not the job's end
                self._finish(j, t)
                if "completion" not in reasons:
                    reasons.append("completion")
            elif kind == ROUND:
                self._round_boundary(t)
                reasons.append("round")
            elif kind == TICK:
                if not self.done:
                    self._next_tick = t + self.config.tick_s  # type: ignore[operator]
                    self.events.push(self._next_tick, TICK, -1, 0)
                reasons.append("tick")
            elif kind == IDLE:
                reasons.append("idle")
        # A decision point with no arrival or completion, nothing running and jobs waiting is an idle wait
        # (idle ticks, and round or calibration ticks in scenarios that have them). A time with only stale
        # events (a completion its job's preemption cancelled) is no decision point and counts neither way, so
        # a policy that starts and preempts a job at every instant is still stalled after max_idle_ticks.
        if "arrival" in reasons or "completion" in reasons or self._running:
            self._idle_ticks = 0
        elif reasons:
            self._idle_ticks += 1
            if self._idle_ticks > self.config.max_idle_ticks:
                raise StalledError(
                    f"episode stalled at t={t:.0f}s: {len(self._pending)} pending jobs, nothing running, "
                    f"and {self.config.max_idle_ticks} consecutive waits"
                )
        return reasons

    def _round_boundary(self, t: float) -> None:
        if not self.done:
            self._next_round = t + self.config.round_s  # type: ignore[operator]
            self.events.push(self._next_round, ROUND, -1, 0)
        self.log.add(t, "round", -1)
        c = self.config.consolidation_s
        for j in sorted(self._forked):
            if len(self.copies[j]) > 1:
                # HadarE's consolidation: the copies' steps are summed (already, in remaining), the job pays the
                # overhead, and its remaining steps are split among its copies again by their throughput
                self._settle(j, t)
                self._cp_split(j)
                if c > 0:
                    self._pause(j, t, t + c)
                self._rerate([j], t)

    # ------------------------------------------------------------------ progress
    def _settle(self, j: int, t: float) -> None:
        """Bring job ``j``'s remaining iterations up to time ``t`` at its current rate."""
        last = self.last_t.item(j)
        start = max(last, self.active_from.item(j))
        if t > start:
            if j in self._cp:
                self._cp_settle(j, t, start)
            else:
                rate = self.rate.item(j)
                if rate > 0:
                    self.remaining[j] = max(0.0, self.remaining.item(j) - rate * (t - start))
        self.last_t[j] = max(last, t)

    def _pause(self, j: int, t: float, until: float) -> None:
        """Job ``j`` makes no progress from ``t`` until ``until`` (consolidation, calibration overhead); the
        caller then recomputes its completion with :meth:`_rerate`."""
        self._settle(j, t)
        self.active_from[j] = max(self.active_from[j], until)

    def _rerate(self, jobs: list[int], t: float) -> None:
        """Settle each job of ``jobs`` (running, sorted, distinct) to ``t``, recompute its rate and push its
        completion event."""
        last_t, active, rate, remaining, version = (
            self.last_t, self.active_from, self.rate, self.remaining, self.version)
        push_finish = self.events.push_finish
        tf = float(t)  # the same value
        cp = self._cp
        for j in jobs:
            if j in cp:
                self._cp_rerate(j, tf)  # per-copy progress (engine.copies)
                continue
            last = last_t.item(j)
            af = active.item(j)
            start = max(last, af)
            rem = None
            if tf > start:
                r0 = rate.item(j)
                if r0 > 0:
                    rem = max(0.0, remaining.item(j) - r0 * (tf - start))
                    remaining[j] = rem
            last_t[j] = max(last, tf)
            v = version.item(j) + 1
            version[j] = v
            r = self._job_rate(j)
            rate[j] = r
            if r > 0:
                if rem is None:
                    rem = remaining.item(j)
                # at max(t, active_from[j]) + remaining[j] / r
                push_finish(max(tf, af) + rem / r, j, v)

    def remaining_now(self) -> np.ndarray:
        """Remaining iterations of every job at the current time (settled view, nothing mutated)."""
        start = np.maximum(self.last_t, self.active_from)
        elapsed = np.maximum(0.0, self.now - start)
        return np.maximum(0.0, self.remaining - self.rate * elapsed)
