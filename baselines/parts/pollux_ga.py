"""The passes of Pollux's genetic search (:mod:`gpucluster_env.baselines.pollux_search`), compiled with numba.

A population is a stack of allocation matrices ``(P, J, H)``; each pass below walks it once, row by row, where
the numpy formulation built a dozen temporaries of that size per generation. The random numbers come from the
policy's generator's own PCG64 stream (:mod:`.pollux_pcg`), at the positions the search has always drawn them
(each step's numbers as one array, in the same order and shapes), read where the pass needs them and skipped
where it does not, so a search makes the same decisions to the bit and leaves the generator in the same state.
A stream read at nearly every entry is stepped in local variables (:func:`.pollux_pcg.lcg`; a short jump by a
row of :func:`.pollux_pcg.near_table`, a long one by :func:`.pollux_pcg.ahead`), written out in the loop rather
than called (a numba call returning the state costs about ten times the step itself).
Integer counts are exact; the only floating-point operations (a mutation's chance and the count it adds) are
the same operations in the same order as the formulas in :mod:`~gpucluster_env.baselines.pollux_search`'s
docstrings.

This module imports numba, so it is imported only when a Pollux search runs. Compiled code is cached on disk
next to this file where that is writable.
"""

from __future__ import annotations

import numba
import numpy as np
from gpucluster_env.baselines.parts.pollux_pcg import ahead, double_of, fork, lcg, near_table, next_double, settle, skip
from gpucluster_env.baselines.parts.stable_order import key_order

_JIT = {"cache": True, "error_model": "numpy", "boundscheck": False}
_FEW = 64
"""Up to this many nodes a row's node order is an insertion sort (no allocation); above, a merge sort (the
insertion sort's n^2 steps cost milliseconds a row on PhillyScale's 552 nodes). Both are stable: the same order."""


@numba.njit(**_JIT)
def cross(pop: np.ndarray, pairs: np.ndarray, cut: np.ndarray) -> np.ndarray:
    """Single-point crossover: child ``c`` takes jobs ``< cut[c]`` from parent ``pairs[c, 0]`` and the rest
    from ``pairs[c, 1]``; child ``K + c`` the mirror. Shape ``(2K, J, H)``."""
    n, n_jobs, n_nodes = len(pairs), pop.shape[1], pop.shape[2]
    out = np.empty((2 * n, n_jobs, n_nodes), dtype=pop.dtype)
    for c in range(n):
        for j in range(n_jobs):
            a, b = (pairs[c, 0], pairs[c, 1]) if j < cut[c] else (pairs[c, 1], pairs[c, 0])
            for h in range(n_nodes):  # element by element: a row slice's view costs more than 8 entries
                out[c, j, h] = pop[a, j, h]
                out[n + c, j, h] = pop[b, j, h]
    return out


@numba.njit(**_JIT)
def _zero_rows(out: np.ndarray, base: np.ndarray, stream: np.ndarray, table: np.ndarray) -> None:
    """Mutations (1) and (2) in place: rows with their reset draw ``< 0.1`` back to ``base``; in rows with their
    row draw ``< 0.1``, entries with their zeroing draw ``< 0.1`` to 0. The draws: ``(P, J)`` resets, ``(P, J)``
    row choices, ``(P, J, H)`` zeroings (read only in chosen rows)."""
    n_pop, n_jobs, n_nodes = out.shape
    reset, rows, zero = fork(stream, 0), fork(stream, n_pop * n_jobs), fork(stream, 2 * n_pop * n_jobs)
    for s in (reset, rows, zero):
        settle(s, table)
    a_hi, a_lo, c_hi, c_lo = table[0, 0], table[0, 1], table[0, 2], table[0, 3]  # one step
    r_hi, r_lo, w_hi, w_lo, z_hi, z_lo = reset[0], reset[1], rows[0], rows[1], zero[0], zero[1]  # in locals
    z_skip = 0  # zeroing draws passed over since the last one read
    for p in range(n_pop):
        for j in range(n_jobs):
            r_hi, r_lo = lcg(a_hi, a_lo, r_hi, r_lo, c_hi, c_lo)
            if double_of(r_hi, r_lo) < 0.1:
                for h in range(n_nodes):
                    out[p, j, h] = base[j, h]
            w_hi, w_lo = lcg(a_hi, a_lo, w_hi, w_lo, c_hi, c_lo)
            if double_of(w_hi, w_lo) < 0.1:
                z_hi, z_lo = ahead(z_hi, z_lo, z_skip, table)
                z_skip = 0
                for h in range(n_nodes):
                    z_hi, z_lo = lcg(a_hi, a_lo, z_hi, z_lo, c_hi, c_lo)
                    if double_of(z_hi, z_lo) < 0.1:
                        out[p, j, h] = 0
            else:
                z_skip += n_nodes
    skip(stream, (2 + n_nodes) * n_pop * n_jobs)


@numba.njit(**_JIT)
def mutate_rows(out: np.ndarray, base: np.ndarray, capacity: np.ndarray, stream: np.ndarray, table: np.ndarray
                ) -> np.ndarray:
    """Mutations (1)-(3) in place (``pollux_search.mutate``): :func:`_zero_rows`, then each entry whose hit
    draw is below its chance raised by ``floor(count draw x (room + 1))``, room and chances from the free GPUs
    before any raise. The draws after :func:`_zero_rows`': ``(P, J, H)`` hits (read where the chance is not 0:
    on nodes with room), ``(P, J, H)`` counts (read where hit). Returns those free GPUs ``(P, H)`` (capacity
    minus use, possibly negative)."""
    _zero_rows(out, base, stream, table)
    n_pop, n_jobs, n_nodes = out.shape
    hit, count = fork(stream, 0), fork(stream, out.size)
    settle(hit, table)
    settle(count, table)
    hit_hi, hit_lo, count_hi, count_lo = hit[0], hit[1], count[0], count[1]  # the two streams' states, in locals
    hit_at, count_at = 0, 0  # the positions the two streams stand at
    near = near_table(table, 16 * n_nodes)  # a jump within a few rows: one affine map
    a_hi, a_lo, c_hi, c_lo = table[0, 0], table[0, 1], table[0, 2], table[0, 3]
    free = np.empty((n_pop, n_nodes), dtype=np.int64)
    roomy = np.empty(n_nodes, dtype=np.int64)
    for p in range(n_pop):
        free[p] = capacity
        for j in range(n_jobs):
            for h in range(n_nodes):
                free[p, h] -= out[p, j, h]
        with_room = 0
        for h in range(n_nodes):
            if free[p, h] > 0:
                roomy[with_room] = h
                with_room += 1
        p1 = 1.0 / max(with_room, 1)
        for j in range(n_jobs):  # chances are 0 on nodes without room: only the others are drawn for
            mine = 0
            for r in range(with_room):
                mine += out[p, j, roomy[r]] > 0
            p2 = 1.0 / max(mine, 1)
            for r in range(with_room):
                h = roomy[r]
                at = (p * n_jobs + j) * n_nodes + h
                g = at - hit_at + 1
                if g == 1:  # the next draw (most entries): the one-step map, in registers
                    hit_hi, hit_lo = lcg(a_hi, a_lo, hit_hi, hit_lo, c_hi, c_lo)
                elif g < len(near):
                    hit_hi, hit_lo = lcg(near[g, 0], near[g, 1], hit_hi, hit_lo, near[g, 2], near[g, 3])
                else:
                    hit_hi, hit_lo = ahead(hit_hi, hit_lo, g, table)
                hit_at = at + 1
                chance = p1 + p2 - p1 * p2 if out[p, j, h] > 0 else p1
                if double_of(hit_hi, hit_lo) < chance:
                    g = at - count_at + 1
                    if g < len(near):
                        count_hi, count_lo = lcg(near[g, 0], near[g, 1], count_hi, count_lo, near[g, 2], near[g, 3])
                    else:
                        count_hi, count_lo = ahead(count_hi, count_lo, g, table)
                    count_at = at + 1
                    out[p, j, h] += np.int64(np.floor(double_of(count_hi, count_lo) * (free[p, h] + 1)))
    skip(stream, 2 * out.size)
    return free


@numba.njit(**_JIT)
def gang_candidates(out: np.ndarray, fixed: np.ndarray, stream: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``(candidate, job)`` pairs, in that order, of gang-fixed jobs with no GPUs whose pick draw is ``< 0.1``.
    The draws: ``(P, J)`` picks (read for gang-fixed jobs with no GPUs)."""
    n_pop, n_jobs, n_nodes = out.shape
    found = np.empty((n_pop * n_jobs, 2), dtype=np.int64)
    pick = fork(stream, 0)
    n = 0
    for p in range(n_pop):
        for j in range(n_jobs):
            size = 0
            for h in range(n_nodes):
                size += out[p, j, h]
            if fixed[j] > 0 and size == 0:
                if next_double(pick, table) < 0.1:
                    found[n, 0], found[n, 1] = p, j
                    n += 1
            else:
                skip(pick, 1)
    skip(stream, n_pop * n_jobs)
    return found[:n]


@numba.njit(**_JIT)
def _roomiest_left(room: np.ndarray, ties: np.ndarray, taken: np.ndarray) -> int:
    """The first node not ``taken`` in the order by most room, then tie-break key, then index
    (``np.lexsort((ties, -room))``): a gang takes only its first few nodes, so they are picked one by one, not
    all sorted."""
    best = -1
    for h in range(len(room)):
        if not taken[h] and (best < 0 or room[h] > room[best] or (room[h] == room[best] and ties[h] < ties[best])):
            best = h
    return best


@numba.njit(**_JIT)
def fill_gangs(out: np.ndarray, free: np.ndarray, fixed: np.ndarray, stream: np.ndarray, table: np.ndarray) -> None:
    """Mutation (4) in place (:func:`gang_candidates`' draws first): each chosen ``(candidate, job)`` in turn
    gets up to its gang from its candidate's roomiest nodes (a row of ``H`` tie-break draws per chosen job,
    read when the candidate has room), taking all of each node's room but the last's."""
    cand = gang_candidates(out, fixed, stream, table)
    n_nodes = out.shape[2]
    ties, room, taken = np.empty(n_nodes), np.empty(n_nodes, dtype=np.int64), np.empty(n_nodes, dtype=np.bool_)
    settle(stream, table)
    hi, lo, passed = stream[0], stream[1], 0  # the stream's state in locals, and the draws passed over since
    a_hi, a_lo, c_hi, c_lo = table[0, 0], table[0, 1], table[0, 2], table[0, 3]
    for c in range(len(cand)):
        p, j = cand[c, 0], cand[c, 1]
        total = 0
        for h in range(n_nodes):
            room[h] = max(free[p, h], 0)
            total += room[h]
        if total == 0:  # nothing to take, whatever the order
            passed += n_nodes
            continue
        hi, lo = ahead(hi, lo, passed, table)
        passed = 0
        for h in range(n_nodes):
            hi, lo = lcg(a_hi, a_lo, hi, lo, c_hi, c_lo)
            ties[h] = double_of(hi, lo)
        before = 0
        taken[:] = False
        while before < fixed[j]:  # the roomiest node left until the gang is whole
            h = _roomiest_left(room, ties, taken)
            if h < 0 or room[h] == 0:  # every node taken, or no room left: the others give nothing
                break
            taken[h] = True
            take = min(fixed[j] - before, room[h])
            before += room[h]
            out[p, j, h] += take
            free[p, h] -= take
    stream[0], stream[1] = hi, lo
    skip(stream, passed)


@numba.njit(**_JIT)
def _one_type(out: np.ndarray, node_type: np.ndarray, types: np.ndarray) -> None:
    """Each row keeps only the nodes of its type with the most GPUs (the first such type of ``types``)."""
    n_pop, n_jobs, n_nodes = out.shape
    per = np.zeros(len(types), dtype=np.int64)
    for p in range(n_pop):
        for j in range(n_jobs):
            per[:] = 0
            for h in range(n_nodes):
                for t in range(len(types)):
                    if node_type[h] == types[t]:
                        per[t] += out[p, j, h]
            keep = types[np.argmax(per)]
            for h in range(n_nodes):
                if node_type[h] != keep:
                    out[p, j, h] = 0


@numba.njit(**_JIT)
def _one_distributed(out: np.ndarray) -> None:
    """On each node only the first job (in order) of those spread over several nodes keeps its GPUs."""
    n_pop, n_jobs, n_nodes = out.shape
    taken = np.empty(n_nodes, dtype=np.bool_)
    for p in range(n_pop):
        taken[:] = False
        for j in range(n_jobs):
            used = 0
            for h in range(n_nodes):
                used += out[p, j, h] > 0
            if used < 2:
                continue
            for h in range(n_nodes):
                if out[p, j, h] > 0:
                    if taken[h]:
                        out[p, j, h] = 0
                    taken[h] = True


@numba.njit(**_JIT)
def _cap_rows(out: np.ndarray, stream: np.ndarray, table: np.ndarray, max_gpus: np.ndarray) -> None:
    """A row over ``max_gpus[j]`` keeps its entries in the node order of ``argsort`` of its ``H`` key draws
    until full. The draws: ``(P, J, H)`` keys, read at the row's non-zero entries when it is over its size (a
    zero entry keeps 0 wherever it stands, and a stable sort orders the others as the whole row's sort does)."""
    n_pop, n_jobs, n_nodes = out.shape
    order = np.empty(n_nodes, dtype=np.int64)
    keys = np.empty(n_nodes)
    used = np.empty(n_nodes, dtype=np.int64)
    draws = fork(stream, 0)
    settle(draws, table)
    d_hi, d_lo, d_at = draws[0], draws[1], 0  # the key stream's state and position, in locals
    near = near_table(table, 16 * n_nodes)
    for p in range(n_pop):
        for j in range(n_jobs):
            size = 0
            for h in range(n_nodes):
                size += out[p, j, h]
            if size <= max_gpus[j]:
                continue
            n = 0
            for h in range(n_nodes):
                if out[p, j, h] != 0:
                    g = (p * n_jobs + j) * n_nodes + h - d_at + 1  # steps to this entry's draw
                    if g < len(near):
                        d_hi, d_lo = lcg(near[g, 0], near[g, 1], d_hi, d_lo, near[g, 2], near[g, 3])
                    else:
                        d_hi, d_lo = ahead(d_hi, d_lo, g, table)
                    d_at += g
                    keys[n], used[n] = double_of(d_hi, d_lo), h
                    n += 1
            if n > _FEW:
                order[:n] = np.argsort(keys[:n], kind="mergesort")  # stable, as key_order
            else:
                key_order(keys[:n], order[:n])
            total, kept = 0, 0
            for k in order[:n]:
                h = used[k]
                total += out[p, j, h]
                now = min(total, max_gpus[j])
                out[p, j, h] = now - kept
                kept = now
    skip(stream, out.size)


@numba.njit(**_JIT)
def _cap_nodes(out: np.ndarray, capacity: np.ndarray) -> None:
    """A node over capacity keeps the GPUs of jobs earlier in order until full."""
    n_pop, n_jobs, n_nodes = out.shape
    used = np.empty(n_nodes, dtype=np.int64)
    kept = np.empty(n_nodes, dtype=np.int64)
    for p in range(n_pop):
        used[:] = 0
        for j in range(n_jobs):
            for h in range(n_nodes):
                used[h] += out[p, j, h]
        if not (used > capacity).any():
            continue
        used[:] = 0
        kept[:] = 0
        for j in range(n_jobs):
            for h in range(n_nodes):
                used[h] += out[p, j, h]
                now = min(used[h], capacity[h])
                out[p, j, h] = now - kept[h]
                kept[h] = now


@numba.njit(**_JIT)
def repair_rows(out: np.ndarray, node_type: np.ndarray, types: np.ndarray, stream: np.ndarray, table: np.ndarray,
                max_gpus: np.ndarray, min_gpus: np.ndarray, fixed: np.ndarray, capacity: np.ndarray) -> None:
    """``pollux_search.repair``'s steps in its order, in place on ``out`` (entries already non-negative):
    one type per job (when ``types`` has several), one distributed job per node, largest sizes (the random
    node order: :func:`_cap_rows`' draws), node capacities, allowed sizes (a row of another size is emptied)."""
    if len(types) > 1:
        _one_type(out, node_type, types)
    _one_distributed(out)
    _cap_rows(out, stream, table, max_gpus)
    _cap_nodes(out, capacity)
    n_pop, n_jobs, _ = out.shape
    for p in range(n_pop):
        for j in range(n_jobs):
            size = 0
            for h in range(out.shape[2]):
                size += out[p, j, h]
            if size > 0 and (size < min_gpus[j] or (fixed[j] > 0 and size != fixed[j])):
                out[p, j] = 0


@numba.njit(**_JIT)
def row_shapes(pop: np.ndarray, node_type: np.ndarray, base: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per candidate and job: GPUs, nodes used, GPU type (of the first node used, else node 0's; at least 0),
    and whether the row differs from ``base``. Each ``(P, J)``."""
    n_pop, n_jobs, n_nodes = pop.shape
    size = np.empty((n_pop, n_jobs), dtype=np.int64)
    nodes = np.empty((n_pop, n_jobs), dtype=np.int64)
    kind = np.empty((n_pop, n_jobs), dtype=np.int64)
    moved = np.empty((n_pop, n_jobs), dtype=np.bool_)
    for p in range(n_pop):
        for j in range(n_jobs):
            total, used, differ, first = 0, 0, 0, -1  # sums in locals, not in the output arrays
            for h in range(n_nodes):
                x = pop[p, j, h]
                total += x
                used += x != 0
                differ += x != base[j, h]
            if used > 0:  # the first node holding GPUs
                for h in range(n_nodes):
                    if pop[p, j, h] > 0:
                        first = h
                        break
            size[p, j], nodes[p, j], moved[p, j] = total, used, differ > 0
            kind[p, j] = max(node_type[max(first, 0)], 0)
    return size, nodes, kind, moved
