"""Real versus synthetic statistics side by side (``gpucluster traces compare NAME``): GPU-count histogram,
duration quantiles, arrival rate and the shape of arrivals over the day and the week.

For Venus, whose whole per-job log is not public here, the ``real`` column is the whole cluster as far as it is
known: the 10-minute arrivals of the full log (Lucid's file, non-commercial: read here, never shipped) and
Helios's published aggregates; a ``real 2 VCs`` column adds the real per-job September slice of two VCs when it
is found (:mod:`.helios_slice`). See :mod:`.venus_fit` for what the generator is fitted to."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from gpucluster_env.traces import profiles

GPU_BINS = (1, 2, 4, 8, 16, 32)
DURATION_QUANTILES = (0.25, 0.5, 0.75, 0.9, 0.99)
REAL_TRACE_OF = {"philly": "philly", "alibaba": "alibaba-gpu", "venus": "venus"}
VENUS_SLICE = "venus-2vc"
WEEKEND = (5, 6)
"""Saturday and Sunday (Monday = 0)."""


def gpu_stats(values: np.ndarray, probs: np.ndarray) -> dict[str, float]:
    """The GPU-count rows (share of jobs per bin, other counts, mean) of a pmf over ``values``."""
    out = {f"gpus={b}": float(probs[values == b].sum()) for b in GPU_BINS}
    out[f"gpus>{GPU_BINS[-1]}"] = float(probs[values > GPU_BINS[-1]].sum())
    out["gpus other"] = 1.0 - sum(out.values())
    out["mean gpus"] = float((values * probs).sum())
    return out


def shape_stats(hourly: np.ndarray, weekly: np.ndarray | None, hourly_cv: float) -> dict[str, float]:
    """Arrival-shape rows from the mean arrivals per hour of the day (24) and per day of the week (7, Monday
    first; None when the trace does not span a week): the night's share (0:00-8:00), the busiest and quietest
    hour as multiples of the mean, weekend over weekday rate, and the coefficient of variation of the jobs per
    clock hour (burstiness: a Poisson process at the mean rate has ``1/sqrt(rate)``)."""
    h = np.asarray(hourly, float) / np.mean(hourly)
    out = {
        "night share 0-8 h": float(h[:8].sum() / h.sum()),
        "busiest hour / mean": float(h.max()),
        "quietest hour / mean": float(h.min()),
        "weekend / weekday": float("nan"),
        "jobs per hour, CV": hourly_cv,
    }
    if weekly is not None:
        w = np.asarray(weekly, float)
        out["weekend / weekday"] = float(w[list(WEEKEND)].mean() / np.delete(w, WEEKEND).mean())
    return out


def arrival_shape(df: pd.DataFrame) -> dict[str, float]:
    """:func:`shape_stats` of a normalized trace, counted per clock hour over its span (hours without a job
    count as 0; the day of week from ``attrs["start_weekday"]`` when the trace has one)."""
    clock_h = np.floor(df["submit_s"].to_numpy(float) / 3600.0 + float(df.attrs.get("start_hour", 0.0)))
    first = int(clock_h.min())
    per_hour = np.bincount((clock_h - first).astype(np.int64)).astype(float)
    hours = np.arange(first, first + len(per_hour))
    hourly = np.bincount(hours % 24, weights=per_hour, minlength=24) / np.maximum(
        np.bincount(hours % 24, minlength=24), 1)
    weekly = None
    if "start_weekday" in df.attrs:
        wd = (int(df.attrs["start_weekday"]) + hours // 24) % 7
        seen = np.bincount(wd, minlength=7)
        if (seen > 0).all():
            weekly = np.bincount(wd, weights=per_hour, minlength=7) / seen
    cv = float(per_hour.std() / per_hour.mean()) if len(per_hour) > 1 else float("nan")
    return shape_stats(hourly, weekly, cv)


def trace_stats(df: pd.DataFrame) -> dict[str, float]:
    """Summary statistics of a normalized trace over the jobs with a positive duration, or over every job when
    none has one (Gavel traces give steps, not times: the duration statistics are then NaN)."""
    if len(df) == 0:
        raise ValueError(f"{df.attrs.get('source', 'trace')}: no jobs to summarize")
    timed = (df["duration_s"] > 0).to_numpy()
    d = df[timed] if timed.any() else df
    d.attrs = dict(df.attrs)
    g = d["num_gpus"].to_numpy()
    dur = d["duration_s"].to_numpy(float)
    dur = dur[np.isfinite(dur) & (dur > 0)]
    span_h = max(float(d["submit_s"].max() - d["submit_s"].min()) / 3600.0, 1e-9)
    values, counts = np.unique(g, return_counts=True)
    out: dict[str, float] = {"jobs": float(len(d)), **gpu_stats(values, counts / counts.sum())}
    out["jobs with a duration"] = float(len(dur))
    for q in DURATION_QUANTILES:
        out[f"duration p{int(q * 100)} (s)"] = float(np.quantile(dur, q)) if len(dur) else float("nan")
    out["mean duration (s)"] = float(dur.mean()) if len(dur) else float("nan")
    out["arrivals per hour"] = len(d) / span_h
    out.update(arrival_shape(d))
    return out


def venus_published() -> dict[str, float]:
    """The whole Venus cluster's published aggregates (Helios SC'21, ``helios_cluster_summary.csv``)."""
    return {
        "jobs": float(profiles.VENUS_GPU_JOBS),
        "mean gpus": profiles.VENUS_MEAN_GPUS,
        "duration p50 (s)": profiles.VENUS_MEDIAN_RUN_S,
        "mean duration (s)": profiles.VENUS_MEAN_RUN_S,
        "arrivals per hour": profiles.VENUS_GPU_JOBS / (profiles.VENUS_DAYS * 24),
    }


def venus_cluster() -> tuple[dict[str, float], str]:
    """The ``real`` column of Venus: the published aggregates, and where Lucid's 10-minute arrivals are found,
    the arrival rate and shape and the GPU counts of the single-job bins from them; and a note naming both."""
    from gpucluster_env.traces.registry import data_roots
    from gpucluster_env.traces.venus_fit import ARRIVALS_RELPATH, cluster_stats, load_cluster_arrivals

    out = venus_published()
    path = next((r / ARRIVALS_RELPATH for r in data_roots() if (r / ARRIVALS_RELPATH).is_file()), None)
    if path is None:
        return out, "real: Helios published aggregates (per-job log and 10-minute arrivals not found)"
    st = cluster_stats(load_cluster_arrivals(path))
    pmf: dict[int, float] = st["single_pmf"]  # type: ignore[assignment]
    out.update(gpu_stats(np.array(list(pmf)), np.array(list(pmf.values()))))
    out["mean gpus"] = float(st["mean_gpus"])  # type: ignore[arg-type]
    out["arrivals per hour"] = float(st["rate_per_hour"])  # type: ignore[arg-type]
    out.update(shape_stats(st["hourly"], st["weekly"], float(st["hourly_cv"])))  # type: ignore[arg-type]
    note = (f"real: whole Venus cluster, Helios published aggregates and {Path(path).name} (Lucid, S-Lab "
            f"License 1.0, GPU shares from the {st['single_jobs']:,} ten-minute bins holding one GPU job)")
    return out, note


def compare(
    name: str, n: int = 20000, seed: int = 0, file: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, str]:
    """A table (rows: statistics; columns: real, [real 2 VCs,] synthetic) and a note naming the real sources.
    With ``file`` (a normalized trace loaded from a user's file), the real column is that file's statistics
    and ``name`` only picks the synthetic profile it stands beside. A statistic a source does not give is NaN."""
    from gpucluster_env.traces.registry import load_trace
    from gpucluster_env.traces.synthetic import generate

    profile = profiles.get_profile(name)
    syn = trace_stats(generate(profile, n, np.random.default_rng(seed)))
    real_name = REAL_TRACE_OF[name]
    loaded = (file, None) if file is not None else load_trace(real_name)
    columns: dict[str, dict[str, float]] = {}
    if loaded is not None:
        columns["real"], notes = trace_stats(loaded[0]), [f"real: {loaded[0].attrs['source']}"]
    elif name == "venus":
        columns["real"], cluster_note = venus_cluster()
        notes = [cluster_note]
        sliced = load_trace(VENUS_SLICE)
        if sliced is not None:
            columns["real 2 VCs"] = trace_stats(sliced[0])
            notes.append(f"real 2 VCs: {sliced[0].attrs['source']} (HeliosData, CC-BY-4.0)")
    else:
        raise FileNotFoundError(
            f"real trace {real_name!r} not found; 'gpucluster traces fetch {real_name}' "
            "or set $GPUCLUSTER_DATA"
        )
    columns["synthetic"] = syn
    rows = list(syn)
    table = pd.DataFrame({c: [s.get(k, float("nan")) for k in rows] for c, s in columns.items()}, index=rows)
    return table, "; ".join([*notes, f"synthetic: {n} jobs, seed {seed}"])
