"""Time of one allocation decision of Gavel's LPs, Hadar's allocator and Pollux's search (``gpucluster bench``).

The problem is Gavel's scalability setting (OSDI'20 §7.6, and Hadar §IV's Fig. 5): ``n`` active jobs on a
cluster of ``n / 4`` GPUs of each of three types (V100, P100, K80). Jobs are drawn with a seeded generator:
26 job types (Gavel's 13 models x 2 sizes) with throughputs falling from V100 to K80, 1, 2, 4 or 8 GPUs
(70/15/10/5 %), colocated throughputs 40-95 % of solo for the packed policy. Each figure is the wall time of one
call of the pure function (:mod:`..baselines.parts.gavel_lp`, :mod:`..baselines.parts.hadar_alloc`), building the
problem included, the best of ``repeats``. Hadar's decision is one round: prices and Algorithm 2's selection over
every queued job, on servers of 4 GPUs of one type.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from gpucluster_env.baselines.parts import gavel_lp as G
from gpucluster_env.baselines.parts.gavel_partner_lp import packed_rate
from gpucluster_env.baselines.parts.hadar_alloc import HadarJob, make_prices, select_jobs

N_TYPES = 26
GANG_SIZES = np.array([1, 2, 4, 8])
SPEED = np.array([1.0, 0.6, 0.25])
"""Relative speed of V100, P100, K80 for a typical job (each job type scales these by its own factors)."""


def make_problem(n: int, seed: int = 0, distinct: bool = False) -> dict[str, np.ndarray]:
    """A seeded Gavel-style problem with ``n`` jobs: throughputs (n x 3), GPUs, capacity (n/4 each), job types,
    colocated throughputs (fraction of solo) by type pair, steps left, and finish-time fairness' inputs (time
    since arrival, isolated time so far). ``distinct``: every job's throughputs scaled by its own factors
    (0.8-1.2 per type), so no two jobs are alike and the job-class shortcut does not apply."""
    if n < 4:
        raise ValueError(f"n: at least 4 jobs (n/4 GPUs of each type), got {n}")
    rng = np.random.default_rng(seed)
    type_tput = rng.uniform(2.0, 20.0, N_TYPES)[:, None] * SPEED[None, :] * rng.uniform(0.7, 1.3, (N_TYPES, 3))
    colo = rng.uniform(0.4, 0.95, (N_TYPES, N_TYPES, 3))
    jt = rng.integers(0, N_TYPES, n)
    gpus = rng.choice(GANG_SIZES, n, p=[0.7, 0.15, 0.1, 0.05])
    tput = type_tput[jt] * gpus[:, None] ** 0.9
    remaining = rng.uniform(1e4, 1e6, n)
    since = rng.uniform(0.0, 1e5, n)
    if distinct:
        tput = tput * np.random.default_rng(seed + 1).uniform(0.8, 1.2, tput.shape)
    return {
        "tput": tput,
        "gpus": gpus,
        "capacity": np.full(3, n // 4),
        "type_tput": type_tput,
        "job_type": jt,
        "colo": colo,
        "remaining": remaining,
        "since_start": since,
        "isolated_time": since * rng.uniform(0.0, 1.0, n),
    }


def job_class(p: dict[str, np.ndarray]) -> np.ndarray:
    """Each job's class for the packed policies: its type and GPU count."""
    return p["job_type"] * len(GANG_SIZES) + np.searchsorted(GANG_SIZES, p["gpus"])


def partner_throughputs(p: dict[str, np.ndarray]) -> np.ndarray:
    """Each job's throughput beside a job of each class (jobs x classes x GPU types): its own throughput times the
    colocation factor of the two job types; 0 beside a class of another GPU count (pairs share whole gangs)."""
    ta = np.repeat(np.arange(N_TYPES), len(GANG_SIZES))
    size = np.tile(GANG_SIZES, N_TYPES)
    same = (size[None, :] == p["gpus"][:, None])[:, :, None]
    return p["tput"][:, None, :] * p["colo"][p["job_type"][:, None], ta[None, :]] * same


def gavel_max_min(p: dict[str, np.ndarray]) -> None:
    G.max_min_fairness(p["tput"], p["gpus"], p["capacity"])


def gavel_makespan(p: dict[str, np.ndarray]) -> None:
    G.min_makespan(p["tput"], p["gpus"], p["capacity"], p["remaining"])


def gavel_ftf(p: dict[str, np.ndarray]) -> None:
    G.finish_time_fairness(p["tput"], p["gpus"], p["capacity"], p["remaining"], p["since_start"],
                           p["isolated_time"])


def gavel_packed(p: dict[str, np.ndarray]) -> None:
    # a job's class: its type and GPU count; a class-a job beside class b runs at colo[type a, type b] of solo
    cls = job_class(p)
    solo = p["type_tput"][:, None, :] * GANG_SIZES[None, :, None] ** 0.9
    per = solo.reshape(-1, 3)
    ta = np.repeat(np.arange(N_TYPES), len(GANG_SIZES))
    cp = per[:, None, :] * p["colo"][ta[:, None], ta[None, :]]
    G.packed_max_min_fairness(p["tput"], p["gpus"], p["capacity"], cls, cp)


def gavel_packed_distinct(p: dict[str, np.ndarray]) -> None:
    # distinct jobs: each its own row, partners by class (gavel_partner_lp), max-min demands as gavel-packed's
    demand = G.equal_share_throughputs(p["tput"], p["capacity"]) / p["gpus"]
    packed_rate(p["tput"], p["gpus"], p["capacity"], demand, job_class(p), partner_throughputs(p))


def gavel_packed_makespan(p: dict[str, np.ndarray]) -> None:
    G.packed_min_makespan(p["tput"], p["gpus"], p["capacity"], p["remaining"], partner_throughputs(p), job_class(p))


def hadar(p: dict[str, np.ndarray]) -> None:
    n = len(p["gpus"])
    per = n // 4
    servers = -(-per // 4)
    cap = np.zeros((3 * servers, 3), dtype=np.int64)
    for k in range(3):
        for s in range(servers):
            cap[k * servers + s, k] = min(4, per - 4 * s)
    jobs = [HadarJob(int(g), float(r), tuple(float(x) for x in t), 0.0, float(r))
            for g, r, t in zip(p["gpus"], p["remaining"], p["tput"], strict=True)]
    prices = make_prices(jobs, cap, 0.0, 360.0)
    select_jobs(jobs, cap, prices, 0.0)


DECISIONS: dict[str, Callable[[dict[str, np.ndarray]], None]] = {
    "gavel": gavel_max_min,
    "gavel_makespan": gavel_makespan,
    "gavel_packed": gavel_packed,
    "hadar": hadar,
}
"""Figure prefix -> one decision on a problem from :func:`make_problem` (26 job types: jobs of a type alike)."""

DISTINCT: dict[str, Callable[[dict[str, np.ndarray]], None]] = {
    "gavel_distinct": gavel_max_min,
    "gavel_makespan_distinct": gavel_makespan,
    "gavel_ftf_distinct": gavel_ftf,
    "gavel_packed_distinct": gavel_packed_distinct,
    "gavel_packed_makespan_distinct": gavel_packed_makespan,
}
"""Figure prefix -> one decision of each Gavel LP on :func:`make_problem` with ``distinct=True`` (no two jobs
alike: the setting of the side-by-side with Gavel's own LPs, docs/gavel.md)."""


POLLUX_BENCH_JOBS = 160
"""Jobs in the Pollux search benchmark: one of Pollux's workloads whole (160 jobs) on its 16 x 4 T4 cluster."""


def pollux_search(n_jobs: int, population: int, generations: int, seed: int = 0) -> float:
    """Seconds of one Pollux allocation search (:mod:`..baselines.pollux_search`) over ``n_jobs`` elastic jobs
    on 16 nodes of 4 GPUs, with a seeded concave speed-up table (``r ** 0.7`` scaled per job, more nodes
    costing 10% each): the genetic algorithm's own cost, building its start population included."""
    from gpucluster_env.baselines.pollux_search import SearchSpace, Speedups, evolve, mutate, repair

    rng = np.random.default_rng(seed)
    nodes, per = 16, 4
    max_r = 16
    space = SearchSpace(np.full(nodes, per), np.zeros(nodes, dtype=np.int64), rng.integers(1, max_r + 1, n_jobs),
                        np.ones(n_jobs, dtype=np.int64), np.zeros(n_jobs, dtype=np.int64),
                        np.zeros((n_jobs, nodes), dtype=np.int64))
    r = np.arange(max_r + 1, dtype=float)
    table = rng.uniform(0.5, 1.5, n_jobs)[:, None, None] * r[None, None, :] ** 0.7 \
        * 0.9 ** np.arange(nodes + 1)[None, :, None]
    # the fitness as data, as the policy hands it over, so the search runs its compiled loop: one GPU type,
    # every fair share 1
    score = Speedups(np.ascontiguousarray(table[:, None]), np.ones(n_jobs), np.ones(n_jobs), nodes / (nodes * per),
                     np.zeros(nodes, dtype=np.int64), space.base)

    t0 = time.perf_counter()
    pop = repair(mutate(np.repeat(space.base[None], population, axis=0), space, rng), space, rng)
    evolve(pop, score, space, generations, rng)
    return time.perf_counter() - t0


def pollux_decision_times(repeats: int = 1, seed: int = 0) -> dict[str, float]:
    """``pollux_decision_s_160`` (the policy's default search, 32 x 20) and ``pollux_decision_s_160_100x100``
    (Pollux's own population and generations): best of ``repeats``."""
    out = {}
    for (pop, gens), key in (((32, 20), ""), ((100, 100), "_100x100")):
        out[f"pollux_decision_s_{POLLUX_BENCH_JOBS}{key}"] = min(
            pollux_search(POLLUX_BENCH_JOBS, pop, gens, seed) for _ in range(max(1, repeats)))
    return out


def _best_times(table: dict[str, Callable[[dict[str, np.ndarray]], None]], sizes: tuple[int, ...], repeats: int,
                seed: int, distinct: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    for n in sizes:
        prob = make_problem(n, seed, distinct)
        for name, fn in table.items():
            best = float("inf")
            for _ in range(max(1, repeats)):
                t0 = time.perf_counter()
                fn(prob)
                best = min(best, time.perf_counter() - t0)
            out[f"{name}_decision_s_{n}"] = best
    return out


def decision_times(sizes: tuple[int, ...] = (32, 256, 2048), repeats: int = 3, seed: int = 0) -> dict[str, float]:
    """``{prefix}_decision_s_{n}``: seconds of one decision of each policy of :data:`DECISIONS` at each job count
    (best of ``repeats``)."""
    return _best_times(DECISIONS, sizes, repeats, seed, False)


def distinct_decision_times(sizes: tuple[int, ...] = (32, 256), repeats: int = 1, seed: int = 0) -> dict[str, float]:
    """``{prefix}_decision_s_{n}`` (prefixes ending ``_distinct``) as :func:`decision_times` for :data:`DISTINCT`
    (every Gavel LP on jobs that all differ; the packed max-min LP takes minutes at 2,048 jobs, hence one repeat by
    default)."""
    return _best_times(DISTINCT, sizes, repeats, seed, True)
