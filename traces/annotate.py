"""Workload annotation: turn a raw trace (submit, GPUs, duration) into the engine's job table.

Models are assigned as the papers do (uniformly over the scenario's models, or by GPU-time class as Hadar),
and
each duration becomes iterations on a reference GPU: the job would run ``duration`` seconds exclusively on
``num_gpus`` reference GPUs (V100) packed on as few 8-GPU nodes as possible, at the model's default batch.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from gpucluster_env.traces.trace_options import MIXES as SCENARIO_MIXES

from gpucluster_env.catalog import Catalog
from gpucluster_env.performance import fit_accumulation, solo_iter_time

REFERENCE_GPU = "V100"
REFERENCE_NODE_GPUS = 8


def reference_iter_time(catalog: Catalog, model: str, num_gpus: int, batch_size: int | None = None,
                        gpu: str = REFERENCE_GPU, node_gpus: int = REFERENCE_NODE_GPUS,
                        inter_node_gbs: float = 12.5) -> float:
    """Iteration time of ``model`` alone on ``num_gpus`` GPUs of type ``gpu`` (the reference V100 by default)
    packed on as few ``node_gpus``-GPU nodes as possible, at the smallest accumulation that fits; Gavel's
    measured time where it measured the configuration (:meth:`~gpucluster_env.catalog.Catalog.solo_scale`)."""
    p = catalog.model(model)
    ref = catalog.gpu_type(gpu)
    b = batch_size or p.batch_size
    # the smallest accumulation that fits (no slack); if none does, the first power of two >= b
    s = fit_accumulation(p, b, ref.memory_gb, tol=0.0) or 1 << (b - 1).bit_length()
    speed, nodes = catalog.model_speed(p, gpu), -(-num_gpus // node_gpus)
    args = (num_gpus, nodes, ref.intra_node_bw_gbps, inter_node_gbs)
    f = catalog.solo_scale(p, b, gpu, num_gpus, True, solo_iter_time(p, b, 1, speed, *args))
    return solo_iter_time(p, b, s, speed, *args, f if math.isfinite(f) else 1.0)


def to_job_table(
    raw: pd.DataFrame,
    models: np.ndarray,
    catalog: Catalog,
    deadlines: np.ndarray | None = None,
    iterations: np.ndarray | None = None,
    batch_sizes: np.ndarray | None = None,
    reference: tuple[str, int, float] | None = None,
) -> pd.DataFrame:
    """Build the engine's job table from a raw trace (``job_id``, ``submit_s``, ``num_gpus``, ``duration_s``)
    and one model name per row. ``iterations`` (one per row), when given, replaces the iterations derived from
    the durations (Pollux's recipe fixes the work per application); ``batch_sizes`` (per-GPU, one per row)
    replaces the catalog's batch of each model. ``reference``: ``(gpu type, GPUs per node, inter-node GB/s)``
    the durations are run on (default: the reference V100 in 8-GPU nodes at 12.5 GB/s)."""
    ref_gpu, ref_node, ref_net = reference or (REFERENCE_GPU, REFERENCE_NODE_GPUS, 12.5)
    n = len(raw)
    gpus = raw["num_gpus"].to_numpy(np.int64)
    dur = raw["duration_s"].to_numpy(float)
    cache: dict[tuple[str, int, int], float] = {}
    iters = np.empty(n)
    batch = np.empty(n, dtype=np.int64)
    for i in range(n):
        b = int(batch_sizes[i]) if batch_sizes is not None else catalog.model(str(models[i])).batch_size
        key = (str(models[i]), int(gpus[i]), b)
        if key not in cache:
            cache[key] = reference_iter_time(catalog, key[0], key[1], b, ref_gpu, ref_node, ref_net)
        iters[i] = max(1.0, np.ceil(dur[i] / cache[key]))
        batch[i] = b
    if iterations is not None:
        iters = np.asarray(iterations, float)
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


# ------------------------------------------------------------------------------------ model assignment
HADAR_CLASSES = (
    ("Small", 0.0, 1.0),
    ("Medium", 1.0, 10.0),
    ("Large", 10.0, 50.0),
    ("XLarge", 50.0, math.inf),
)
"""Hadar's GPU-time classes in GPU-hours (§IV-A: Small 0-1, Medium 1-10, Large 10-50, XLarge 60-100). The
paper leaves 50-60 and > 100 unassigned; here 50 and above is XLarge."""

MODEL_SIZE = {
    "resnet18": "Small",
    "cifar10": "Small",
    "ncf": "Small",
    "cyclegan": "Medium",
    "mima": "Medium",
    "a3c": "Medium",
    "deepspeech2": "Medium",
    "yolov3": "Medium",
    "lm": "Large",
    "transformer": "Large",
    "bert": "Large",
    "resnet50": "XLarge",
    "imagenet": "XLarge",
    "recommendation": "XLarge",
}
"""Dataset size class of each model (Hadar Tables II and III: ResNet-18/CIFAR-10 S, CycleGAN M,
LSTM/Wikitext-2
L, Transformer L, ResNet-50/ImageNet XL, Recommendation/ML-20M XL, MiMa M). Models not listed are Medium."""


def hadar_class(gpu_hours: np.ndarray) -> np.ndarray:
    """The index (0..3) of each job's Hadar GPU-time class."""
    edges = np.array([c[2] for c in HADAR_CLASSES[:-1]])
    return np.searchsorted(edges, np.asarray(gpu_hours, float), side="right")


def assign_models(
    raw: pd.DataFrame, models: tuple[str, ...] | list[str], how: str, rng: np.random.Generator
) -> np.ndarray:
    """One model per job: ``uniform`` over ``models`` (Castor, Gimbal), or ``hadar-class``: uniformly among
    the
    ``models`` whose size class matches the job's GPU-time class (the nearest class that has models when its
    own has none)."""
    names = np.array(models, dtype=object)
    if how == "uniform":
        return rng.choice(names, len(raw))
    if how != "hadar-class":
        raise ValueError(f"unknown annotation {how!r}; use 'uniform' or 'hadar-class'")
    order = [c[0] for c in HADAR_CLASSES]
    by_class = [[m for m in models if MODEL_SIZE.get(m, "Medium") == c] for c in order]
    gpu_hours = raw["num_gpus"].to_numpy(float) * raw["duration_s"].to_numpy(float) / 3600.0
    cls = hadar_class(gpu_hours)
    out = np.empty(len(raw), dtype=object)
    for k in range(len(order)):
        pick = min((abs(j - k), j) for j in range(len(order)) if by_class[j])[1]
        rows = np.flatnonzero(cls == k)
        if len(rows):
            out[rows] = rng.choice(np.array(by_class[pick], dtype=object), len(rows))
    return out


# ---------------------------------------------------------------------------------------- HadarE mixes
MIX_ABBREVIATIONS = {"IC": "resnet50", "LM": "lm", "LT": "transformer", "RS": "recommendation", "MM": "mima"}
"""HadarE §VI: image classification, language modelling, language translation, recommendation, MiMa."""

MIXES = SCENARIO_MIXES
"""HadarE's workload mixes (hadar-hadare §VI-B), declared with the scenario options."""

MIX_DURATION_S = {"Small": 600.0, "Medium": 1200.0, "Large": 1800.0, "XLarge": 2400.0}
"""Reference-GPU run time of a mix job by its size class. An assumption of this project (the paper gives
sizes,
not durations), chosen so M-5 on five single-GPU nodes takes about an hour, HadarE's order of magnitude."""


def mix_raw(mix: str) -> pd.DataFrame:
    """The raw trace of a HadarE mix: one single-GPU job per model, all at t = 0, with a ``model`` column."""
    try:
        abbrevs = MIXES[mix]
    except KeyError:
        raise ValueError(f"unknown workload mix {mix!r}; known: {', '.join(MIXES)}") from None
    models = [MIX_ABBREVIATIONS[a] for a in abbrevs]
    return pd.DataFrame(
        {
            "job_id": [f"{mix}-{i}-{a}" for i, a in enumerate(abbrevs)],
            "submit_s": 0.0,
            "num_gpus": 1,
            "duration_s": [MIX_DURATION_S[MODEL_SIZE.get(m, "Medium")] for m in models],
            "model": models,
        }
    )
