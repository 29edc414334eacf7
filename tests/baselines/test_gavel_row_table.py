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
    assert ix.heads.tolist() == [1, 5, 6, 2] and ix.pos.tolist() == [3] and ix.codes.tolist() == [(2 << 32) | 6]


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
        assert plain.pair_keys() == batched.pair_keys()
        ix = row_index(plain.pair_keys())
        assert np.array_equal(plain.take(ix), batched.take(ix))


def test_random_ops_read_like_a_dict_of_rows() -> None:
    # #44: pair rows found by sorted int64 codes; every read, write, fill, add and live index as the dict records
    rng = np.random.default_rng(7)
    n, nk = 9, 2
    for _ in range(40):
        t, d = RowTable(n, nk), {}
        for _ in range(int(rng.integers(1, 12))):
            rows = list(dict.fromkeys(
                (int(a),) if rng.random() < 0.4 else (int(a), int(b)) for a, b in rng.integers(0, n, size=(6, 2))))
            ix, op = row_index(rows), rng.integers(0, 4)
            if op == 0:
                vals = rng.random((len(rows), nk))
                t.write(ix, vals)
                d.update({r: v for r, v in zip(rows, vals, strict=True)})
            elif op == 1:
                t.fill_missing(ix, 180.0)
                d.update({r: np.full(nk, 180.0) for r in rows if r not in d})
            elif op == 2:
                ks, amounts = rng.integers(0, nk, len(rows)).tolist(), rng.random(len(rows)).tolist()
                t.add(ix, ks, amounts)
                for r, k, a in zip(rows, ks, amounts, strict=True):
                    d.setdefault(r, np.zeros(nk))[k] += a
            assert np.array_equal(t.take(ix), _dict_take(d, rows, nk))
            assert all((r in t) == (r in d) for r in rows)
        live = rng.random(n) < 0.6
        ix = live_index([t, RowTable(n, nk)], live)
        want = sorted(r for r in d if len(r) == 1 and live[r[0]]) + sorted(
            r for r in d if len(r) == 2 and live[r[0]] and live[r[1]])
        assert ix.heads.tolist() == [r[0] for r in want] and len(ix.pos) == sum(len(r) == 2 for r in want)
        assert np.array_equal(t.take(ix), _dict_take(d, want, nk))
        kept = RowTable.of_rows(n, ix, t.take(ix))  # a reset's table: the live rows alone, as they read
        assert kept.pair_keys() == [r for r in want if len(r) == 2]
        assert np.array_equal(kept.take(row_index(list(d))), _dict_take({r: d[r] for r in want}, list(d), nk))
