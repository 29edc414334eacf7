"""Pollux's genetic search (``pollux_search.evolve``) over sparse candidates: the work of a generation is
proportional to the GPUs the candidates hold and the mutations made, not to ``population x jobs x nodes``.

A population lives in ``2 x P`` slots (:mod:`.pollux_sparse_ops` describes a slot's rows): the ``P`` survivors
and the children of a generation, which go to the slots the survivors do not hold, so survival moves slot
numbers, not rows. Each row keeps its power-mean term ``1 / (speed-up + eps)`` (``term``), recomputed only for
rows a mutation or the repair changed (``dirty``); a child's rows bring their parent's terms. A candidate's
fitness is :func:`.pollux_evolve.score`'s formula over those terms (the same operations: the same fitness, to
the bit, as the dense population scored there). The operators are Pollux's (``pollux_search``'s docstrings):
single-point crossover over jobs, mutations (1)-(4), the repair in its order, survivors the best ``P`` of
parents and children in a stable order (ties keep the older). The random numbers: :mod:`.pollux_sparse_ops`.
"""

from __future__ import annotations

import numba
import numpy as np
from gpucluster_env.baselines.parts import pollux_sparse_ops as ops
from gpucluster_env.baselines.parts.pollux_evolve import _row_sum
from gpucluster_env.baselines.parts.stable_order import key_order

_JIT = {"cache": True, "error_model": "numpy", "boundscheck": False}
SPARE = 4
"""Entries a row may hold beyond its job's largest size (a generation's raises before the repair: expected one
or two a row; a row is narrow so that a generation's walk stays in cache)."""


@numba.njit(inline="always", **_JIT)
def _next_mark(marks: np.ndarray) -> int:
    """A new stamp for the per-node mark array (its last element counts them)."""
    marks[len(marks) - 1] += 1
    return marks[len(marks) - 1]


@numba.njit(**_JIT)
def _one_type(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, dirty: np.ndarray, s: int, node_type: np.ndarray,
              types: np.ndarray) -> None:
    """Each row keeps only its nodes of the type with the most GPUs (the first such of ``types``)."""
    per = np.zeros(len(types), dtype=np.int64)
    for j in range(nz.shape[1]):
        if nz[s, j] < 2:
            continue
        per[:] = 0
        for e in range(nz[s, j]):
            for t in range(len(types)):
                if node_type[nd[s, j, e]] == types[t]:
                    per[t] += ct[s, j, e]
        keep = types[np.argmax(per)]
        cut = False
        for e in range(nz[s, j]):
            if node_type[nd[s, j, e]] != keep:
                ct[s, j, e] = 0
                cut = True
        if cut:
            ops.compact(nd, ct, nz, s, j)
            dirty[s, j] = True


@numba.njit(**_JIT)
def _one_distributed(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, dirty: np.ndarray, s: int,
                     marks: np.ndarray) -> None:
    """On each node only the first job (in order) of those spread over several nodes keeps its GPUs."""
    stamp = _next_mark(marks)
    for j in range(nz.shape[1]):
        if nz[s, j] < 2:
            continue
        cut = False
        for e in range(nz[s, j]):
            h = nd[s, j, e]
            if marks[h] == stamp:
                ct[s, j, e] = 0
                cut = True
            marks[h] = stamp
        if cut:
            ops.compact(nd, ct, nz, s, j)
            dirty[s, j] = True


@numba.njit(**_JIT)
def _cap_rows(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, dirty: np.ndarray, s: int, max_gpus: np.ndarray,
              stream: np.ndarray, table: np.ndarray) -> None:
    """A row over ``max_gpus[j]`` keeps its entries in a random order (one key draw per entry, a stable sort)
    until full."""
    keys = np.empty(nd.shape[2])
    order = np.empty(nd.shape[2], dtype=np.int64)
    for j in range(nz.shape[1]):
        n = nz[s, j]
        if ops.row_size(ct, nz, s, j) <= max_gpus[j]:
            continue
        for e in range(n):
            keys[e] = ops.uniform(stream, table)
        key_order(keys[:n], order[:n])
        total, kept = 0, 0
        for k in range(n):
            e = order[k]
            total += ct[s, j, e]
            now = min(total, max_gpus[j])
            ct[s, j, e] = now - kept
            kept = now
        ops.compact(nd, ct, nz, s, j)
        dirty[s, j] = True


@numba.njit(**_JIT)
def _cap_nodes(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, dirty: np.ndarray, s: int, capacity: np.ndarray,
               used: np.ndarray) -> None:
    """A node over capacity keeps the GPUs of jobs earlier in order until full."""
    ops.free_of(nd, ct, nz, s, capacity, used)
    if not (used < 0).any():
        return
    used[:] = 0
    for j in range(nz.shape[1]):
        cut = False
        for e in range(nz[s, j]):
            h = nd[s, j, e]
            now = min(used[h] + ct[s, j, e], capacity[h])
            if now - used[h] != ct[s, j, e]:
                ct[s, j, e] = now - used[h]
                cut = True
            used[h] = now
        if cut:
            ops.compact(nd, ct, nz, s, j)
            dirty[s, j] = True


@numba.njit(**_JIT)
def repair(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, dirty: np.ndarray, s: int, space: tuple,
           marks: np.ndarray, used: np.ndarray, stream: np.ndarray, table: np.ndarray) -> None:
    """``pollux_search.repair``'s steps in its order on candidate ``s``: one type per job (when there are
    several), one distributed job per node, largest sizes, node capacities, allowed sizes (a row of another
    size is emptied). ``space``: ``(capacity, node_type, types, max_gpus, min_gpus, fixed)``."""
    capacity, node_type, types, max_gpus, min_gpus, fixed = space
    if len(types) > 1:
        _one_type(nd, ct, nz, dirty, s, node_type, types)
    _one_distributed(nd, ct, nz, dirty, s, marks)
    _cap_rows(nd, ct, nz, dirty, s, max_gpus, stream, table)
    _cap_nodes(nd, ct, nz, dirty, s, capacity, used)
    for j in range(nz.shape[1]):
        size = ops.row_size(ct, nz, s, j)
        if size > 0 and (size < min_gpus[j] or (fixed[j] > 0 and size != fixed[j])):
            nz[s, j] = 0
            dirty[s, j] = True


@numba.njit(**_JIT)
def term_table(good: np.ndarray, fair: np.ndarray, penalty: np.ndarray, scale: float, eps: float, width: int
               ) -> np.ndarray:
    """Every power-mean term a row may take, ``1 / (speed-up x scale x penalty-if-moved + eps)`` as
    :func:`.pollux_evolve.score` computes it (the same operations, so the same bits): ``[j, k, m, r, moved]``
    for ``r`` GPUs on ``m <= width`` nodes of type ``k`` (``r = 0``: no speed-up). A search reads a row's term
    from it instead of dividing twice and reading the ``(J, K, M, R)`` goodput table at every rescore."""
    n_jobs, n_types, n_m, n_r = good.shape
    n_m = min(n_m, width + 1)
    out = np.empty((n_jobs, n_types, n_m, n_r, 2))
    for j in range(n_jobs):
        for k in range(n_types):
            for m in range(n_m):
                for r in range(n_r):
                    speed = good[j, k, m, r] / fair[j] if r > 0 else 0.0
                    out[j, k, m, r, 0] = 1.0 / (speed * scale * 1.0 + eps)
                    out[j, k, m, r, 1] = 1.0 / (speed * scale * penalty[j] + eps)
    return out


@numba.njit(inline="always", **_JIT)
def _term(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, s: int, j: int, score: tuple) -> float:
    """Row ``(s, j)``'s power-mean term from :func:`term_table` (the type of the first node used; moved: the
    row differs from the current allocation's). ``score``: ``(terms, node_type, b_nd, b_ct, b_nz)``, the
    current allocation as one sparse slot."""
    terms, node_type, b_nd, b_ct, b_nz = score
    n = nz[s, j]
    r, first, same = 0, -1, 0
    for e in range(n):
        h = nd[s, j, e]
        r += ct[s, j, e]
        first = h if first < 0 or h < first else first
        was = 0  # the current allocation's GPUs of job j on node h
        for f in range(b_nz[0, j]):
            if b_nd[0, j, f] == h:
                was = b_ct[0, j, f]
        same += ct[s, j, e] == was
    moved = same != n or b_nz[0, j] != n
    return terms[j, max(node_type[max(first, 0)], 0), n, r, 1 if moved else 0]


@numba.njit(**_JIT)
def _score(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, dirty: np.ndarray, term: np.ndarray, s: int,
           score: tuple) -> float:
    """Candidate ``s``'s fitness: its dirty rows' terms recomputed, then the ``p = -1`` power mean."""
    n_jobs = nz.shape[1]
    for j in range(n_jobs):
        if dirty[s, j]:
            term[s, j] = _term(nd, ct, nz, s, j, score)
            dirty[s, j] = False
    return 1.0 / ((0.0 + _row_sum(term[s], 0, n_jobs)) / n_jobs)


@numba.njit(**_JIT)
def _mutate(pop: tuple, s: int, base: tuple, fixed: np.ndarray, capacity: np.ndarray, work: tuple,
            stream: np.ndarray, table: np.ndarray) -> None:
    """Mutations (1)-(4) on candidate ``s`` (``pollux_search.mutate``), room from its GPUs after (1) and (2).
    ``pop``: ``(nd, ct, nz, dirty)``; ``base``: the current allocation as a one-slot ``(nd, ct, nz)``;
    ``work``: scratch ``(free, roomy, roomy_at, hits, eligible, marks, used, p01, cache)``."""
    nd, ct, nz, dirty = pop
    free, roomy, roomy_at, hits, eligible, marks, _, p01, cache = work
    ops.reset_and_zero(nd, ct, nz, dirty, s, base[0], base[1], base[2], p01, stream, table)
    ops.free_of(nd, ct, nz, s, capacity, free)
    ops.raise_rows(nd, ct, nz, dirty, s, free, (roomy, roomy_at, hits, cache), stream, table)
    ops.fill_gangs(nd, ct, nz, dirty, s, free, fixed, p01, eligible, marks, stream, table)


@numba.njit(**_JIT)
def _seed(pop: tuple, n_init: int, size: int, base: tuple, space: tuple, work: tuple, stream: np.ndarray,
          table: np.ndarray) -> None:
    """Slots ``n_init..size-1`` from mutated copies of the first ones (as ``Pollux._search`` tops the
    population up), every candidate repaired, then slot 0 the current allocation."""
    nd, ct, nz, dirty = pop
    n_jobs = nz.shape[1]
    have = n_init
    while have < size:
        add = min(size - have, have)
        for k in range(add):
            for j in range(n_jobs):
                ops.copy_row(nd, ct, nz, have + k, j, nd, ct, nz, k, j)
            _mutate(pop, have + k, base, space[5], space[0], work, stream, table)
        have += add
    for s in range(size):
        repair(nd, ct, nz, dirty, s, space, work[5], work[6], stream, table)
    for j in range(n_jobs):
        ops.copy_row(nd, ct, nz, 0, j, base[0], base[1], base[2], 0, j)
    dirty[:size] = True


@numba.njit(**_JIT)
def _generation(pop: tuple, term: np.ndarray, fit: np.ndarray, slots: np.ndarray, base: tuple, space: tuple,
                score: tuple, work: tuple, stream: np.ndarray, table: np.ndarray) -> None:
    """One generation: binary tournaments (the fitter of two uniform draws, the first on a tie), consecutive
    winners paired, one crossover cut per pair, each child mutated, repaired and scored in a slot the
    population does not hold; ``slots[:P]`` := the best ``P`` of parents then children (stable)."""
    nd, ct, nz, dirty = pop
    size, n_jobs = len(slots) // 2, nz.shape[1]
    winners = np.empty(size, dtype=np.int64)
    for i in range(size):
        a, b = slots[ops.below(stream, table, size)], slots[ops.below(stream, table, size)]
        winners[i] = a if fit[a] >= fit[b] else b
    half = size // 2
    for c in range(half):
        cut = ops.below(stream, table, n_jobs + 1)
        for k in range(2):
            a, b = winners[2 * c + k], winners[2 * c + 1 - k]
            kid = slots[size + c + k * half]
            for j in range(n_jobs):
                src = a if j < cut else b
                ops.copy_row(nd, ct, nz, kid, j, nd, ct, nz, src, j)
                term[kid, j] = term[src, j]
                dirty[kid, j] = False
    both = np.empty(size + 2 * half)
    for i in range(size + 2 * half):
        s = slots[i]
        if i >= size:
            _mutate(pop, s, base, space[5], space[0], work, stream, table)
            repair(nd, ct, nz, dirty, s, space, work[5], work[6], stream, table)
            fit[s] = _score(nd, ct, nz, dirty, term, s, score)
        both[i] = -fit[s]
    order = np.empty(len(both), dtype=np.int64)
    key_order(both, order)
    old = slots.copy()
    marks = np.zeros(len(slots), dtype=np.bool_)
    for q in range(size):
        slots[q] = old[order[q]]
        marks[slots[q]] = True
    q = size
    for s in range(len(slots)):
        if not marks[s]:
            slots[q] = s
            q += 1


@numba.njit(**_JIT)
def evolve_sparse(pop: tuple, n_init: int, generations: int, base: tuple, space: tuple, score: tuple,
                  stream: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pollux_search.evolve`` on sparse candidates: ``pop`` ``(nd, ct, nz)`` of ``2P`` slots, the first
    ``n_init`` the warm start; tops the population up (:func:`_seed`), then ``generations`` generations.
    Returns the ``P`` slots best first and their fitness."""
    nd, ct, nz = pop
    size, n_jobs, n_nodes = len(nz) // 2, nz.shape[1], len(space[0])
    dirty = np.zeros(nz.shape, dtype=np.bool_)
    term = np.empty(nz.shape)
    full = (nd, ct, nz, dirty)
    marks = np.zeros(n_nodes + 1, dtype=np.int64)
    work = (np.empty(n_nodes, dtype=np.int64), np.empty(n_nodes, dtype=np.int64), np.empty(n_nodes, dtype=np.int64),
            np.empty(n_nodes + nd.shape[2], dtype=np.int64), np.empty(n_jobs, dtype=np.int64), marks,
            np.empty(n_nodes, dtype=np.int64), ops.survival(ops.MUTATE_P, 400),
            np.zeros((n_nodes + 1, ops.TAIL + 1)))
    _seed(full, n_init, size, base, space, work, stream, table)
    good, fair, penalty, scale, eps, node_type = score
    score = (term_table(good, fair, penalty, scale, eps, nd.shape[2]), node_type, base[0], base[1], base[2])
    fit = np.empty(2 * size)
    for s in range(size):
        fit[s] = _score(nd, ct, nz, dirty, term, s, score)
    slots = np.arange(2 * size)
    for _ in range(generations):
        _generation(full, term, fit, slots, base, space, score, work, stream, table)
    best = np.empty(size, dtype=np.int64)
    key_order(-fit[slots[:size]], best)
    out = np.empty(size, dtype=np.int64)
    for q in range(size):
        out[q] = slots[best[q]]
    return out, fit[out]


@numba.njit(**_JIT)
def pack(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, slots: np.ndarray
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Slots ``slots`` (in that order) as compact arrays, as wide as their widest row."""
    width = 1
    for s in slots:
        for j in range(nz.shape[1]):
            width = max(width, nz[s, j])
    o_nd = np.zeros((len(slots), nz.shape[1], width), dtype=nd.dtype)
    o_ct = np.zeros((len(slots), nz.shape[1], width), dtype=ct.dtype)
    o_nz = np.empty((len(slots), nz.shape[1]), dtype=nz.dtype)
    for q in range(len(slots)):
        for j in range(nz.shape[1]):
            ops.copy_row(o_nd, o_ct, o_nz, q, j, nd, ct, nz, slots[q], j)
    return o_nd, o_ct, o_nz


@numba.njit(**_JIT)
def from_dense(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A dense ``(S, J, H)`` population as sparse ``(nd, ct, nz)`` (nodes in increasing order)."""
    width = 1
    n_s, n_jobs, n_nodes = a.shape
    nz = np.zeros((n_s, n_jobs), dtype=np.int64)
    for s in range(n_s):
        for j in range(n_jobs):
            for h in range(n_nodes):
                nz[s, j] += a[s, j, h] != 0
            width = max(width, nz[s, j])
    nd = np.zeros((n_s, n_jobs, width), dtype=np.int64)
    ct = np.zeros((n_s, n_jobs, width), dtype=np.int64)
    for s in range(n_s):
        for j in range(n_jobs):
            n = 0
            for h in range(n_nodes):
                if a[s, j, h] != 0:
                    nd[s, j, n], ct[s, j, n] = h, a[s, j, h]
                    n += 1
    return nd, ct, nz
