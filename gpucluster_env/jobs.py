"""The job table an episode runs: one row per training job, checked before the engine sees it.

Columns (a pandas DataFrame):

=============  =======  ============================================================================
``job_id``     str      unique name
``submit_s``   float    arrival time, seconds from the episode start (>= 0)
``num_gpus``   int      GPUs requested, all started at once (gang)
``model``      str      a model of the catalog
``batch_size`` int      per-GPU batch size the user asked for
``iterations`` float    training iterations to run (> 0)
``deadline_s`` float    absolute deadline in seconds, NaN when none (optional column)
``min_gpus``   int      smallest gang an elastic job may be resized to (optional; default ``num_gpus``)
``max_gpus``   int      largest gang an elastic job may be resized to (optional; default ``num_gpus``)
=============  =======  ============================================================================

A job is elastic when ``min_gpus < num_gpus`` or ``max_gpus > num_gpus`` (``Reallocate`` may resize it within
that range); ``iterations`` always count iterations of the global batch at ``num_gpus`` GPUs.

Trace loaders (:mod:`gpucluster_env.traces`) produce raw traces; annotation turns them into this table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .catalog import Catalog
from .hardware import ClusterSpec
from .performance import fits_memory, worker_memory_gb

JOB_COLUMNS = ("job_id", "submit_s", "num_gpus", "model", "batch_size", "iterations")
MAX_BATCH_SIZE = 1 << 20
"""The largest per-GPU batch a job may ask for (1,048,576 samples; real training jobs use at most thousands):
beyond it a typo, not a job, and its run time would be a meaningless number."""
OPTIONAL_COLUMNS = ("deadline_s", "min_gpus", "max_gpus")


class JobTableError(ValueError):
    """A job table that cannot be simulated; the message names the source, row and field."""


@dataclass
class SkipReport:
    """Rows dropped by ``skip_bad_rows=True``, with the reason for each."""

    skipped: list[tuple[int, str]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.skipped)


def _row_problems(df: pd.DataFrame, catalog: Catalog, cluster: ClusterSpec) -> list[tuple[int, str]]:
    """Every bad row of ``df`` with the reason, found with vectorized checks (tables have 10^5 rows)."""
    checks: list[tuple[np.ndarray, object]] = []
    submit = df["submit_s"].to_numpy(float)
    n = df["num_gpus"].to_numpy(float)
    it = df["iterations"].to_numpy(float)
    b = df["batch_size"].to_numpy(float)
    dl = df["deadline_s"].to_numpy(float)
    max_gpus = cluster.num_gpus
    with np.errstate(invalid="ignore"):
        checks.append((~(np.isfinite(submit) & (submit >= 0)),
                       lambda i: f"field 'submit_s': must be a finite number >= 0, got {float(submit[i])!r}"))
        checks.append((~((n >= 1) & (np.mod(n, 1) == 0)),
                       lambda i: f"field 'num_gpus': must be a positive integer, got {float(n[i])!r}"))
        checks.append((n > max_gpus,
                       lambda i: f"field 'num_gpus': asks for {int(n[i])} GPUs but the cluster has {max_gpus}"))
        checks.append((~(np.isfinite(it) & (it > 0)),
                       lambda i: f"field 'iterations': must be a finite number > 0, got {float(it[i])!r}"))
        checks.append((~((b >= 1) & (np.mod(b, 1) == 0) & (b <= MAX_BATCH_SIZE)),
                       lambda i: f"field 'batch_size': must be an integer from 1 to {MAX_BATCH_SIZE:,}, got "
                                 f"{float(b[i])!r}"))
        checks.append((~(np.isnan(dl) | (np.isfinite(dl) & (dl >= submit))),
                       lambda i: f"field 'deadline_s': must be NaN or >= submit_s, got {float(dl[i])!r}"))
    for col in ("min_gpus", "max_gpus"):
        if col in df.columns:
            lim = df[col].to_numpy(float)
            bad = ~((lim >= 1) & (np.mod(lim, 1) == 0) & (lim <= max_gpus))
            bad |= (lim > n) if col == "min_gpus" else (lim < n)
            side = "<=" if col == "min_gpus" else ">="
            checks.append((bad, lambda i, c=col, v=lim, sd=side: f"field {c!r}: must be an integer in [1, "
                           f"{max_gpus}] and {sd} num_gpus ({float(n[i])!r}), got {float(v[i])!r}"))
    models = df["model"].to_numpy()
    known = np.isin(models, list(catalog.models))
    checks.append((~known, lambda i: f"field 'model': unknown model {str(models[i])!r}"))
    # A job must fit, alone and with the most gradient accumulation it can use (a power of two s <= batch, so a
    # micro-batch of batch / 2**floor(log2 batch), between 1 and 2 samples), on enough GPUs of the cluster.
    if known.any():
        types = cluster.gpus_by_type()
        mem_t = np.array([catalog.gpu_type(t).memory_gb for t in types])
        count_t = np.array(list(types.values()), dtype=np.int64)
        base = np.array([catalog.models[m].mem_base_gb if ok else 0.0 for m, ok in zip(models, known, strict=True)])
        slope = np.array([catalog.models[m].mem_per_sample_gb if ok else 0.0
                          for m, ok in zip(models, known, strict=True)])
        with np.errstate(invalid="ignore", divide="ignore"):
            micro = np.where(b >= 1, b / np.exp2(np.floor(np.log2(np.maximum(b, 1.0)))), 1.0)
        fp_min = worker_memory_gb(base, slope, micro)
        room = fits_memory(fp_min[:, None], mem_t[None, :]).astype(np.int64) @ count_t  # integers: no BLAS
        checks.append((known & (room == 0),
                       lambda i: f"field 'model': {str(models[i])!r} does not fit in the memory of any GPU of the "
                                 "cluster "
                                 f"even with full gradient accumulation ({fp_min[i]:.1f} GB)"))
        checks.append((known & (room > 0) & (n > room),
                       lambda i: f"field 'num_gpus': asks for {int(n[i])} GPUs but only {int(room[i])} GPUs of the "
                                 f"cluster can hold {str(models[i])!r}"))
    out: dict[int, str] = {}
    for mask, message in checks:
        for i in np.flatnonzero(mask):
            out.setdefault(int(i), message(int(i)))  # type: ignore[operator]
    return sorted(out.items())


def validate_jobs(
    jobs: pd.DataFrame,
    catalog: Catalog,
    cluster: ClusterSpec,
    source: str = "job table",
    skip_bad_rows: bool = False,
) -> tuple[pd.DataFrame, SkipReport]:
    """Check a job table against a catalog and a cluster; return it normalized (sorted by submit time,
    stable) and the report of skipped rows.

    Without ``skip_bad_rows`` the first bad row raises :class:`JobTableError` naming ``source``, the row and
    the field.
    """
    missing = [c for c in JOB_COLUMNS if c not in jobs.columns]
    if missing:
        raise JobTableError(f"{source}: missing column(s) {', '.join(missing)}")
    if len(jobs) == 0:
        raise JobTableError(f"{source}: no jobs")
    df = jobs.reset_index(drop=True).copy()
    for col in ("submit_s", "num_gpus", "batch_size", "iterations", *(c for c in ("min_gpus", "max_gpus")
                                                                       if c in df.columns)):
        converted = pd.to_numeric(df[col], errors="coerce")
        bad = converted.isna() & df[col].notna()
        if bad.any() and not skip_bad_rows:
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise JobTableError(f"{source}: row {i}: field {col!r}: not a number: {df[col].iloc[i]!r}")
        df[col] = converted.astype(float)
    for col in ("min_gpus", "max_gpus"):
        if col in df.columns:  # an empty cell: not elastic on that side
            df[col] = df[col].fillna(df["num_gpus"])
    if "deadline_s" not in df.columns:
        df["deadline_s"] = np.nan
    df["deadline_s"] = pd.to_numeric(df["deadline_s"], errors="coerce").astype(float)
    df["job_id"] = df["job_id"].astype(str)
    df["model"] = df["model"].astype(str)
    dup = df["job_id"].duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise JobTableError(f"{source}: row {i}: field 'job_id': duplicate id {df['job_id'].iloc[i]!r}")

    report = SkipReport()
    keep = np.ones(len(df), dtype=bool)
    for i, problem in _row_problems(df, catalog, cluster):
        if not skip_bad_rows:
            raise JobTableError(f"{source}: row {i} (job {df['job_id'].iloc[i]}): {problem}")
        report.skipped.append((i, problem))
        keep[i] = False
    df = df[keep]
    if len(df) == 0:
        raise JobTableError(f"{source}: every row was skipped as bad ({report.count} rows)")
    df = df.sort_values("submit_s", kind="stable").reset_index(drop=True)
    df["num_gpus"] = df["num_gpus"].astype(np.int64)
    df["batch_size"] = df["batch_size"].astype(np.int64)
    for col in ("min_gpus", "max_gpus"):
        if col in df.columns:
            df[col] = df[col].astype(np.int64)
    return df, report
