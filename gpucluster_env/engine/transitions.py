"""The state changes actions and events make: a job starts (place, colocate), finishes, is preempted, has its
MPS share changed (squeeze, swell) or is forked. Each runs after its action's checks
(:mod:`gpucluster_env.engine.checks`) and leaves every count, rate and completion event up to date.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..performance import fits_memory, footprint_gb
from . import placement
from .actions import Action, ActionError
from .rates import sharing_benefit
from .state import DONE, PENDING, RUNNING, SHARE_MIN_UNITS


class Transitions:
    """Starts, finishes, preemptions, share changes and forks of
    :class:`~gpucluster_env.engine.simulator.ClusterEngine` (a mixin over the engine's other parts)."""

    config: Any

    def _place(self, action: Action | tuple, j: int, t: int | str | None, accumulation: int | None) -> None:
        """Place of job ``j`` (a valid index) by the placement rule on type ``t`` (an index, a name, or None
        for any)."""
        self._require(action, j, PENDING, "job")
        if type(t) is str:
            t = self._type_index(t)
        planned, gt = placement.plan_place(self, j, t)
        if planned is None:
            where = self._typed(action).gpu_type or "any type"
            raise ActionError(f"{self._typed(action)}: not enough free GPUs ({where}) for job {j}")
        self._start(j, planned, self._check_start(action, j, planned, accumulation, gt))

    def _colocate(self, action: Action | tuple, j: int, p: int, accumulation: int | None) -> None:
        """Colocate of job ``j`` with partner ``p`` (valid indices) on the GPUs of the colocation rule."""
        self._require(action, p, RUNNING, "partner")
        self._require(action, j, PENDING, "job")
        planned, t = placement.plan_colocate(self, j, p)
        if planned is None:
            raise ActionError(f"{self._typed(action)}: partner {p} has no room for job {j}")
        self._start(j, planned, self._check_start(action, j, planned, accumulation, t, p))

    def _start(self, j: int, g: np.ndarray, s: int) -> None:
        """Start pending job ``j`` on ``g`` at accumulation ``s``."""
        t = self.now
        self._pending.pop(j, None)
        self._running[j] = None
        self.queue_version += 1
        self.status[j] = RUNNING
        self.accum[j] = s
        self.footprint[j] = footprint_gb(self.profiles[self._model_l[j]], self._batch_l[j], s)
        self.queue_s[j] = self.queue_s.item(j) + (t - self.pending_since.item(j))  # queue_s[j] += ...
        if math.isnan(self.first_start.item(j)):
            self.first_start[j] = t
        self.last_start[j] = t
        self.last_t[j] = t
        # restart_s after a preemption; with restart_on_allocation (Hadar) on every new allocation, the first too
        cfg = self.config
        self.active_from[j] = t + (cfg.restart_s if self.n_preempt.item(j) > 0 or cfg.restart_on_allocation else 0.0)
        self.copies[j] = [g]
        gl = g.tolist()
        c = self._new_copy(j, g, s, gl)
        self._copy_consts[j] = [c]
        self.job_min_mem[j] = c.k.min_mem
        self.share_lo[j] = self.share_hi[j] = self.share_units
        self.solo_rate[j] = 1.0 / c.k.solo_iter
        partners = self._occupy(j, c)
        self.log.records.append((t, "start", j, {"gpus": gl[:], "accumulation": s}))  # log.add(...)
        if partners:
            self.counts["colocations"] += 1
            self.n_colocated[j] += 1
            rate = self.rate
            before = {p: rate.item(p) for p in partners}
            self._rerate(sorted(partners | {j}), t)
            self.sharing_benefits.append(sharing_benefit(self, j, partners, before, c.k.solo_iter))
        else:
            self._rerate([j], t)

    def _finish(self, j: int, t: float) -> None:
        self._running.pop(j, None)
        self.queue_version += 1
        self._forked.discard(j)
        self._cp.pop(j, None)
        self.status[j] = DONE
        self.remaining[j] = 0.0
        self.rate[j] = 0.0
        self.solo_rate[j] = 0.0
        self.finish_t[j] = t
        self.n_done += 1
        partners = self._vacate_all(j)
        self.log.records.append((t, "finish", j, None))  # log.add(t, "finish", j)
        self._rerate(sorted(partners), t)

    def _preempt(self, j: int) -> None:
        t = self.now
        self._settle(j, t)
        self._running.pop(j, None)
        self._forked.discard(j)
        self._cp.pop(j, None)
        self._pending[j] = None
        self.queue_version += 1
        self.status[j] = PENDING
        self.rate[j] = 0.0
        self.solo_rate[j] = 0.0
        self.version[j] = self.version.item(j) + 1
        self.pending_since[j] = t
        self.n_preempt[j] = self.n_preempt.item(j) + 1
        self.counts["preemptions"] += 1
        partners = self._vacate_all(j)
        self.log.records.append((t, "preempt", j, None))  # log.add(t, "preempt", j)
        self._rerate(sorted(partners), t)

    def _calibrate(self, action: Action | tuple, j: int, step: int, gpus: tuple[int, ...] | None) -> None:
        """One share step of the engine's grid (``step`` -1 squeeze, +1 swell) of running job ``j`` on ``gpus``
        (None: all its GPUs)."""
        j = self._running_index(action, j)
        lo, hi, full = self.share_lo.item(j), self.share_hi.item(j), self.share_units
        if gpus is None:
            if (step < 0 and hi <= SHARE_MIN_UNITS) or (step > 0 and lo >= full):
                bound = "minimum" if step < 0 else "maximum"
                raise ActionError(f"{self._typed(action)}: job {j}'s share is already at the {bound} on all its GPUs")
            g = self.gpus_of(j)
        else:
            g = self._check_gpus(action, gpus)
            if not np.isin(g, self.gpus_of(j)).all():
                raise ActionError(f"{self._typed(action)}: job {j} does not run on every GPU named")
        gl = g.tolist()
        sjf, ssf = self._sj_flat, self._ss_flat
        pos = [2 * x + (sjf.item(2 * x + 1) == j) for x in gl]  # j's slot on each GPU, as a flat index
        if gpus is None and lo == hi:
            # one share on every GPU, and the check above keeps lo + step within bounds
            for i in pos:
                ssf[i] = lo + step
            self.share_lo[j] = self.share_hi[j] = lo + step
        else:
            cur = [ssf.item(i) for i in pos]
            new = [min(x + 1, full) if step > 0 else max(x - 1, SHARE_MIN_UNITS) for x in cur]
            if new == cur:
                bound = "minimum" if step < 0 else "maximum"
                raise ActionError(f"{self._typed(action)}: job {j}'s share is already at the {bound} on those GPUs")
            for i, x in zip(pos, new, strict=True):
                ssf[i] = x
            self._refresh_share_range(j)
        self.counts["squeezes" if step < 0 else "swells"] += 1
        self._sm.mark_all()
        t = self.now
        if self.config.calibration_overhead_s > 0:
            self._pause(j, t, t + self.config.calibration_overhead_s)
        self.log.records.append((t, "squeeze" if step < 0 else "swell", j, {"gpus": gl[:]}))  # log.add(...)
        self._rerate(sorted({j, *self._shared_with.get(j, ())}), t)

    def _fork(self, action: Action | tuple, j: int, copies: int, gpus: tuple[int, ...] | None) -> None:
        j = self._job_index(action, j)
        self._fork_error(action, j, copies, gpus)
        if len(self.copies[j][0]) != self._req_l[j]:
            raise ActionError(f"{self._typed(action)}: job {j} runs on {len(self.copies[j][0])} GPUs, not the "
                              f"{self._req_l[j]} it asked for; copies are full-size gangs (Reallocate it back first)")
        t = self.now
        self._settle(j, t)  # progress so far at the old rate, before the steps are split among the copies
        plans: list[np.ndarray] = []
        saved = (float(self.job_min_mem[j]), float(self.solo_rate[j]))
        try:
            for _ in range(copies):
                plans.append(self._fork_one(action, j, gpus))
        except ActionError:
            # all or nothing: give back the copies already placed by this action
            for _ in plans:
                self._vacate(j, self._copy_consts[j].pop())
                self.copies[j].pop()
            self.job_min_mem[j], self.solo_rate[j] = saved
            raise
        self._refresh_share_range(j)  # the new copies start at 100% share
        self._forked.add(j)
        self.max_copies[j] = max(self.max_copies[j], len(self.copies[j]))
        self.counts["forks"] += len(plans)
        # per-copy progress (engine.copies): the new copies start up, the steps left are split by throughput
        cp = self._cp_track(j, len(self.copies[j]) - len(plans))
        cp.ready += [t + self.config.copy_startup_s] * len(plans)
        cp.rate += [0.0] * len(plans)
        self._cp_split(j)
        for g in plans:
            self.log.add(t, "fork", j, gpus=g.tolist())
        self._rerate([j], t)

    def _fork_one(self, action: Action | tuple, j: int, gpus: tuple[int, ...] | None) -> np.ndarray:
        """Check and occupy the GPUs of one more copy of job ``j``; raise ActionError before any change."""
        if gpus is not None:
            g = self._check_fork_gpus(action, j, gpus)
        else:
            g = placement.plan_fork(self, j)
            if g is None:
                raise ActionError(f"{self._typed(action)}: no free node for another copy of job {j}")
        fp = self.footprint.item(j)
        if not all(fits_memory(fp, m) for m in self.type_mem[self.gpu_type[g]].tolist()):
            raise ActionError(f"{self._typed(action)}: job {j} does not fit in memory on those GPUs")
        c = self._new_copy(j, g, int(self.accum[j]))
        self._occupy(j, c)
        self.copies[j].append(g)
        self._copy_consts[j].append(c)
        self.job_min_mem[j] = min(self.job_min_mem[j], c.k.min_mem)
        self.solo_rate[j] += 1.0 / c.k.solo_iter
        return g
