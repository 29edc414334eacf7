"""Build a scenario's job table for a seed: pick the trace source, sample, fit to the cluster, annotate.

Sources, by the scenario's ``trace``: ``philly``, ``venus``, ``alibaba`` (PAI 2020) and ``alibaba-gpu`` (GPU
2023) use the real file when one is found (``$GPUCLUSTER_DATA``, the user cache, ``../shared/data`` beside a
checkout; see :mod:`.registry`) and otherwise the shipped synthetic trace fitted to it (:mod:`.shipped`);
``mix`` is a HadarE workload mix; ``tiny`` is a small generated trace. ``$GPUCLUSTER_TRACE_SOURCE`` =
``synthetic`` forces the shipped traces, ``real`` requires the real file. The returned note names the trace
used
and what sampling did to it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..catalog import Catalog
from ..catalog.measured import data_dir
from .annotate import assign_models, gimbal_deadlines, mix_raw, reference_iter_time, to_job_table
from .pollux import (
    pollux_applications,
    pollux_batch,
    pollux_iterations,
    pollux_replicas,
    pollux_sample,
    pollux_time_iterations,
)
from .registry import load_trace
from .samplers import fit_to_cluster, sample
from .shipped import load_embedded

if TYPE_CHECKING:
    from ..scenarios import Scenario

SCENARIO_TRACES = {
    "philly": ("philly", "philly"),
    "venus": ("venus", "venus"),
    "alibaba": ("alibaba", "alibaba"),
    "alibaba-gpu": ("alibaba-gpu", "alibaba"),
}
"""Scenario trace -> (registered real trace, shipped synthetic stand-in)."""


def _tiny_raw(sc: Scenario, rng: np.random.Generator) -> pd.DataFrame:
    """The tiny scenario's own small synthetic trace: Poisson arrivals (mean gap 90 s), mostly 1-GPU jobs,
    log-normal durations with median 15 minutes."""
    n = sc.num_jobs
    gaps = rng.exponential(90.0, n)
    gaps[0] = 0.0
    return pd.DataFrame(
        {
            "job_id": [f"tiny-{i:03d}" for i in range(n)],
            "submit_s": np.cumsum(gaps),
            "num_gpus": rng.choice([1, 1, 1, 2, 4], n),
            "duration_s": np.clip(rng.lognormal(np.log(900.0), 1.0, n), 60.0, 6 * 3600.0),
        }
    )


def trace_source(trace: str) -> tuple[pd.DataFrame, str]:
    """The full normalized trace behind a scenario ``trace`` name and a note naming it (real or synthetic)."""
    if trace not in SCENARIO_TRACES:
        raise ValueError(
            f"trace source {trace!r} has no loader; known: {', '.join(SCENARIO_TRACES)}, mix, tiny"
        )
    real_name, synthetic = SCENARIO_TRACES[trace]
    mode = os.environ.get("GPUCLUSTER_TRACE_SOURCE", "auto")
    if mode not in ("auto", "real", "synthetic"):
        raise ValueError(f"$GPUCLUSTER_TRACE_SOURCE must be auto, real or synthetic, got {mode!r}")
    loaded = None if mode == "synthetic" else load_trace(real_name)
    if loaded is not None:
        df, _ = loaded
        return df, f"real {real_name} trace ({df.attrs['source']})"
    if mode == "real":
        raise FileNotFoundError(
            f"real trace {real_name!r} not found; run 'gpucluster traces fetch {real_name}' "
            "or set $GPUCLUSTER_DATA"
        )
    return (
        load_embedded(synthetic),
        f"synthetic {synthetic} trace (shipped, fitted to the real {real_name} "
        "statistics; real file not found)",
    )


def _pollux_jobs(sc: Scenario, rng: np.random.Generator, catalog: Catalog) -> tuple[pd.DataFrame, str]:
    """Pollux's recipe (:mod:`.pollux`): ``num_jobs`` jobs from the busiest 8 hours of the day (2:00-10:00 on
    Philly, as Pollux; the busiest 8-hour range of the day on other traces), application by GPU time and GPU
    count as Pollux. The work: ``pollux`` = Pollux's epochs x dataset per application (SJF-BSBF §VI-A follows
    Pollux); ``pollux-lucid`` = the sampled job's own GPU time in the trace (``duration x GPUs`` on reference
    GPUs), spread over Pollux's GPU count, as Lucid keeps the trace's durations (Castor §9.1 follows "Pollux and
    Lucid"). ``load`` divides arrival times as for the other recipes."""
    full, note = trace_source(sc.trace)
    raw, start, pool = pollux_sample(full, sc.num_jobs, rng, 2.0 if sc.trace == "philly" else None)
    apps = pollux_applications(raw, rng)
    gpus = np.minimum(pollux_replicas(apps, rng), sc.cluster.num_gpus)
    trace_gpus = raw["num_gpus"].to_numpy(float)
    raw = raw.assign(num_gpus=gpus)
    if sc.load != 1.0:
        raw = raw.assign(submit_s=raw["submit_s"].to_numpy(float) / sc.load)
    keys = [(str(a), int(g)) for a, g in zip(apps, gpus, strict=True)]
    batch = np.array([pollux_batch(a, g) for a, g in keys], dtype=np.int64)
    ref = {k: reference_iter_time(catalog, k[0], k[1], pollux_batch(*k)) for k in set(keys)}
    if sc.annotate == "pollux-lucid":  # the trace's own GPU time, spread over Pollux's GPU count (Lucid)
        work = trace_gpus * raw["duration_s"].to_numpy(float)
        node = sc.cluster.nodes[0]
        own = {k: reference_iter_time(catalog, k[0], k[1], pollux_batch(*k), node.gpu_type, node.count,
                                      sc.cluster.inter_node_bw_gbps) for k in set(keys)}
        iters = np.array([max(1.0, np.ceil(w / (k[1] * own[k]))) for w, k in zip(work, keys, strict=True)])
    elif sc.annotate == "pollux-time" and data_dir() is not None:  # Pollux's work timed on Pollux's T4s
        per = {k: pollux_time_iterations(k[0], k[1], catalog) for k in set(keys)}
        iters = np.array([per[k] for k in keys])
    else:
        iters = np.array([pollux_iterations(k[0], k[1], catalog) for k in keys])
    raw = raw.assign(duration_s=[it * ref[k] for it, k in zip(iters, keys, strict=True)])
    jobs = to_job_table(raw, apps, catalog, iterations=iters, batch_sizes=batch)
    work = {"pollux-lucid": "the trace's GPU time (Lucid)",
            "pollux-time": "Pollux's epochs x dataset timed on Pollux's T4s (measured step times)"}.get(
        sc.annotate, "iterations as Pollux")
    if sc.annotate == "pollux-time" and data_dir() is None:
        work = "iterations as Pollux (Pollux's placements.csv not found, so not timed on Pollux's T4s)"
    note = (f"{note}; Pollux recipe: {len(raw)} of {pool} jobs submitted {start:g}:00-{start + 8:g}:00 "
            f"(any day), application by GPU time, GPUs as Pollux, work {work}")
    return jobs, note


def build_jobs(sc: Scenario, seed: int, catalog: Catalog) -> tuple[pd.DataFrame, str]:
    """The engine job table for scenario ``sc`` and ``seed``, and a note naming the trace used."""
    rng = np.random.default_rng(seed)
    models: np.ndarray | None = None
    if sc.annotate in ("pollux", "pollux-lucid", "pollux-time"):
        return _pollux_jobs(sc, rng, catalog)
    if sc.trace == "tiny":
        raw, note = _tiny_raw(sc, rng), "synthetic tiny trace (embedded generator)"
    elif sc.trace == "mix":
        raw = mix_raw(sc.mix or "M-5")
        models = raw["model"].to_numpy(object)
        note = f"HadarE workload mix {sc.mix or 'M-5'} ({len(raw)} jobs)"
    else:
        full, note = trace_source(sc.trace)
        raw, rep = sample(full, sc.num_jobs, sc.window, rng)
        raw = fit_to_cluster(raw, sc.cluster.num_gpus, "cap", rep)
        note = f"{note}; {rep.summary()}"
    if sc.load != 1.0:
        raw = raw.assign(submit_s=raw["submit_s"].to_numpy(float) / sc.load)
    if sc.all_at_zero:
        raw = raw.assign(submit_s=0.0)
    if models is None:
        models = assign_models(raw, sc.models, sc.annotate, rng)
    deadlines = gimbal_deadlines(raw, rng) if sc.deadlines else None
    return to_job_table(raw, models, catalog, deadlines), note
