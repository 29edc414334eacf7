"""The per-row records of Gavel's rounds (:mod:`.gavel_scheduler`: the allocation, the time received since the
last reset, the deficit), one value per GPU type for each row, a row being one job ``(j,)`` or a packed pair
``(i, j)``.

A round reads the records of thousands of rows at once (every active job's), so the one-job rows live in one
dense array indexed by job, read by one index array (:meth:`RowTable.take`), and the pair rows (packed Gavel:
thousands of candidate pairs) in a second dense array, a dict naming each pair's line. A row never written reads
as zeros, as a missing key did in the dict the records were before.
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
    """One record (``nk`` values per row) of Gavel's rows: one-job rows in a dense array indexed by job, pair rows
    in a second dense array (``pair_values``) whose line for each pair ``pairs`` names (line 0: zeros, what a pair
    never written reads as), so a round reads and writes its rows with a few index arrays."""

    def __init__(self, n_jobs: int, nk: int) -> None:
        self.solo = np.zeros((n_jobs, nk))
        self.has = np.zeros(n_jobs, dtype=bool)
        """Which one-job rows were written."""
        self.pairs: dict[Row, int] = {}
        """Each pair row written: its line in :attr:`pair_values`."""
        self.pair_values = np.zeros((1, nk))
        self._n_lines = 1

    @classmethod
    def of_rows(cls, n_jobs: int, ix: RowIndex, values: np.ndarray) -> RowTable:
        """A table holding ``values`` (one row per row of ``ix``)."""
        t = cls(n_jobs, values.shape[1])
        t.write(ix, values)
        return t

    def write_pairs(self, keys: list[Row], values: np.ndarray) -> None:
        """Set the pair rows ``keys`` to ``values`` (one row each; a key named twice keeps its last value)."""
        lines = self._lines(keys)  # first: it may grow pair_values
        self.pair_values[lines] = values

    def _lines(self, keys: list[Row]) -> list[int]:
        """The lines of the pair rows ``keys`` (distinct), new lines for those not written yet."""
        pairs = self.pairs
        new = list(dict.fromkeys(key for key in keys if key not in pairs))
        if new:
            n = self._n_lines
            if n + len(new) > len(self.pair_values):
                grown = np.zeros((max(2 * len(self.pair_values), n + len(new)), self.solo.shape[1]))
                grown[:n] = self.pair_values[:n]
                self.pair_values = grown
            pairs.update(zip(new, range(n, n + len(new)), strict=True))
            self._n_lines = n + len(new)
        return [pairs[key] for key in keys]

    def write(self, ix: RowIndex, values: np.ndarray) -> None:
        """Set the rows of ``ix`` to ``values`` (one row each)."""
        if ix.pairs:
            pos = [i for i, _ in ix.pairs]
            lines = self._lines([key for _, key in ix.pairs])  # first: it may grow pair_values
            self.pair_values[lines] = values[pos]
            solo = np.ones(len(ix.heads), dtype=bool)
            solo[pos] = False
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
            line = self.pairs.get(key)
            if line is None:
                line = self._lines([key])[0]
            self.pair_values[line] = value

    def row(self, key: Row) -> np.ndarray:
        """Row ``key``'s values, to change in place (written as zeros first when it was not)."""
        if len(key) > 1:
            line = self.pairs.get(key)
            if line is None:
                line = self._lines([key])[0]
            return self.pair_values[line]
        self.has[key[0]] = True
        return self.solo[key[0]]

    def take(self, ix: RowIndex) -> np.ndarray:
        """The values of the rows of ``ix`` (a fresh array; zeros for a row never written)."""
        out = self.solo[ix.heads]
        if ix.pairs:
            get = self.pairs.get
            out[[i for i, _ in ix.pairs]] = self.pair_values[[get(key, 0) for _, key in ix.pairs]]
        return out

    def fill_missing(self, ix: RowIndex, value: float) -> None:
        """Write ``value`` (every type) to the rows of ``ix`` never written."""
        heads = ix.heads
        if ix.pairs:
            heads = np.delete(heads, [i for i, _ in ix.pairs])
            new = [key for _, key in ix.pairs if key not in self.pairs]
            if new:
                lines = self._lines(new)
                self.pair_values[lines] = value
        new = heads[~self.has[heads]]
        self.solo[new] = value
        self.has[new] = True


def live_index(tables: list[RowTable], live: np.ndarray) -> RowIndex:
    """The rows written in any of ``tables`` all of whose jobs are ``live`` (a bool per job): one-job rows by job,
    then pairs sorted."""
    singles = np.flatnonzero(np.logical_or.reduce([t.has for t in tables]) & live)
    alive = live.tolist()  # read per job of each pair: list indexing, not an array per pair
    pairs = sorted(k for k in set().union(*(t.pairs for t in tables)) if all(alive[j] for j in k))
    heads = np.concatenate([singles, np.array([k[0] for k in pairs], dtype=np.int64)])
    return RowIndex(heads, [(len(singles) + i, k) for i, k in enumerate(pairs)])
