"""Where a scenario's raw jobs come from: the trace sources by name (:data:`SOURCES`, the scenario's ``trace``)
and the registries a new source or annotation recipe is added to with one decorator (:func:`source`,
:func:`recipe`); which trace file is read (the real one from a data root, else the package's copy of it, else
the synthetic stand-in, or as ``$GPUCLUSTER_TRACE_SOURCE`` says), its identity, and the bounds sampling puts on
it. The recipes that turn raw jobs into the engine's job table are in :mod:`.scenario_jobs`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from gpucluster_env.traces.annotate import mix_raw
from gpucluster_env.traces.gavel_synth import DEFAULT_RATE_PER_HOUR, gavel_raw
from gpucluster_env.traces.registry import TraceSpec, get_trace, is_shipped, load_file, load_trace, locate
from gpucluster_env.traces.samplers import fit_to_cluster, sample
from gpucluster_env.traces.shipped import load_embedded
from gpucluster_env.traces.trace_options import RECIPE_NAMES, TRACE_NAMES

from gpucluster_env.catalog import Catalog
from gpucluster_env.settings import SettingError

if TYPE_CHECKING:
    from gpucluster_env.scenario_spec import Scenario

SCENARIO_TRACES: dict[str, tuple[tuple[str, ...], str | None]] = {
    "philly": (("philly",), "philly"),
    "venus": (("venus", "venus-jobs"), "venus"),
    "venus-2vc": (("venus-2vc",), None),
    "alibaba": (("alibaba", "alibaba-pai-sample"), "alibaba"),
    "alibaba-gpu": (("alibaba-gpu",), "alibaba"),
}
"""Scenario trace -> (registered real traces, in order of preference, synthetic stand-in or None).

The first candidate found in a data root is read, else the first the package ships a copy of
(:func:`~gpucluster_env.traces.registry.locate`): every named trace runs real jobs on a fresh machine. The
synthetic stand-in runs only when asked for (``$GPUCLUSTER_TRACE_SOURCE=synthetic``) or when no candidate is
found nor shipped.

``venus`` is the whole Venus cluster: the full per-job ``cluster_log.csv`` when a data root has it, else every
Venus GPU job of ``helios_venus_gpu_jobs.csv`` (shipped; run times capped at 48 h), which is what Castor and
Lucid sample. ``venus-2vc`` is the real two-VC September slice (:mod:`.helios_slice`), opt-in (``--option
trace=venus-2vc``) and with no synthetic stand-in: its two VCs are not the cluster (mean 47 GPUs per job against
the cluster's 6.7, 35% of jobs above 32 GPUs against 0.5%; docs/traces.md). ``alibaba`` is PAI 2020: the full
job and task tables when found, else the 6,000-job window of the official simulator sample (shipped).
``alibaba-gpu`` is the 2023 GPU-sharing cluster (openb)."""


def real_trace_name(trace: str) -> str:
    """The registered real trace a scenario ``trace`` reads: the first of its candidates whose files are in a
    data root, else the first the package ships (the first candidate when there is neither, for the messages
    that say what is missing)."""
    names = SCENARIO_TRACES[trace][0]
    found = {n: p for n in names if (p := locate(n)) is not None}
    in_root = [n for n, p in found.items() if not is_shipped(n, p)]
    return (in_root or list(found) or [names[0]])[0]


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
        raise ValueError(f"trace source {trace!r} has no loader; known: {', '.join(SOURCES)}")
    synthetic = SCENARIO_TRACES[trace][1]
    real_name = real_trace_name(trace)
    mode = source_mode()
    if mode == "synthetic" and synthetic is None:
        raise ValueError(f"trace {real_name!r} has no synthetic stand-in ($GPUCLUSTER_TRACE_SOURCE=synthetic)")
    loaded = None if mode == "synthetic" else load_trace(real_name)
    if loaded is not None:
        df, _ = loaded
        path = locate(real_name)
        if path is not None and is_shipped(real_name, path):
            return df, (f"real {real_name} trace (the package's copy of {get_trace(real_name).primary}, "
                        f"{path.name})")
        return df, f"real {real_name} trace ({df.attrs['source']})"
    if mode == "real" or synthetic is None:
        raise FileNotFoundError(
            f"real trace {real_name!r} not found; run 'gpucluster traces fetch {real_name}' "
            "or set $GPUCLUSTER_DATA"
        )
    return (
        load_embedded(synthetic),
        f"synthetic {synthetic} trace (shipped, fitted to the real {SCENARIO_TRACES[trace][0][0]} "
        "statistics; real file not found)",
    )


def source_mode() -> str:
    """``$GPUCLUSTER_TRACE_SOURCE``: ``auto`` (the default: real file when found), ``real`` or ``synthetic``."""
    mode = os.environ.get("GPUCLUSTER_TRACE_SOURCE", "auto")
    if mode not in ("auto", "real", "synthetic"):
        raise ValueError(f"$GPUCLUSTER_TRACE_SOURCE must be auto, real or synthetic, got {mode!r}")
    return mode


def trace_identity(sc: Scenario) -> str:
    """What fixes the trace behind ``sc``'s episodes, without reading it into a table: ``synthetic`` (the
    shipped stand-in), ``real:HASH`` (the real file found here), ``file:HASH`` (the scenario's own trace
    file), HASH being a digest of the file's bytes; empty for traces generated by the package itself
    (``tiny``, ``mix``, ``gavel``). Two episodes with different identities ran on different jobs."""
    if sc.trace == "file":
        assert sc.trace_file is not None
        path = Path(sc.trace_file)
        if not path.exists():
            raise FileNotFoundError(f"scenario {sc.name!r}: trace file {sc.trace_file} not found")
        return f"file:{content_digest([path])}"
    if sc.trace not in SCENARIO_TRACES:
        return ""
    real_name = real_trace_name(sc.trace)
    synthetic = SCENARIO_TRACES[sc.trace][1]
    mode = source_mode()
    if mode == "synthetic" and synthetic is None:
        raise ValueError(f"trace {real_name!r} has no synthetic stand-in ($GPUCLUSTER_TRACE_SOURCE=synthetic)")
    path = None if mode == "synthetic" else locate(real_name)
    if path is not None:
        spec = get_trace(real_name)
        if is_shipped(real_name, path):  # the same jobs as the source file: the same identity
            return f"real:{pinned_digest(spec)}"
        root = path.parents[len(Path(spec.primary).parts) - 1]  # the data root it was found in
        return f"real:{content_digest([root / f.relpath for f in spec.files])}"
    if mode == "real" or synthetic is None:
        raise FileNotFoundError(f"real trace {real_name!r} not found; run 'gpucluster traces fetch {real_name}' "
                                "or set $GPUCLUSTER_DATA")
    return "synthetic"


def content_digest(paths: list[Path]) -> str:
    """A short digest of the bytes of ``paths`` (folders: every file under them, by relative path), cached
    per file version (path, size, modification time)."""
    h = hashlib.sha256()
    for p in paths:
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            st = f.stat()
            h.update(f"{f.relative_to(p) if p.is_dir() else f.name}\0".encode())
            h.update(_file_digest(str(f), st.st_size, st.st_mtime_ns).encode())
    return h.hexdigest()[:12]


def pinned_digest(spec: TraceSpec) -> str:
    """:func:`content_digest` of a single-file trace computed from its pinned sha256 instead of its bytes: the
    digest of the source file, whether it was read from a data root or from the package's copy."""
    assert len(spec.files) == 1 and spec.files[0].sha256 is not None
    h = hashlib.sha256()
    h.update(f"{Path(spec.files[0].relpath).name}\0".encode())
    h.update(spec.files[0].sha256.encode())
    return h.hexdigest()[:12]


@lru_cache(maxsize=256)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def full_trace(sc: Scenario) -> tuple[pd.DataFrame, str]:
    """The whole normalized trace a scenario samples from: its ``trace_file`` or its named trace."""
    if sc.trace == "file":
        assert sc.trace_file is not None
        # by absolute path: the note (a record's header) is the same however the path was spelled (abspath, not
        # resolve: a pipe /dev/fd/N must stay itself; replay.recorder names the file the same way)
        df, report = load_file(os.path.abspath(sc.trace_file), sc.trace_format, columns=sc.trace_columns)
        return df, f"trace file {report.summary()}"
    return trace_source(sc.trace)


Source = Callable[["Scenario", np.random.Generator], tuple[pd.DataFrame, str, "np.ndarray | None"]]
Recipe = Callable[["Scenario", np.random.Generator, Catalog], tuple[pd.DataFrame, str]]
SOURCES: dict[str, Source] = {}
"""Scenario ``trace`` -> the raw jobs (submit, GPUs, duration), a note, and their models when the source
fixes them (HadarE mixes), else None."""
RECIPES: dict[str, Recipe] = {}
"""Scenario ``annotate`` -> the recipe making the engine's job table (see :func:`build_jobs`)."""


def _register(table: dict, names: tuple[str, ...]) -> Callable:
    def add(fn: Callable) -> Callable:
        for n in names:
            table[n] = fn
        return fn
    return add


def source(*names: str) -> Callable[[Source], Source]:
    """Register a trace source under ``names`` (also made valid values of a scenario's ``trace``)."""
    TRACE_NAMES.extend(n for n in names if n not in TRACE_NAMES)
    return _register(SOURCES, names)


def recipe(*names: str) -> Callable[[Recipe], Recipe]:
    """Register an annotation recipe under ``names`` (also made valid values of a scenario's ``annotate``)."""
    RECIPE_NAMES.extend(n for n in names if n not in RECIPE_NAMES)
    return _register(RECIPES, names)


@source("tiny")
def _tiny_source(sc: Scenario, rng: np.random.Generator) -> tuple[pd.DataFrame, str, None]:
    return _tiny_raw(sc, rng), "synthetic tiny trace (embedded generator)", None


@source("mix")
def _mix_source(sc: Scenario, rng: np.random.Generator) -> tuple[pd.DataFrame, str, np.ndarray]:
    raw = mix_raw(sc.mix or "M-5")
    return raw, f"HadarE workload mix {sc.mix or 'M-5'} ({len(raw)} jobs)", raw["model"].to_numpy(object)


@source(*SCENARIO_TRACES, "file")
def _sampled_source(sc: Scenario, rng: np.random.Generator) -> tuple[pd.DataFrame, str, None]:
    """``num_jobs`` jobs of the full trace by the scenario's window (a ``random`` one spanning at most
    ``max_span_h`` once ``load`` has scaled its arrivals), capped at the cluster size."""
    full, note = bounded_trace(sc)
    span = None if sc.max_span_h is None else sc.max_span_h * 3600.0 * sc.load  # on the trace's clock
    try:
        raw, rep = sample(full, sc.num_jobs, sc.window or "busiest", rng, span)
    except ValueError as e:
        if span is None:
            raise
        raise SettingError(f"scenario {sc.name!r}: option 'max_span_h' = {sc.max_span_h:g} at load "
                           f"{sc.load:g}: {e}") from None
    if span is not None:
        rep.window += f" (arrivals within {sc.max_span_h:g} h)"
    raw = fit_to_cluster(raw, sc.cluster.num_gpus, "cap", rep)
    return raw, f"{note}; {rep.summary()}", None


def bounded_trace(sc: Scenario) -> tuple[pd.DataFrame, str]:
    """The scenario's whole trace (:func:`full_trace`) within its ``max_gpu_hours`` and ``max_duration_h``, and
    the note saying how many jobs each bound left out; a bound that leaves no job is a one-line error naming
    the option (the one implementation of both bounds, for every recipe that samples a trace)."""
    full, note = full_trace(sc)
    for name, per_gpu, what in (("max_gpu_hours", True, "over {:g} GPU-hours"),
                                ("max_duration_h", False, "running over {:g} h")):
        limit = getattr(sc, name)
        if limit is None:
            continue
        kept, left_out = within_gpu_hours(full, limit, per_gpu=per_gpu)
        if len(kept) == 0 and left_out:
            raise SettingError(f"scenario {sc.name!r}: option {name!r} = {limit:g} leaves no job of the trace "
                               f"({left_out} jobs, all {what.format(limit)})")
        full = kept
        note += f"; {left_out} of {left_out + len(full)} jobs {what.format(limit)} left out"
    return full, note


def within_gpu_hours(df: pd.DataFrame, limit: float, per_gpu: bool = True) -> tuple[pd.DataFrame, int]:
    """The jobs of ``df`` whose GPUs x duration is at most ``limit`` GPU-hours, or with ``per_gpu=False`` whose
    duration is at most ``limit`` hours (jobs without a duration are kept: a Gavel trace gives steps), and how
    many were left out."""
    hours = df["duration_s"].to_numpy(float) / 3600.0
    if per_gpu:
        hours = hours * df["num_gpus"].to_numpy(float)
    over = hours > limit
    kept = df.loc[~over]
    kept.attrs = dict(df.attrs)
    return kept, int(over.sum())


def arrivals(sc: Scenario, raw: pd.DataFrame) -> pd.DataFrame:
    """``raw`` with the scenario's ``load`` (arrival times divided by it) and ``all_at_zero`` (every job
    submitted at 0) applied: the one place both options act, for every recipe that reads a trace."""
    if sc.load != 1.0:
        raw = raw.assign(submit_s=raw["submit_s"].to_numpy(float) / sc.load)
    if sc.all_at_zero:
        raw = raw.assign(submit_s=0.0)
    return raw



@source("gavel")
def _gavel_source(sc: Scenario, rng: np.random.Generator) -> tuple[pd.DataFrame, str, np.ndarray]:
    rate = DEFAULT_RATE_PER_HOUR * sc.load
    raw = gavel_raw(sc.num_jobs, rng, rate)
    note = f"synthetic Gavel-generated trace ({sc.num_jobs} jobs, {rate:g} jobs/h, Gavel's generator)"
    return raw, note, raw["model"].to_numpy(object)

