"""The running jobs Castor may pair a waiting job with -- those holding a GPU alone -- kept from one decision to
the next (castor §5 Algorithm 1's candidate partners): only the partners on GPUs whose lone tenant changed, or
whose run did, are looked at again; while no GPU's tenants changed, nothing is."""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

import numpy as np

from gpucluster_env.engine.view import ClusterView


class PartnerColumns:
    """What a Castor decision keeps of each running partner (a slot, for one run of it): by the GPUs a pending
    job asks (a need class), the pair class (:meth:`.castor_terms.PairTermCache.class_of`) of the GPUs it would
    get beside the partner, one kept while the partner's singly-held GPUs stay the same (:attr:`stable`), one
    while the free GPUs stay the same too (:attr:`loose`); 0: not yet known."""

    def __init__(self, n_classes: int) -> None:
        self.slots: dict[int, tuple[float, int]] = {}
        """Partner -> (the start of its run, its slot)."""
        self._free: list[int] = []
        self._keys: list[Any] = []  # by slot: the stable column's key
        self._past: list[dict[Any, np.ndarray]] = []  # by slot: its stable columns at its run's other keys
        self._loose_epoch = np.zeros(0, dtype=np.int64)  # by slot: the free-GPU epoch of its loose column
        self.stable = np.zeros((0, n_classes), dtype=np.int64)
        self.loose = np.zeros((0, n_classes), dtype=np.int64)

    def slot_of(self, p: int, start: float) -> int:
        """Partner ``p``'s slot for its run started at ``start`` (a fresh one for a new run)."""
        kept = self.slots.get(p)
        if kept is not None and kept[0] == start:
            return kept[1]
        if kept is not None:
            self.release(p)
        if not self._free:
            self._grow()
        s = self._free.pop()
        self.slots[p] = (start, s)
        self._keys[s] = None
        self._past[s] = {}
        self.stable[s] = self.loose[s] = 0
        self._loose_epoch[s] = -1
        return s

    def release(self, p: int) -> None:
        """Forget partner ``p`` (its run ended)."""
        kept = self.slots.pop(p, None)
        if kept is not None:
            self._free.append(kept[1])

    def columns(self, slot: int, stable_key: Any) -> None:
        """Start a slot's columns afresh when its stable key changed (the loose column reads it too); the
        stable column is the one kept at that key earlier in the run, if any (the same GPUs alone)."""
        old = self._keys[slot]
        if old != stable_key:
            past = self._past[slot]
            if old is not None:
                past[old] = self.stable[slot].copy()
            self._keys[slot] = stable_key
            self.stable[slot] = past.pop(stable_key, 0)
            self.loose[slot] = 0
            self._loose_epoch[slot] = -1

    def loose_at(self, slots: np.ndarray, epoch: int) -> None:
        """Start the loose columns of ``slots`` afresh where they were kept at another free-GPU ``epoch`` (a
        number the caller moves on whenever the free GPUs change)."""
        old = slots[self._loose_epoch[slots] != epoch]
        if len(old):
            self.loose[old] = 0
            self._loose_epoch[old] = epoch

    def _grow(self) -> None:
        n = len(self._keys)
        m = max(8, 2 * n)
        self.stable = np.concatenate([self.stable, np.zeros((m - n, self.stable.shape[1]), dtype=np.int64)])
        self.loose = np.concatenate([self.loose, np.zeros((m - n, self.loose.shape[1]), dtype=np.int64)])
        self._keys += [None] * (m - n)
        self._past += [{} for _ in range(m - n)]
        self._loose_epoch = np.concatenate([self._loose_epoch, np.full(m - n, -1, dtype=np.int64)])
        self._free += list(range(m - 1, n - 1, -1))


class LonePartners:
    """The partners holding a GPU alone, each one's singly-held GPUs (:attr:`singles`), its slot in the
    :class:`PartnerColumns` and how many GPUs it holds alone, and the free-GPU epoch (a number moved on
    whenever the free GPUs change). :attr:`version` moves on whenever any of that may have changed."""

    def __init__(self) -> None:
        self.singles: dict[int, tuple[Any, np.ndarray]] = {}
        """Partner -> (its run's start and singly-held GPUs by index, those GPUs in
        :meth:`ClusterView.single_gpus_of` order), kept while that key is the same."""
        self.free_epoch = 0
        self.version = 0
        self._free_key = b""
        self._tenants = b""
        self._ver: Any = None  # the view's tenants_version at the last call
        self._kept: tuple[list[int], np.ndarray, bytes] | None = None
        self._answer: tuple[list[int], np.ndarray, np.ndarray, np.ndarray] | None = None
        self._lone = self._slot_by_job = self.n_by_job = np.zeros(0, dtype=np.int64)
        self._start_by_job = np.zeros(0)
        self._count: list[int] = []  # by job: how many GPUs it holds alone
        self._holders: list[int] = []  # the jobs holding a GPU alone, increasing

    def now(self, view: ClusterView, memo: PartnerColumns) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
        """The partners (by index, increasing, as a list and an array), their slots in ``memo`` and how many
        GPUs each holds alone (arrays the caller must not write). The last answer while no GPU's tenants
        changed and no partner's run did; else worked out afresh only for the partners whose singly-held GPUs
        changed since the last call (the old and new tenants of the GPUs whose lone tenant changed) or whose
        run did: each of those gets its singly-held GPUs and its slot, whose columns start afresh when that key
        changed (:meth:`PartnerColumns.columns`); the others keep theirs. The loose columns of the slots start
        afresh where the free GPUs changed (:meth:`PartnerColumns.loose_at`)."""
        if len(self._slot_by_job) != view.n_jobs or len(self._lone) != view.num_gpus:  # a new episode
            self._kept = self._answer = None
            self._lone = np.full(view.num_gpus, -1, dtype=np.int64)  # each GPU's lone tenant, last call
            self._slot_by_job = np.zeros(view.n_jobs, dtype=np.int64)  # by partner: slot, GPUs alone, run
            self.n_by_job = np.zeros(view.n_jobs, dtype=np.int64)
            self._start_by_job = np.full(view.n_jobs, np.nan)
            self._count, self._holders = [0] * view.n_jobs, []
        ver = view.tenants_version
        if ver == self._ver and self._answer is not None:  # no start or stop since: no tenant or run changed
            return self._answer
        self._ver = ver
        ten = view.tenants()
        tb = ten.tobytes()
        kept = self._kept
        if kept is not None and self._answer is not None and tb == self._tenants and \
                view.last_start_of(kept[1]).tobytes() == kept[2]:
            return self._answer
        self._tenants = tb
        self.version += 1
        lone = np.where(ten[:, 1] < 0, ten[:, 0], -1)
        free_key = (ten[:, 0] < 0).tobytes()
        if self._free_key != free_key:
            self._free_key, self.free_epoch = free_key, self.free_epoch + 1
        changed = (lone != self._lone).nonzero()[0]
        if len(changed) == 0 and kept is not None and view.last_start_of(kept[1]).tobytes() == kept[2]:
            holders, hold = kept[0], kept[1]
        else:
            holders, hold = self._refresh(view, memo, lone, changed)
        slots = self._slot_by_job[hold]
        memo.loose_at(slots, self.free_epoch)
        self._answer = (holders, hold, slots, self.n_by_job[hold])
        return self._answer

    def _refresh(self, view: ClusterView, memo: PartnerColumns, lone: np.ndarray, changed: np.ndarray
                 ) -> tuple[list[int], np.ndarray]:
        """:meth:`now` where GPUs ``changed`` their lone tenant (or a partner's run changed): the new partners,
        as a list and an array, with the slots and counts of those whose GPUs or run changed. The partners are
        kept as a sorted list with each job's count of GPUs held alone, moved by the GPUs that changed."""
        count, holders = self._count, self._holders
        touched = set()
        for x in self._lone[changed].tolist():  # lost a GPU held alone
            if x >= 0:
                count[x] -= 1
                touched.add(x)
        for x in lone[changed].tolist():  # gained one
            if x >= 0:
                count[x] += 1
                touched.add(x)
        for x in touched:
            i = bisect_left(holders, x)
            there = i < len(holders) and holders[i] == x
            if count[x] and not there:
                holders.insert(i, x)
            elif there and not count[x]:
                del holders[i]
        hold = np.array(holders, dtype=np.int64)
        starts = view.last_start_of(hold)
        fresh = touched.union(hold[self._start_by_job[hold] != starts].tolist())  # or a new run (none kept: NaN)
        for p in sorted(fresh):
            if not count[p]:
                continue
            start = float(view.last_start(p))
            key = (start, (lone == p).nonzero()[0].tobytes())
            entry = self.singles.get(p)
            if entry is None or entry[0] != key:
                entry = self.singles[p] = (key, view.single_gpus_of(p))
            self._slot_by_job[p] = s = memo.slot_of(p, start)
            memo.columns(s, key)
            self.n_by_job[p] = len(entry[1])
        self._start_by_job[hold] = starts
        self._lone = lone
        self._kept = (list(holders), hold, starts.tobytes())
        return self._kept[0], hold
