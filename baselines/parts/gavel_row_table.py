"""The per-row records of Gavel's rounds (:mod:`.gavel_scheduler`: the allocation, the time received since the
last reset, the deficit), one value per GPU type for each row, a row being one job ``(j,)`` or a packed pair
``(i, j)``.

A round reads the records of thousands of rows at once (every active job's), so the one-job rows live in one
dense array indexed by job, read by one index array (:meth:`RowTable.take`), and the pair rows (packed Gavel:
thousands of candidate pairs, and every pair row kept across resets while both its jobs live) in a second dense array
whose line for each pair a sorted array of pair codes names (:func:`pair_code`: ``(i, j)`` as one int64 that sorts
as the tuple does), found with ``searchsorted``: a read, a write or a reset costs a few array passes over the rows
it names, not a Python step per pair. A row never written reads as zeros, as a missing key did in the dict the
records were before.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

Row = tuple[int, ...]

_SHIFT = 32
"""A pair ``(i, j)``'s code is ``i << 32 | j``: jobs are below 2**31, so codes sort as the tuples do."""


def pair_code(pairs: list[Row]) -> np.ndarray:
    """The int64 codes of the pairs ``pairs`` (each ``(i, j)``), in order."""
    a = np.array(pairs, dtype=np.int64).reshape(len(pairs), 2)
    return (a[:, 0] << _SHIFT) | a[:, 1]


def pair_of(code: int) -> Row:
    """The pair ``(i, j)`` of a code (:func:`pair_code`)."""
    return (code >> _SHIFT, code & ((1 << _SHIFT) - 1))


class RowIndex(NamedTuple):
    """Where a list of rows is read from: each row's first job, and the positions and codes of its pair rows."""

    heads: np.ndarray
    pos: np.ndarray
    """The positions of the pair rows in the list (int64, ascending)."""
    codes: np.ndarray
    """Their codes (:func:`pair_code`), one per position."""


_NONE = np.zeros(0, dtype=np.int64)


def _sorted_unique(codes: np.ndarray) -> np.ndarray:
    """The distinct ``codes``, ascending: a stable sort (a merge of the sorted runs it is mostly given: the kept
    codes of three tables, an allocation's pairs) and one comparison pass, not ``np.unique``'s hashing."""
    if len(codes) < 2:
        return codes.copy()
    c = np.sort(codes, kind="stable")
    keep = np.empty(len(c), dtype=bool)
    keep[0] = True
    np.not_equal(c[1:], c[:-1], out=keep[1:])
    return c[keep]


def row_index(rows: list[Row]) -> RowIndex:
    """The :class:`RowIndex` of ``rows``."""
    heads = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    pos = [i for i, r in enumerate(rows) if len(r) > 1]
    if not pos:
        return RowIndex(heads, _NONE, _NONE)
    return RowIndex(heads, np.array(pos, dtype=np.int64), pair_code([rows[i] for i in pos]))


def job_rows(jobs: list[int]) -> RowIndex:
    """The :class:`RowIndex` of the one-job rows ``[(j,) for j in jobs]``."""
    return RowIndex(np.asarray(jobs, dtype=np.int64), _NONE, _NONE)


class RowTable:
    """One record (``nk`` values per row) of Gavel's rows: one-job rows in a dense array indexed by job, pair rows
    in a second dense array (``pair_values``) whose line for each pair written the sorted ``codes`` and their
    ``lines`` name (line 0: zeros, what a pair never written reads as), so a round reads and writes its rows with
    a few index arrays."""

    def __init__(self, n_jobs: int, nk: int) -> None:
        self.solo = np.zeros((n_jobs, nk))
        self.has = np.zeros(n_jobs, dtype=bool)
        """Which one-job rows were written."""
        self.codes = _NONE
        """The code of each pair row written (:func:`pair_code`), ascending."""
        self.lines = _NONE
        """Each written pair's line in :attr:`pair_values` (beside :attr:`codes`)."""
        self.pair_values = np.zeros((1, nk))
        self._n_lines = 1

    @classmethod
    def of_rows(cls, n_jobs: int, ix: RowIndex, values: np.ndarray) -> RowTable:
        """A table holding ``values`` (one row per row of ``ix``)."""
        t = cls(n_jobs, values.shape[1])
        t.write(ix, values)
        return t

    def pair_keys(self) -> list[Row]:
        """The pair rows written, sorted."""
        return [pair_of(c) for c in self.codes.tolist()]

    def _find(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The lines of the pairs ``codes`` (0 where not written) and which were written."""
        if not len(self.codes):
            return np.zeros(len(codes), dtype=np.int64), np.zeros(len(codes), dtype=bool)
        at = np.minimum(np.searchsorted(self.codes, codes), len(self.codes) - 1)
        found = self.codes[at] == codes
        return np.where(found, self.lines[at], 0), found

    def _lines(self, codes: np.ndarray) -> np.ndarray:
        """The lines of the pairs ``codes``, new (zero) lines for those not written yet."""
        n = self._n_lines
        if not len(self.codes) and (len(codes) < 2 or bool((codes[1:] > codes[:-1]).all())):
            self._grow(n + len(codes))  # ascending codes into no pairs (a table made of a reset's rows)
            self.codes, self.lines = codes.copy(), np.arange(n, n + len(codes), dtype=np.int64)
            self._n_lines = n + len(codes)
            return self.lines
        lines, found = self._find(codes)
        if found.all():
            return lines
        new = _sorted_unique(codes[~found])
        self._grow(n + len(new))
        at = np.searchsorted(self.codes, new)
        self.codes = np.insert(self.codes, at, new)
        self.lines = np.insert(self.lines, at, np.arange(n, n + len(new), dtype=np.int64))
        self._n_lines = n + len(new)
        return self._find(codes)[0]

    def _grow(self, n_lines: int) -> None:
        """Make room for ``n_lines`` lines of :attr:`pair_values` (new lines zeros)."""
        if n_lines > len(self.pair_values):
            grown = np.zeros((max(2 * len(self.pair_values), n_lines), self.solo.shape[1]))
            grown[:self._n_lines] = self.pair_values[:self._n_lines]
            self.pair_values = grown

    def write_pairs(self, keys: list[Row], values: np.ndarray) -> None:
        """Set the pair rows ``keys`` to ``values`` (one row each; a key named twice keeps its last value)."""
        lines = self._lines(pair_code(keys))  # first: it may grow pair_values
        self.pair_values[lines] = values

    def write(self, ix: RowIndex, values: np.ndarray) -> None:
        """Set the rows of ``ix`` to ``values`` (one row each)."""
        if len(ix.pos):
            lines = self._lines(ix.codes)  # first: it may grow pair_values
            self.pair_values[lines] = values[ix.pos]
            solo = np.ones(len(ix.heads), dtype=bool)
            solo[ix.pos] = False
            self.solo[ix.heads[solo]] = values[solo]
            self.has[ix.heads[solo]] = True
        else:
            self.solo[ix.heads] = values
            self.has[ix.heads] = True

    def _line(self, key: Row) -> int:
        """Pair row ``key``'s line, a new one when it was not written."""
        return int(self._lines(pair_code([key]))[0])

    def __contains__(self, key: Row) -> bool:
        return bool(self.has[key[0]]) if len(key) == 1 else bool(self._find(pair_code([key]))[1][0])

    def __setitem__(self, key: Row, value: np.ndarray) -> None:
        if len(key) == 1:
            self.solo[key[0]] = value
            self.has[key[0]] = True
        else:
            line = self._line(key)  # first: it may grow pair_values
            self.pair_values[line] = value

    def row(self, key: Row) -> np.ndarray:
        """Row ``key``'s values, to change in place (written as zeros first when it was not)."""
        if len(key) > 1:
            line = self._line(key)  # first: it may grow pair_values
            return self.pair_values[line]
        self.has[key[0]] = True
        return self.solo[key[0]]

    def add(self, ix: RowIndex, types: list[int], amounts: list[float]) -> None:
        """Add ``amounts[r]`` to the value on type ``types[r]`` of each row ``r`` of ``ix`` (distinct rows; one
        written as zeros first when it was not)."""
        k = np.asarray(types, dtype=np.int64)
        v = np.asarray(amounts, dtype=float)
        if len(ix.pos):
            lines = self._lines(ix.codes)  # first: it may grow pair_values
            self.pair_values[lines, k[ix.pos]] += v[ix.pos]
            solo = np.ones(len(ix.heads), dtype=bool)
            solo[ix.pos] = False
            heads, k, v = ix.heads[solo], k[solo], v[solo]
        else:
            heads = ix.heads
        self.solo[heads, k] += v
        self.has[heads] = True

    def take(self, ix: RowIndex) -> np.ndarray:
        """The values of the rows of ``ix`` (a fresh array; zeros for a row never written)."""
        out = self.solo[ix.heads]
        if len(ix.pos):
            out[ix.pos] = self.pair_values[self._find(ix.codes)[0]]
        return out

    def fill_missing(self, ix: RowIndex, value: float) -> None:
        """Write ``value`` (every type) to the rows of ``ix`` never written."""
        heads = ix.heads
        if len(ix.pos):
            heads = np.delete(heads, ix.pos)
            new = ix.codes[~self._find(ix.codes)[1]]
            if len(new):
                lines = self._lines(new)  # first: it may grow pair_values
                self.pair_values[lines] = value
        new = heads[~self.has[heads]]
        self.solo[new] = value
        self.has[new] = True


def live_index(tables: list[RowTable], live: np.ndarray) -> RowIndex:
    """The rows written in any of ``tables`` all of whose jobs are ``live`` (a bool per job): one-job rows by job,
    then pairs sorted."""
    singles = np.flatnonzero(np.logical_or.reduce([t.has for t in tables]) & live)
    codes = _sorted_unique(np.concatenate([t.codes for t in tables]))
    codes = codes[live[codes >> _SHIFT] & live[codes & ((1 << _SHIFT) - 1)]]
    pos = np.arange(len(singles), len(singles) + len(codes), dtype=np.int64)
    return RowIndex(np.concatenate([singles, codes >> _SHIFT]), pos, codes)
