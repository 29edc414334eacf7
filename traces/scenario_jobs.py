"""Build a scenario's job table for a seed: pick the trace source, sample, fit to the cluster, annotate.

Sources, by the scenario's ``trace``: ``philly``, ``venus``, ``alibaba`` (PAI 2020) and ``alibaba-gpu`` (GPU
2023) use the real file when one is found (``$GPUCLUSTER_DATA``, the user cache, ``../shared/data`` beside a
checkout; see :mod:`.registry`) and otherwise the shipped synthetic trace fitted to it (:mod:`.shipped`);
``mix`` is a HadarE workload mix; ``tiny`` is a small generated trace; ``file`` is the scenario's
``trace_file`` (a user's own trace, any format of :mod:`.registry`). ``$GPUCLUSTER_TRACE_SOURCE`` =
``synthetic`` forces the shipped traces, ``real`` requires the real file. The returned note names the trace
used and what sampling did to it.

Both steps are registered by name, so a new trace source or annotation recipe is one decorated function:
:data:`SOURCES` (the scenario's ``trace``: raw jobs with submit, GPUs, duration) and :data:`RECIPES` (the
scenario's ``annotate``: the whole way from the trace to the engine's job table).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from gpucluster_env.traces.annotate import assign_models, gimbal_deadlines, reference_iter_time, to_job_table
from gpucluster_env.traces.pollux_workloads import (
    POLLUX_PERIOD_H,
    pollux_applications,
    pollux_batch,
    pollux_iterations,
    pollux_replicas,
    pollux_sample,
    pollux_time_iterations,
)
from gpucluster_env.traces.trace_options import parse_window

from gpucluster_env.catalog import Catalog
from gpucluster_env.catalog.measured import data_dir

if TYPE_CHECKING:
    from gpucluster_env.scenario_spec import Scenario

from gpucluster_env.traces.trace_sources import (  # re-exported: callers import them from here
    RECIPES,
    SCENARIO_TRACES,
    SOURCES,
    _gavel_source,
    arrivals,
    bounded_trace,
    full_trace,
    real_trace_name,
    recipe,
    source,
    source_mode,
    trace_identity,
    trace_source,
    within_gpu_hours,
)

__all__ = ["RECIPES", "SCENARIO_TRACES", "SOURCES", "arrivals", "bounded_trace", "build_jobs", "full_trace",
           "pollux_period", "real_trace_name", "recipe", "source", "source_mode", "trace_identity", "trace_source",
           "within_gpu_hours"]


def _model_recipe(
    sc: Scenario, rng: np.random.Generator, catalog: Catalog,
    assign: Callable[[pd.DataFrame, np.random.Generator], np.ndarray],
) -> tuple[pd.DataFrame, str]:
    """The common recipe: raw jobs from the scenario's source, ``load`` and ``all_at_zero`` applied to arrivals,
    one model per job by ``assign`` (unless the source fixes them), Gimbal's deadlines when asked, and
    iterations from the durations on the reference GPU."""
    try:
        src = SOURCES[sc.trace]
    except KeyError:
        raise ValueError(f"scenario {sc.name!r}: unknown trace {sc.trace!r}; known: {', '.join(SOURCES)}") from None
    raw, note, models = src(sc, rng)
    if sc.annotate != "trace":
        dur = raw["duration_s"].to_numpy(float)
        if not np.isfinite(dur).all():
            raise ValueError(f"{note.split(';')[0]}: {int((~np.isfinite(dur)).sum())} jobs have no duration (a "
                             "Gavel trace gives steps, not times); use the annotation 'trace'")
    raw = arrivals(sc, raw)
    if models is None:
        models = assign(raw, rng)
    deadlines = gimbal_deadlines(raw, rng) if sc.deadlines else None
    if sc.annotate == "trace":
        batch = raw["batch_size"].to_numpy(np.int64)
        batch = np.where(batch > 0, batch, [catalog.model(str(m)).batch_size if m in catalog.models else 1
                                            for m in models])
        return to_job_table(raw, models, catalog, deadlines, raw["iterations"].to_numpy(float), batch), note
    return to_job_table(raw, models, catalog, deadlines), note


@recipe("uniform", "hadar-class")
def _assigned_models(sc: Scenario, rng: np.random.Generator, catalog: Catalog) -> tuple[pd.DataFrame, str]:
    """Models drawn uniformly over the scenario's ``models`` (Castor, Gimbal), or by Hadar's GPU-time
    classes; iterations from each job's duration on the reference GPU."""
    return _model_recipe(sc, rng, catalog, lambda raw, r: assign_models(raw, sc.models, sc.annotate, r))


@recipe("trace")
def _trace_models(sc: Scenario, rng: np.random.Generator, catalog: Catalog) -> tuple[pd.DataFrame, str]:
    """The trace's own models, per-GPU batch sizes and iterations (Gavel ``.trace`` files carry them)."""
    def own(raw: pd.DataFrame, r: np.random.Generator) -> np.ndarray:
        if not {"model", "iterations", "batch_size"} <= set(raw.columns):
            raise ValueError(f"scenario {sc.name!r}: annotation 'trace' needs a trace with its own models and "
                             "iterations (a Gavel .trace file); use 'uniform' or another recipe")
        return raw["model"].to_numpy(object)
    return _model_recipe(sc, rng, catalog, own)


@recipe("file-models")
def _file_models(sc: Scenario, rng: np.random.Generator, catalog: Catalog) -> tuple[pd.DataFrame, str]:
    """Each job as the model its trace file names (the table's ``model`` column, or ``model=COLUMN`` in
    ``trace_columns``); iterations from each job's duration on the reference GPU, as ``uniform``'s."""
    def own(raw: pd.DataFrame, r: np.random.Generator) -> np.ndarray:
        if "model" not in raw.columns:
            raise ValueError(f"scenario {sc.name!r}: annotation 'file-models' needs a trace file with a model "
                             "column (a 'model' column in the table, or model=COLUMN in its column map)")
        unknown = sorted(set(raw["model"]) - set(catalog.models))
        if unknown:
            raise ValueError(f"scenario {sc.name!r}: the trace's model column names model(s) the catalog lacks: "
                             f"{', '.join(map(repr, unknown[:5]))}; known: {', '.join(sorted(catalog.models))}")
        return raw["model"].to_numpy(object)
    return _model_recipe(sc, rng, catalog, own)


@recipe("gavel")
def _gavel_jobs(sc: Scenario, rng: np.random.Generator, catalog: Catalog) -> tuple[pd.DataFrame, str]:
    """Gavel's generator (:mod:`.gavel_synth`): its job types with their own batch sizes, GPU counts and run
    times on the reference V100; ``load`` scales its arrival rate; ``deadlines`` as Gimbal's."""
    raw, note, models = _gavel_source(sc, rng)
    if sc.all_at_zero:
        raw = raw.assign(submit_s=0.0)
    deadlines = gimbal_deadlines(raw, rng) if sc.deadlines else None
    return to_job_table(raw, models, catalog, deadlines, batch_sizes=raw["batch_size"].to_numpy(np.int64)), note


@recipe("pollux", "pollux-lucid", "pollux-time")
def _pollux_jobs(sc: Scenario, rng: np.random.Generator, catalog: Catalog) -> tuple[pd.DataFrame, str]:
    """Pollux's recipe (:mod:`.pollux_workloads`): ``num_jobs`` jobs from the busiest 8 hours of the day (2:00-10:00 on
    Philly, as Pollux; the busiest 8-hour range of the day on other traces), application by GPU time and GPU
    count as Pollux. The work: ``pollux`` = Pollux's epochs x dataset per application (SJF-BSBF §VI-A follows
    Pollux); ``pollux-lucid`` = the sampled job's own GPU time in the trace (``duration x GPUs`` on reference
    GPUs), spread over Pollux's GPU count, as Lucid keeps the trace's durations (Castor §9.1 follows "Pollux and
    Lucid"). Another ``window`` picks other hours (:func:`pollux_period`); ``load``, ``all_at_zero``,
    ``deadlines``, ``max_gpu_hours`` and ``max_duration_h`` act as for the other recipes."""
    full, note = bounded_trace(sc)
    start_h, period_h = pollux_period(sc, rng)
    raw, start, pool = pollux_sample(full, sc.num_jobs, rng, start_h, period_h)
    apps = pollux_applications(raw, rng)
    gpus = np.minimum(pollux_replicas(apps, rng), sc.cluster.num_gpus)
    trace_gpus = raw["num_gpus"].to_numpy(float)
    raw = arrivals(sc, raw.assign(num_gpus=gpus))
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
    deadlines = gimbal_deadlines(raw, rng) if sc.deadlines else None
    jobs = to_job_table(raw, apps, catalog, deadlines, iterations=iters, batch_sizes=batch)
    work = {"pollux-lucid": "the trace's GPU time (Lucid)",
            "pollux-time": "Pollux's epochs x dataset timed on Pollux's T4s (measured step times)"}.get(
        sc.annotate, "iterations as Pollux")
    if sc.annotate == "pollux-time" and data_dir() is None:
        work = "iterations as Pollux (Pollux's placements.csv not found, so not timed on Pollux's T4s)"
    note = (f"{note}; Pollux recipe: {len(raw)} of {pool} jobs submitted {start:g}:00-{start + period_h:g}:00 "
            f"(any day), application by GPU time, GPUs as Pollux, work {work}")
    return jobs, note


def pollux_period(sc: Scenario, rng: np.random.Generator) -> tuple[float | None, float]:
    """The hours of the day Pollux's recipe samples from, by the scenario's ``window``: ``busiest`` (or none)
    Pollux's own 8 hours (from 2:00 on Philly, the busiest 8-hour range of the day elsewhere), ``random`` 8
    hours from a random whole hour, ``hours:A-B`` those hours, ``all`` the whole day. Returns the start hour
    (None: the busiest) and the length in hours."""
    kind, start_h, end_h = parse_window(sc.window or "busiest")
    if kind == "busiest":
        return (2.0 if sc.trace == "philly" else None), POLLUX_PERIOD_H
    if kind == "random":
        return float(rng.integers(0, 24)), POLLUX_PERIOD_H
    return start_h, end_h - start_h


def build_jobs(sc: Scenario, seed: int, catalog: Catalog) -> tuple[pd.DataFrame, str]:
    """The engine job table for scenario ``sc`` and ``seed`` (by its registered recipe), and a note naming the
    trace used."""
    try:
        make = RECIPES[sc.annotate]
    except KeyError:
        raise ValueError(f"scenario {sc.name!r}: unknown annotation {sc.annotate!r}; known: "
                         f"{', '.join(RECIPES)}") from None
    return make(sc, np.random.default_rng(seed), catalog)


from gpucluster_env.traces import gimbal_mix  # noqa: E402, F401  (registers the "gimbal" recipe)

