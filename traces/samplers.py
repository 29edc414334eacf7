"""Samplers: pick a scenario's jobs from a normalized trace as the papers did, and fit them to a cluster.

Windows (the ``window`` of a scenario, or ``gpucluster traces sample --window``):

- ``busiest``: Castor / SJF-BSBF "240 jobs from the busiest period", following Pollux (whose workloads span
  8 hours, ``pollux_workloads/*.csv``): the 8-hour window with the most arrivals, from which ``n`` are drawn
  uniformly without replacement; times are shifted so the first is 0. When that window holds fewer than ``n``
  jobs (a small synthetic trace), the shortest stretch holding ``n`` consecutive arrivals is used instead.
- ``random``: ``n`` consecutive arrivals starting at a uniformly random job (Gimbal's 150 / 300 jobs); with a
  ``max_span_s``, a uniformly random one of the windows whose arrivals span at most that (a start is drawn as
  without the bound and drawn again while its window spans more, so a seed whose window fits keeps it).
- ``hours:A-B``: Hadar "480 jobs from the busiest hour range (hours 3-10)": jobs submitted between A:00 and
B:00
  on the trace's clock (hour of day, every day), ``n`` drawn uniformly. Hadar then releases them all at t = 0.
- ``all``: the first ``n`` arrivals (all jobs when ``n`` is at least the trace length).

Jobs without a positive, finite duration (or, for Gavel traces, iterations) cannot be annotated and are
dropped first (counted).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from gpucluster_env.traces.trace_options import parse_window

BUSIEST_PERIOD_S = 8 * 3600.0


@dataclass
class SampleReport:
    """What a sampler did: the window, how many jobs came in and out, and every job dropped or changed."""

    window: str
    jobs_in: int = 0
    jobs_out: int = 0
    span_s: float = 0.0
    dropped: dict[str, int] = field(default_factory=dict)
    capped: int = 0
    downscale: int = 1
    asked: int = 0
    """The jobs asked for (0: not recorded); the summary says when the window gave fewer."""

    def summary(self) -> str:
        parts = [f"{self.jobs_out} of {self.jobs_in} jobs, window {self.window}"]
        if self.jobs_out < self.asked:
            parts.append(f"fewer than the {self.asked} asked: the trace has no more")
        if self.span_s:
            parts.append(f"spanning {self.span_s / 3600:.1f} h")
        if self.downscale > 1:
            parts.append(f"GPU counts divided by {self.downscale}")
        for why, n in self.dropped.items():
            if n:
                parts.append(f"{n} dropped ({why})")
        if self.capped:
            parts.append(f"{self.capped} capped to the cluster size")
        return ", ".join(parts)


def usable_jobs(df: pd.DataFrame, report: SampleReport) -> pd.DataFrame:
    """The jobs with work to run: a positive, finite duration, or (Gavel traces, which give steps, not times)
    a positive, finite number of iterations."""
    d = df["duration_s"].to_numpy(float)
    ok = np.isfinite(d) & (d > 0)
    if "iterations" in df.columns:
        it = df["iterations"].to_numpy(float)
        ok |= np.isfinite(it) & (it > 0)
    report.dropped["no positive duration"] = int((~ok).sum())
    return df[ok].sort_values("submit_s", kind="stable").reset_index(drop=True)


def _take(df: pd.DataFrame, idx: np.ndarray) -> pd.DataFrame:
    out = df.iloc[np.sort(idx)].copy()
    if len(out):
        out["submit_s"] = out["submit_s"] - out["submit_s"].min()
    return out.reset_index(drop=True)


def busiest_window(
    df: pd.DataFrame, n: int, rng: np.random.Generator, period_s: float = BUSIEST_PERIOD_S
) -> pd.DataFrame:
    """``n`` jobs drawn from the ``period_s`` window with the most arrivals (see the module docstring)."""
    t = df["submit_s"].to_numpy(float)
    ends = np.searchsorted(t, t + period_s, side="left")
    counts = ends - np.arange(len(t))
    start = int(np.argmax(counts))
    pool = int(counts[start])
    if pool < n:  # too few in any window of that length: the densest n consecutive arrivals
        pool = min(n, len(t))
        spans = t[pool - 1 :] - t[: len(t) - pool + 1]
        start = int(np.argmin(spans))
    idx = start + rng.choice(pool, size=min(n, pool), replace=False)
    return _take(df, idx)


def random_window(df: pd.DataFrame, n: int, rng: np.random.Generator, max_span_s: float | None = None
                  ) -> pd.DataFrame:
    """``n`` consecutive arrivals from a uniformly random starting job, among those whose ``n`` arrivals span at
    most ``max_span_s`` when given (a ValueError naming the narrowest span when none does)."""
    n = min(n, len(df))
    starts = len(df) - n + 1
    start = int(rng.integers(0, starts))
    if max_span_s is not None:
        t = df["submit_s"].to_numpy(float)
        fits = t[n - 1:] - t[:starts] <= max_span_s
        if not fits.any():
            narrowest = float((t[n - 1:] - t[:starts]).min())
            raise ValueError(f"{df.attrs.get('source', 'trace')}: no {n} consecutive arrivals span at most "
                             f"{max_span_s / 3600:g} h (the narrowest spans {narrowest / 3600:.1f} h)")
        while not fits[start]:  # rejection: uniform over the windows that fit
            start = int(rng.integers(0, starts))
    return _take(df, np.arange(start, start + n))


def hours_window(
    df: pd.DataFrame, start_h: float, end_h: float, n: int, rng: np.random.Generator
) -> pd.DataFrame:
    """``n`` jobs drawn uniformly from those submitted between ``start_h`` and ``end_h`` o'clock (trace
    clock)."""
    hour = (df["submit_s"].to_numpy(float) / 3600.0 + float(df.attrs.get("start_hour", 0.0))) % 24.0
    cand = np.flatnonzero((hour >= start_h) & (hour < end_h))
    if len(cand) == 0:
        raise ValueError(
            f"{df.attrs.get('source', 'trace')}: no job submitted between {start_h:g}:00 and {end_h:g}:00"
        )
    return _take(df, rng.choice(cand, size=min(n, len(cand)), replace=False))


def sample(
    df: pd.DataFrame, n: int, window: str, rng: np.random.Generator, max_span_s: float | None = None
) -> tuple[pd.DataFrame, SampleReport]:
    """``n`` jobs of ``df`` by ``window`` (``busiest``, ``random``, ``all``, ``hours:A-B``) and the report;
    ``max_span_s`` bounds a ``random`` window's arrival span (:func:`random_window`)."""
    if n <= 0:
        raise ValueError(f"number of jobs must be positive, got {n}")
    report = SampleReport(window, asked=n)
    usable = usable_jobs(df, report)
    report.jobs_in = len(df)
    if len(usable) == 0:
        raise ValueError(f"{df.attrs.get('source', 'trace')}: no job with a positive duration")
    kind, start_h, end_h = parse_window(window)
    if kind == "busiest":
        out = busiest_window(usable, n, rng)
    elif kind == "random":
        out = random_window(usable, n, rng, max_span_s)
    elif kind == "all":
        out = _take(usable, np.arange(min(n, len(usable))))
    else:
        out = hours_window(usable, start_h, end_h, n, rng)
    out.attrs = dict(df.attrs)
    report.jobs_out = len(out)
    report.span_s = float(out["submit_s"].max()) if len(out) else 0.0
    return out, report


def downscale_gpus(df: pd.DataFrame, factor: int, report: SampleReport | None = None) -> pd.DataFrame:
    """GPU counts divided by ``factor`` (rounded up, at least 1), as Castor scales a trace to a small
    testbed."""
    if not (isinstance(factor, int | np.integer) and factor >= 1):
        raise ValueError(f"downscale factor must be an integer >= 1, got {factor!r}")
    out = df.copy()
    out["num_gpus"] = np.maximum(1, -(-out["num_gpus"].to_numpy(np.int64) // factor))
    if report is not None:
        report.downscale = factor
    return out


def fit_to_cluster(
    df: pd.DataFrame, max_gpus: int, policy: str = "cap", report: SampleReport | None = None
) -> pd.DataFrame:
    """Jobs asking for more than ``max_gpus``: ``cap`` them at ``max_gpus`` or ``drop`` them; counted in
    ``report``."""
    if not (isinstance(max_gpus, int | np.integer) and max_gpus >= 1):
        raise ValueError(f"the cluster size (most GPUs a job may ask for) must be an integer >= 1, got {max_gpus!r}")
    big = df["num_gpus"].to_numpy(np.int64) > max_gpus
    out = df.copy()
    if policy == "cap":
        out.loc[big, "num_gpus"] = max_gpus
        if report is not None:
            report.capped += int(big.sum())
    elif policy == "drop":
        out = out[~big].reset_index(drop=True)
        if report is not None:
            report.dropped[f"more than {max_gpus} GPUs"] = int(big.sum())
            report.jobs_out = len(out)
    else:
        raise ValueError(f"unknown oversize policy {policy!r}; use 'cap' or 'drop'")
    out.attrs = dict(df.attrs)
    return out
