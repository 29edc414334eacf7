"""The greedy tail's kept options (baselines/parts/hadar_tail.py memo_options: FIND_ALLOC's two options kept by
job key while no job is taken) give what FIND_ALLOC computed afresh for every job gives (hadar_find.py
best_alloc), on random multi-type clusters whose jobs repeat GPU counts and speed rows, with equal speeds of
different types (the key's ties) and running jobs' current allocations."""

from __future__ import annotations

import numpy as np
from gpucluster_env.baselines.parts.hadar_find import best_alloc, type_orders
from gpucluster_env.baselines.parts.hadar_free import free_sets, take_rows
from gpucluster_env.baselines.parts.hadar_tail import greedy_tail


def _plain(fr, used, workers, speeds, facts, cur_rows, cur_from, comm, args):  # noqa: ANN001, ANN202
    """Every job FIND_ALLOC on fresh classes of what is still free, taken at a positive payoff."""
    fr = fr.copy()
    used = used.copy()
    oks, kords = type_orders(speeds)
    out = []
    for i in range(len(workers)):
        left = int(fr.sum())
        if left == 0:
            break
        if workers[i] > left:
            continue
        fs = free_sets(fr.copy())
        take, tput, pay = best_alloc(fs, speeds[i], oks[i], kords[i], workers[i], facts[i],
                                     cur_rows[cur_from[i]:cur_from[i + 1]], used.copy(), *args[:4], args[4],
                                     args[5], comm[i], args[6])
        if len(take) == 0 or not pay > 0:
            continue
        out.append((i, take.tolist(), tput, pay))
        fs = free_sets(fr)
        take_rows(fs, used, take, 1)
    return out


def test_kept_options_match_fresh_find_alloc() -> None:
    """Over random states and queues, the tail with kept options picks the same jobs, rows and floats."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        nh, nk = int(rng.integers(3, 12)), int(rng.integers(1, 4))
        cap = rng.integers(0, 5, size=(nh, nk)).astype(np.int64)
        fr = np.minimum(cap, rng.integers(0, 5, size=(nh, nk))).astype(np.int64)
        used = (cap - fr).astype(float)
        rows = rng.choice([0.5, 1.0, 2.0, 0.0], size=(4, nk))
        n = int(rng.integers(5, 40))
        speeds = np.ascontiguousarray(rows[rng.integers(0, 4, size=n)])
        speeds[:, 0] = np.where(speeds.sum(axis=1) == 0, 1.0, speeds[:, 0])
        workers = rng.choice([1, 2, 4, 8], size=n).astype(np.int64)
        facts = np.column_stack([rng.uniform(1e3, 1e6, n), rng.uniform(0, 100, n), rng.uniform(1e4, 1e6, n),
                                 np.ones(n)])
        cur_from = np.zeros(n + 1, dtype=np.int64)
        cur = []
        for i in range(n):
            if rng.random() < 0.3 and cap.sum():
                h, k = divmod(int(rng.integers(0, nh * nk)), nk)
                if cap[h, k]:
                    cur.append((h, k, min(int(workers[i]), int(cap[h, k]))))
            cur_from[i + 1] = len(cur)
        cur_rows = np.array(cur, dtype=np.int64).reshape(-1, 3)
        comm = rng.uniform(0, 1e-3, n)
        u_min = rng.uniform(1e-6, 1e-4, nk)
        u_max = u_min * rng.uniform(10, 1e4, nk)
        args = (u_min, u_max, 1.0, cap.astype(float), 500.0, 30.0, 360.0)
        want = _plain(fr, used, workers, speeds, facts, cur_rows, cur_from, comm, args)
        oks, kords = type_orders(speeds)
        got = greedy_tail(free_sets(fr.copy()), used.copy(), 0, 0, workers, speeds, oks, kords, facts, cur_rows,
                          cur_from, comm, *args[:4], args[4], args[5], args[6])
        picked, grows, row_from, tputs, pays, _ = got
        have = [(int(i), grows[row_from[t]:row_from[t + 1]].tolist(), float(tputs[t]), float(pays[t]))
                for t, i in enumerate(picked)]
        assert have == want
