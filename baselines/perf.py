"""Read-only performance helpers shared by the reference agents.

They evaluate the engine's published performance model (Castor eq. 1-3, :mod:`gpucluster_env.workloads`) for
*hypothetical* placements: a job on a given set of GPUs, with a given gradient-accumulation factor and
per-worker interference ratios. Nothing here reads the engine's true interference table or mutates state.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def fit_accumulation(eng: Any, j: int, mem_gb: float, other_gb: float = 0.0) -> int | None:
    """Smallest power-of-two accumulation ``s <= batch`` with footprint(B/s) + ``other_gb`` <= ``mem_gb``."""
    p = eng.profiles[int(eng.job_model[j])]
    batch = int(eng.batch[j])
    s = 1
    while s <= batch:
        if p.memory_gb(batch / s) + other_gb <= mem_gb + 1e-9:
            return s
        s *= 2
    return None


def feasible_accumulations(eng: Any, j: int, gpus: np.ndarray) -> list[int]:
    """Every power-of-two accumulation ``s`` (1, 2, 4, ... <= batch) under which job ``j`` fits beside the
    current tenants of ``gpus`` (Algorithm 2's search range, restricted to what fits in memory)."""
    p = eng.profiles[int(eng.job_model[j])]
    batch = int(eng.batch[j])
    tenant = eng.slot_job[gpus, 0]
    other = np.where(tenant >= 0, eng.footprint[np.maximum(tenant, 0)], 0.0)
    room = float((eng.type_mem[eng.gpu_type[gpus]] - other).min())
    out: list[int] = []
    s = 1
    while s <= batch:
        if p.memory_gb(batch / s) <= room + 1e-9:
            out.append(s)
        s *= 2
    return out


def iter_time(eng: Any, j: int, gpus: np.ndarray, s: int, xi: np.ndarray | float = 1.0) -> float:
    """Iteration time of job ``j`` on ``gpus`` with accumulation ``s`` when each worker's compute is slowed by
    ``xi`` (Castor eq. 1-3 and 14-15; ``xi`` = 1 alone). Mirrors the engine's model, sample stealing included.
    """
    return eng.iter_time_for(j, gpus, s, xi)


def solo_accumulation(eng: Any, j: int, gpus: np.ndarray) -> int | None:
    """Smallest accumulation under which job ``j`` fits alone on every GPU of ``gpus``."""
    mem = float(eng.type_mem[eng.gpu_type[gpus]].min())
    return fit_accumulation(eng, j, mem)
