"""Pollux's mutations on sparse candidates (:mod:`.pollux_sparse`): each job's row holds only the nodes it has
GPUs on, and a Bernoulli choice over many rows or nodes is made by geometric gaps between the chosen ones.

A candidate in slot ``s`` is ``nd[s, j, :nz[s, j]]`` (nodes, in no particular order) and ``ct[s, j, :nz[s, j]]``
(GPUs there, each > 0). A row's fixed width ``W`` bounds its entries; an insert into a full row is dropped (a row
holds at most its job's largest size after the repair, and ``W`` leaves a few entries beyond it for one
generation's raises: expected one or two a row, each on a node the row may already hold).

**The draws.** Every choice Pollux's mutation makes with a probability per row or per entry (a row reset with
0.1, a row chosen for zeroing with 0.1, a node raised with about one over the nodes with room) is drawn as the
gaps between successive chosen positions (:func:`gap`: ``P(gap >= k) = (1 - p)^k``, so each position is chosen
independently with probability ``p``, as one draw per position chooses it), so the draws are proportional to
the choices made, not to the positions. :func:`gap` compares one double with a table of powers of ``1 - p``
formed by repeated multiplication (the same on every machine; ``log`` is libm's); a row's raised nodes are a
binomial count from a table, then that many distinct nodes drawn uniformly. The numbers come from
the policy's generator's PCG64 stream (:func:`.pollux_pcg.next_double`, :func:`.pollux_pcg.bounded`).
"""

from __future__ import annotations

import numba
import numpy as np
from gpucluster_env.baselines.parts.pollux_pcg import double_of, lcg, settle

_JIT = {"cache": True, "error_model": "numpy", "boundscheck": False}
MUTATE_P = 0.1
"""Pollux's chance of a row reset, of a row chosen for zeroing, of an entry zeroed in it, of a gang filled."""
_NONE = np.uint64(0)
TAIL = 32
"""Hit counts a row's raise table holds (:func:`hits_table`): beyond 32 of ``Binomial(R, 1/R)`` the chance is
below 1e-35."""


@numba.njit(inline="always", **_JIT)
def uniform(stream: np.ndarray, table: np.ndarray) -> float:
    """The stream's next double in [0, 1) (``Generator.random()``'s), inlined where it is drawn (a call costs
    several times the step)."""
    if stream[2] != _NONE:
        settle(stream, table)
    hi, lo = lcg(table[0, 0], table[0, 1], stream[0], stream[1], table[0, 2], table[0, 3])
    stream[0], stream[1] = hi, lo
    return double_of(hi, lo)


@numba.njit(inline="always", **_JIT)
def below(stream: np.ndarray, table: np.ndarray, n: int) -> int:
    """A uniform integer in ``[0, n)``: ``floor(u x n)`` of one :func:`uniform` (within ``n / 2**53`` of
    uniform)."""
    return min(np.int64(uniform(stream, table) * n), n - 1)


@numba.njit(**_JIT)
def survival(p: float, n: int) -> np.ndarray:
    """``(1 - p)^k`` for ``k < n``, by repeated multiplication (the same on every machine)."""
    out = np.empty(n)
    q, acc = 1.0 - p, 1.0
    for k in range(n):
        out[k] = acc
        acc = acc * q
    return out


@numba.njit(**_JIT)
def gap(stream: np.ndarray, table: np.ndarray, surv: np.ndarray) -> int:
    """Positions passed over before the next chosen one, each chosen with probability ``p`` (``surv``: its
    :func:`survival` table): the largest ``k`` with ``u < (1 - p)^k`` for one ``u`` in (0, 1], read from the
    table (beyond it, ``u`` over the table's last power: the gap is memoryless)."""
    u = 1.0 - uniform(stream, table)
    last = len(surv) - 1
    k = 0
    while u < surv[last]:
        u = u / surv[last]
        k += last
    i = 1
    while u < surv[i]:
        i += 1
    return k + i - 1


@numba.njit(**_JIT)
def hits_table(cache: np.ndarray, n_room: int) -> np.ndarray:
    """The distribution function of ``Binomial(n_room, 1 / n_room)`` at ``0..TAIL - 1``: row ``n_room`` of
    ``cache`` (``(H + 1, TAIL + 1)``, the last column 1 once the row is built), by the pmf's recurrence from
    ``(1 - p)^n_room`` (one node: one hit)."""
    row = cache[n_room]
    if row[TAIL] == 0.0:
        p = 1.0 / n_room
        pmf = survival(p, n_room + 1)[n_room]
        acc = 0.0
        for k in range(TAIL):
            acc = 1.0 if n_room == 1 and k >= 1 else acc + pmf
            row[k] = acc
            pmf = pmf * (n_room - k) / (k + 1) * p / (1.0 - p) if k < n_room and n_room > 1 else 0.0
        row[TAIL] = 1.0
    return row


@numba.njit(**_JIT)
def put(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, s: int, j: int, h: int, add: int) -> bool:
    """Add ``add > 0`` GPUs on node ``h`` to row ``(s, j)`` (a new entry at the end; dropped when the row is
    full). Whether the row changed."""
    n = nz[s, j]
    for e in range(n):
        if nd[s, j, e] == h:
            ct[s, j, e] += add
            return True
    if n == nd.shape[2]:
        return False
    nd[s, j, n], ct[s, j, n] = h, add
    nz[s, j] = n + 1
    return True


@numba.njit(inline="always", **_JIT)
def compact(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, s: int, j: int) -> None:
    """Drop row ``(s, j)``'s entries of 0 GPUs (the others keep their order)."""
    n = 0
    for e in range(nz[s, j]):
        if ct[s, j, e] > 0:
            nd[s, j, n], ct[s, j, n] = nd[s, j, e], ct[s, j, e]
            n += 1
    nz[s, j] = n


@numba.njit(inline="always", **_JIT)
def copy_row(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, s: int, j: int, bnd: np.ndarray, bct: np.ndarray,
             bnz: np.ndarray, b: int, k: int) -> None:
    """Row ``(s, j)`` := row ``(b, k)`` of ``(bnd, bct, bnz)``."""
    n = bnz[b, k]
    for e in range(n):
        nd[s, j, e], ct[s, j, e] = bnd[b, k, e], bct[b, k, e]
    nz[s, j] = n


@numba.njit(inline="always", **_JIT)
def row_size(ct: np.ndarray, nz: np.ndarray, s: int, j: int) -> int:
    """GPUs of row ``(s, j)``."""
    total = 0
    for e in range(nz[s, j]):
        total += ct[s, j, e]
    return total


@numba.njit(**_JIT)
def reset_and_zero(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, dirty: np.ndarray, s: int, bnd: np.ndarray,
                   bct: np.ndarray, bnz: np.ndarray, pw: np.ndarray, stream: np.ndarray, table: np.ndarray) -> None:
    """Mutations (1) and (2) on candidate ``s``: each row back to the current allocation with probability 0.1;
    then each row chosen with probability 0.1 has each entry zeroed with probability 0.1 (one draw per entry of
    a chosen row; zeroing an empty position changes nothing). ``pw``: the gap table of 0.1."""
    n_jobs = nz.shape[1]
    j = gap(stream, table, pw)
    while j < n_jobs:
        copy_row(nd, ct, nz, s, j, bnd, bct, bnz, 0, j)
        dirty[s, j] = True
        j += 1 + gap(stream, table, pw)
    j = gap(stream, table, pw)
    while j < n_jobs:
        hit = False
        for e in range(nz[s, j]):
            if uniform(stream, table) < MUTATE_P:
                ct[s, j, e] = 0
                hit = True
        if hit:
            compact(nd, ct, nz, s, j)
            dirty[s, j] = True
        j += 1 + gap(stream, table, pw)


@numba.njit(**_JIT)
def free_of(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, s: int, capacity: np.ndarray, free: np.ndarray
            ) -> None:
    """``free`` := ``capacity`` minus candidate ``s``'s GPUs on each node."""
    free[:] = capacity
    for j in range(nz.shape[1]):
        for e in range(nz[s, j]):
            free[nd[s, j, e]] -= ct[s, j, e]


@numba.njit(**_JIT)
def raise_rows(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, dirty: np.ndarray, s: int, free: np.ndarray,
               work: tuple, stream: np.ndarray, table: np.ndarray) -> None:
    """Mutation (3) on candidate ``s``: with ``R`` nodes with room (``free > 0``), each (row, node with room)
    chosen with ``p1 = 1 / R`` (per row: a ``Binomial(R, p1)`` count of nodes, :func:`hits_table`, then that
    many distinct nodes uniformly), and a row's own nodes with room also with ``p2``, one over their number:
    chance ``p1 + p2 - p1 p2`` there, ``p1`` elsewhere, as Pollux's mutation; each chosen node raised by
    ``floor(u x (free + 1))``. Room from ``free`` before any raise. ``work``: scratch ``(roomy, roomy_at,
    hits, cache)``. One loop, no calls per row (a numba call passing arrays costs more than a row's work)."""
    roomy, roomy_at, hits, cache = work
    n_room = 0
    for h in range(len(free)):
        roomy_at[h] = -1
        if free[h] > 0:
            roomy[n_room] = h
            roomy_at[h] = n_room
            n_room += 1
    if n_room == 0:
        return
    cdf = hits_table(cache, n_room)
    width = nd.shape[2]
    for j in range(nz.shape[1]):
        u = uniform(stream, table)
        n_hit = 0
        while n_hit < TAIL - 1 and u >= cdf[n_hit]:
            n_hit += 1
        n_hit = min(n_hit, n_room)
        for k in range(n_hit):  # distinct nodes, uniformly: draw again on a repeat
            h = roomy[below(stream, table, n_room)]
            while _seen(hits, k, h):
                h = roomy[below(stream, table, n_room)]
            hits[k] = h
        n = nz[s, j]
        mine = 0  # the row's own nodes with room, each also chosen with p2 = 1 / mine (all when one)
        for e in range(n):
            mine += roomy_at[nd[s, j, e]] >= 0
        for e in range(n):
            h = nd[s, j, e]
            if roomy_at[h] >= 0 and (mine == 1 or uniform(stream, table) < 1.0 / mine) and not _seen(hits, n_hit, h):
                hits[n_hit] = h
                n_hit += 1
        for k in range(n_hit):  # each chosen node raised by floor(u x (free + 1)), in place or a new entry
            h = hits[k]
            add = np.int64(np.floor(uniform(stream, table) * (free[h] + 1)))
            if add <= 0:
                continue
            e = 0
            while e < n and nd[s, j, e] != h:
                e += 1
            if e < n:
                ct[s, j, e] += add
            elif n < width:
                nd[s, j, n], ct[s, j, n] = h, add
                n += 1
            else:
                continue  # a full row: the raise is dropped
            dirty[s, j] = True
        nz[s, j] = n


@numba.njit(inline="always", **_JIT)
def _seen(hits: np.ndarray, n: int, h: int) -> bool:
    """Whether ``h`` is among ``hits[:n]``."""
    for k in range(n):
        if hits[k] == h:
            return True
    return False


@numba.njit(**_JIT)
def _roomiest(room: np.ndarray, taken: np.ndarray, stamp: int, stream: np.ndarray, table: np.ndarray) -> int:
    """A node not ``taken`` (``taken[h] == stamp``) with the most room, uniformly among the ties (-1: no room
    left): the next of a random order among equal room, one draw per node taken."""
    best, ties = 0, 0
    for h in range(len(room)):
        if taken[h] != stamp and room[h] > 0:
            if room[h] > best:
                best, ties = room[h], 1
            elif room[h] == best:
                ties += 1
    if ties == 0:
        return -1
    k = below(stream, table, ties)
    for h in range(len(room)):
        if taken[h] != stamp and room[h] == best:
            if k == 0:
                return h
            k -= 1
    return -1


@numba.njit(**_JIT)
def fill_gangs(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, dirty: np.ndarray, s: int, free: np.ndarray,
               fixed: np.ndarray, pw: np.ndarray, eligible: np.ndarray, taken: np.ndarray, stream: np.ndarray,
               table: np.ndarray) -> None:
    """Mutation (4) on candidate ``s``: each gang-fixed row with no GPUs chosen with probability 0.1 (gaps over
    them, ``pw`` the gap table of 0.1) gets up to its gang from the nodes with most room (ties in a random
    order), in job order, taking all of each node's room but the last's; ``free`` (before the raises) loses
    what it takes. ``taken``: a per-node stamp array."""
    n = 0
    for j in range(nz.shape[1]):
        if fixed[j] > 0 and row_size(ct, nz, s, j) == 0:
            eligible[n] = j
            n += 1
    k = gap(stream, table, pw)
    while k < n:
        j = eligible[k]
        stamp = taken[len(taken) - 1] + 1
        taken[len(taken) - 1] = stamp
        before = 0
        while before < fixed[j]:
            h = _roomiest(free, taken, stamp, stream, table)
            if h < 0:
                break
            taken[h] = stamp
            take = min(fixed[j] - before, free[h])
            before += free[h]
            if put(nd, ct, nz, s, j, h, take):
                free[h] -= take
                dirty[s, j] = True
        k += 1 + gap(stream, table, pw)
