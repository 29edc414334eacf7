"""Synthetic trace generators ``philly``, ``venus`` and ``alibaba``: arrivals, GPU counts and durations drawn
from distributions fitted to the real traces where we have them (Philly, Alibaba GPU 2023) and to published
aggregates where we do not (Venus: ``helios_cluster_summary.csv``, ``venus_cluster_gpu_number.csv``).

A :class:`TraceProfile` holds the fitted distributions: GPU-count probabilities, a log-duration quantile table
for single- and multi-GPU jobs (inverse-CDF sampling, linear in log space between quantiles), the mean arrival
rate with a 24-hour profile (arrivals are a Poisson process with that periodic rate, by time rescaling),
and the
VC / status / fractional-GPU mixes. :func:`fit_profile` fits one to any normalized trace; the constants
below were
produced by it on the real files (``gpucluster traces compare NAME`` shows the two side by side).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

QUANTILE_PROBS = (0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999, 1.0)
"""Probabilities at which a profile stores log10 durations."""


@dataclass(frozen=True)
class TraceProfile:
    """Fitted distributions of one trace (see the module docstring)."""

    name: str
    gpu_values: tuple[int, ...]
    gpu_probs: tuple[float, ...]
    log10_dur_single: tuple[float, ...]  # log10 seconds at QUANTILE_PROBS, 1-GPU jobs
    log10_dur_multi: tuple[float, ...]  # same, jobs with more than one GPU
    rate_per_hour: float  # mean arrivals per hour
    hourly_profile: tuple[float, ...]  # 24 multipliers of the mean rate (mean 1), by hour of day
    weekly_profile: tuple[float, ...] = ()  # 7 multipliers (mean 1), Monday first; day 0 is a Monday
    vc_names: tuple[str, ...] = ()
    vc_probs: tuple[float, ...] = ()
    status_names: tuple[str, ...] = ()
    status_probs: tuple[float, ...] = ()
    milli_values: tuple[int, ...] = ()  # gpu_milli of 1-GPU jobs (1000 = whole GPU), alibaba only
    milli_probs: tuple[float, ...] = ()
    source: str = ""
    extra: dict[str, float] = field(default_factory=dict)


def _quantiles(log_d: np.ndarray) -> tuple[float, ...]:
    if len(log_d) == 0:
        return tuple(0.0 for _ in QUANTILE_PROBS)
    return tuple(round(float(x), 4) for x in np.quantile(log_d, QUANTILE_PROBS))


def _pmf(values: pd.Series, top: int | None = None) -> tuple[tuple, tuple[float, ...]]:
    vc = values.value_counts(normalize=True)
    if top is not None:
        vc = vc.head(top) / vc.head(top).sum()
    vc = vc.sort_index() if top is None else vc
    return tuple(vc.index.tolist()), tuple(round(float(p), 6) for p in vc.to_numpy())


def fit_profile(df: pd.DataFrame, name: str, source: str = "") -> TraceProfile:
    """Fit a :class:`TraceProfile` to a normalized trace (jobs with a positive duration)."""
    d = df[df["duration_s"] > 0]
    g = d["num_gpus"].to_numpy()
    log_d = np.log10(d["duration_s"].to_numpy(float))
    gv, gp = _pmf(d["num_gpus"].astype(int))
    span_h = max((d["submit_s"].max() - d["submit_s"].min()) / 3600.0, 1e-9)
    start_hour = float(df.attrs.get("start_hour", 0.0))
    hour = ((d["submit_s"].to_numpy() / 3600.0 + start_hour) % 24).astype(int)
    counts = np.bincount(hour, minlength=24).astype(float)
    prof = counts / counts.mean() if counts.mean() > 0 else np.ones(24)
    kw: dict = {}
    if "vc" in d and (d["vc"] != "").any():
        kw["vc_names"], kw["vc_probs"] = _pmf(d["vc"], top=30)
    if "status" in d and (d["status"] != "").any():
        kw["status_names"], kw["status_probs"] = _pmf(d["status"])
    if "gpu_milli" in d:
        one = d[d["num_gpus"] == 1]
        kw["milli_values"], kw["milli_probs"] = _pmf(one["gpu_milli"].astype(int), top=20)
    return TraceProfile(
        name=name,
        gpu_values=tuple(int(v) for v in gv),
        gpu_probs=gp,
        log10_dur_single=_quantiles(log_d[g == 1]),
        log10_dur_multi=_quantiles(log_d[g > 1]),
        rate_per_hour=round(float(len(d) / span_h), 4),
        hourly_profile=tuple(round(float(x), 4) for x in prof),
        source=source,
        **kw,
    )


def _arrivals(profile: TraceProfile, n: int, rng: np.random.Generator, load: float = 1.0) -> np.ndarray:
    """``n`` arrival times (s, from midnight of day 0) of a Poisson process with the profile's periodic
    rate: the hour-of-day profile, times the day-of-week profile when the profile has one (a 168-hour period,
    day 0 a Monday)."""
    mult = np.asarray(profile.hourly_profile, float)
    mult = mult / mult.mean()
    per_hour = profile.rate_per_hour * load * mult  # expected arrivals in each hour of the day
    if profile.weekly_profile:
        week = np.asarray(profile.weekly_profile, float)
        per_hour = np.tile(per_hour, 7) * np.repeat(week / week.mean(), 24)  # each hour of the week
    period = len(per_hour)
    cum = np.concatenate([[0.0], np.cumsum(per_hour)])  # Lambda at hour boundaries within one period
    e = np.cumsum(rng.exponential(1.0, n))  # unit-rate arrivals in Lambda space
    cycle, rem = np.divmod(e, cum[-1])
    h = np.clip(np.searchsorted(cum, rem, side="right") - 1, 0, period - 1)
    frac = (rem - cum[h]) / np.where(per_hour[h] > 0, per_hour[h], 1.0)
    return (cycle * period + h + frac) * 3600.0


def _durations(q: tuple[float, ...], u: np.ndarray) -> np.ndarray:
    return 10.0 ** np.interp(u, QUANTILE_PROBS, q)


def generate(profile: TraceProfile, n: int, rng: np.random.Generator, load: float = 1.0) -> pd.DataFrame:
    """A normalized synthetic trace of ``n`` jobs drawn from ``profile`` (deterministic for a seeded
    ``rng``)."""
    if n <= 0:
        raise ValueError(f"synthetic {profile.name}: number of jobs must be positive, got {n}")
    submit = _arrivals(profile, n, rng, load)
    gpus = rng.choice(np.asarray(profile.gpu_values, np.int64), n, p=_norm(profile.gpu_probs))
    u = rng.random(n)
    dur = np.where(gpus == 1, _durations(profile.log10_dur_single, u), _durations(profile.log10_dur_multi, u))
    out = pd.DataFrame(
        {
            "job_id": [f"{profile.name}-syn-{i:05d}" for i in range(n)],
            "submit_s": np.round(submit - submit[0], 1),
            "num_gpus": gpus,
            "duration_s": np.maximum(np.round(dur, 1), 1.0),
            "vc": rng.choice(np.asarray(profile.vc_names, object), n, p=_norm(profile.vc_probs))
            if profile.vc_names
            else "",
            "user": "",
            "status": rng.choice(np.asarray(profile.status_names, object), n, p=_norm(profile.status_probs))
            if profile.status_names
            else "",
        }
    )
    if profile.milli_values:
        milli = rng.choice(np.asarray(profile.milli_values, np.int64), n, p=_norm(profile.milli_probs))
        out["gpu_milli"] = np.where(gpus == 1, milli, 1000)
        out["gpu_spec"] = ""
    out.attrs["source"] = f"synthetic {profile.name}"
    out.attrs["start_hour"] = float(submit[0] / 3600.0 % 24)
    out.attrs["start_weekday"] = int(submit[0] // 86400 % 7)
    return out


def _norm(p: tuple[float, ...]) -> np.ndarray:
    a = np.asarray(p, float)
    return a / a.sum()
