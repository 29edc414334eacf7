"""Per-copy progress: HadarE's step quotas, the start-up of a new copy, and gangs resized from the size a job
asked for (elastic jobs).

A job runs the engine's plain path (:meth:`~gpucluster_env.engine.rates.Rates._job_rate`, one remaining count)
while it is one copy of the size it asked for that is not starting up. Otherwise its progress is kept per copy
here (``engine._cp[j]``, a :class:`CopyProgress`):

* **Size.** ``iterations`` count iterations of the global batch at the asked size ``N``; a copy of ``n`` GPUs
  (same per-GPU batch) does ``n / N`` of them per iteration of its own, so its rate is ``(n / N) / t_iter``.
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


class Copies:
    """Per-copy progress of :class:`~gpucluster_env.engine.simulator.ClusterEngine` (a mixin over the engine's
    state, clock, occupancy and rates)."""

    config: Any
    _cp: dict[int, CopyProgress]

    def copy_rate(self, j: int, c: Any) -> float:
        """The rate (iterations of job ``j``'s global batch per second) of its copy ``c`` when it progresses,
        under the current partners and shares."""
        r = 1.0 / self._copy_time(j, c)
        n, req = c.n, self._req_l[j]
        return r if n == req else r * (n / req)

    def _solo_copy_rate(self, j: int, c: Any) -> float:
        r = 1.0 / c.k.solo_iter
        n, req = c.n, self._req_l[j]
        return r if n == req else r * (n / req)

    def _cp_track(self, j: int, n: int | None = None) -> CopyProgress:
        """Job ``j``'s per-copy state, created if it has none (for its first ``n`` copies, default all, ready
        and with no quota)."""
        cp = self._cp.get(j)
        if cp is None:
            cp = self._cp[j] = CopyProgress(len(self.copies[j]) if n is None else n)
        return cp

    def _cp_split(self, j: int) -> None:
        """Split job ``j``'s remaining steps (settled to now) among its copies by their throughput."""
        cp = self._cp[j]
        cs = self._copy_consts[j]
        if len(cs) == 1:
            cp.quota = None
            return
        r = [self.copy_rate(j, c) for c in cs]
        total = sum(r)
        rem = self.remaining.item(j)
        cp.quota = [rem * x / total for x in r]
        self.remaining[j] = sum(cp.quota)  # the job's steps are its copies' (equal up to the last bit)

    def _cp_settle(self, j: int, t: float, start: float) -> None:
        """Progress of each copy of job ``j`` from ``start`` to ``t`` at its rate (``t > start``)."""
        cp = self._cp[j]
        dt = t - start
        if cp.quota is None:
            self.remaining[j] = max(0.0, self.remaining.item(j) - self.rate.item(j) * dt)
            return
        q = cp.quota
        for i, r in enumerate(cp.rate):
            if r > 0:
                q[i] = max(0.0, q[i] - r * dt)
        self.remaining[j] = sum(q)

    def _cp_rerate(self, j: int, t: float) -> None:
        """:meth:`~gpucluster_env.engine.clock.Clock._rerate` of a job with per-copy progress: settle, each
        copy's rate now, and the job's next event (a quota done, a start-up over, the job done)."""
        self._settle(j, t)
        v = self.version.item(j) + 1
        self.version[j] = v
        cp = self._cp[j]
        af = max(float(t), self.active_from.item(j))
        q = cp.quota
        total = 0.0
        nxt = math.inf
        for i, c in enumerate(self._copy_consts[j]):
            r = 0.0
            if q is not None and q[i] <= 0:
                pass  # its quota is done: idle until the next split
            elif cp.ready[i] > t:
                nxt = min(nxt, cp.ready[i])
            else:
                r = self.copy_rate(j, c)
                total += r
                if q is not None:
                    nxt = min(nxt, af + q[i] / r)
            cp.rate[i] = r
        self.rate[j] = total
        if q is None and total > 0:
            nxt = min(nxt, af + self.remaining.item(j) / total)
        if nxt < math.inf:
            self.events.push_finish(nxt, j, v)

    def _cp_event(self, j: int, t: float) -> bool:
        """A completion event of a job with per-copy progress at ``t``: True when the job is done (the caller
        finishes it), else its copies' states are updated and its rate recomputed."""
        self._settle(j, t)
        cp = self._cp[j]
        q = cp.quota
        if q is None:
            r = self.rate.item(j)
            if r > 0 and self.remaining.item(j) <= r * QUOTA_TOL_S:
                return True
        else:
            for i, r in enumerate(cp.rate):
                if r > 0 and q[i] <= r * QUOTA_TOL_S:
                    q[i] = 0.0
            self.remaining[j] = sum(q)
            if not any(q):
                return True
        self._rerate([j], t)
        return False

    def _cp_refresh(self, j: int) -> None:
        """Job ``j``'s rate without partners (``solo_rate``) and smallest GPU memory after its copies changed."""
        cs = self._copy_consts[j]
        self.solo_rate[j] = sum(self._solo_copy_rate(j, c) for c in cs)
        self.job_min_mem[j] = min(c.k.min_mem for c in cs)
        self._refresh_share_range(j)

    # ------------------------------------------------------------------ queries
    def copy_states(self, j: int) -> list[dict[str, Any]]:
        """One dict per copy of running job ``j``: ``gpus``, ``rate`` (its throughput when it progresses, in
        iterations of the job's global batch per second), ``quota`` (steps of its quota left now; None for a
        job of one copy), ``ready`` (when its start-up ends) and ``active`` (progressing now)."""
        cs = self._copy_consts.get(j, [])
        cp = self._cp.get(j)
        out = []
        start = max(self.last_t.item(j), self.active_from.item(j))
        dt = max(0.0, self.now - start)
        for i, c in enumerate(cs):
            quota = None
            if cp is not None and cp.quota is not None:
                quota = max(0.0, cp.quota[i] - cp.rate[i] * dt)
            ready = cp.ready[i] if cp is not None else -math.inf
            active = cp.rate[i] > 0 if cp is not None else self.rate.item(j) > 0
            out.append({"gpus": np.array(c.g, copy=True), "rate": self.copy_rate(j, c), "quota": quota,
                        "ready": ready, "active": active})
        return out
