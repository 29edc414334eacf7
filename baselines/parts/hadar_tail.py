"""Algorithm 2's round in one compiled call (:func:`select`): the DP window (:func:`.hadar_find.window_dp`) and
the greedy tail after it (:func:`greedy_tail`), on the free GPUs kept by class (:mod:`.hadar_free`).

The greedy tail asks FIND_ALLOC about every queued job until the GPUs run out; on PhillyScale most of ~800
queued jobs a round ask 8 or 16 GPUs and none is taken, so the state does not change from one job to the next.
FIND_ALLOC's two options and their costs (:func:`.hadar_find.options`) depend on the job only through its GPUs
asked, runnable types, type order and which of its types' speeds are equal: they are kept (:func:`memo_options`)
for the few such keys met since the last job taken, and each job's choice (:func:`.hadar_find.choose`: its
throughput and payoff from the kept cost, and its current allocation) is made from them, the same floats as
:func:`.hadar_find.best_alloc` computes.
"""

from __future__ import annotations

import numba
import numpy as np
from gpucluster_env.baselines.parts.hadar_find import choose, options, type_orders, window_dp
from gpucluster_env.baselines.parts.hadar_free import free_sets, take_rows

_JIT = {"cache": True, "error_model": "numpy", "boundscheck": False}
MEMO_SLOTS = 8
"""How many option keys the greedy tail keeps between two jobs taken (the oldest overwritten)."""


@numba.njit(**_JIT)
def max_of(a: np.ndarray) -> int:
    """The largest element of ``a`` (0 when empty)."""
    top = 0
    for i in range(len(a)):
        top = max(top, a[i])
    return top


@numba.njit(**_JIT)
def new_memo(nk: int, most: int, cells: int) -> tuple:
    """Empty kept options for ``nk`` types and allocations of at most ``min(most, cells)`` rows: ``(keys,
    counts, rows, lengths, costs, key)``, ``counts``: ``[keys in use, next slot to overwrite]``, each slot's
    consolidated option at ``2 * slot`` and spread option at ``2 * slot + 1``; ``key``: the asking job's key."""
    r = max(min(most, cells), 1)
    return (np.zeros((MEMO_SLOTS, 1 + 3 * nk), dtype=np.int64), np.zeros(2, dtype=np.int64),
            np.zeros((2 * MEMO_SLOTS, r, 3), dtype=np.int64), np.zeros(2 * MEMO_SLOTS, dtype=np.int64),
            np.zeros(2 * MEMO_SLOTS), np.zeros(1 + 3 * nk, dtype=np.int64))


@numba.njit(inline="always", **_JIT)
def memo_key(speed: np.ndarray, ok: np.ndarray, kord: np.ndarray, need: int, out: np.ndarray) -> None:
    """``out`` := what FIND_ALLOC's options read of a job: ``need``, its type order, which types run, and
    whether each type's speed equals the next's in that order."""
    nk = len(kord)
    out[0] = need
    for a in range(nk):
        out[1 + a] = kord[a]
        out[1 + nk + a] = ok[kord[a]]
        out[1 + 2 * nk + a] = a + 1 < nk and speed[kord[a]] == speed[kord[a + 1]]


@numba.njit(inline="always", **_JIT)
def memo_options(memo: tuple, fs: tuple, speed: np.ndarray, ok: np.ndarray, kord: np.ndarray, need: int,
                 used: np.ndarray, u_min: np.ndarray, u_max: np.ndarray, eta: float, capacity: np.ndarray
                 ) -> tuple[np.ndarray, float, np.ndarray, float]:
    """:func:`.hadar_find.options` on the state ``fs``/``used``, from ``memo`` (:func:`new_memo`) when a job of
    the same key (:func:`memo_key`) asked since the state last changed (the caller sets ``memo[1][0] = 0``
    then), else computed and kept."""
    keys, counts, rows, lengths, costs, key = memo
    memo_key(speed, ok, kord, need, key)
    for s in range(counts[0]):
        same = True
        for x in range(len(key)):
            if keys[s, x] != key[x]:
                same = False
                break
        if same:
            return (rows[2 * s, : lengths[2 * s]], costs[2 * s], rows[2 * s + 1, : lengths[2 * s + 1]],
                    costs[2 * s + 1])
    cons, cc, other, oc = options(fs, speed, ok, kord, need, used, u_min, u_max, eta, capacity)
    s = counts[0] if counts[0] < MEMO_SLOTS else counts[1]
    counts[0], counts[1] = min(counts[0] + 1, MEMO_SLOTS), (counts[1] + (counts[0] >= MEMO_SLOTS)) % MEMO_SLOTS
    keys[s] = key
    lengths[2 * s], lengths[2 * s + 1], costs[2 * s], costs[2 * s + 1] = len(cons), len(other), cc, oc
    rows[2 * s, : len(cons)] = cons
    rows[2 * s + 1, : len(other)] = other
    return cons, cc, other, oc


@numba.njit(**_JIT)
def greedy_tail(fs: tuple, used: np.ndarray, start: int, chosen: int, workers: np.ndarray, speeds: np.ndarray,
                oks: np.ndarray, kords: np.ndarray, facts: np.ndarray, cur_rows: np.ndarray, cur_from: np.ndarray,
                comm: np.ndarray, u_min: np.ndarray, u_max: np.ndarray, eta: float, capacity: np.ndarray, now: float,
                overhead_s: float, slot_s: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The window's jobs the DP chose (``chosen``: bits of the jobs before ``start``,
    :func:`.hadar_find.window_dp`), each given FIND_ALLOC's allocation on the GPUs the chosen ones before it left
    free (the state the DP saw it in), then Algorithm 2's greedy tail: the jobs from ``start`` on, in order, each
    taken when FIND_ALLOC (:func:`.hadar_find.best_alloc`) on the GPUs still free (``fs`` and ``used``, updated
    in place) finds an allocation with a positive payoff; a job asking more GPUs than are free is passed over (it
    would find none); the walk ends when no GPU is free. Job ``i``: ``workers[i]``, throughputs ``speeds[i]``
    (its types' order ``oks[i]``, ``kords[i]``: :func:`.hadar_find.type_orders`), ``facts[i]`` (remaining,
    arrival, iterations, unit), current allocation ``cur_rows[cur_from[i]:cur_from[i + 1]]``, communication
    charge ``comm[i]``. Returns the jobs taken, their allocations (``rows[row_from[t]:row_from[t + 1]]``),
    throughputs and payoffs, and whether each allocation is the job's current one, row for row (it keeps its
    GPUs). A job's options are read from :func:`memo_options` (kept while no job is taken)."""
    fr = fs[0]
    n = len(workers)
    picked = np.empty(n, dtype=np.int64)
    tputs = np.empty(n)
    pays = np.empty(n)
    kept = np.zeros(n, dtype=np.bool_)
    left = 0
    for h in range(fr.shape[0]):
        for k in range(fr.shape[1]):
            left += fr[h, k]
    rows = np.empty((left, 3), dtype=np.int64)  # every row takes at least one free GPU
    row_from = np.zeros(n + 1, dtype=np.int64)
    m = 0
    memo = new_memo(speeds.shape[1], min(max_of(workers), left), fr.shape[0] * fr.shape[1])
    for i in range(n):
        if i < start and not (chosen >> i) & 1:
            continue
        if i >= start and left == 0:
            break
        if i >= start and workers[i] > left:
            continue
        cons, cc, other, oc = memo_options(memo, fs, speeds[i], oks[i], kords[i], workers[i], used, u_min, u_max,
                                           eta, capacity)
        take, tput, pay = choose(fs, cons, cc, other, oc, speeds[i], facts[i], cur_rows[cur_from[i]:cur_from[i + 1]],
                                 used, u_min, u_max, eta, capacity, now, overhead_s, comm[i], slot_s)
        if len(take) == 0 or not pay > 0:
            continue
        picked[m], tputs[m], pays[m] = i, tput, pay
        at = row_from[m]
        row_from[m + 1] = at + len(take)
        m += 1
        cur = cur_rows[cur_from[i]:cur_from[i + 1]]
        same = len(cur) > 0 and len(cur) == len(take)  # the rows compared only then
        for r in range(len(take)):
            rows[at + r] = take[r]
            left -= take[r, 2]
            same = same and cur[r, 0] == take[r, 0] and cur[r, 1] == take[r, 1] and cur[r, 2] == take[r, 2]
        kept[m - 1] = same
        take_rows(fs, used, rows[at: row_from[m]], 1)
        memo[1][0] = 0  # the state changed: every kept option is stale
    return picked[:m], rows[: row_from[m]], row_from[: m + 1], tputs[:m], pays[:m], kept[:m]


@numba.njit(**_JIT)
def select(fr: np.ndarray, win: int, workers: np.ndarray, speeds: np.ndarray, facts: np.ndarray,
           cur_rows: np.ndarray, cur_from: np.ndarray, comm: np.ndarray, u_min: np.ndarray, u_max: np.ndarray,
           eta: float, capacity: np.ndarray, now: float, overhead_s: float, slot_s: float
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 2 in one compiled call: the DP over the first ``win`` jobs (:func:`window_dp`), then the
    greedy tail after them (:func:`greedy_tail`, which returns the picks of both, in job order), on the free
    GPUs ``fr`` kept by class (:func:`.hadar_free.free_sets`) and the used ones (kept as GPUs are taken: whole
    numbers, the same floats as recomputed). ``fr`` is updated in place to what is left free."""
    fs = free_sets(fr)
    used = capacity - fr
    oks, kords = type_orders(speeds)
    chosen = window_dp(win, fs, used, workers, speeds, oks, kords, facts, cur_rows, cur_from, comm, u_min, u_max,
                       eta, capacity, now, overhead_s, slot_s)
    return greedy_tail(fs, used, win, chosen, workers, speeds, oks, kords, facts, cur_rows, cur_from, comm, u_min,
                       u_max, eta, capacity, now, overhead_s, slot_s)
