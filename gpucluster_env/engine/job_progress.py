"""Exact progress of running jobs between events: each job's remaining iterations are settled lazily, only when
its rate changes, and its next completion (or per-copy event) is computed exactly and pushed with a version
number, so that a rate change invalidates the old prediction. Nothing steps through time in fixed ticks. The
rates themselves come from :class:`~gpucluster_env.engine.rates.Rates`.

A job runs the plain path (:meth:`~gpucluster_env.engine.rates.Rates.job_rate`, one remaining count) while it is
one copy of the size it asked for that is not starting up. Otherwise its progress is kept per copy
(``EngineState.copy_progress[j]``, a :class:`CopyProgress`):

* **Size.** ``iterations`` count iterations of the global batch at the asked size ``N``; a copy of ``n`` GPUs
  (same per-GPU batch) does ``n / N`` of them per iteration of its own, so its rate is ``(n / N) / t_iter``.
  **Batch.** A job whose total batch differs from the stated one (resized, or re-batched by ``Reallocate``'s
  ``batch``) and whose model has Pollux's noise data progresses at that times the statistical-efficiency ratio
  (:meth:`~gpucluster_env.engine.rates.Rates.batch_gain`), whose noise scale changes at each tenth of training:
  an event there keeps progress exact (:meth:`Progress.gain_edge`).
* **Quotas** (more than one copy, HadarE §V-B). The job's remaining steps are split among its copies in
  proportion to each copy's throughput whenever its copies change (fork, drop, move) and at every round
  boundary (after consolidation). A copy that has done its quota idles (holding its GPUs) until the next
  split; the job is done when every quota is. Its progress is the sum of its copies'.
* **Start-up.** A new copy (fork, move) makes no progress for ``EngineConfig.copy_startup_s``.

Between two events of such a job every copy's rate is constant, so ``rate[j]`` (the sum over the copies that
progress now) and ``remaining[j]`` (the sum of the quotas) keep their meaning for every reader. The events: a
quota done, a start-up over, the job done; all are the job's one versioned completion event.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..catalog.pollux_efficiency import has_efficiency, noise_part_end
from .occupancy import Copy, Occupancy
from .rates import Rates
from .state import EngineState

QUOTA_TOL_S = 1e-6
"""A copy whose quota would be done within this many seconds counts as done (float noise between copies that
end together)."""


class CopyProgress:
    """The per-copy state of one job, parallel to its copies: ``quota`` (steps left of each copy's quota, or
    None for a single copy), ``ready`` (time from which each copy progresses) and ``rate`` (each copy's rate
    since the job's last rate change; 0 while idle or starting)."""

    __slots__ = ("quota", "ready", "rate")

    def __init__(self, n: int) -> None:
        self.quota: list[float] | None = None
        self.ready: list[float] = [-math.inf] * n
        self.rate: list[float] = [0.0] * n


class Progress:
    """Settles progress, recomputes rates and pushes completion events on an
    :class:`~gpucluster_env.engine.state.EngineState`, with the rates of
    :class:`~gpucluster_env.engine.rates.Rates`."""

    def __init__(self, state: EngineState, rates: Rates, occupancy: Occupancy) -> None:
        self.state = state
        self.rates = rates
        self.occupancy = occupancy

    def settle(self, j: int, t: float) -> None:
        """Bring job ``j``'s remaining iterations up to time ``t`` at its current rate."""
        s = self.state
        tf = float(t)  # the same value; each ``a if a > b else b`` is ``max(b, a)`` (the same float), without the call
        last = s.last_t.item(j)
        af = s.active_from.item(j)
        start = af if af > last else last
        if tf > start:
            if j in s.copy_progress:
                self._cp_settle(j, t, start)
            else:
                rate = s.rate.item(j)
                if rate > 0:
                    rem = s.remaining.item(j) - rate * (tf - start)
                    s.remaining[j] = rem if rem > 0.0 else 0.0
        s.last_t[j] = tf if tf > last else last

    def pause(self, j: int, t: float, until: float) -> None:
        """Job ``j`` makes no progress from ``t`` until ``until`` (consolidation, calibration overhead); the
        caller then recomputes its completion with :meth:`rerate`."""
        self.settle(j, t)
        af = self.state.active_from
        af[j] = max(af[j], until)

    def rerate(self, jobs: list[int], t: float) -> None:
        """Settle each job of ``jobs`` (running, sorted, distinct) to ``t``, recompute its rate and push its
        completion event."""
        s = self.state
        last_t, active, rate, remaining, version = s.last_t, s.active_from, s.rate, s.remaining, s.version
        tf = float(t)  # the same value
        cp = s.copy_progress
        # (the lists are of one or two jobs: the arrays' ``item`` is looked up per call, not bound first) each
        # ``a if a > b else b`` below is ``max(b, a)`` (the same float, NaN included), without the call
        for j in jobs:
            if j in cp:
                self._cp_rerate(j, tf)  # per-copy progress
                continue
            last = last_t.item(j)
            af = active.item(j)
            start = af if af > last else last
            rem = None
            if tf > start:
                r0 = rate.item(j)
                if r0 > 0:
                    rem = remaining.item(j) - r0 * (tf - start)
                    rem = rem if rem > 0.0 else 0.0
                    remaining[j] = rem
            if tf > last:
                last_t[j] = tf
            v = version.item(j) + 1
            version[j] = v
            # Rates.job_rate's first case here: alone at full share on every GPU, the rate is the solo rate
            if s.held_shared.item(j) != 0 or s.share_lo.item(j) != s.share_units or not (r := s.solo_rate.item(j)) > 0:
                r = self.rates.job_rate(j)
            rate[j] = r
            if r > 0:
                if rem is None:
                    rem = remaining.item(j)
                # at max(t, active_from[j]) + remaining[j] / r
                s.events.push_finish((af if af > tf else tf) + rem / r, j, v)

    def remaining_now(self, jobs: np.ndarray | None = None) -> np.ndarray:
        """Remaining iterations of every job (or of ``jobs`` only, the same values) at the current time (settled
        view, nothing mutated)."""
        s = self.state
        at = slice(None) if jobs is None else jobs
        start = np.maximum(s.last_t[at], s.active_from[at])
        elapsed = np.maximum(0.0, s.now - start)
        return np.maximum(0.0, s.remaining[at] - s.rate[at] * elapsed)

    # ------------------------------------------------------------------ a job's changes, as progress sees them
    def start(self, j: int, t: float, until: float, c: Copy) -> None:
        """Job ``j`` starts at ``t`` as the one full-size copy ``c`` and progresses from ``until`` (after a
        restart's pause)."""
        s = self.state
        s.last_t[j] = t
        s.active_from[j] = until
        s.solo_rate[j] = self.rates.solo_copy_rate(j, c)
        s.job_min_mem[j] = c.k.min_mem

    def one_copy(self, j: int, c: Copy, per_copy: bool) -> None:
        """Job ``j`` runs as the one copy ``c`` now (a start, a reallocation): its rate alone and smallest GPU
        memory are ``c``'s, and its progress is kept per copy (``per_copy``: resized or re-batched, so its rate
        is scaled, :meth:`Rates.copy_rate <gpucluster_env.engine.rates.Rates.copy_rate>`) or as one count."""
        s = self.state
        if per_copy:
            s.copy_progress[j] = CopyProgress(1)
        else:
            s.copy_progress.pop(j, None)
        s.solo_rate[j] = self.rates.solo_copy_rate(j, c)
        s.job_min_mem[j] = c.k.min_mem

    def stop(self, j: int) -> None:
        """Job ``j`` is done: nothing left to do, no rate."""
        s = self.state
        s.copy_progress.pop(j, None)
        s.remaining[j] = 0.0
        s.rate[j] = 0.0
        s.solo_rate[j] = 0.0

    def halt(self, j: int, t: float) -> None:
        """Job ``j`` stops at ``t`` with its progress kept (a preemption): settled to ``t``, no rate, and its
        completion event cancelled (its version moves)."""
        self.settle(j, t)
        s = self.state
        s.copy_progress.pop(j, None)
        s.rate[j] = 0.0
        s.solo_rate[j] = 0.0
        s.version[j] = s.version.item(j) + 1

    def new_constants(self, j: int) -> None:
        """Job ``j``'s copies have new performance constants (a LISS switch): its rate alone is taken as its
        first copy's ``1 / solo_iter``."""
        s = self.state
        s.solo_rate[j] = 1.0 / s.copy_consts[j][0].k.solo_iter

    # ------------------------------------------------------------------ per-copy progress
    def copies_added(self, j: int, new: list[Copy], ready: float) -> None:
        """Job ``j`` (settled to now) runs the full-size copies ``new`` besides its others (a fork), each
        progressing from ``ready`` (after its start-up): its rate alone and smallest GPU memory take them in,
        and its remaining steps are split among all its copies."""
        s = self.state
        for c in new:
            s.job_min_mem[j] = min(s.job_min_mem[j], c.k.min_mem)
            s.solo_rate[j] += self.rates.solo_copy_rate(j, c)  # copies are full-size
        cp = self.track(j, len(s.copy_consts[j]) - len(new))
        cp.ready += [ready] * len(new)
        cp.rate += [0.0] * len(new)
        self.split(j)

    def copy_dropped(self, j: int, i: int) -> None:
        """Copy ``i`` of job ``j`` (settled to now) stopped: its per-copy state goes."""
        cp = self.state.copy_progress[j]
        cp.ready.pop(i)
        cp.rate.pop(i)

    def copy_restarts(self, j: int, i: int, ready: float) -> None:
        """Copy ``i`` of job ``j`` moved: it progresses again from ``ready`` (after its start-up)."""
        self.state.copy_progress[j].ready[i] = ready

    def track(self, j: int, n: int | None = None) -> CopyProgress:
        """Job ``j``'s per-copy state, created if it has none (for its first ``n`` copies, default all, ready
        and with no quota)."""
        s = self.state
        cp = s.copy_progress.get(j)
        if cp is None:
            cp = s.copy_progress[j] = CopyProgress(len(s.copies[j]) if n is None else n)
        return cp

    def split(self, j: int) -> None:
        """Split job ``j``'s remaining steps (settled to now) among its copies by their throughput."""
        s = self.state
        cp = s.copy_progress[j]
        cs = s.copy_consts[j]
        if len(cs) == 1:
            cp.quota = None
            return
        r = [self.rates.copy_rate(j, c) for c in cs]
        total = sum(r)
        rem = s.remaining.item(j)
        cp.quota = [rem * x / total for x in r]
        s.remaining[j] = sum(cp.quota)  # the job's steps are its copies' (equal up to the last bit)

    def _cp_settle(self, j: int, t: float, start: float) -> None:
        """Progress of each copy of job ``j`` from ``start`` to ``t`` at its rate (``t > start``)."""
        s = self.state
        cp = s.copy_progress[j]
        dt = t - start
        if cp.quota is None:
            s.remaining[j] = max(0.0, s.remaining.item(j) - s.rate.item(j) * dt)
            return
        q = cp.quota
        for i, r in enumerate(cp.rate):
            if r > 0:
                q[i] = max(0.0, q[i] - r * dt)
        s.remaining[j] = sum(q)

    def _cp_rerate(self, j: int, t: float) -> None:
        """:meth:`rerate` of a job with per-copy progress: settle, each copy's rate now, and the job's next
        event (a quota done, a start-up over, the job done)."""
        s = self.state
        self.settle(j, t)
        v = s.version.item(j) + 1
        s.version[j] = v
        cp = s.copy_progress[j]
        af = max(float(t), s.active_from.item(j))
        q = cp.quota
        total = 0.0
        nxt = math.inf
        for i, c in enumerate(s.copy_consts[j]):
            r = 0.0
            if q is not None and q[i] <= 0:
                pass  # its quota is done: idle until the next split
            elif cp.ready[i] > t:
                nxt = min(nxt, cp.ready[i])
            else:
                r = self.rates.copy_rate(j, c)
                total += r
                if q is not None:
                    nxt = min(nxt, af + q[i] / r)
            cp.rate[i] = r
        s.rate[j] = total
        if q is None and total > 0:
            rem = s.remaining.item(j)
            nxt = min(nxt, af + rem / total)
            edge = self.gain_edge(j)  # the rate changes there: an event, so progress stays exact
            if edge >= 0:
                nxt = min(nxt, af + (rem - edge) / total)
        if nxt < math.inf:
            s.events.push_finish(nxt, j, v)

    def gain_edge(self, j: int) -> float:
        """The remaining iterations at which single-copy job ``j``'s batch gain next changes (its noise scale
        moves to the next part of training), or -1 when it does not."""
        s = self.state
        name = s.model_names[s.model_l[j]]
        c = s.copy_consts[j][0]
        if not has_efficiency(name) or (c.n == s.req_l[j] and s.batch_l[j] == s.batch.item(j)):
            return -1.0
        end = noise_part_end(name, self.rates.done_fraction(j))
        return -1.0 if end is None else s.iterations.item(j) * (1.0 - end)

    def copy_event(self, j: int, t: float) -> bool:
        """A completion event of a job with per-copy progress at ``t``: True when the job is done (the caller
        finishes it), else its copies' states are updated and its rate recomputed."""
        s = self.state
        self.settle(j, t)
        cp = s.copy_progress[j]
        q = cp.quota
        if q is None:
            r = s.rate.item(j)
            if r > 0 and s.remaining.item(j) <= r * QUOTA_TOL_S:
                return True
        else:
            for i, r in enumerate(cp.rate):
                if r > 0 and q[i] <= r * QUOTA_TOL_S:
                    q[i] = 0.0
            s.remaining[j] = sum(q)
            if not any(q):
                return True
        self.rerate([j], t)
        return False

    def refresh_copies(self, j: int) -> None:
        """Job ``j``'s rate without partners (``solo_rate``), smallest GPU memory and share range after its
        copies changed."""
        s = self.state
        cs = s.copy_consts[j]
        s.solo_rate[j] = sum(self.rates.solo_copy_rate(j, c) for c in cs)
        s.job_min_mem[j] = min(c.k.min_mem for c in cs)
        self.occupancy.refresh_share_range(j)

    def copy_states(self, j: int) -> list[dict[str, Any]]:
        """One dict per copy of running job ``j``: ``gpus``, ``rate`` (its throughput when it progresses, in
        iterations of the job's global batch per second), ``quota`` (steps of its quota left now; None for a
        job of one copy), ``ready`` (when its start-up ends) and ``active`` (progressing now)."""
        s = self.state
        cs: list[Copy] = s.copy_consts.get(j, [])
        cp = s.copy_progress.get(j)
        out = []
        start = max(s.last_t.item(j), s.active_from.item(j))
        dt = max(0.0, s.now - start)
        for i, c in enumerate(cs):
            quota = None
            if cp is not None and cp.quota is not None:
                quota = max(0.0, cp.quota[i] - cp.rate[i] * dt)
            ready = cp.ready[i] if cp is not None else -math.inf
            active = cp.rate[i] > 0 if cp is not None else s.rate.item(j) > 0
            out.append({"gpus": np.array(c.g, copy=True), "rate": self.rates.copy_rate(j, c), "quota": quota,
                        "ready": ready, "active": active})
        return out
