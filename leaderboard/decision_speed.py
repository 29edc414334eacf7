"""Time of one allocation decision of Gavel's LPs and Hadar's allocator (``gpucluster bench``).

The problem is Gavel's scalability setting (OSDI'20 §7.6, and Hadar §IV's Fig. 5): ``n`` active jobs on a
cluster of ``n / 4`` GPUs of each of three types (V100, P100, K80). Jobs are drawn with a seeded generator:
26 job types (Gavel's 13 models x 2 sizes) with throughputs falling from V100 to K80, 1, 2, 4 or 8 GPUs
(70/15/10/5 %), colocated throughputs 40-95 % of solo for the packed policy. Each figure is the wall time of one
call of the pure function (:mod:`..baselines.gavel_lp`, :mod:`..baselines.hadar_alloc`), building the problem
included, the best of ``repeats``. Hadar's decision is one round: prices and Algorithm 2's selection over
every queued job, on servers of 4 GPUs of one type.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from gpucluster_env.baselines import gavel_lp as G
from gpucluster_env.baselines.hadar_alloc import HadarJob, make_prices, select_jobs

N_TYPES = 26
GANG_SIZES = np.array([1, 2, 4, 8])
SPEED = np.array([1.0, 0.6, 0.25])
"""Relative speed of V100, P100, K80 for a typical job (each job type scales these by its own factors)."""


def make_problem(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """A seeded Gavel-style problem with ``n`` jobs: throughputs (n x 3), GPUs, capacity (n/4 each), job types,
    colocated throughputs (fraction of solo) by type pair, and steps left."""
    if n < 4:
        raise ValueError(f"n: at least 4 jobs (n/4 GPUs of each type), got {n}")
    rng = np.random.default_rng(seed)
    type_tput = rng.uniform(2.0, 20.0, N_TYPES)[:, None] * SPEED[None, :] * rng.uniform(0.7, 1.3, (N_TYPES, 3))
    colo = rng.uniform(0.4, 0.95, (N_TYPES, N_TYPES, 3))
    jt = rng.integers(0, N_TYPES, n)
    gpus = rng.choice(GANG_SIZES, n, p=[0.7, 0.15, 0.1, 0.05])
    return {
        "tput": type_tput[jt] * gpus[:, None] ** 0.9,
        "gpus": gpus,
        "capacity": np.full(3, n // 4),
        "type_tput": type_tput,
        "job_type": jt,
        "colo": colo,
        "remaining": rng.uniform(1e4, 1e6, n),
    }


def gavel_max_min(p: dict[str, np.ndarray]) -> None:
    G.max_min_fairness(p["tput"], p["gpus"], p["capacity"])


def gavel_makespan(p: dict[str, np.ndarray]) -> None:
    G.min_makespan(p["tput"], p["gpus"], p["capacity"], p["remaining"])


def gavel_packed(p: dict[str, np.ndarray]) -> None:
    # a job's class: its type and GPU count; a class-a job beside class b runs at colo[type a, type b] of solo
    size = np.searchsorted(GANG_SIZES, p["gpus"])
    cls = p["job_type"] * len(GANG_SIZES) + size
    solo = p["type_tput"][:, None, :] * GANG_SIZES[None, :, None] ** 0.9
    per = solo.reshape(-1, 3)
    ta = np.repeat(np.arange(N_TYPES), len(GANG_SIZES))
    cp = per[:, None, :] * p["colo"][ta[:, None], ta[None, :]]
    G.packed_max_min_fairness(p["tput"], p["gpus"], p["capacity"], cls, cp)


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
"""Figure prefix -> one decision on a problem from :func:`make_problem`."""


def decision_times(sizes: tuple[int, ...] = (32, 256, 2048), repeats: int = 3, seed: int = 0) -> dict[str, float]:
    """``{prefix}_decision_s_{n}``: seconds of one decision of each policy at each job count."""
    out: dict[str, float] = {}
    for n in sizes:
        prob = make_problem(n, seed)
        for name, fn in DECISIONS.items():
            best = float("inf")
            for _ in range(max(1, repeats)):
                t0 = time.perf_counter()
                fn(prob)
                best = min(best, time.perf_counter() - t0)
            out[f"{name}_decision_s_{n}"] = best
    return out
