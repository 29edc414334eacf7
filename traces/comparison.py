"""Real versus synthetic statistics side by side (``gpucluster traces compare NAME``): GPU-count histogram,
duration quantiles, arrival rate. For Venus, whose per-job log is not public here, the real column is the
published aggregates (Helios summary) instead of a fitted table."""

from __future__ import annotations

import numpy as np
import pandas as pd
from gpucluster_env.traces import profiles

GPU_BINS = (1, 2, 4, 8, 16, 32)
DURATION_QUANTILES = (0.25, 0.5, 0.75, 0.9, 0.99)
REAL_TRACE_OF = {"philly": "philly", "alibaba": "alibaba-gpu", "venus": "venus"}


def trace_stats(df: pd.DataFrame) -> dict[str, float]:
    """Summary statistics of a normalized trace over the jobs with a positive duration, or over every job when
    none has one (Gavel traces give steps, not times: the duration statistics are then NaN)."""
    if len(df) == 0:
        raise ValueError(f"{df.attrs.get('source', 'trace')}: no jobs to summarize")
    timed = (df["duration_s"] > 0).to_numpy()
    d = df[timed] if timed.any() else df
    g = d["num_gpus"].to_numpy()
    dur = d["duration_s"].to_numpy(float)
    dur = dur[np.isfinite(dur) & (dur > 0)]
    span_h = max(float(d["submit_s"].max() - d["submit_s"].min()) / 3600.0, 1e-9)
    out: dict[str, float] = {"jobs": float(len(d))}
    for b in GPU_BINS:
        out[f"gpus={b}"] = float(np.mean(g == b))
    out[f"gpus>{GPU_BINS[-1]}"] = float(np.mean(g > GPU_BINS[-1]))
    out["gpus other"] = 1.0 - sum(out[k] for k in out if k.startswith("gpus"))
    out["mean gpus"] = float(g.mean())
    out["jobs with a duration"] = float(len(dur))
    for q in DURATION_QUANTILES:
        out[f"duration p{int(q * 100)} (s)"] = float(np.quantile(dur, q)) if len(dur) else float("nan")
    out["mean duration (s)"] = float(dur.mean()) if len(dur) else float("nan")
    out["arrivals per hour"] = len(d) / span_h
    return out


def venus_published() -> dict[str, float]:
    """The Venus aggregates the synthetic generator is fitted to (helios_cluster_summary.csv)."""
    return {
        "jobs": float(profiles.VENUS_GPU_JOBS),
        "gpus=1": float("nan"),
        "mean gpus": profiles.VENUS_MEAN_GPUS,
        "duration p50 (s)": profiles.VENUS_MEDIAN_RUN_S,
        "mean duration (s)": profiles.VENUS_MEAN_RUN_S,
        "arrivals per hour": profiles.VENUS_GPU_JOBS / (profiles.VENUS_DAYS * 24),
    }


def compare(
    name: str, n: int = 20000, seed: int = 0, file: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, str]:
    """A table (rows: statistics; columns: real, synthetic) and a note naming the real source. With ``file``
    (a normalized trace loaded from a user's file), the real column is that file's statistics and ``name``
    only picks the synthetic profile it stands beside."""
    from gpucluster_env.traces.registry import load_trace
    from gpucluster_env.traces.synthetic import generate

    profile = profiles.get_profile(name)
    syn = trace_stats(generate(profile, n, np.random.default_rng(seed)))
    real_name = REAL_TRACE_OF[name]
    loaded = (file, None) if file is not None else load_trace(real_name)
    if loaded is not None:
        real, note = trace_stats(loaded[0]), f"real: {loaded[0].attrs['source']}"
    elif name == "venus":
        real, note = venus_published(), "real: Helios published aggregates (per-job log not found)"
    else:
        raise FileNotFoundError(
            f"real trace {real_name!r} not found; 'gpucluster traces fetch {real_name}' "
            "or set $GPUCLUSTER_DATA"
        )
    rows = list(syn)
    table = pd.DataFrame(
        {"real": [real.get(k, float("nan")) for k in rows], "synthetic": [syn[k] for k in rows]}, index=rows
    )
    return table, f"{note}; synthetic: {n} jobs, seed {seed}"
