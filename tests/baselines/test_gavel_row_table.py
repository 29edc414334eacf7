"""Gavel's row records (:mod:`gpucluster_env.baselines.parts.gavel_row_table`) read as the per-row dicts they
replace: a row never written reads zeros, pairs beside one-job rows, the live rows of a reset."""

from __future__ import annotations

import numpy as np
from gpucluster_env.baselines.parts.gavel_row_table import RowTable, job_rows, live_index, row_index


def _dict_take(d: dict[tuple[int, ...], np.ndarray], rows: list[tuple[int, ...]], nk: int) -> np.ndarray:
    """What the dict records read: each row's values, zeros where missing."""
    return np.array([d.get(r, np.zeros(nk)) for r in rows]).reshape(len(rows), nk)


def test_take_reads_like_a_dict_of_rows() -> None:
    rng = np.random.default_rng(0)
    rows: list[tuple[int, ...]] = [(3,), (0,), (7,), (3, 5), (1, 2), (9,)]
    t = RowTable(10, 2)
    d: dict[tuple[int, ...], np.ndarray] = {}
    for r in [(3,), (3, 5), (9,)]:
        d[r] = rng.random(2)
        t[r] = d[r]
    assert np.array_equal(t.take(row_index(rows)), _dict_take(d, rows, 2))
    assert (3,) in t and (3, 5) in t and (0,) not in t and (1, 2) not in t


def test_fill_missing_and_row_write_only_what_they_name() -> None:
    t = RowTable(6, 3)
    t[(2,)] = np.array([1.0, 2.0, 3.0])
    rows: list[tuple[int, ...]] = [(2,), (4,), (4, 5)]
    t.fill_missing(row_index(rows), 180.0)
    assert t.take(row_index(rows)).tolist() == [[1.0, 2.0, 3.0], [180.0] * 3, [180.0] * 3]
    t.row((1,))[2] += 5.0
    t.row((0, 1))[0] += 2.0
    assert t.take(row_index([(1,), (0, 1), (3,)])).tolist() == [[0, 0, 5.0], [2.0, 0, 0], [0, 0, 0]]
    assert t.has.tolist() == [False, True, True, False, True, False]


def test_of_rows_and_live_index() -> None:
    x = np.arange(6, dtype=float).reshape(3, 2)
    a = RowTable.of_rows(8, job_rows([5, 1, 6]), x)
    assert a.take(job_rows([1, 5, 6, 0])).tolist() == [[2.0, 3.0], [0.0, 1.0], [4.0, 5.0], [0.0, 0.0]]
    b = RowTable(8, 2)
    b[(2, 6)] = np.ones(2)
    b[(1, 3)] = np.ones(2)
    live = np.zeros(8, dtype=bool)
    live[[1, 2, 5, 6]] = True
    ix = live_index([a, b], live)
    assert ix.heads.tolist() == [1, 5, 6, 2] and ix.pairs == [(3, (2, 6))]


def test_write_pairs_is_one_setitem_per_pair() -> None:
    # #44: packed Gavel writes an allocation's job pairs at once; the same table as one write per pair, a pair
    # named twice keeping its last value, new lines past the array's first size
    rng = np.random.default_rng(3)
    for _ in range(50):
        nk = int(rng.integers(1, 4))
        keys = [(int(a), int(b)) for a, b in rng.integers(0, 6, size=(int(rng.integers(1, 40)), 2))]
        values = rng.random((len(keys), nk))
        plain, batched = RowTable(6, nk), RowTable(6, nk)
        plain[(0, 1)] = batched[(0, 1)] = np.ones(nk)  # a pair written before
        for key, v in zip(keys, values, strict=True):
            plain[key] = v
        batched.write_pairs(keys, values)
        assert plain.pairs == batched.pairs
        ix = row_index(list(plain.pairs))
        assert np.array_equal(plain.take(ix), batched.take(ix))
