"""FIND_ALLOC's options and their payoffs (:func:`gpucluster_env.baselines.parts.hadar_alloc.find_alloc`),
compiled with numba.

Hadar asks FIND_ALLOC about every queued job on every server state its DP and greedy tail reach (~320 calls a
round on PhillyScale's 552 servers). Here one compiled call builds the consolidated and the non-consolidated
allocations, prices them and picks the better (or the job's current allocation), with the same float
operations in the same order as the formulas in :mod:`.hadar_alloc`'s docstrings, so the same choices to the
bit. An allocation is an ``(n, 3)`` array of ``(server, type, count)``. The free GPUs are read through their
classes (:mod:`.hadar_free`: servers with the same free GPUs of every type, as bit sets in server order), so an
option costs a pass over the classes (at most nine on PhillyScale) and the servers it takes, not a walk over
the servers. A round's selection (:func:`select`) is one compiled call over the queue's arrays: the DP window
(:func:`window_dp`) and the greedy tail after it (:func:`greedy_tail`), each job the same FIND_ALLOC call as
:func:`~gpucluster_env.baselines.parts.hadar_alloc.find_alloc` makes, on classes kept up to date as GPUs are
taken (and, in the DP, given back). Kernels walk index ranges, not arrays: a numba array iterator in an inner
loop cost ~30 ns a step.

This module imports numba, so it is imported only when Hadar allocates. Compiled code is cached on disk next to
this file where that is writable.
"""

from __future__ import annotations

import numba
import numpy as np
from gpucluster_env.baselines.parts.hadar_free import (
    first_member,
    level_bits,
    low_bit,
    next_level,
    take_rows,
)
from gpucluster_env.baselines.parts.stable_order import key_order

_JIT = {"cache": True, "error_model": "numpy", "boundscheck": False}
_ABOVE = 1 << 62  # above any count of free GPUs


@numba.njit(inline="always", **_JIT)
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


@numba.njit(inline="always", **_JIT)
def consolidated(fs: tuple, speed: np.ndarray, ok: np.ndarray, kord: np.ndarray, need: int) -> np.ndarray:
    """The consolidated allocation on the free GPUs ``fs`` (:mod:`.hadar_free`): one server if any fits (the
    one whose gang's slowest GPU is fastest, then the least usable room, then the lowest index), else the
    servers with most usable room first (ties by index); no rows when fewer than ``need`` GPUs of runnable
    (``ok``) types are free in all. A server's usable room and gang speed are its class's: the one server is
    the best class's first member, and the servers by room are walked a level of room at a time."""
    fr, _, vec, cnt, bits, nc = fs
    use = np.zeros(nc[0], dtype=np.int64)  # each class's usable room
    total, top, best, best_slow, best_at = 0, 0, -1, 0.0, 0
    for c in range(nc[0]):
        if cnt[c] == 0:
            continue
        for k in range(vec.shape[1]):
            use[c] += vec[c, k] * ok[k]
        total += use[c] * cnt[c]
        top = max(top, use[c])
        if use[c] < need:
            continue
        cum, slow = 0, 0.0
        for a in range(len(kord)):  # by index: an array iterator costs ~30 ns a step here
            k = kord[a]
            if ok[k]:
                cum += vec[c, k]
                if cum >= need:
                    slow = speed[k]
                    break
        if best < 0 or -slow < -best_slow or (-slow == -best_slow and use[c] < use[best]):
            best, best_slow, best_at = c, slow, -1  # its first member read when needed
        elif -slow == -best_slow and use[c] == use[best]:  # a tie of classes: the lower index
            if best_at < 0:
                best_at = first_member(fs, best)
            at = first_member(fs, c)
            if at < best_at:
                best, best_at = c, at
    if best < 0 and total < need:
        return np.empty((0, 3), dtype=np.int64)
    out = np.empty((min(need, fr.shape[0] * len(kord)), 3), dtype=np.int64)  # a row takes >= 1 GPU
    if best >= 0:
        if best_at < 0:
            best_at = first_member(fs, best)
        return out[: _take_one(fr, ok, kord, best_at, need, out, 0)[1]]
    words = np.empty(bits.shape[1], dtype=np.int64)
    n, rows, level = need, 0, top
    while n > 0 and level > 0:
        level_bits(fs, use, level, words)
        for w in range(len(words)):
            x = words[w]
            while x and n > 0:
                n, rows = _take_one(fr, ok, kord, w * 64 + low_bit(x), n, out, rows)
                x &= x - 1
        level = next_level(fs, use, level)
    return out[:rows]


@numba.njit(inline="always", **_JIT)
def spread(fs: tuple, ok: np.ndarray, kord: np.ndarray, need: int) -> np.ndarray:
    """The non-consolidated allocation on the free GPUs ``fs`` (:mod:`.hadar_free`): the fastest GPUs anywhere
    (most free servers first within a type, ties by index; a type's walk stops when no server has any left).
    Each type's servers are walked level by level of free GPUs, most first, each level's servers (the members
    of its classes) in index order: the order of ``np.argsort(-fr[:, k], kind="stable")``."""
    fr, _, vec, _, bits, nc = fs
    out = np.empty((min(need, fr.shape[0] * len(kord)), 3), dtype=np.int64)  # a row takes >= 1 GPU
    words = np.empty(bits.shape[1], dtype=np.int64)
    n, rows = need, 0
    for a in range(len(kord)):
        k = kord[a]
        if not ok[k]:
            continue
        key = vec[: nc[0], k]
        level = next_level(fs, key, _ABOVE)
        while n > 0 and level > 0:
            level_bits(fs, key, level, words)
            for w in range(len(words)):
                x = words[w]
                while x and n > 0:
                    c = min(level, n)
                    out[rows, 0], out[rows, 1], out[rows, 2] = w * 64 + low_bit(x), k, c
                    rows += 1
                    n -= c
                    x &= x - 1
            level = next_level(fs, key, level)
        if n == 0:
            break
    return out[:rows]


@numba.njit(inline="always", **_JIT)
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


@numba.njit(inline="always", **_JIT)
def take_stats(take: np.ndarray, speed: np.ndarray) -> tuple[float, int]:
    """An allocation's gang throughput (its slowest GPU's, Eq. (1b)) and the number of servers it spans."""
    tput = np.inf
    servers = 0
    for row in range(len(take)):
        tput = min(tput, speed[take[row, 1]])
        servers += 1  # unless an earlier row is of its server (rows are few: no per-server table)
        for prev in range(row):
            if take[prev, 0] == take[row, 0]:
                servers -= 1
                break
    return tput, servers


@numba.njit(inline="always", **_JIT)
def pay_of(tput: float, servers: int, price: float, job: np.ndarray, now: float, overhead_s: float, comm: float,
           slot_s: float) -> float:
    """Eq. (3a)'s payoff of an allocation of gang throughput ``tput`` over ``servers`` servers whose GPUs cost
    ``price`` a round (:func:`cost`): the job's utility at the completion it gives minus the cost of its
    schedule, the price and ``comm`` per extra server charged for every slot the allocation is held (its run
    over ``slot_s``, at least one: the same GPU-slots Eq. (6) divides ``U_max`` by); ``slot_s`` 0: this
    round's cost only. ``job``: remaining iterations, arrival, total iterations, utility unit."""
    run = job[0] / tput + overhead_s
    finish = now + run
    utility = job[2] / max(finish - job[1], 1e-9) / job[3]
    slots = max(run / slot_s, 1.0) if slot_s > 0 else 1.0
    return utility - (price + comm * (servers - 1)) * slots


@numba.njit(inline="always", **_JIT)
def payoff(take: np.ndarray, speed: np.ndarray, job: np.ndarray, used: np.ndarray, u_min: np.ndarray,
           u_max: np.ndarray, eta: float, capacity: np.ndarray, now: float, overhead_s: float, comm: float,
           slot_s: float) -> tuple[float, float]:
    """An allocation's gang throughput and payoff (:func:`take_stats`, :func:`pay_of`) at this round's prices
    given ``used`` (:func:`cost`)."""
    tput, servers = take_stats(take, speed)
    return tput, pay_of(tput, servers, cost(used, take, u_min, u_max, eta, capacity), job, now, overhead_s, comm,
                        slot_s)


@numba.njit(**_JIT)
def type_orders(speeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each job's runnable types (``speeds > 0``) and its types fastest first (ties by index), a row a job of
    ``speeds`` (jobs x types): what FIND_ALLOC's options read, found once a round per job."""
    kords = np.empty(speeds.shape, dtype=np.int64)
    for i in range(speeds.shape[0]):
        key_order(-speeds[i], kords[i])
    return speeds > 0, kords


@numba.njit(inline="always", **_JIT)
def options(fs: tuple, speed: np.ndarray, ok: np.ndarray, kord: np.ndarray, need: int, used: np.ndarray,
            u_min: np.ndarray, u_max: np.ndarray, eta: float, capacity: np.ndarray
            ) -> tuple[np.ndarray, float, np.ndarray, float]:
    """FIND_ALLOC's two options on one state (the free GPUs ``fs``, :mod:`.hadar_free`, and ``used``): the
    consolidated allocation, its cost (:func:`cost`), the spread one and its cost; an empty consolidated one
    (and the spread one not built) when fewer GPUs of runnable types are free than ``need``. They depend on the
    job only through ``need``, ``ok``, ``kord`` and which of its types' speeds are equal (the order
    :func:`consolidated` compares them in)."""
    cons = consolidated(fs, speed, ok, kord, need)
    if len(cons) == 0:  # fewer usable GPUs than asked
        return cons, 0.0, cons, 0.0
    other = spread(fs, ok, kord, need)
    return (cons, cost(used, cons, u_min, u_max, eta, capacity), other,
            cost(used, other, u_min, u_max, eta, capacity))


@numba.njit(inline="always", **_JIT)
def choose(fs: tuple, cons: np.ndarray, cons_cost: float, other: np.ndarray, other_cost: float,
           speed: np.ndarray, job: np.ndarray, current: np.ndarray, used: np.ndarray, u_min: np.ndarray,
           u_max: np.ndarray, eta: float, capacity: np.ndarray, now: float, overhead_s: float, comm: float,
           slot_s: float) -> tuple[np.ndarray, float, float]:
    """FIND_ALLOC's choice among its :func:`options` (``cons`` and ``other`` with their costs) and the job's
    ``current`` allocation: the allocation, its throughput and payoff (:func:`pay_of`, schedules charged per
    ``slot_s``); an empty allocation when ``cons`` is empty. The consolidated option wins ties with the spread
    one; the job's ``current`` allocation (``(0, 3)`` when none), when still free, wins ties and pays no
    overhead."""
    if len(cons) == 0:
        return cons, 0.0, 0.0
    fr = fs[0]
    tput, servers = take_stats(cons, speed)
    best, pay = cons, pay_of(tput, servers, cons_cost, job, now, overhead_s, comm, slot_s)
    t2, s2 = take_stats(other, speed)
    p2 = pay_of(t2, s2, other_cost, job, now, overhead_s, comm, slot_s)
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
def best_alloc(fs: tuple, speed: np.ndarray, ok: np.ndarray, kord: np.ndarray, need: int, job: np.ndarray,
               current: np.ndarray, used: np.ndarray, u_min: np.ndarray, u_max: np.ndarray, eta: float,
               capacity: np.ndarray, now: float, overhead_s: float, comm: float, slot_s: float
               ) -> tuple[np.ndarray, float, float]:
    """FIND_ALLOC on one state (the free GPUs ``fs``, :mod:`.hadar_free`, and ``used``): :func:`choose` among
    the :func:`options`. ``ok``, ``kord``: the job's row of :func:`type_orders`."""
    cons, cc, other, oc = options(fs, speed, ok, kord, need, used, u_min, u_max, eta, capacity)
    return choose(fs, cons, cc, other, oc, speed, job, current, used, u_min, u_max, eta, capacity, now, overhead_s,
                  comm, slot_s)


@numba.njit(**_JIT)
def window_dp(win: int, fs: tuple, used: np.ndarray, workers: np.ndarray, speeds: np.ndarray, oks: np.ndarray,
              kords: np.ndarray, facts: np.ndarray, cur_rows: np.ndarray, cur_from: np.ndarray, comm: np.ndarray,
              u_min: np.ndarray, u_max: np.ndarray, eta: float, capacity: np.ndarray, now: float, overhead_s: float,
              slot_s: float) -> int:
    """Algorithm 2's exact DP over the window's jobs ``0`` to ``win - 1`` on the free GPUs ``fs``
    (:mod:`.hadar_free`) and ``used`` (servers x types): the jobs that reach the largest total payoff, as a bit
    mask (bit ``i``: job ``i``). Each job is skipped (tried first) or, when FIND_ALLOC (:func:`best_alloc`)
    finds it an allocation with a positive payoff on the state the jobs before it left, taken when that total
    is strictly larger; a total is summed from the last job back (``payoff + rest``). Depth first with an
    explicit stack (numba's cache does not load a recursive function): a take is applied to ``fs`` and
    ``used`` going down and given back coming up, so both are as given on return. No memo: a state's answer is
    a function of the state, and the window is small (at most ``2 ** win - 1`` calls). The jobs' arrays as
    :func:`greedy_tail` reads them."""
    most = 1
    for d in range(win):
        most = max(most, workers[d], cur_from[d + 1] - cur_from[d])
    taken = np.empty((win + 1, most, 3), dtype=np.int64)  # the rows each depth took (a row >= 1 GPU)
    n_taken = np.zeros(win + 1, dtype=np.int64)
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
            d += 1
            continue
        if phase[d] == 1:
            best_v[d], best_m[d] = ret_v, ret_m
            take, _, p = best_alloc(fs, speeds[d], oks[d], kords[d], workers[d], facts[d],
                                    cur_rows[cur_from[d]:cur_from[d + 1]], used, u_min, u_max, eta, capacity, now,
                                    overhead_s, comm[d], slot_s)
            if len(take) > 0 and p > 0:
                phase[d], pay[d] = 2, p
                n_taken[d] = len(take)
                taken[d, : len(take)] = take
                take_rows(fs, used, taken[d, : n_taken[d]], 1)
                d += 1
                continue
        else:  # phase 2: the take's answer
            take_rows(fs, used, taken[d, : n_taken[d]], -1)
            if ret_v + pay[d] > best_v[d]:
                best_v[d], best_m[d] = ret_v + pay[d], ret_m | (np.int64(1) << d)
        phase[d] = 0
        ret_v, ret_m, d = best_v[d], best_m[d], d - 1
    return ret_m
