"""The Venus generator's fit: what the synthetic ``venus`` profile (:data:`~.profiles.VENUS`) is fitted to, and
the statistics ``gpucluster traces compare venus`` sets beside it.

Two real sources, neither shipped (only what is fitted from them is, in :mod:`.profiles`):

- ``traces/venus/lucid_venus_cluster_throughput_10min.csv``: the whole Venus cluster's job submissions per
  10 minutes, 2020-04-01..09-28 (26,064 bins, 125,214 GPU jobs), aggregated from the full per-job log by the Lucid
  authors (Hu et al., ASPLOS'23; S-Lab-System-Group/Lucid commit 63685a3). S-Lab License 1.0, non-commercial use
  only. Fitted from it: jobs per hour, the 24-hour and 7-day shape of arrivals, and the GPUs per job (the bins
  holding exactly one GPU job give that job's GPU count: 3,109 real jobs of the whole cluster).
- ``traces/venus/helios_venus_2vc_sept.csv``: 1,867 real jobs of two VCs (CC-BY-4.0, :mod:`.helios_slice`).
  Fitted from it: the shape of the run-time distribution (log-duration quantiles relative to the median), placed
  at the whole cluster's published median run time (Helios SC'21, ``helios_cluster_summary.csv``: 204 s).

Run ``python -m gpucluster_env.traces.venus_fit`` (with the files present) to print the fitted constants.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from gpucluster_env.traces.files import numbers, read_csv, timestamps
from gpucluster_env.traces.synthetic import QUANTILE_PROBS
from gpucluster_env.traces.tables import LoadReport, RowChecker, TraceFormatError

ARRIVALS_RELPATH = "traces/venus/lucid_venus_cluster_throughput_10min.csv"
SLICE_RELPATH = "traces/venus/helios_venus_2vc_sept.csv"
ARRIVAL_COLUMNS = ("time", "submit_gpu_job", "submit_gpu_num")
BIN_S = 600.0
BIG_JOB_GPUS = 16
"""GPU counts from here up form the tail that :func:`fit_gpu_pmf` reweights to the whole log's mean."""
NIGHT_HOURS = (0, 8)
"""The hours of the day whose share of arrivals summarizes the diurnal shape (0:00-8:00)."""


def load_cluster_arrivals(path: str | Path) -> pd.DataFrame:
    """The 10-minute arrival bins (``time``, ``jobs`` = GPU jobs submitted, ``gpus`` = their GPUs), checked row
    by row: a bad row is a one-line error naming the file, row and field."""
    report = LoadReport(str(path))
    df = read_csv(path, ARRIVAL_COLUMNS, report=report)
    chk = RowChecker.for_table(path, df, report, False)
    ts, bad = timestamps(df, "time")
    chk.check(bad.to_numpy() | ts.isna().to_numpy(), "time", "not a timestamp '%Y-%m-%d %H:%M:%S'", df["time"])
    out = {"time": ts}
    for col, name in (("submit_gpu_job", "jobs"), ("submit_gpu_num", "gpus")):
        v, bad = numbers(df, col)
        chk.count(v, df[col], bad | v.isna(), col)
        out[name] = v
    table = pd.DataFrame(out)
    table["jobs"] = table["jobs"].astype(np.int64)
    table["gpus"] = table["gpus"].astype(np.int64)
    short = (table["gpus"] < table["jobs"]).to_numpy()
    chk.check(short, "submit_gpu_num", "fewer GPUs than GPU jobs in the bin", df["submit_gpu_num"])
    if len(table) < 7 * 144:
        raise TraceFormatError(f"{path}: {len(table)} bins, fewer than one week of 10-minute bins")
    return table.sort_values("time", kind="stable").reset_index(drop=True)


def _shape(counts: np.ndarray, groups: np.ndarray, size: int) -> np.ndarray:
    """Mean count per group (hour of day, day of week) as multipliers of the overall mean (mean 1)."""
    per = np.bincount(groups, weights=counts, minlength=size) / np.maximum(np.bincount(groups, minlength=size), 1)
    return per / per.mean()


def cluster_stats(arr: pd.DataFrame) -> dict[str, object]:
    """What the 10-minute bins tell: ``rate_per_hour``, ``hourly`` (24 multipliers), ``weekly`` (7, Monday
    first), ``mean_gpus`` (all GPU jobs), ``single_pmf`` (GPU count -> share, over the bins with exactly one GPU
    job), ``single_jobs`` and ``hourly_cv`` (coefficient of variation of the jobs per clock hour)."""
    jobs = arr["jobs"].to_numpy(float)
    t = arr["time"]
    hours = len(arr) * BIN_S / 3600.0
    per_hour = arr.groupby(t.dt.floor("h"))["jobs"].sum().to_numpy(float)
    one = arr[arr["jobs"] == 1]["gpus"].value_counts(normalize=True).sort_index()
    return {
        "rate_per_hour": float(jobs.sum() / hours),
        "hourly": _shape(jobs, t.dt.hour.to_numpy(), 24),
        "weekly": _shape(jobs, t.dt.day_of_week.to_numpy(), 7),
        "mean_gpus": float(arr["gpus"].sum() / jobs.sum()),
        "single_pmf": {int(k): float(v) for k, v in one.items()},
        "single_jobs": int((arr["jobs"] == 1).sum()),
        "hourly_cv": float(per_hour.std() / per_hour.mean()),
    }


def fit_gpu_pmf(single_pmf: dict[int, float], mean_gpus: float) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The GPU-count pmf of the single-job bins with the jobs of :data:`BIG_JOB_GPUS` GPUs or more reweighted
    (and the rest scaled to keep the total 1) so its mean is the whole log's ``mean_gpus``: bins holding one job
    are quiet times, and large jobs come in bursts (the 10-minute GPUs per job is 10-12 at 4:00-9:00, 5-7 in the
    rest of the day), so single-job bins under-count them. Solves ``a S + b B = 1``, ``a s + b b_m = mean``."""
    g = np.array(sorted(single_pmf))
    p = np.array([single_pmf[k] for k in g])
    big = g >= BIG_JOB_GPUS
    mass = np.array([[p[~big].sum(), p[big].sum()], [(g * p)[~big].sum(), (g * p)[big].sum()]])
    det = mass[0, 0] * mass[1, 1] - mass[0, 1] * mass[1, 0]
    a = (mass[1, 1] - mass[0, 1] * mean_gpus) / det  # Cramer's rule on the 2x2 system (no BLAS)
    b = (mass[0, 0] * mean_gpus - mass[1, 0]) / det
    if not (a > 0 and b > 0):
        raise ValueError(f"GPU counts cannot reach a mean of {mean_gpus:g} by reweighting jobs of "
                         f">= {BIG_JOB_GPUS} GPUs")
    q = np.where(big, b * p, a * p)
    return tuple(int(x) for x in g), tuple(round(float(x), 6) for x in q / q.sum())


def duration_quantiles(slice_df: pd.DataFrame, median_s: float) -> tuple[float, ...]:
    """log10 durations at :data:`~.synthetic.QUANTILE_PROBS` with the shape of ``slice_df``'s run times
    (positive ones) and the median moved to ``median_s``."""
    d = slice_df["duration_s"].to_numpy(float)
    log_d = np.log10(d[np.isfinite(d) & (d > 0)])
    q = np.quantile(log_d, QUANTILE_PROBS) - np.median(log_d) + np.log10(median_s)
    return tuple(round(max(0.0, float(x)), 4) for x in q)


def fitted_constants(data_root: Path) -> dict[str, object]:
    """Every constant of the Venus profile fitted from the files under ``data_root`` (laid out like
    ``../shared/data``), rounded as :mod:`.profiles` ships them."""
    from gpucluster_env.traces.helios_slice import load_helios_slice
    from gpucluster_env.traces.profiles import VENUS_MEDIAN_RUN_S

    st = cluster_stats(load_cluster_arrivals(data_root / ARRIVALS_RELPATH))
    slice_df, _ = load_helios_slice(data_root / SLICE_RELPATH)
    gv, gp = fit_gpu_pmf(st["single_pmf"], st["mean_gpus"])  # type: ignore[arg-type]
    return {
        "gpu_values": gv,
        "gpu_probs": gp,
        "log10_dur": duration_quantiles(slice_df, VENUS_MEDIAN_RUN_S),
        "rate_per_hour": round(st["rate_per_hour"], 4),  # type: ignore[call-overload]
        "hourly_profile": tuple(round(float(x), 4) for x in st["hourly"]),  # type: ignore[attr-defined]
        "weekly_profile": tuple(round(float(x), 4) for x in st["weekly"]),  # type: ignore[attr-defined]
    }


def main() -> None:
    """Print the fitted constants (from ``$GPUCLUSTER_DATA`` or ``../shared/data``)."""
    from gpucluster_env.catalog.measured import require_data_dir

    for k, v in fitted_constants(require_data_dir()).items():
        print(f"{k} = {v!r}")


if __name__ == "__main__":
    main()
