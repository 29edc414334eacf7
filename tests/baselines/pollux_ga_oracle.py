"""Test helper: Pollux's genetic-search operators as plain numpy passes, the formulation the search used before
its passes were compiled (``baselines/parts/pollux_ga.py``). ``tests/baselines/test_pollux.py`` checks that the
package's operators give the same populations, bit for bit, and leave the generator in the same state; the
package itself has only the compiled implementation."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from gpucluster_env.baselines import pollux_search
from gpucluster_env.baselines.pollux_search import SearchSpace


def checked_rounds(pop: np.ndarray, space: SearchSpace, gen: np.random.Generator, seed: int,
                   rounds: int = 3) -> Iterator[np.ndarray]:
    """``rounds`` rounds of the package's crossover (pairs drawn from ``gen``), mutation and repair, each checked
    against this oracle's on a twin generator seeded ``seed``: the same populations and the same generator
    state after. Yields each round's repaired population (the next round's parents)."""
    n_pop = len(pop)
    for _ in range(rounds):
        ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
        pairs = gen.integers(0, n_pop, size=(n_pop // 2, 2))
        kids = pollux_search.crossover(pop, pairs, ours)
        assert np.array_equal(kids, crossover(pop, pairs, theirs))
        mutated = pollux_search.mutate(kids, space, ours)
        assert np.array_equal(mutated, mutate(kids, space, theirs))
        pop = pollux_search.repair(mutated, space, ours)
        assert np.array_equal(pop, repair(mutated, space, theirs))
        assert ours.bit_generator.state == theirs.bit_generator.state
        yield pop


def crossover(pop: np.ndarray, pairs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Oracle of `pollux_search.crossover`."""
    a, b = pop[pairs[:, 0]], pop[pairs[:, 1]]
    n_jobs = pop.shape[1]
    cut = rng.integers(0, n_jobs + 1, size=len(pairs))
    first = (np.arange(n_jobs)[None, :] < cut[:, None])[:, :, None]
    return np.concatenate([np.where(first, a, b), np.where(first, b, a)])


def mutate(pop: np.ndarray, space: SearchSpace, rng: np.random.Generator) -> np.ndarray:
    """Pollux's three mutations on a copy of ``pop``: (1) a row back to the current allocation (probability
    0.1 per row); (2) in 10% of rows, each entry to zero with probability 0.1; (3) entries raised to a random
    count up to what their node has free, each free node drawn with probability about one over the number of
    free nodes (doubled on the nodes the job already uses). A gang-fixed job with nothing may also be given its
    whole gang on the nodes with most room (4)."""
    out = pop.copy()
    p, n_jobs, n_nodes = out.shape
    reset = rng.random((p, n_jobs)) < 0.1
    out = np.where(reset[:, :, None], space.base[None], out)
    rows = rng.random((p, n_jobs)) < 0.1
    out[(rng.random(out.shape) < 0.1) & rows[:, :, None]] = 0
    free = space.capacity[None, :] - out.sum(axis=1)  # (P, H)
    has_free = free > 0
    p1 = has_free / np.maximum(has_free.sum(axis=1, keepdims=True), 1)  # (P, H)
    used = (out > 0) & has_free[:, None, :]
    # each entry's chance p1 + p2 - p1 p2, p2 = 1 / (nodes the job uses with room) where it uses the node,
    # else 0 (then the sum is p1 to the bit), so it is computed only where used
    prob = np.broadcast_to(p1[:, None, :], out.shape).copy()
    i, j, h = np.nonzero(used)
    p2 = 1.0 / np.maximum(used.sum(axis=2), 1)[i, j]
    prob[i, j, h] = p1[i, h] + p2 - p1[i, h] * p2
    hit = rng.random(out.shape) < prob
    draw = rng.random(out.shape)
    i, j, h = np.nonzero(hit)
    out[i, j, h] += np.floor(draw[i, j, h] * (np.maximum(free[i, h], 0) + 1)).astype(np.int64)
    _fill_gangs(out, free, space, rng)
    return out


def _fill_gangs(out: np.ndarray, free: np.ndarray, space: SearchSpace, rng: np.random.Generator) -> None:
    """Mutation (4), in place: for gang-fixed jobs with no GPUs, with probability 0.1 each, the whole gang on
    the nodes with most free GPUs (ties in a random order), taken in job order within each candidate (a
    job's GPUs leave less room for the next). Done for the k-th such job of every candidate at once; the
    random tie-breaks are drawn one row of nodes per job, in (candidate, job) order."""
    cand = np.argwhere((space.fixed[None, :] > 0) & (out.sum(axis=2) == 0) & (rng.random(out.shape[:2]) < 0.1))
    if len(cand) == 0:
        return
    ties = rng.random((len(cand), out.shape[2]))
    first = np.flatnonzero(np.r_[True, cand[1:, 0] != cand[:-1, 0]])
    rank = np.arange(len(cand)) - np.repeat(first, np.diff(np.r_[first, len(cand)]))
    for k in range(int(rank.max()) + 1):
        sel = np.flatnonzero(rank == k)
        i, j = cand[sel, 0], cand[sel, 1]
        room = np.maximum(free[i], 0)
        order = np.lexsort((ties[sel], -room), axis=-1)
        r_sorted = np.take_along_axis(room, order, axis=1)
        before = np.cumsum(r_sorted, axis=1) - r_sorted
        take = np.zeros_like(room)
        np.put_along_axis(take, order, np.clip(space.fixed[j][:, None] - before, 0, r_sorted), axis=1)
        out[i, j] += take
        free[i] -= take


def repair(pop: np.ndarray, space: SearchSpace, rng: np.random.Generator) -> np.ndarray:
    """Make every candidate valid (module docstring), in this order: one GPU type per job (its type with the
    most GPUs), one distributed job per node (the first in priority order keeps the node), each job's largest
    size (trimmed over its nodes in a random order), node capacities (earlier jobs keep theirs), allowed sizes
    (a row of a disallowed size is emptied)."""
    out = np.maximum(pop, 0)
    types = np.unique(space.node_type)
    if len(types) > 1:
        per_type = np.stack([out[:, :, space.node_type == k].sum(axis=2) for k in types], axis=2)
        keep = types[np.argmax(per_type, axis=2)]  # (P, J)
        out = np.where(space.node_type[None, None, :] == keep[:, :, None], out, 0)
    distributed = np.count_nonzero(out, axis=2) > 1
    on = (out > 0) & distributed[:, :, None]
    out[(np.cumsum(on, axis=1) > 1) & on] = 0
    _trim_rows(out, rng.random(out.shape), space.max_gpus)
    _trim_nodes(out, space.capacity)
    size = out.sum(axis=2)
    bad = (size > 0) & ((size < space.min_gpus[None, :]) | ((space.fixed[None, :] > 0) & (size != space.fixed)))
    out[bad] = 0
    return out


def _trim_rows(out: np.ndarray, keys: np.ndarray, max_gpus: np.ndarray) -> None:
    """Each job's largest size, in place: a row over ``max_gpus[j]`` keeps its entries in the random node
    order of ``keys`` (argsort of the row's keys) until the size is reached. Rows within their size are left
    as they are (trimming changes nothing there), so only the others are sorted."""
    p, j = np.nonzero(out.sum(axis=2) > max_gpus[None, :])
    if len(p) == 0:
        return
    shuffle = np.argsort(keys[p, j], axis=1)
    mixed = np.take_along_axis(out[p, j], shuffle, axis=1)
    mixed = np.diff(np.minimum(np.cumsum(mixed, axis=1), max_gpus[j][:, None]), axis=1, prepend=0)
    rows = np.empty_like(mixed)
    np.put_along_axis(rows, shuffle, mixed, axis=1)
    out[p, j] = rows


def _trim_nodes(out: np.ndarray, capacity: np.ndarray) -> None:
    """Node capacities, in place: on a node over capacity, jobs earlier in priority order keep theirs (the
    others are cut in order). Nodes within capacity are left as they are."""
    p, h = np.nonzero(out.sum(axis=1) > capacity[None, :])
    if len(p) == 0:
        return
    cols = np.diff(np.minimum(np.cumsum(out[p, :, h], axis=1), capacity[h][:, None]), axis=1, prepend=0)
    out[p, :, h] = cols


