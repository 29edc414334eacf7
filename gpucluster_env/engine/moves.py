"""The state changes of the moves of running jobs: ``Reallocate`` (Gavel's and Hadar's per-round allocations:
another GPU set, type or size in one action, paying ``restart_s``), and HadarE's ``DropCopy`` and ``MoveCopy``
of one copy of a forked job. Each runs after its checks (:mod:`gpucluster_env.engine.checks_mech`) and
leaves every count, rate and completion event up to date.
"""

from __future__ import annotations

from typing import Any

from ..performance import footprint_gb
from .actions import DropCopy, MoveCopy, Reallocate
from .copies import CopyProgress


class Moves:
    """Reallocation and copy moves of :class:`~gpucluster_env.engine.simulator.ClusterEngine` (a mixin over
    its other parts)."""

    config: Any

    def _reallocate(self, action: Reallocate) -> None:
        j, g, s = self._check_reallocate(action)
        t = self.now
        self._settle(j, t)  # progress so far, at the old GPUs' rate
        old = self._copy_consts[j][0]
        partners = self._vacate(j, old)
        gl = g.tolist()
        c = self._new_copy(j, g, s, gl)
        self.copies[j] = [g]
        self._copy_consts[j] = [c]
        self.accum[j] = s
        self.footprint[j] = footprint_gb(self.profiles[self._model_l[j]], self._batch_l[j], s)
        self.share_lo[j] = self.share_hi[j] = self.share_units
        partners |= self._occupy(j, c)
        if c.n != self._req_l[j]:
            self._cp[j] = CopyProgress(1)  # a resized gang: its rate is scaled by n / N (engine.copies)
        else:
            self._cp.pop(j, None)
        self._cp_refresh_one(j, c)
        self._pause(j, t, t + self.config.restart_s)  # a checkpoint-restart on the new GPUs
        self.counts["reallocations"] += 1
        self.log.records.append((t, "reallocate", j, {"gpus": gl[:], "accumulation": s}))
        self._rerate(sorted(partners | {j}), t)

    def _cp_refresh_one(self, j: int, c: Any) -> None:
        self.solo_rate[j] = self._solo_copy_rate(j, c)
        self.job_min_mem[j] = c.k.min_mem

    def _drop_copy(self, action: DropCopy) -> None:
        j, i = self._check_copy(action)
        t = self.now
        self._settle(j, t)
        c = self._copy_consts[j].pop(i)
        self.copies[j].pop(i)
        cp = self._cp[j]
        cp.ready.pop(i)
        cp.rate.pop(i)
        partners = self._vacate(j, c)
        if len(self.copies[j]) == 1:
            self._forked.discard(j)
        self._cp_refresh(j)
        self._cp_split(j)
        self.counts["copy_drops"] += 1
        self.log.records.append((t, "drop_copy", j, {"gpus": c.gl[:]}))
        self._rerate(sorted(partners | {j}), t)

    def _move_copy(self, action: MoveCopy) -> None:
        j, i = self._check_copy(action)
        g = self._check_move_gpus(action, j, i)
        t = self.now
        self._settle(j, t)
        old = self._copy_consts[j][i]
        partners = self._vacate(j, old)
        gl = g.tolist()
        c = self._new_copy(j, g, self.accum.item(j), gl)
        self.copies[j][i] = g
        self._copy_consts[j][i] = c
        partners |= self._occupy(j, c)
        cp = self._cp[j]
        cp.ready[i] = t + self.config.copy_startup_s
        self._cp_refresh(j)
        self._cp_split(j)
        self.counts["copy_moves"] += 1
        self.log.records.append((t, "move_copy", j, {"gpus": gl[:], "from": old.gl[:]}))
        self._rerate(sorted(partners | {j}), t)
