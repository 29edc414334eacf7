"""The rules that keep the decision process from stalling: a bound on the actions between two clock advances.

Only ``wait`` moves simulated time; every other action returns at the same instant. Without limits an agent can
undo what it just did (place then preempt, squeeze then swell) forever at one instant. The environment masks:

1. ``place`` / ``share`` / ``colocate`` of a job preempted at this instant (a preempted job cannot restart at it);
2. ``preempt`` of a job started at this instant, and of a job that has run less than ``min_run_s`` since its
   last start (the minimum run quantum);
3. ``squeeze`` / ``swell`` of a job whose share already changed at this instant, and everywhere on scenarios
   that do not calibrate (no ``tick_s``: their decision points are not calibration ticks);
4. ``fork`` of a job forked at this instant.

**The bound.** Let ``J`` be the jobs in the system (pending + running) at the instant; arrivals and completions
happen only when the clock advances, so ``J`` is fixed within an instant. Each job contributes at most one start
or one preemption (a started job cannot be preempted, a preempted one cannot restart), at most one share change
and at most one fork. So the non-wait actions between two advances number at most::

    B(J) = (1 + c + f) x J,   c = 1 if the scenario calibrates (tick_s) else 0,
                              f = 1 if forking is on (round-based scenarios) else 0

(``J`` on castor-philly). An out-of-mask action sent anyway is by default a counted no-op that advances the
clock like ``wait``, so it never adds to the count. Typed actions from white-box agents are recorded (so the
masks that follow them are right) but not restricted: reference policies act as their papers describe.

**The bound on every step, typed actions included.** Typed actions are not masked, and an action the engine
rejects (a typed action that does not fit, or a masked one that fails, e.g. ``share`` with no GPUs to share)
is a counted no-op that does not move the clock. So one more rule holds for every non-wait step, applied or
rejected: after :data:`MAX_REJECTED_RUN` rejected actions in a row at one instant, or after
``step_cap(J) = STEPS_PER_JOB x J + STEPS_SLACK`` non-wait steps at one instant, the next non-wait step is a
forced ``wait`` (counted in ``info["invalid_actions"]``, marked ``info["forced_wait"]``; with
``invalid_action="raise"`` a ``ValueError`` naming the bound). The runner reads an empty list of actions as
``wait``. So a policy whose actions are all rejected, or that undoes its own typed actions forever, still
lets time run and the episode ends: with nothing running, each rejected action counts toward the stall bound
as an idle wait does, so a run that does nothing else is truncated as stalled after ``max_idle_ticks`` such
steps and waits together (``Clock.count_rejected``). The caps lie far above what the reference policies do:
on the 97 golden policy cases their most non-wait steps at one instant is 57 (never more than ``2 x J + 3``),
their longest run of rejected actions 1, so no reference result changes.

**The moves of running jobs** (``Reallocate``, ``DropCopy``, ``MoveCopy``) are typed actions only: the
``Discrete`` space has no entry for them, so they add nothing to ``B(J)``. They are recorded so that the masks
that follow cannot undo them at the same instant: a ``Reallocate`` counts as the job's start (rule 2: it
cannot be preempted at this instant, and its minimum run quantum starts again), a ``DropCopy`` or
``MoveCopy`` as the job's fork (rule 4: no fork of it at this instant). So the masked actions between two
advances stay within ``B(J)`` whatever typed actions are mixed in.
"""

from __future__ import annotations

import numpy as np

from .codec import ActionLayout

NEVER = -1  # instant id of "never"
STEPS_PER_JOB = 8
"""Non-wait steps allowed per job in the system at one instant (see :func:`step_cap`)."""
STEPS_SLACK = 64
"""Non-wait steps allowed at one instant whatever the jobs in the system."""
MAX_REJECTED_RUN = 32
"""Rejected actions in a row at one instant after which the next non-wait step is a forced ``wait``."""


def step_cap(jobs_in_system: int) -> int:
    """The most non-wait steps (applied or rejected, masked or typed) at one instant before a forced ``wait``."""
    return STEPS_PER_JOB * jobs_in_system + STEPS_SLACK


class DecisionRules:
    """Per-job records of what happened at which instant (an id that grows with every clock advance), and the
    masking of the actions the rules forbid."""

    def __init__(self, n_jobs: int, min_run_s: float, calibrates: bool) -> None:
        self.min_run_s = float(min_run_s)
        self.calibrates = calibrates
        self.instant = 0
        self.started = np.full(n_jobs, NEVER, dtype=np.int64)
        self.preempted = np.full(n_jobs, NEVER, dtype=np.int64)
        self.shared = np.full(n_jobs, NEVER, dtype=np.int64)
        self.forked = np.full(n_jobs, NEVER, dtype=np.int64)
        self.run_since = np.full(n_jobs, -np.inf)
        self.actions_now = 0  # non-wait actions applied since the last clock advance
        self.steps_now = 0  # non-wait steps since the last clock advance, applied or rejected
        self.rejected_run = 0  # rejected actions in a row at this instant
        self._preempts_now = 0  # of which preemptions, and forks (their masks need no work without any)
        self._forks_now = 0

    def advanced(self) -> None:
        """The clock moved to the next decision point."""
        self.instant += 1
        self.actions_now = 0
        self.steps_now = 0
        self.rejected_run = 0
        self._preempts_now = 0
        self._forks_now = 0

    def must_wait(self, jobs_in_system: int) -> str | None:
        """Why the next non-wait step must be a forced ``wait`` (the bound on steps at one instant), or None."""
        if self.rejected_run >= MAX_REJECTED_RUN:
            return f"{self.rejected_run} rejected actions in a row at this instant (at most {MAX_REJECTED_RUN})"
        cap = step_cap(jobs_in_system)
        if self.steps_now >= cap:
            return f"{self.steps_now} non-wait steps at this instant (at most {cap} with {jobs_in_system} jobs)"
        return None

    def step_taken(self, rejected: bool) -> None:
        """Count a non-wait step at this instant, and whether the engine rejected it."""
        self.steps_now += 1
        self.rejected_run = self.rejected_run + 1 if rejected else 0

    def record_start(self, j: int, now: float) -> None:
        self.started[j] = self.instant
        self.run_since[j] = now

    def record_preempt(self, j: int) -> None:
        self.preempted[j] = self.instant
        self._preempts_now += 1

    def record_share(self, j: int) -> None:
        self.shared[j] = self.instant

    def record_fork(self, j: int) -> None:
        self.forked[j] = self.instant
        self._forks_now += 1

    def restrict(self, mask: np.ndarray, layout: ActionLayout, pending: np.ndarray, running: np.ndarray,
                 now: float) -> None:
        """Clear, in place, the actions of ``mask`` (computed from the engine for these windows) the rules
        forbid at this instant."""
        L = layout
        n_p, n_r = len(pending), len(running)
        inst = self.instant
        if n_p and self._preempts_now:
            blocked = np.flatnonzero(self.preempted[pending] == inst)
            if len(blocked):
                mask[L.place_off:L.share_off].reshape(L.n_pending, L.place_width)[blocked] = False
                if L.compact:
                    mask[L.share_off + blocked] = False
                else:
                    mask[L.colocate_off:L.squeeze_off].reshape(L.n_pending, -1)[blocked] = False
        if n_r:
            run = running
            keep = (self.started[run] != inst) & (now - self.run_since[run] >= self.min_run_s)
            mask[L.preempt_off:L.preempt_off + n_r] &= keep
            if self.calibrates:
                fresh = self.shared[run] != inst
                mask[L.squeeze_off:L.squeeze_off + n_r] &= fresh
                mask[L.swell_off:L.swell_off + n_r] &= fresh
            else:
                mask[L.squeeze_off:L.squeeze_off + n_r] = False
                mask[L.swell_off:L.swell_off + n_r] = False
            if self._forks_now:
                mask[L.fork_off:L.fork_off + n_r] &= self.forked[run] != inst

    @staticmethod
    def bound(jobs_in_system: int, calibrates: bool, forks: bool) -> int:
        """The most non-wait actions the masks allow between two clock advances (see the module docstring)."""
        return (1 + int(calibrates) + int(forks)) * jobs_in_system
