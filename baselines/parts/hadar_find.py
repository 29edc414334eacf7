"""FIND_ALLOC's options and their payoffs (:func:`gpucluster_env.baselines.parts.hadar_alloc.find_alloc`),
compiled with numba.

Hadar asks FIND_ALLOC about every queued job on every server state its DP and greedy tail reach (~190 calls a
round on PhillyScale's 552 servers); each call walks servers x types a few times. Here one compiled call builds
the consolidated and the non-consolidated allocations, prices them and picks the better (or the job's current
allocation), with the same float operations in the same order as the formulas in :mod:`.hadar_alloc`'s
docstrings, so the same choices to the bit. An allocation is an ``(n, 3)`` array of ``(server, type, count)``.
A round's selection (:func:`select`) is one compiled call over the queue's arrays: the DP window
(:func:`window_dp`) and the greedy tail after it (:func:`greedy_tail`), each job the same FIND_ALLOC call as
:func:`~gpucluster_env.baselines.parts.hadar_alloc.find_alloc` makes. Kernels walk index ranges, not arrays: a
numba array iterator in the inner loop cost ~30 ns a step, most of a call over 552 servers.

This module imports numba, so it is imported only when Hadar allocates. Compiled code is cached on disk next to
this file where that is writable.
"""

from __future__ import annotations

import numba
import numpy as np
from gpucluster_env.baselines.parts.stable_order import key_order

_JIT = {"cache": True, "error_model": "numpy", "boundscheck": False}


@numba.njit(**_JIT)
def _first_max(key: np.ndarray, taken: np.ndarray) -> int:
    """The first index with the largest ``key`` among those not ``taken`` (-1: none left). Called again after
    marking each one taken, it walks the indices as ``np.argsort(-key, kind="stable")`` orders them."""
    best = -1
    for i in range(len(key)):
        if not taken[i] and (best < 0 or key[i] > key[best]):
            best = i
    return best


@numba.njit(**_JIT)
def _take_one(fr: np.ndarray, ok: np.ndarray, kord: np.ndarray, h: int, n: int, out: np.ndarray, rows: int
              ) -> tuple[int, int]:
    """Up to ``n`` GPUs of server ``h``, the job's fastest runnable types first, appended to ``out`` at
    ``rows``; returns the GPUs still needed and the rows used."""
    for a in range(len(kord)):  # by index: an array iterator costs ~30 ns a step here
        k = kord[a]
        if n == 0 or not ok[k]:
            continue
        c = min(fr[h, k], n)
        if c:
            out[rows, 0], out[rows, 1], out[rows, 2] = h, k, c
            rows += 1
            n -= c
    return n, rows


@numba.njit(**_JIT)
def consolidated(fr: np.ndarray, speed: np.ndarray, ok: np.ndarray, kord: np.ndarray, need: int) -> np.ndarray:
    """The consolidated allocation: one server if any fits (the one whose gang's slowest GPU is fastest, then
    the least usable room, then the lowest index), else the servers with most usable room first (ties by
    index); no rows when fewer than ``need`` GPUs of runnable (``ok``) types are free in all. Each server's
    usable room is counted in the same pass that looks for the one server."""
    usable = np.zeros(fr.shape[0], dtype=np.int64)
    total, best, best_slow = 0, -1, 0.0
    for h in range(fr.shape[0]):
        for k in range(fr.shape[1]):
            usable[h] += fr[h, k] * ok[k]
        total += usable[h]
        if usable[h] < need:
            continue
        cum, slow = 0, 0.0
        for a in range(len(kord)):  # by index: an array iterator costs ~30 ns a step here
            k = kord[a]
            if ok[k]:
                cum += fr[h, k]
                if cum >= need:
                    slow = speed[k]
                    break
        if best < 0 or -slow < -best_slow or (-slow == -best_slow and usable[h] < usable[best]):
            best, best_slow = h, slow
    if best < 0 and total < need:
        return np.empty((0, 3), dtype=np.int64)
    out = np.empty((min(need, fr.shape[0] * len(kord)), 3), dtype=np.int64)  # a row takes >= 1 GPU
    if best >= 0:
        return out[: _take_one(fr, ok, kord, best, need, out, 0)[1]]
    taken = np.zeros(fr.shape[0], dtype=np.bool_)
    n, rows = need, 0
    while n > 0:
        h = _first_max(usable, taken)
        if h < 0:
            break
        taken[h] = True
        n, rows = _take_one(fr, ok, kord, h, n, out, rows)
    return out[:rows]


@numba.njit(**_JIT)
def spread(fr: np.ndarray, ok: np.ndarray, kord: np.ndarray, need: int) -> np.ndarray:
    """The non-consolidated allocation: the fastest GPUs anywhere (most free servers first within a type, ties
    by index; a type's walk stops when no server has any left). Each type's servers are walked level by level
    of free GPUs, most first, each level in index order: the order of ``np.argsort(-fr[:, k], kind="stable")``
    without a pass per server taken."""
    out = np.empty((min(need, fr.shape[0] * len(kord)), 3), dtype=np.int64)  # a row takes >= 1 GPU
    n, rows = need, 0
    for a in range(len(kord)):
        k = kord[a]
        if not ok[k]:
            continue
        level = 0
        for h in range(fr.shape[0]):
            level = max(level, fr[h, k])
        while n > 0 and level > 0:
            below = 0  # the next level: the most free GPUs under this one
            for h in range(fr.shape[0]):
                f = fr[h, k]
                if f == level:
                    c = min(f, n)
                    out[rows, 0], out[rows, 1], out[rows, 2] = h, k, c
                    rows += 1
                    n -= c
                    if n == 0:
                        break
                elif level > f > below:
                    below = f
            level = below
        if n == 0:
            break
    return out[:rows]


@numba.njit(**_JIT)
def cost(used: np.ndarray, take: np.ndarray, u_min: np.ndarray, u_max: np.ndarray, eta: float,
         capacity: np.ndarray) -> float:
    """Per-round cost of taking ``take`` given ``used`` (servers x types): each GPU's marginal price (Eq. (5))
    as the allocation grows, ``sum_{i<n} p(used + i)``, a geometric sum per ``(server, type)``."""
    total = 0.0
    for row in range(len(take)):
        h, k, n = take[row, 0], take[row, 1], take[row, 2]
        c = capacity[h, k]
        lo = u_min[k] / (4.0 * eta)
        r = (4.0 * eta * u_max[k] / u_min[k]) ** (1.0 / c)
        first = lo * r ** np.float64(used[h, k])
        total += first * n if abs(r - 1.0) < 1e-12 else first * (r ** np.float64(n) - 1.0) / (r - 1.0)
    return total


@numba.njit(**_JIT)
def payoff(take: np.ndarray, speed: np.ndarray, job: np.ndarray, used: np.ndarray, u_min: np.ndarray,
           u_max: np.ndarray, eta: float, capacity: np.ndarray, now: float, overhead_s: float, comm: float,
           slot_s: float) -> tuple[float, float]:
    """An allocation's gang throughput (its slowest GPU's, Eq. (1b)) and payoff (Eq. (3a)): the job's utility
    at the completion it gives minus the cost of its schedule, this round's prices and ``comm`` per extra
    server charged for every slot the allocation is held (its run over ``slot_s``, at least one: the same
    GPU-slots Eq. (6) divides ``U_max`` by); ``slot_s`` 0: this round's cost only. ``job``: remaining
    iterations, arrival, total iterations, utility unit."""
    tput = np.inf
    servers = 0
    for row in range(len(take)):
        tput = min(tput, speed[take[row, 1]])
        servers += 1  # unless an earlier row is of its server (rows are few: no per-server table)
        for prev in range(row):
            if take[prev, 0] == take[row, 0]:
                servers -= 1
                break
    run = job[0] / tput + overhead_s
    finish = now + run
    utility = job[2] / max(finish - job[1], 1e-9) / job[3]
    slots = max(run / slot_s, 1.0) if slot_s > 0 else 1.0
    return tput, utility - (cost(used, take, u_min, u_max, eta, capacity) + comm * (servers - 1)) * slots


@numba.njit(**_JIT)
def best_alloc(fr: np.ndarray, speed: np.ndarray, need: int, job: np.ndarray, current: np.ndarray,
               used: np.ndarray, u_min: np.ndarray, u_max: np.ndarray, eta: float, capacity: np.ndarray,
               now: float, overhead_s: float, comm: float, slot_s: float) -> tuple[np.ndarray, float, float]:
    """FIND_ALLOC on one state: the allocation, its throughput and payoff (:func:`payoff`, schedules charged per
    ``slot_s``); an empty allocation when fewer GPUs of runnable types are free than ``need``. The consolidated
    option wins ties with the spread one; the job's ``current`` allocation (``(0, 3)`` when none), when still
    free, wins ties and pays no overhead."""
    ok = speed > 0
    kord = np.empty(len(speed), dtype=np.int64)
    key_order(-speed, kord)
    best = consolidated(fr, speed, ok, kord, need)
    if len(best) == 0:  # fewer usable GPUs than asked
        return best, 0.0, 0.0
    tput, pay = payoff(best, speed, job, used, u_min, u_max, eta, capacity, now, overhead_s, comm, slot_s)
    other = spread(fr, ok, kord, need)
    t2, p2 = payoff(other, speed, job, used, u_min, u_max, eta, capacity, now, overhead_s, comm, slot_s)
    if p2 > pay:
        best, tput, pay = other, t2, p2
    if len(current):
        fits = True
        for row in range(len(current)):
            fits = fits and fr[current[row, 0], current[row, 1]] >= current[row, 2]
        if fits:
            t3, p3 = payoff(current, speed, job, used, u_min, u_max, eta, capacity, now, 0.0, comm, slot_s)
            if p3 >= pay:
                best, tput, pay = current, t3, p3
    return best, tput, pay


@numba.njit(**_JIT)
def window_dp(win: int, fr: np.ndarray, workers: np.ndarray, speeds: np.ndarray, facts: np.ndarray,
              cur_rows: np.ndarray, cur_from: np.ndarray, comm: np.ndarray, u_min: np.ndarray, u_max: np.ndarray,
              eta: float, capacity: np.ndarray, now: float, overhead_s: float, slot_s: float) -> int:
    """Algorithm 2's exact DP over the window's jobs ``0`` to ``win - 1`` on the free GPUs ``fr`` (servers x
    types): the jobs that reach the largest total payoff, as a bit mask (bit ``i``: job ``i``). Each job is
    skipped (tried first) or, when FIND_ALLOC (:func:`best_alloc`) finds it an allocation with a positive
    payoff on the state the jobs before it left, taken when that total is strictly larger; a total is summed
    from the last job back (``payoff + rest``). Depth first with an explicit stack (numba's cache does not load
    a recursive function); no memo: a state's answer is a function of the state, and the window is small (at
    most ``2 ** win - 1`` calls). The jobs' arrays as :func:`greedy_tail` reads them."""
    frs = np.empty((win + 1, fr.shape[0], fr.shape[1]), dtype=np.int64)  # the state at each depth
    frs[0] = fr
    phase = np.zeros(win + 1, dtype=np.int64)  # 0: skip next; 1: skip answered, take next; 2: take answered
    best_v, pay = np.zeros(win + 1), np.zeros(win + 1)
    best_m = np.zeros(win + 1, dtype=np.int64)
    ret_v, ret_m, d = 0.0, np.int64(0), 0
    while d >= 0:
        if d == win:
            ret_v, ret_m, d = 0.0, np.int64(0), d - 1
            continue
        if phase[d] == 0:
            phase[d] = 1
            frs[d + 1] = frs[d]
            d += 1
            continue
        if phase[d] == 1:
            best_v[d], best_m[d] = ret_v, ret_m
            take, _, p = best_alloc(frs[d], speeds[d], workers[d], facts[d], cur_rows[cur_from[d]:cur_from[d + 1]],
                                    capacity - frs[d], u_min, u_max, eta, capacity, now, overhead_s, comm[d], slot_s)
            if len(take) > 0 and p > 0:
                phase[d], pay[d] = 2, p
                frs[d + 1] = frs[d]
                for r in range(len(take)):
                    frs[d + 1, take[r, 0], take[r, 1]] -= take[r, 2]
                d += 1
                continue
        elif ret_v + pay[d] > best_v[d]:  # phase 2: the take's answer
            best_v[d], best_m[d] = ret_v + pay[d], ret_m | (np.int64(1) << d)
        phase[d] = 0
        ret_v, ret_m, d = best_v[d], best_m[d], d - 1
    return ret_m


@numba.njit(**_JIT)
def greedy_tail(fr: np.ndarray, start: int, chosen: int, workers: np.ndarray, speeds: np.ndarray,
                facts: np.ndarray, cur_rows: np.ndarray, cur_from: np.ndarray, comm: np.ndarray, u_min: np.ndarray,
                u_max: np.ndarray, eta: float, capacity: np.ndarray, now: float, overhead_s: float, slot_s: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The window's jobs the DP chose (``chosen``: bits of the jobs before ``start``, :func:`window_dp`), each
    given FIND_ALLOC's allocation on the GPUs the chosen ones before it left free (the state the DP saw it in),
    then Algorithm 2's greedy tail: the jobs from ``start`` on, in order, each taken when FIND_ALLOC
    (:func:`best_alloc`) on the GPUs still free (``fr``, updated in place) finds an allocation with a positive
    payoff; a job asking more GPUs than are free is passed over (it would find none); the walk ends when no
    GPU is free. Job ``i``: ``workers[i]``, throughputs ``speeds[i]``, ``facts[i]`` (remaining, arrival,
    iterations, unit), current allocation ``cur_rows[cur_from[i]:cur_from[i + 1]]``, communication charge
    ``comm[i]``. Returns the jobs taken, their allocations (``rows[row_from[t]:row_from[t + 1]]``), throughputs
    and payoffs."""
    n = len(workers)
    picked = np.empty(n, dtype=np.int64)
    tputs = np.empty(n)
    pays = np.empty(n)
    left = 0
    for h in range(fr.shape[0]):
        for k in range(fr.shape[1]):
            left += fr[h, k]
    rows = np.empty((left, 3), dtype=np.int64)  # every row takes at least one free GPU
    row_from = np.zeros(n + 1, dtype=np.int64)
    used = capacity - fr  # kept as GPUs are taken (whole numbers: the same floats as recomputed)
    m = 0
    for i in range(n):
        if i < start and not (chosen >> i) & 1:
            continue
        if i >= start and left == 0:
            break
        if i >= start and workers[i] > left:
            continue
        take, tput, pay = best_alloc(fr, speeds[i], workers[i], facts[i], cur_rows[cur_from[i]:cur_from[i + 1]],
                                     used, u_min, u_max, eta, capacity, now, overhead_s, comm[i], slot_s)
        if len(take) == 0 or not pay > 0:
            continue
        picked[m], tputs[m], pays[m] = i, tput, pay
        at = row_from[m]
        row_from[m + 1] = at + len(take)
        m += 1
        for r in range(len(take)):
            rows[at + r] = take[r]
            fr[take[r, 0], take[r, 1]] -= take[r, 2]
            used[take[r, 0], take[r, 1]] += take[r, 2]
            left -= take[r, 2]
    return picked[:m], rows[: row_from[m]], row_from[: m + 1], tputs[:m], pays[:m]


@numba.njit(**_JIT)
def select(fr: np.ndarray, win: int, workers: np.ndarray, speeds: np.ndarray, facts: np.ndarray,
           cur_rows: np.ndarray, cur_from: np.ndarray, comm: np.ndarray, u_min: np.ndarray, u_max: np.ndarray,
           eta: float, capacity: np.ndarray, now: float, overhead_s: float, slot_s: float
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 2 in one compiled call: the DP over the first ``win`` jobs (:func:`window_dp`), then the
    greedy tail after them (:func:`greedy_tail`, which returns the picks of both, in job order). ``fr`` is
    updated in place to what is left free."""
    chosen = window_dp(win, fr, workers, speeds, facts, cur_rows, cur_from, comm, u_min, u_max, eta,
                       capacity, now, overhead_s, slot_s)
    return greedy_tail(fr, win, chosen, workers, speeds, facts, cur_rows, cur_from, comm, u_min, u_max, eta,
                       capacity, now, overhead_s, slot_s)
