"""The per-row records of Gavel's rounds (:mod:`.gavel_scheduler`: the allocation, the time received since the
last reset, the deficit), one value per GPU type for each row, a row being one job ``(j,)`` or a packed pair
``(i, j)``.

A round reads the records of thousands of rows at once (every active job's), so the one-job rows live in one
dense array indexed by job, read by one index array (:meth:`RowTable.take`), and only the few pair rows in a
dict. A row never written reads as zeros, as a missing key did in the dict the records were before.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

Row = tuple[int, ...]


class RowIndex(NamedTuple):
    """Where a list of rows is read from: each row's first job, and the ``(position, row)`` of its pair rows."""

    heads: np.ndarray
    pairs: list[tuple[int, Row]]


def row_index(rows: list[Row]) -> RowIndex:
    """The :class:`RowIndex` of ``rows``."""
    heads = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return RowIndex(heads, [(i, r) for i, r in enumerate(rows) if len(r) > 1])


def job_rows(jobs: list[int]) -> RowIndex:
    """The :class:`RowIndex` of the one-job rows ``[(j,) for j in jobs]``."""
    return RowIndex(np.asarray(jobs, dtype=np.int64), [])


class RowTable:
    """One record (``nk`` values per row) of Gavel's rows: one-job rows in a dense array, pairs in a dict."""

    def __init__(self, n_jobs: int, nk: int) -> None:
        self.solo = np.zeros((n_jobs, nk))
        self.has = np.zeros(n_jobs, dtype=bool)
        """Which one-job rows were written."""
        self.pairs: dict[Row, np.ndarray] = {}

    @classmethod
    def of_rows(cls, n_jobs: int, ix: RowIndex, values: np.ndarray) -> RowTable:
        """A table holding ``values`` (one row per row of ``ix``)."""
        t = cls(n_jobs, values.shape[1])
        t.write(ix, values)
        return t

    def write(self, ix: RowIndex, values: np.ndarray) -> None:
        """Set the rows of ``ix`` to ``values`` (one row each)."""
        if ix.pairs:
            solo = np.ones(len(ix.heads), dtype=bool)
            for i, key in ix.pairs:
                solo[i] = False
                self.pairs[key] = np.array(values[i], dtype=float)
            self.solo[ix.heads[solo]] = values[solo]
            self.has[ix.heads[solo]] = True
        else:
            self.solo[ix.heads] = values
            self.has[ix.heads] = True

    def __contains__(self, key: Row) -> bool:
        return bool(self.has[key[0]]) if len(key) == 1 else key in self.pairs

    def __setitem__(self, key: Row, value: np.ndarray) -> None:
        if len(key) == 1:
            self.solo[key[0]] = value
            self.has[key[0]] = True
        else:
            self.pairs[key] = np.array(value, dtype=float)

    def row(self, key: Row) -> np.ndarray:
        """Row ``key``'s values, to change in place (written as zeros first when it was not)."""
        if len(key) > 1:
            return self.pairs.setdefault(key, np.zeros(self.solo.shape[1]))
        self.has[key[0]] = True
        return self.solo[key[0]]

    def take(self, ix: RowIndex) -> np.ndarray:
        """The values of the rows of ``ix`` (a fresh array; zeros for a row never written)."""
        out = self.solo[ix.heads]
        for i, key in ix.pairs:
            out[i] = self.pairs.get(key, 0.0)
        return out

    def fill_missing(self, ix: RowIndex, value: float) -> None:
        """Write ``value`` (every type) to the rows of ``ix`` never written."""
        heads = ix.heads
        if ix.pairs:
            heads = np.delete(heads, [i for i, _ in ix.pairs])
            for _, key in ix.pairs:
                if key not in self.pairs:
                    self.pairs[key] = np.full(self.solo.shape[1], value)
        new = heads[~self.has[heads]]
        self.solo[new] = value
        self.has[new] = True


def live_index(tables: list[RowTable], live: np.ndarray) -> RowIndex:
    """The rows written in any of ``tables`` all of whose jobs are ``live`` (a bool per job): one-job rows by job,
    then pairs sorted."""
    singles = np.flatnonzero(np.logical_or.reduce([t.has for t in tables]) & live)
    alive = live.tolist()  # read per job of each pair: list indexing, not an array per pair
    pairs = sorted({k for t in tables for k in t.pairs if all(alive[j] for j in k)})
    heads = np.concatenate([singles, np.array([k[0] for k in pairs], dtype=np.int64)])
    return RowIndex(heads, [(len(singles) + i, k) for i, k in enumerate(pairs)])
