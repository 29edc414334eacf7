"""Validation of the moves of running jobs (``Reallocate``, ``DropCopy``, ``MoveCopy``): every check before
anything changes, each failure a clear :class:`~gpucluster_env.engine.actions.ActionError` naming the action
and the reason. The state changes are in :mod:`gpucluster_env.engine.moves`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..performance import fit_accumulation, fits_memory, footprint_gb
from . import placement
from .actions import ActionError, Reallocate


class MoveChecks:
    """Checks of the moves of :class:`~gpucluster_env.engine.simulator.ClusterEngine` (a mixin over its
    state, occupancy and :class:`~gpucluster_env.engine.checks.Checks`)."""

    config: Any

    def _size_error(self, j: int, n: int) -> str | None:
        """Why job ``j`` may not run on ``n`` GPUs (None: it may)."""
        lo, hi, req = self.min_gpus.item(j), self.max_gpus.item(j), self._req_l[j]
        if lo <= n <= hi:
            return None
        if lo == hi == req:
            return f"job {j} runs on exactly {req} GPUs (not elastic: no min_gpus/max_gpus), got {n}"
        return f"job {j} may run on {lo} to {hi} GPUs (its elastic range), got {n}"

    def _others_on(self, j: int, g: np.ndarray) -> np.ndarray:
        """For each GPU of ``g``, the one job other than ``j`` on it (-1: none); ActionError-free: the caller
        checks that no GPU holds two jobs other than ``j``."""
        sj = self.slot_job[g]
        return np.where(sj[:, 0] == j, sj[:, 1], sj[:, 0])

    def _check_reallocate(self, action: Reallocate) -> tuple[int, np.ndarray, int]:
        """Job, GPU set and accumulation of a valid ``Reallocate``, or ActionError."""
        self._check_job(action, action.job)
        j = self._running_index(action, int(action.job))
        k = len(self.copies[j])
        if k > 1:
            raise ActionError(f"{action}: job {j} runs {k} copies (forked); move one with MoveCopy or drop copies "
                              "with DropCopy first")
        t = None if action.gpu_type is None else self._type_index(action.gpu_type)
        if action.gpus is None:
            n = len(self.copies[j][0])
            g, _ = placement.plan_reallocate(self, j, t, n)
            if g is None:
                where = action.gpu_type or "any type"
                raise ActionError(f"{action}: no room for job {j}'s {n} GPUs ({where}), counting the GPUs it holds")
        else:
            g = self._check_gpus(action, action.gpus)
            problem = self._size_error(j, len(g))
            if problem:
                raise ActionError(f"{action}: {problem}")
            if t is not None and (self.gpu_type[g] != t).any():
                raise ActionError(f"{action}: not every GPU named is a {action.gpu_type}")
            sj = self.slot_job[g]
            if ((sj[:, 0] >= 0) & (sj[:, 0] != j) & (sj[:, 1] >= 0) & (sj[:, 1] != j)).any():
                raise ActionError(f"{action}: a GPU of the set already holds two other jobs")
        self._check_measured(action, j, g)
        others = self._others_on(j, g)
        room = self.type_mem[self.gpu_type[g]] - np.where(others >= 0, self.footprint[np.maximum(others, 0)], 0.0)
        p, batch = self.profiles[self._model_l[j]], self._batch_l[j]
        if action.accumulation is None:
            s = fit_accumulation(p, batch, float(room.min()))
            if s is None:
                raise ActionError(f"{action}: job {j} does not fit in GPU memory there at any accumulation")
        else:
            s = int(action.accumulation)
            if s < 1 or s & (s - 1) or s > batch:
                raise ActionError(f"{action}: accumulation must be a power of two in [1, {batch}], got "
                                  f"{action.accumulation}")
            fp = footprint_gb(p, batch, s)
            over = [i for i, r in enumerate(room.tolist()) if not fits_memory(fp, r)]
            if over:
                gi = int(g[over[0]])
                raise ActionError(f"{action}: memory does not fit on GPU {gi}: {fp:.1f} GB > {room[over[0]]:.1f} GB "
                                  "free beside its tenant")
        if s == self.accum.item(j) and sorted(g.tolist()) == sorted(self.copies[j][0].tolist()):
            raise ActionError(f"{action}: job {j} already runs on those GPUs at accumulation {s}")
        return j, g, s

    def _check_copy(self, action: Any) -> tuple[int, int]:
        """Job and copy index of a ``DropCopy`` / ``MoveCopy`` of a forked running job, or ActionError."""
        self._check_job(action, action.job)
        j = self._running_index(action, int(action.job))
        k = len(self.copies[j])
        if k < 2:
            raise ActionError(f"{action}: job {j} runs one copy (not forked); use Preempt or Reallocate")
        i = action.copy
        if isinstance(i, bool | np.bool_) or not (isinstance(i, int | np.integer) and 0 <= i < k):
            raise ActionError(f"{action}: no copy {i!r} of job {j} (it runs copies 0 to {k - 1})")
        return j, int(i)

    def _check_move_gpus(self, action: Any, j: int, i: int) -> np.ndarray:
        """The GPU set of a ``MoveCopy`` of copy ``i`` of job ``j``, checked."""
        g = self._check_gpus(action, action.gpus)
        old = self.copies[j][i]
        if len(g) != len(old):
            raise ActionError(f"{action}: copy {i} of job {j} runs on {len(old)} GPUs, got {len(g)}")
        mine = np.isin(g, old)
        if (self.slot_job[g[~mine], 0] >= 0).any():
            raise ActionError(f"{action}: a copy moves to free GPUs (or its own)")
        if mine.all():
            raise ActionError(f"{action}: copy {i} of job {j} already runs on those GPUs")
        rest = [c for x, c in enumerate(self.copies[j]) if x != i]
        if np.isin(self.gpu_node[g], self.gpu_node[np.concatenate(rest)]).any():
            raise ActionError(f"{action}: a copy must run on nodes the job's other copies do not use")
        fp = self.footprint.item(j)
        if not all(fits_memory(fp, m) for m in self.type_mem[self.gpu_type[g]].tolist()):
            raise ActionError(f"{action}: job {j} at accumulation {self.accum.item(j)} does not fit in memory on "
                              "those GPUs")
        return g
