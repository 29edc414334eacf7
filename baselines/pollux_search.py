"""Pollux's allocation search (Qiao et al., OSDI'21, §4.2) as pure functions over allocation matrices.

A candidate allocation is an integer matrix ``A[j, h]``: GPUs of job ``j`` on node ``h``; a population is a
stack ``(P, J, H)``. Its fitness (:func:`fitness`) is Pollux's ``FITNESS_p``: the power mean with ``p = -1``
(the paper's fairness knob) of each job's speed-up, scaled as Pollux scales it (a job's dominant share times
the node count, so one node's worth of GPUs at fair-share goodput scores 1), each speed-up multiplied by the
restart penalty where the job's row differs from the current allocation. The search is Pollux's genetic
algorithm: single-point crossover over jobs (:func:`crossover`), mutations that reset a row to the current
allocation, zero some of a row's entries, or raise entries into free room (:func:`mutate`), and a repair
(:func:`repair`) that enforces node capacities (jobs earlier in priority order keep theirs), at most one
distributed job per node (Pollux's interference avoidance), each job's largest size and allowed sizes, and one
GPU type per job. Survivors are the best of parents and children (:func:`evolve`). Every random draw comes
from the ``np.random.Generator`` passed in (a PCG64 one, NumPy's default): the compiled passes
(:mod:`.parts.pollux_ga`, :mod:`.parts.pollux_evolve`) step its stream themselves, at the positions the
operators' docstrings name, and skip the numbers they do not read.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

FAIRNESS_P = -1.0
"""Pollux's power-mean exponent ``p`` (§4.2: ``p = -1`` in its evaluation)."""
EPS_SPEEDUP = 1e-3
"""Added to every speed-up before the power mean, as Pollux does (a job with nothing does not make it 0/inf)."""


@dataclass
class SearchSpace:
    """What the search may assign: node capacities and types, and per job (in priority order) its largest
    size, whether it is gang-fixed (only ``0`` or ``fixed`` GPUs) and the current allocation."""

    capacity: np.ndarray  # (H,) GPUs per node
    node_type: np.ndarray  # (H,) GPU type index per node
    max_gpus: np.ndarray  # (J,) largest size
    min_gpus: np.ndarray  # (J,) smallest non-zero size
    fixed: np.ndarray  # (J,) the only non-zero size allowed, 0 = any in [min, max]
    base: np.ndarray  # (J, H) current allocation


@dataclass
class Speedups:
    """Pollux's fitness as data (what :func:`evolve` runs compiled): job ``i``'s goodput ``good[i, type, nodes,
    GPUs]`` over its fair-share goodput ``fair[i]``, the restart ``penalty``, the ``scale`` and the current
    allocation ``base``; calling it scores a population as :func:`fitness` does."""

    good: np.ndarray  # (J, K, M + 1, R + 1)
    fair: np.ndarray  # (J,)
    penalty: np.ndarray  # (J,)
    scale: float
    node_type: np.ndarray  # (H,)
    base: np.ndarray  # (J, H)

    def __call__(self, pop: np.ndarray) -> np.ndarray:
        """Fitness of each candidate of ``pop``, shape ``(P,)``."""
        from gpucluster_env.baselines.parts.pollux_evolve import score

        return score(pop, self.good, self.fair, self.penalty, self.scale, self.node_type, self.base, EPS_SPEEDUP)


def fitness(pop: np.ndarray, speedup: np.ndarray, base: np.ndarray, penalty: np.ndarray, scale: float,
            moved: np.ndarray | None = None) -> np.ndarray:
    """Pollux's fitness of each candidate: ``speedup`` ``(P, J)`` times ``scale``, times ``penalty[j]`` where the
    job's row differs from ``base`` (``moved``, :func:`row_shapes`' last array, when the caller has it), then
    the power mean with :data:`FAIRNESS_P` over jobs. Shape ``(P,)``."""
    if moved is None:
        moved = row_shapes(pop, np.zeros(pop.shape[2], dtype=np.int64), base)[3]
    s = speedup * scale * np.where(moved, penalty[None, :], 1.0)
    return np.mean((s + EPS_SPEEDUP) ** FAIRNESS_P, axis=1) ** (1.0 / FAIRNESS_P)


def row_shapes(pop: np.ndarray, node_type: np.ndarray, base: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per candidate and job ``(P, J)`` each: GPUs, nodes used, GPU type (``node_type`` of the first node used,
    else of node 0, at least 0) and whether the row differs from ``base``. One compiled pass."""
    from gpucluster_env.baselines.parts.pollux_ga import row_shapes as kernel

    return kernel(pop, node_type, base)


def restart_penalty(age: np.ndarray, restarts: np.ndarray, delay: float) -> np.ndarray:
    """Pollux's restart factor of a job whose allocation changes: the share of its life it would not have spent
    restarting, ``max(age - restarts x delay, 0) / (age + delay)`` (1 when both are 0: nothing to lose)."""
    age = np.asarray(age, dtype=float)
    lost = np.maximum(age - np.asarray(restarts, dtype=float) * delay, 0.0)
    return np.divide(lost, age + delay, out=np.ones_like(age), where=age + delay > 0)


def crossover(pop: np.ndarray, pairs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Two children per pair of parents ``pairs`` ``(K, 2)``: the first jobs (up to a random point) from one
    parent, the rest from the other, and the mirror child. The draws: ``K`` cuts, ``integers(0, J + 1)``."""
    from gpucluster_env.baselines.parts import pollux_pcg as pcg
    from gpucluster_env.baselines.parts.pollux_ga import cross

    stream, table = pcg.load(rng)
    cut = np.array([pcg.bounded(stream, table, pop.shape[1]) for _ in range(len(pairs))], dtype=np.int64)
    pcg.store(rng, stream, table)
    return cross(pop, pairs, cut)


def mutate(pop: np.ndarray, space: SearchSpace, rng: np.random.Generator) -> np.ndarray:
    """Pollux's three mutations on a copy of ``pop``: (1) a row back to the current allocation (probability
    0.1 per row); (2) in 10% of rows, each entry to zero with probability 0.1; (3) entries raised to a random
    count up to what their node has free, each free node drawn with probability about one over the number of
    free nodes (doubled on the nodes the job already uses): ``p1 + p2 - p1 p2``, ``p1`` one over the nodes
    with room, ``p2`` one over the nodes with room the job uses (0 elsewhere). A gang-fixed job with nothing
    may also be given its whole gang on the nodes with most room (4). The draws, in order: one per row for
    (1), one per row and one per entry for (2), two per entry for (3) (the chance, then the count), then
    :func:`_fill_gangs`' own."""
    from gpucluster_env.baselines.parts import pollux_pcg as pcg
    from gpucluster_env.baselines.parts.pollux_ga import fill_gangs, mutate_rows

    out = pop.copy()
    stream, table = pcg.load(rng)
    free = mutate_rows(out, space.base, space.capacity, stream, table)
    fill_gangs(out, free, space.fixed, stream, table)
    pcg.store(rng, stream, table)
    return out


def _fill_gangs(out: np.ndarray, free: np.ndarray, space: SearchSpace, rng: np.random.Generator) -> None:
    """Mutation (4), in place: for gang-fixed jobs with no GPUs, with probability 0.1 each, the whole gang on
    the nodes with most free GPUs (ties in a random order), taken in job order within each candidate (a
    job's GPUs leave less room for the next). The draws: one per (candidate, job), then one row of node
    tie-breaks per chosen job, in (candidate, job) order."""
    from gpucluster_env.baselines.parts import pollux_pcg as pcg
    from gpucluster_env.baselines.parts.pollux_ga import fill_gangs

    stream, table = pcg.load(rng)
    fill_gangs(out, free, space.fixed, stream, table)
    pcg.store(rng, stream, table)


def repair(pop: np.ndarray, space: SearchSpace, rng: np.random.Generator) -> np.ndarray:
    """Make every candidate valid (module docstring), in this order: one GPU type per job (its type with the
    most GPUs), one distributed job per node (the first in priority order keeps the node), each job's largest
    size (trimmed over its nodes in a random order: one draw per entry), node capacities (earlier jobs keep
    theirs), allowed sizes (a row of a disallowed size is emptied)."""
    from gpucluster_env.baselines.parts import pollux_pcg as pcg
    from gpucluster_env.baselines.parts.pollux_ga import repair_rows

    out = np.maximum(pop, 0)
    stream, table = pcg.load(rng)
    repair_rows(out, space.node_type, np.unique(space.node_type), stream, table, space.max_gpus,
                space.min_gpus, space.fixed, space.capacity)
    pcg.store(rng, stream, table)
    return out


def _cell_type(capacity: np.ndarray) -> type[np.integer]:
    """The narrowest integer type the compiled loop's populations may use: an entry stays within a few times its
    node's capacity (a child's node holds at most its two parents' and the current allocation's GPUs there, each
    within capacity, and a mutation adds at most the node's free GPUs plus one), so int16 holds nodes of up to
    8,000 GPUs; the loop walks int16 populations about a fifth faster (less memory traffic) with the same
    integers, so the same decisions."""
    return np.int16 if int(np.max(capacity, initial=0)) < 8_000 else np.int64


def evolve(pop: np.ndarray, score: Callable[[np.ndarray], np.ndarray], space: SearchSpace, generations: int,
           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Run the genetic algorithm for ``generations`` from ``pop`` (already repaired): binary tournaments pick
    parent pairs, children are crossed, mutated and repaired, and the best ``len(pop)`` of parents and children
    survive (stable order, so ties keep the older). Returns the final population and its fitness, best first.
    With :class:`Speedups` as ``score`` the whole loop runs compiled (:mod:`.parts.pollux_evolve`); any other
    fitness function is called once per generation."""
    if isinstance(score, Speedups):
        from gpucluster_env.baselines.parts import pollux_pcg as pcg
        from gpucluster_env.baselines.parts.pollux_evolve import evolve_loop

        cell = _cell_type(space.capacity)
        stream, table = pcg.load(rng)
        out, fit = evolve_loop(pop.astype(cell), generations, stream, table, score.good, score.fair, score.penalty,
                               float(score.scale), EPS_SPEEDUP, score.node_type, np.unique(space.node_type),
                               score.base.astype(cell), space.capacity, space.fixed, space.max_gpus, space.min_gpus)
        pcg.store(rng, stream, table)
        return out.astype(pop.dtype), fit
    fit = score(pop)
    size = len(pop)
    for _ in range(generations):
        duel = rng.integers(0, size, size=(size, 2))
        winners = np.where(fit[duel[:, 0]] >= fit[duel[:, 1]], duel[:, 0], duel[:, 1])
        pairs = winners.reshape(-1, 2) if size % 2 == 0 else winners[:-1].reshape(-1, 2)
        kids = repair(mutate(crossover(pop, pairs, rng), space, rng), space, rng)
        both_fit = np.concatenate([fit, score(kids)])
        best = np.argsort(-both_fit, kind="stable")[:size]
        old, new = best[best < size], best[best >= size]  # survivors gathered without stacking both
        survivors = np.empty_like(pop)
        survivors[best < size], survivors[best >= size] = pop[old], kids[new - size]
        pop, fit = survivors, both_fit[best]
    order = np.argsort(-fit, kind="stable")
    return pop[order], fit[order]


def evolve_sparse(base: np.ndarray, carried: tuple[np.ndarray, np.ndarray, np.ndarray] | None, score: Speedups,
                  space: SearchSpace, population: int, generations: int, rng: np.random.Generator
                  ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """Pollux's search on sparse candidates (:mod:`.parts.pollux_sparse`): the population starts as the current
    allocation ``base`` ``(J, H)`` and the ``carried`` candidates ``(nd, ct, nz)`` (rows of nodes and GPUs, as
    :func:`.parts.pollux_sparse.pack` gives them), is topped up with mutated copies and repaired, and evolves
    for ``generations``. Returns the final population packed, best first, and its fitness."""
    from gpucluster_env.baselines.parts import pollux_pcg as pcg
    from gpucluster_env.baselines.parts.pollux_sparse import SPARE, from_dense, pack
    from gpucluster_env.baselines.parts.pollux_sparse import evolve_sparse as kernel

    b_nd, b_ct, b_nz = from_dense(base[None])
    n_jobs, n_nodes = base.shape
    width = int(max(int(space.max_gpus.max(initial=0)), b_nd.shape[2], 0 if carried is None else carried[0].shape[2]))
    width = max(1, min(n_nodes, width + SPARE))
    cell = _cell_type(space.capacity)  # rows as narrow as they go: a generation walks every slot's rows
    nd = np.zeros((2 * population, n_jobs, width), dtype=np.int16 if n_nodes < 32_000 else np.int64)
    ct = np.zeros((2 * population, n_jobs, width), dtype=cell)
    nz = np.zeros((2 * population, n_jobs), dtype=np.int16)
    n_init = 1
    nd[0, :, : b_nd.shape[2]], ct[0, :, : b_nd.shape[2]], nz[0] = b_nd[0], b_ct[0], b_nz[0]
    if carried is not None:
        n_init = min(population, 1 + len(carried[2]))
        w = carried[0].shape[2]
        nd[1:n_init, :, :w], ct[1:n_init, :, :w], nz[1:n_init] = (x[: n_init - 1] for x in carried)
    stream, table = pcg.load(rng)
    space_t = (space.capacity.astype(np.int64), space.node_type.astype(np.int64), np.unique(space.node_type),
               space.max_gpus.astype(np.int64), space.min_gpus.astype(np.int64), space.fixed.astype(np.int64))
    score_t = (score.good, score.fair, score.penalty, float(score.scale), EPS_SPEEDUP,
               score.node_type.astype(np.int64))
    slots, fit = kernel((nd, ct, nz), n_init, generations, (b_nd, b_ct, b_nz), space_t, score_t, stream, table)
    pcg.store(rng, stream, table)
    return pack(nd, ct, nz, slots), fit


def _alternatives(space: SearchSpace, score: Speedups, jobs: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Power-mean terms ``(jobs, type, nodes, GPUs lo..hi)`` of rows other than the current one (``1 /
    (speed-up x scale x penalty + eps)``; ``inf`` where the goodput table holds nothing)."""
    g = score.good[jobs, :, :, lo: hi + 1]
    term = _term(g, score.fair[jobs, None, None, None], score.scale, score.penalty[jobs, None, None, None])
    return np.where(g > 0, term, np.inf)


def _term(good: np.ndarray, fair: np.ndarray, scale: float, penalty: np.ndarray | float) -> np.ndarray:
    """A row's term of the fitness's power mean: ``1 / (speed-up x scale x penalty + eps)``, the speed-up being
    the row's goodput over the fair share's (the compiled fitness, ``pollux_evolve.score``, sums these)."""
    return 1.0 / (good / fair * scale * penalty + EPS_SPEEDUP)


def _size_range(space: SearchSpace, score: Speedups) -> tuple[np.ndarray, np.ndarray]:
    """Each job's allowed non-zero sizes ``lo..hi`` (its gang when fixed), within its goodput table."""
    lo = np.where(space.fixed > 0, space.fixed, np.maximum(space.min_gpus, 1))
    hi = np.where(space.fixed > 0, space.fixed, np.minimum(space.max_gpus, score.good.shape[3] - 1))
    return lo, hi


def _best_terms(space: SearchSpace, score: Speedups) -> np.ndarray:
    """Each job's smallest term over the rows other than its current one (:func:`_alternatives`; ``1 / eps``
    where it has none: no GPUs), computed for the jobs of each size range at once."""
    lo, hi = _size_range(space, score)
    best = np.full(len(lo), 1.0 / EPS_SPEEDUP)
    pairs = np.stack([lo, hi], axis=1)
    for a, b in np.unique(pairs, axis=0).tolist():
        if b < a:
            continue
        jobs = np.flatnonzero((lo == a) & (hi == b))
        best[jobs] = np.minimum(best[jobs], _alternatives(space, score, jobs, a, b).reshape(len(jobs), -1).min(1))
    return best


def _place(room: np.ndarray, node_type: np.ndarray, spread: np.ndarray, k: int, m: int, r: int
           ) -> np.ndarray | None:
    """GPUs by node for ``r`` GPUs on exactly ``m`` nodes of type ``k`` within ``room``: on one node, the one
    with the least room that holds them; on several, those with the most room that no distributed job holds
    (``spread``). ``None`` when they do not fit so."""
    nodes = np.flatnonzero((node_type == k) & (room > 0))
    row = np.zeros(len(room), dtype=np.int64)
    if m == 1:
        fits = nodes[room[nodes] >= r]
        if not len(fits):
            return None
        row[fits[np.argmin(room[fits])]] = r
        return row
    nodes = nodes[~spread[nodes]]
    nodes = nodes[np.argsort(-room[nodes], kind="stable")][:m]
    if len(nodes) < m or int(room[nodes].sum()) < r:
        return None
    left = r
    for i, h in enumerate(nodes.tolist()):
        row[h] = min(int(room[h]), left - (m - i - 1))
        left -= int(row[h])
    return row


def uncontended_best(space: SearchSpace, score: Speedups) -> np.ndarray | None:
    """The allocation of the largest fitness when the jobs do not contend, or ``None``. Each job takes its own
    smallest power-mean term: a running job keeps its current row where no other row gives a smaller term (a
    changed row pays the restart penalty), the others take a ``(type, nodes, GPUs)`` of their smallest term,
    placed largest first within the room the kept rows leave (:func:`_place`), at most one distributed job per
    node. The fitness is the power mean of the terms, so an allocation with every term at its minimum has the
    largest fitness any candidate can have. ``None`` when those rows do not all fit so (a fit may exist that
    this placement does not find): then the search decides."""
    base = space.base
    lo, hi = _size_range(space, score)
    size = base.sum(axis=1)
    if lo[size == 0].sum() > space.capacity.sum() - np.minimum(size, lo)[size > 0].sum():
        return None  # the waiting jobs cannot all start (each running job holds at least its smallest size)
    best = _best_terms(space, score)
    nodes = np.count_nonzero(base, axis=1)
    first = np.argmax(base > 0, axis=1)
    held = score.good[np.arange(len(base)), np.maximum(score.node_type[first], 0), nodes, size]
    now = np.where(size > 0, _term(held, score.fair, score.scale, 1.0), 1.0 / EPS_SPEEDUP)  # no restart: penalty 1
    keep = now <= best
    out = np.where(keep[:, None], base, 0)
    room = space.capacity - out.sum(axis=0)
    spread = (out[np.count_nonzero(out, axis=1) > 1] > 0).any(axis=0)
    move = np.flatnonzero(~keep)
    options = {}
    for j in move.tolist():
        at = np.argwhere(_alternatives(space, score, np.array([j]), int(lo[j]), int(hi[j]))[0] == best[j])
        at[:, 2] += lo[j]
        options[j] = at.tolist()
    for j in sorted(options, key=lambda j: -options[j][0][2]):
        for k, m, r in options[j]:
            row = _place(room, space.node_type, spread, k, m, r)
            if row is not None:
                break
        else:
            return None
        out[j], room = row, room - row
        spread |= (row > 0) if m > 1 else False
    return out


def waiting_window(waiting: np.ndarray, size: np.ndarray, factor: np.ndarray, gpus: float) -> np.ndarray:
    """Which jobs (in priority order; ``waiting`` marks the waiting ones) the search weighs: every running job
    and, of each gang ``size``, the ``ceil(gpus / size)`` waiting jobs with the largest restart ``factor``
    (ties: earlier first). A waiting job gets its whole gang or nothing, and starting it turns its term of the
    power mean from ``1 / EPS_SPEEDUP`` into one over its speed-up times that factor (its speed-up at its gang
    over its fair share: the same for every 1-GPU job), so of two waiting jobs of one size the search starts
    the one with the larger factor; one cluster's worth of each size holds every waiting job the exact search
    started on philly-loaded's 1,600 jobs (docs/pollux.md). Those outside only add the same term to every
    candidate's mean, which keeps their order, while each pass over the population walks their rows."""
    keep = ~waiting
    order = np.lexsort((np.arange(len(waiting)), -factor))
    order = order[waiting[order]]
    for s in np.unique(size[order]).tolist():
        members = order[size[order] == s]
        keep[members[: math.ceil(gpus / max(int(s), 1))]] = True
    return keep
