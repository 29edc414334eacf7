"""Validation of the moves of running jobs (``Reallocate``, ``DropCopy``, ``MoveCopy``): every check before
anything changes, each failure a clear :class:`~gpucluster_env.engine.actions.ActionError` naming the action
and the reason. The state changes are in :mod:`gpucluster_env.engine.moves`; the checks of the other actions
(which these reuse) in :mod:`gpucluster_env.engine.action_checks`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..catalog.pollux_efficiency import batch_range
from ..performance import fit_accumulation, fits_memory, footprint_gb
from .action_checks import ActionChecks
from .actions import ActionError, Reallocate
from .placement import Placement
from .state import EngineState


class MoveChecks:
    """Validation of the moves of running jobs on an :class:`~gpucluster_env.engine.state.EngineState`, with
    the common checks of :class:`~gpucluster_env.engine.action_checks.ActionChecks` and the placement rule
    (reads the state; changes nothing)."""

    def __init__(self, state: EngineState, checks: ActionChecks, placement: Placement) -> None:
        self.state = state
        self.checks = checks
        self.placement = placement

    def size_error(self, j: int, n: int) -> str | None:
        """Why job ``j`` may not run on ``n`` GPUs (None: it may)."""
        st = self.state
        lo, hi, req = st.min_gpus.item(j), st.max_gpus.item(j), st.req_l[j]
        if lo <= n <= hi:
            return None
        if lo == hi == req:
            return f"job {j} runs on exactly {req} GPUs (not elastic: no min_gpus/max_gpus), got {n}"
        return f"job {j} may run on {lo} to {hi} GPUs (its elastic range), got {n}"

    def check_batch(self, action: Reallocate, j: int, n: int) -> int:
        """The per-GPU batch of job ``j`` on ``n`` GPUs after ``action``: its batch now when the action names
        none, else the one named, checked (a positive integer, its total within the model's validated range)."""
        st = self.state
        if action.batch is None:
            return st.batch_l[j]
        b = action.batch
        if isinstance(b, bool | np.bool_) or not isinstance(b, int | np.integer) or b < 1:
            raise ActionError(f"{action}: batch must be a positive integer (per-GPU samples), got {b!r}")
        name = st.model_names[st.model_l[j]]
        valid = batch_range(name)
        if valid is None:
            raise ActionError(f"{action}: job {j}'s model {name} has no statistical-efficiency data (no validated "
                              "batch range), so its batch cannot change")
        lo, hi = valid
        if not lo <= n * int(b) <= hi:
            raise ActionError(f"{action}: total batch {n} x {b} = {n * int(b)} is outside {name}'s validated range "
                              f"[{lo}, {hi}]")
        return int(b)

    def check_reallocate(self, action: Reallocate) -> tuple[int, np.ndarray, int, int]:
        """Job, GPU set, accumulation and per-GPU batch of a valid ``Reallocate``, or ActionError."""
        st = self.state
        j = self.checks.running_index(action, action.job)  # job_index checks it as check_job does
        k = len(st.copies[j])
        if k > 1:
            raise ActionError(f"{action}: job {j} runs {k} copies (forked); move one with MoveCopy or drop copies "
                              "with DropCopy first")
        t = None if action.gpu_type is None else self.checks.type_index(action.gpu_type)
        if action.gpus is None:
            n = len(st.copies[j][0])
            g, _ = self.placement.plan_reallocate(j, t, n)
            if g is None:
                where = action.gpu_type or "any type"
                raise ActionError(f"{action}: no room for job {j}'s {n} GPUs ({where}), counting the GPUs it holds")
            gl = g.tolist()
        else:
            g = self.checks.check_gpus(action, action.gpus)
            gl = g.tolist()
            self._check_named(action, j, t, gl)
        batch = self.check_batch(action, j, len(gl))
        self.checks.check_measured(action, j, g, batch)
        s = self._accumulation(action, j, gl, batch)
        if s == st.accum.item(j) and batch == st.batch_l[j] and sorted(gl) == sorted(st.copy_consts[j][0].gl):
            raise ActionError(f"{action}: job {j} already runs on those GPUs at accumulation {s} and batch {batch}")
        return j, g, s, batch

    def _check_named(self, action: Reallocate, j: int, t: int | None, gl: list[int]) -> None:
        """The checks of a ``Reallocate``'s named GPUs ``gl`` for job ``j``: a size it may run on, every GPU of
        type ``t`` (when named), none holding two jobs other than ``j``."""
        st = self.state
        problem = self.size_error(j, len(gl))
        if problem:
            raise ActionError(f"{action}: {problem}")
        gt, sjf = st.gpu_type_l, st.slot_job_flat
        if t is not None and any(gt[x] != t for x in gl):
            raise ActionError(f"{action}: not every GPU named is a {action.gpu_type}")
        for x in gl:
            a, b = sjf.item(2 * x), sjf.item(2 * x + 1)
            if a >= 0 and a != j and b >= 0 and b != j:
                raise ActionError(f"{action}: a GPU of the set already holds two other jobs")

    def _accumulation(self, action: Reallocate, j: int, gl: list[int], batch: int) -> int:
        """The accumulation of job ``j`` after ``action`` on GPUs ``gl`` at per-GPU ``batch``: the one named,
        checked against the memory beside each GPU's other tenant, or the smallest that fits there."""
        st = self.state
        sjf, fp, mem, gt = st.slot_job_flat, st.footprint, st.type_mem_l, st.gpu_type_l
        room = []  # each GPU's memory less its tenant's other than j
        for x in gl:
            a = sjf.item(2 * x)
            o = sjf.item(2 * x + 1) if a == j else a
            room.append(mem[gt[x]] - (fp.item(o) if o >= 0 else 0.0))
        p = st.profiles[st.model_l[j]]
        if action.accumulation is None:
            s = fit_accumulation(p, batch, min(room))
            if s is None:
                raise ActionError(f"{action}: job {j} does not fit in GPU memory there at any accumulation")
            return s
        s = int(action.accumulation)
        if s < 1 or s & (s - 1) or s > batch:
            raise ActionError(f"{action}: accumulation must be a power of two in [1, {batch}], got "
                              f"{action.accumulation}")
        f = footprint_gb(p, batch, s)
        over = [i for i, r in enumerate(room) if not fits_memory(f, r)]
        if over:
            i = over[0]
            raise ActionError(f"{action}: memory does not fit on GPU {gl[i]}: {f:.1f} GB > {room[i]:.1f} GB "
                              "free beside its tenant")
        return s

    def check_copy(self, action: Any) -> tuple[int, int]:
        """Job and copy index of a ``DropCopy`` / ``MoveCopy`` of a forked running job, or ActionError."""
        self.checks.check_job(action, action.job)
        j = self.checks.running_index(action, int(action.job))
        k = len(self.state.copies[j])
        if k < 2:
            raise ActionError(f"{action}: job {j} runs one copy (not forked); use Preempt or Reallocate")
        i = action.copy
        if isinstance(i, bool | np.bool_) or not (isinstance(i, int | np.integer) and 0 <= i < k):
            raise ActionError(f"{action}: no copy {i!r} of job {j} (it runs copies 0 to {k - 1})")
        return j, int(i)

    def check_move_gpus(self, action: Any, j: int, i: int) -> np.ndarray:
        """The GPU set of a ``MoveCopy`` of copy ``i`` of job ``j``, checked."""
        st = self.state
        g = self.checks.check_gpus(action, action.gpus)
        old = st.copies[j][i]
        if len(g) != len(old):
            raise ActionError(f"{action}: copy {i} of job {j} runs on {len(old)} GPUs, got {len(g)}")
        mine = np.isin(g, old)
        if (st.slot_job[g[~mine], 0] >= 0).any():
            raise ActionError(f"{action}: a copy moves to free GPUs (or its own)")
        if mine.all():
            raise ActionError(f"{action}: copy {i} of job {j} already runs on those GPUs")
        rest = [c for x, c in enumerate(st.copies[j]) if x != i]
        if np.isin(st.gpu_node[g], st.gpu_node[np.concatenate(rest)]).any():
            raise ActionError(f"{action}: a copy must run on nodes the job's other copies do not use")
        fp = st.footprint.item(j)
        if not all(fits_memory(fp, m) for m in st.type_mem[st.gpu_type[g]].tolist()):
            raise ActionError(f"{action}: job {j} at accumulation {st.accum.item(j)} does not fit in memory on "
                              "those GPUs")
        return g
