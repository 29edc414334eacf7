"""Pollux's genetic algorithm (``pollux_search.evolve``) as one compiled loop: tournaments, crossover, mutation,
repair, fitness and survivors of every generation without returning to Python, the random numbers drawn from
the policy's generator's PCG64 stream (:mod:`.pollux_pcg`) where the numpy formulation drew them.

The fitness is ``pollux_search.fitness`` over a table of speed-ups (:class:`Speedups`' arrays): the same
floating-point operations in the same order, the power mean's sum over jobs added up as NumPy adds a row
(:func:`_row_sum`: pairwise, blocks of eight), so the fitness and every survivor are the same to the bit.
"""

from __future__ import annotations

import numba
import numpy as np
from gpucluster_env.baselines.parts.pollux_ga import cross, fill_gangs, mutate_rows, repair_rows, row_shapes
from gpucluster_env.baselines.parts.pollux_pcg import bounded
from gpucluster_env.baselines.parts.stable_order import key_order

_JIT = {"cache": True, "error_model": "numpy", "boundscheck": False}


@numba.njit(**_JIT)
def _block_sum(a: np.ndarray, lo: int, n: int) -> float:
    """``a[lo:lo + n]``, ``n <= 128``, summed as NumPy sums a block: in order below eight values, else eight
    running sums combined pairwise, then the rest in order."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r = a[lo: lo + 8].copy()
    i = 8
    while i < n - n % 8:
        for k in range(8):
            r[k] += a[lo + i + k]
        i += 8
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@numba.njit(**_JIT)
def _row_sum(a: np.ndarray, lo: int, n: int) -> float:
    """``a[lo:lo + n]`` summed as NumPy's ``add.reduce`` sums a contiguous row: halves (the first a multiple of
    eight) summed apart and added, down to blocks of at most 128 (:func:`_block_sum`). Walked with a stack, not
    recursion (numba's cache does not keep recursive functions reliably)."""
    seg = np.empty((128, 3), dtype=np.int64)  # (start, length, halves done)
    vals = np.empty(128)
    top, nv = 0, 0
    seg[0, 0], seg[0, 1], seg[0, 2] = lo, n, 0
    while top >= 0:
        start, length, done = seg[top, 0], seg[top, 1], seg[top, 2]
        if length <= 128:
            vals[nv] = _block_sum(a, start, length)
            nv += 1
            top -= 1
        elif done:
            vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            nv -= 1
            top -= 1
        else:
            half = length // 2
            half -= half % 8
            seg[top, 2] = 1
            seg[top + 1, 0], seg[top + 1, 1], seg[top + 1, 2] = start + half, length - half, 0
            seg[top + 2, 0], seg[top + 2, 1], seg[top + 2, 2] = start, half, 0
            top += 2
    return vals[0]


@numba.njit(**_JIT)
def score(pop: np.ndarray, good: np.ndarray, fair: np.ndarray, penalty: np.ndarray, scale: float,
          node_type: np.ndarray, base: np.ndarray, eps: float) -> np.ndarray:
    """Pollux's fitness of each candidate (``pollux_search.fitness``): job ``i``'s speed-up
    ``good[i, type, nodes, GPUs] / fair[i]`` (0 with no GPUs), times ``scale``, times ``penalty[i]`` where its
    row differs from ``base``, plus ``eps`` (``pollux_search.EPS_SPEEDUP``), then the ``p = -1`` power mean
    over jobs (``pollux_search.FAIRNESS_P``: a reciprocal, as NumPy computes ``x ** -1.0``). Shape ``(P,)``."""
    size, nodes, kind, moved = row_shapes(pop, node_type, base)
    n_pop, n_jobs = size.shape
    inv = np.empty(n_jobs)
    out = np.empty(n_pop)
    for p in range(n_pop):
        for i in range(n_jobs):
            r = size[p, i]
            speed = good[i, kind[p, i], nodes[p, i], r] / fair[i] if r > 0 else 0.0
            s = speed * scale * (penalty[i] if moved[p, i] else 1.0)
            inv[i] = 1.0 / (s + eps)
        out[p] = 1.0 / ((0.0 + _row_sum(inv, 0, n_jobs)) / n_jobs)
    return out


@numba.njit(**_JIT)
def _parents(fit: np.ndarray, stream: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Binary tournaments: ``(P, 2)`` uniform draws of candidates, the fitter of each pair (the first on a
    tie) wins; consecutive winners pair up (the last dropped when ``P`` is odd). Shape ``(P // 2, 2)``."""
    size = len(fit)
    winners = np.empty(size, dtype=np.int64)
    for i in range(size):
        a = bounded(stream, table, size - 1)
        b = bounded(stream, table, size - 1)
        winners[i] = a if fit[a] >= fit[b] else b
    return winners[: size - size % 2].reshape(-1, 2)


@numba.njit(**_JIT)
def offspring(pop: np.ndarray, pairs: np.ndarray, stream: np.ndarray, table: np.ndarray, base: np.ndarray,
              capacity: np.ndarray, fixed: np.ndarray, node_type: np.ndarray, types: np.ndarray,
              max_gpus: np.ndarray, min_gpus: np.ndarray) -> np.ndarray:
    """Children of ``pairs``: crossed (one cut per pair), mutated and repaired (``pollux_search``'s crossover,
    mutate and repair, in that order of draws)."""
    cut = np.empty(len(pairs), dtype=np.int64)
    for c in range(len(pairs)):
        cut[c] = bounded(stream, table, pop.shape[1])
    kids = cross(pop, pairs, cut)
    free = mutate_rows(kids, base, capacity, stream, table)
    fill_gangs(kids, free, fixed, stream, table)
    flat = kids.reshape(-1)  # entries below 0 to 0 (np.maximum on a 3-d array is an order slower in numba)
    for e in range(len(flat)):
        if flat[e] < 0:
            flat[e] = 0
    repair_rows(kids, node_type, types, stream, table, max_gpus, min_gpus, fixed, capacity)
    return kids


@numba.njit(**_JIT)
def _copy(to: np.ndarray, q: int, source: np.ndarray, b: int) -> None:
    """``to[q] = source[b]``, element by element (numba's array assignment is slower on these shapes)."""
    a, c = to[q].reshape(-1), source[b].reshape(-1)
    for e in range(len(a)):
        a[e] = c[e]


@numba.njit(**_JIT)
def evolve_loop(pop: np.ndarray, generations: int, stream: np.ndarray, table: np.ndarray, good: np.ndarray,
                fair: np.ndarray, penalty: np.ndarray, scale: float, eps: float, node_type: np.ndarray,
                types: np.ndarray, base: np.ndarray, capacity: np.ndarray, fixed: np.ndarray, max_gpus: np.ndarray,
                min_gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pollux_search.evolve`` with :func:`score` as the fitness: the final population and its fitness, best
    first (survivors: the best ``P`` of parents and children in a stable order, ties keeping the older)."""
    fit = score(pop, good, fair, penalty, scale, node_type, base, eps)
    size = len(pop)
    order = np.empty(2 * size, dtype=np.int64)
    for _ in range(generations):
        pairs = _parents(fit, stream, table)
        kids = offspring(pop, pairs, stream, table, base, capacity, fixed, node_type, types, max_gpus, min_gpus)
        both = np.concatenate((fit, score(kids, good, fair, penalty, scale, node_type, base, eps)))
        key_order(-both, order[: len(both)])
        survivors = np.empty_like(pop)
        for q in range(size):
            b = order[q]
            if b < size:
                _copy(survivors, q, pop, b)
            else:
                _copy(survivors, q, kids, b - size)
            fit[q] = both[b]
        pop = survivors
    last = np.empty(size, dtype=np.int64)
    key_order(-fit, last)
    out = np.empty_like(pop)
    for q in range(size):
        _copy(out, q, pop, last[q])
    return out, fit[last]
