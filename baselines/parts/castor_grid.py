"""Castor's (job shape x partner) grid of pair terms, kept from one decision to the next (castor §5 Algorithm
2's inputs for every pair of a decision): the term-store row of each cell and its rejected window's ends.

A cell's row is that of its pair class (:meth:`.castor_terms.PairTermCache.class_of`: what the terms read of
the partner's run and of the GPUs the shape's jobs would get beside it) and its shape. The GPUs read only how
many GPUs the job asks, so each partner keeps one class by need (:class:`.castor_partners.PartnerColumns`),
found once while its singly-held GPUs (and, where free GPUs top them up, the free GPUs) stay the same, and the
table of rows by (class, shape) is shared by every partner alike. While no GPU's tenants changed and the
waiting jobs' shapes are the same, the grid is the last one; else it is one gather from those tables, with
only the cells not yet known worked out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gpucluster_env.baselines.parts.castor_partners import LonePartners, PartnerColumns
from gpucluster_env.baselines.parts.castor_terms import PairTermCache, shape_ids

from gpucluster_env.engine.view import ClusterView

GpusFor = Callable[[ClusterView, int, int, np.ndarray], np.ndarray]
"""``(view, pending job, partner, partner's singly-held GPUs) -> the GPUs the job would get beside it``: where
those GPUs alone answer (:meth:`PairGrid._classes`), the first as many of them as the job asks (all when it
asks more)."""
TermsFor = Callable[[ClusterView, int, int, np.ndarray, int], Any]
"""``(view, pending job, partner, GPUs, pair class) -> the pair's terms (a tuple, or None: it cannot share
there)``."""


class PairGrid:
    """The rows of every (shape, partner holding a GPU alone) cell of a decision, kept by what they read."""

    def __init__(self) -> None:
        self.terms = PairTermCache()
        self.store = self.terms.store
        self.partners = LonePartners()
        self.memo = PartnerColumns(0)
        self.shape_id = np.zeros(0, dtype=np.int64)
        """Each job's shape id (:func:`.castor_terms.shape_ids`, fixed for the episode)."""
        self.shape_need = np.zeros(0, dtype=np.int64)
        """Each shape's GPUs asked."""
        self._needs = self._class = self._all = np.zeros(0, dtype=np.int64)
        self._key: tuple[int, bytes] | None = None
        self._want = np.zeros(0, dtype=bool)  # by need class: whether a shape of the last pending jobs asks it
        self._kept: tuple[np.ndarray, np.ndarray, np.ndarray] = (self._needs,) * 3

    def shapes(self, view: ClusterView, jobs: np.ndarray) -> np.ndarray:
        """The shape ids of ``jobs`` (the shapes worked out at the episode's first question)."""
        if len(self.shape_id) != view.n_jobs:
            self.shape_id, self.shape_need = shape_ids(view)
            self._needs, self._class = np.unique(self.shape_need, return_inverse=True)
            self._class = self._class.reshape(-1)  # each shape's need class: an index into _needs
            self._all = np.arange(len(self.shape_need))
            self.memo = PartnerColumns(len(self._needs))
            self._key = None
        return self.shape_id[jobs]

    def cells(self, view: ClusterView, js: np.ndarray, gpus_for: GpusFor, terms_for: TermsFor
              ) -> tuple[list[int], np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """For pending jobs ``js``: the partners holding a GPU alone (a list and an array, increasing), the
        shape id of each of ``js``, and ``(rows, lo, hi)``: the term-store row of every (shape, partner) cell
        and the ends of its rejected window as ratios of ``i_b / i_a`` (:meth:`.castor_pairs.TermStore.windows`),
        arrays ``(shapes, partners)`` read only for the shapes of ``js`` (the caller must not write them). The
        cells of ``js``' shapes not yet known are worked out: the GPUs by ``gpus_for`` and the terms by
        ``terms_for``, asked of the first job of the shape in ``js``."""
        sh = self.shapes(view, js)
        holders, hold, slots, n_single = self.partners.now(view, self.memo)
        present = np.zeros(len(self._all), dtype=bool)
        present[sh] = True
        key = (self.partners.version, present.tobytes())
        if key != self._key:
            if self._key is None or key[1] != self._key[1]:  # the need classes asked: by the shapes waiting
                self._want = np.zeros(len(self._needs), dtype=bool)
                self._want[self._class[present]] = True
            rows = self._rows(view, js, sh, present, holders, slots, n_single, gpus_for, terms_for)
            lo, hi = self.store.windows()
            self._key, self._kept = key, (rows.T, lo[rows].T, hi[rows].T)  # views of (partners, shapes) arrays
        return holders, hold, sh, self._kept

    def _rows(self, view: ClusterView, js: np.ndarray, sh: np.ndarray, present: np.ndarray, holders: list[int],
              slots: np.ndarray, n_single: np.ndarray, gpus_for: GpusFor, terms_for: TermsFor) -> np.ndarray:
        """:meth:`cells`' rows ``(partners, shapes)``: each partner's class by need (:meth:`_classes`), then
        the table's rows, those of ``js``' shapes not yet known worked out."""
        cls, gbs = self._classes(view, js, sh, holders, slots, n_single, gpus_for)
        table = self.terms.rows
        rows = table.take(cls[:, self._class] * table.shape[1] + self._all)  # table[cls[:, _class], _all]
        cs, ss = ((rows < 0) & present).nonzero()
        if len(cs):
            reps = self._firsts(js, sh, len(self._all))
            singles = self.partners.singles
            for c, s in zip(cs.tolist(), ss.tolist(), strict=True):
                k = int(self._class[s])
                a = int(cls[c, k])
                if table[a, s] < 0:  # not found for another partner of the class in this pass
                    p = holders[c]
                    j = int(reps[s])
                    gb = gbs.get((c, k))
                    if gb is None:
                        gb = gpus_for(view, j, p, singles[p][1])
                    table[a, s] = self.store.add(terms_for(view, j, p, gb, a))
                rows[c, s] = table[a, s]
        return rows

    def _classes(self, view: ClusterView, js: np.ndarray, sh: np.ndarray, holders: list[int], slots: np.ndarray,
                 n_single: np.ndarray, gpus_for: GpusFor
                 ) -> tuple[np.ndarray, dict[tuple[int, int], np.ndarray]]:
        """Each partner's pair class by need class ``(partners, needs)`` (0 where no shape of ``js`` asks that
        many GPUs), and the GPUs of the classes worked out now, by (partner, need class). A partner's GPUs
        alone answer where they are enough or too few even with every free GPU (its :attr:`stable` class);
        else free GPUs top them up (its :attr:`loose` class, kept while the free GPUs stay the same)."""
        memo = self.memo
        n_free = view.num_free()
        if n_free:
            fits = (self._needs <= n_single[:, None]) | (self._needs > (n_single + n_free)[:, None])
            cls = np.where(fits, memo.stable[slots], memo.loose[slots])
        else:  # no free GPU: every class is the partner's GPUs alone
            fits, cls = None, memo.stable[slots]
        cs, ks = ((cls == 0) & self._want).nonzero()
        gbs: dict[tuple[int, int], np.ndarray] = {}
        if len(cs):
            by_need = self._firsts(js, self._class[sh], len(self._needs))  # the GPUs read no more of a job
            singles, n_shapes, needs = self.partners.singles, len(self._all), self._needs.tolist()
            alone: dict[tuple[int, int], tuple[np.ndarray, int]] = {}  # (partner, GPUs taken) -> (GPUs, class)
            for c, k in zip(cs.tolist(), ks.tolist(), strict=True):
                p = holders[c]
                stable = fits is None or bool(fits[c, k])
                key = (c, min(needs[k], int(n_single[c])))  # its GPUs alone: the first of them (GpusFor)
                got = alone.get(key) if stable else None
                if got is None:
                    gb = gpus_for(view, int(by_need[k]), p, singles[p][1])
                    got = gb, self.terms.class_of(view, p, gb, n_shapes)
                    if stable:
                        alone[key] = got
                gbs[c, k], a = got
                cls[c, k] = a
                (memo.stable if stable else memo.loose)[slots[c], k] = a
        return cls, gbs

    @staticmethod
    def _firsts(js: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
        """Each group's first job in ``js`` (``group``: each job's group, below ``n_groups``; -1: none)."""
        first = np.full(n_groups, len(js), dtype=np.int64)
        np.minimum.at(first, group, np.arange(len(js)))  # each group's least position: one pass, no sort
        return np.append(js, -1)[first]
