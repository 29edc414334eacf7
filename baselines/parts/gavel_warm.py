"""The partner-class LP's simplex basis carried from one allocation to the next (``pair_lp="warm"``).

Gavel's makespan LP is re-solved at every allocation over the jobs in the system; between two allocations most
jobs stay and only their steps left change, so the previous optimal basis is a near-optimal start: on the loaded
month (~8,700 jobs in the system) HiGHS' dual simplex takes ~9,200 iterations and ~1.8 s from scratch, and 0-200
iterations and ~0.01-0.05 s from the previous basis, to the same optimum ``z`` (an LP's optimal value does not
depend on where the simplex starts). Where several allocations reach that optimum the warm start may end at
another of them, so the policies' results move with it while the optimum does not (the default of both makespan
policies; docs/gavel.md, "The partner-class LP from the previous allocation's basis").

A basis is a status per column and per row of the LP (:mod:`.gavel_partner_lp`). Each column and row is named
by a code built from the job ids and stable class ids (:meth:`WarmStart.label`), so the statuses of the columns
and rows that stay pass to the next LP by name; new columns start at their lower bound (0), new rows basic
(their slack in the basis). The result is in general not a square basis (jobs came and went), which HiGHS
accepts as an *alien* basis and completes."""

from __future__ import annotations

from typing import Any

import numpy as np

TAG_SHIFT, JOB_SHIFT, CLASS_SHIFT = 55, 24, 8
"""A code is ``tag << 55 | job << 24 | class << 8 | type``: 31 bits for job ids, 16 for class ids, 8 for types."""


def code(tag: int, job: np.ndarray | int, klass: np.ndarray | int, k: np.ndarray | int) -> np.ndarray:
    """The name of LP columns or rows of kind ``tag`` (a column's kinds and a row's are separate spaces)."""
    job, klass, k = (np.asarray(a, dtype=np.int64) for a in (job, klass, k))
    return (np.int64(tag) << TAG_SHIFT) | (job << JOB_SHIFT) | (klass << CLASS_SHIFT) | k


class WarmStart:
    """The previous LP's final basis by the names of its columns and rows, and the names of the next LP's jobs and
    classes (:meth:`label`). One per policy episode."""

    def __init__(self) -> None:
        self._classes: dict[Any, int] = {}
        self.jobs = np.zeros(0, dtype=np.int64)
        self.classes = np.zeros(0, dtype=np.int64)
        self._cols: tuple[np.ndarray, np.ndarray] | None = None  # sorted codes, statuses (objects) in that order
        self._rows: tuple[np.ndarray, np.ndarray] | None = None

    def label(self, jobs: list[int], class_keys: list[Any]) -> WarmStart:
        """Name the next LP's rows (``jobs``: a job id per row) and classes (``class_keys``: anything hashable per
        class index, the same key for the same class at every allocation); returns ``self``."""
        self.jobs = np.asarray(jobs, dtype=np.int64)
        self.classes = np.array([self._classes.setdefault(c, len(self._classes)) for c in class_keys], dtype=np.int64)
        return self

    def start(self, col_codes: np.ndarray, row_codes: np.ndarray, h: Any) -> Any:
        """A ``HighsBasis`` for the LP with these column and row names (``h``: the HiGHS bindings), or None before
        the first solve."""
        if self._cols is None or self._rows is None:
            return None
        basis = h.HighsBasis()
        basis.col_status = _carry(self._cols, col_codes, h.HighsBasisStatus.kLower)
        basis.row_status = _carry(self._rows, row_codes, h.HighsBasisStatus.kBasic)
        basis.alien = True
        basis.valid = True
        return basis

    def keep(self, col_codes: np.ndarray, row_codes: np.ndarray, basis: Any) -> None:
        """Remember the final basis of the LP with these column and row names."""
        self._cols = _sorted(col_codes, basis.col_status)
        self._rows = _sorted(row_codes, basis.row_status)


def _sorted(codes: np.ndarray, status: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The codes in ascending order with their statuses (an object array) in the same order."""
    order = np.argsort(codes, kind="stable")
    st = np.empty(len(status), dtype=object)
    st[:] = status
    return codes[order], st[order]


def _carry(old: tuple[np.ndarray, np.ndarray], codes: np.ndarray, default: Any) -> list[Any]:
    """The statuses of ``codes`` found among the old ones, ``default`` for the others."""
    keys, st = old
    out = np.full(len(codes), default, dtype=object)
    if len(keys):
        at = np.minimum(np.searchsorted(keys, codes), len(keys) - 1)
        hit = keys[at] == codes
        out[hit] = st[at[hit]]
    return out.tolist()
