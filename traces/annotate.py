"""Workload annotation: turn a raw trace (submit, GPUs, duration) into the engine's job table.

Models are assigned as the papers do (uniformly over the scenario's models, or by GPU-time class as Hadar), and
each duration becomes iterations on a reference GPU: the job would run ``duration`` seconds exclusively on
``num_gpus`` reference GPUs (V100) packed on as few 8-GPU nodes as possible, at the model's default batch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..catalog import Catalog
from ..workloads import comm_time, iteration_time

REFERENCE_GPU = "V100"
REFERENCE_NODE_GPUS = 8


def reference_iter_time(catalog: Catalog, model: str, num_gpus: int, batch_size: int | None = None) -> float:
    """Iteration time of ``model`` alone on ``num_gpus`` reference GPUs (smallest accumulation that fits)."""
    p = catalog.model(model)
    ref = catalog.gpu_type(REFERENCE_GPU)
    b = batch_size or p.batch_size
    s = 1
    while p.memory_gb(b / s) > ref.memory_gb and s < b:
        s *= 2
    nodes = -(-num_gpus // REFERENCE_NODE_GPUS)
    tc = p.t_comp(b / s, catalog.model_speed(p, REFERENCE_GPU))
    comm = comm_time(p, num_gpus, nodes, ref.intra_node_bw_gbps, 12.5)
    return iteration_time(tc, s, comm, p.delta)


def to_job_table(
    raw: pd.DataFrame,
    models: np.ndarray,
    catalog: Catalog,
    deadlines: np.ndarray | None = None,
) -> pd.DataFrame:
    """Build the engine's job table from a raw trace (``job_id``, ``submit_s``, ``num_gpus``, ``duration_s``)
    and one model name per row."""
    n = len(raw)
    gpus = raw["num_gpus"].to_numpy(np.int64)
    dur = raw["duration_s"].to_numpy(float)
    cache: dict[tuple[str, int], float] = {}
    iters = np.empty(n)
    batch = np.empty(n, dtype=np.int64)
    for i in range(n):
        key = (str(models[i]), int(gpus[i]))
        if key not in cache:
            cache[key] = reference_iter_time(catalog, key[0], key[1])
        iters[i] = max(1.0, np.ceil(dur[i] / cache[key]))
        batch[i] = catalog.model(key[0]).batch_size
    out = pd.DataFrame(
        {
            "job_id": raw["job_id"].astype(str).to_numpy(),
            "submit_s": raw["submit_s"].to_numpy(float),
            "num_gpus": gpus,
            "model": np.asarray(models, dtype=object),
            "batch_size": batch,
            "iterations": iters,
            "deadline_s": deadlines if deadlines is not None else np.full(n, np.nan),
            "duration_s": dur,
        }
    )
    return out


def gimbal_deadlines(raw: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
    """Gimbal's deadlines: submit + duration x lambda, lambda ~ U[1.5, 2.5]."""
    lam = rng.uniform(1.5, 2.5, len(raw))
    return raw["submit_s"].to_numpy(float) + raw["duration_s"].to_numpy(float) * lam
