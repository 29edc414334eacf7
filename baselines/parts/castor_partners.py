"""The running jobs Castor may pair a waiting job with -- those holding a GPU alone -- kept from one decision to
the next (castor §5 Algorithm 1's candidate partners): only the partners on GPUs whose lone tenant changed, or
whose run did, are looked at again."""

from __future__ import annotations

from typing import Any

import numpy as np
from gpucluster_env.baselines.parts.castor_pairs import PartnerColumns

from gpucluster_env.engine.view import ClusterView


class LonePartners:
    """The partners holding a GPU alone, each one's singly-held GPUs (:attr:`singles`), its slot in the
    :class:`.castor_pairs.PartnerColumns` and how many GPUs it holds alone, and the free-GPU epoch (a number
    moved on whenever the free GPUs change)."""

    def __init__(self) -> None:
        self.singles: dict[int, tuple[Any, np.ndarray]] = {}
        """Partner -> (its run's start and singly-held GPUs by index, those GPUs in
        :meth:`ClusterView.single_gpus_of` order), kept while that key is the same."""
        self.free_epoch = 0
        self._free_key = b""
        self._kept: tuple[list[int], np.ndarray, bytes] | None = None
        self._gpus = self._lone = self._slot_by_job = self.n_by_job = np.zeros(0, dtype=np.int64)
        self._start_by_job = np.zeros(0)

    def now(self, view: ClusterView, memo: PartnerColumns) -> tuple[list[int], np.ndarray, np.ndarray]:
        """The partners (by index, increasing), their slots in ``memo`` and how many GPUs each holds alone.
        Worked out afresh only for the partners whose singly-held GPUs changed since the last call (the old
        and new tenants of the GPUs whose lone tenant changed) or whose run did: each of those gets its
        singly-held GPUs and its slot, whose columns start afresh when that key changed
        (:meth:`.castor_pairs.PartnerColumns.columns`); the others keep theirs. The loose columns of the slots
        start afresh where the free GPUs changed (:meth:`.castor_pairs.PartnerColumns.loose_at`)."""
        if len(self._slot_by_job) != view.n_jobs or len(self._gpus) != view.num_gpus:  # a new episode
            self._kept = None
            self._gpus = np.arange(view.num_gpus)
            self._lone = np.full(view.num_gpus, -1, dtype=np.int64)  # each GPU's lone tenant, last call
            self._slot_by_job = np.zeros(view.n_jobs, dtype=np.int64)  # by partner: slot, GPUs alone, run
            self.n_by_job = np.zeros(view.n_jobs, dtype=np.int64)
            self._start_by_job = np.full(view.n_jobs, np.nan)
        ten = view.tenants(self._gpus)
        lone = np.where(ten[:, 1] < 0, ten[:, 0], -1)
        free_key = np.flatnonzero(ten[:, 0] < 0).tobytes()
        if self._free_key != free_key:
            self._free_key, self.free_epoch = free_key, self.free_epoch + 1
        kept = self._kept
        changed = np.flatnonzero(lone != self._lone)
        if len(changed) == 0 and kept is not None and view.last_start_of(kept[1]).tobytes() == kept[2]:
            holders, hold = kept[0], kept[1]
        else:
            holders, hold = self._refresh(view, memo, lone, changed)
        slots = self._slot_by_job[hold]
        memo.loose_at(slots, self.free_epoch)
        return holders, slots, self.n_by_job[hold]

    def _refresh(self, view: ClusterView, memo: PartnerColumns, lone: np.ndarray, changed: np.ndarray
                 ) -> tuple[list[int], np.ndarray]:
        """:meth:`now` where GPUs ``changed`` their lone tenant (or a partner's run changed): the new partners,
        as a list and an array, with the slots and counts of those whose GPUs or run changed."""
        old = self._kept
        hold = np.unique(lone[lone >= 0])
        starts = view.last_start_of(hold)
        fresh = np.ones(len(hold), dtype=bool)
        if old is not None:  # a partner kept as it was: in the last set, same run, none of its GPUs changed
            mark = np.zeros(view.n_jobs + 1, dtype=np.int8)  # by job (-1, no tenant, the last): 1 was a partner
            mark[old[1]] = 1
            mark[self._lone[changed]] = mark[lone[changed]] = 2  # 2: lost or gained a GPU held alone
            fresh = (mark[hold] != 1) | (self._start_by_job[hold] != starts)
        for p, start in zip(hold[fresh].tolist(), starts[fresh].tolist(), strict=True):
            key = (start, np.flatnonzero(lone == p).tobytes())
            entry = self.singles.get(p)
            if entry is None or entry[0] != key:
                entry = self.singles[p] = (key, view.single_gpus_of(p))
            self._slot_by_job[p] = s = memo.slot_of(p, start)
            memo.columns(s, key)
            self.n_by_job[p] = len(entry[1])
        self._start_by_job[hold] = starts
        self._lone = lone
        holders = hold.tolist()
        self._kept = (holders, hold, starts.tobytes())
        return holders, hold
