"""Loader for ``helios_venus_gpu_jobs.csv``: every GPU job of SenseTime's Venus cluster (125,303 jobs,
2020-03-18..09-28), a projection of HeliosData's Venus ``cluster_log.csv`` (CC-BY-4.0; Hu et al.,
"Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU Datacenters", SC'21) as
re-published in mystous/gpu_scheduler (``sim/helios_trace.csv``).

Schema: ``job_id,arrival_s,service_sec,gpu_count``. ``arrival_s`` is the submit time in seconds after the first
GPU job's (2020-03-18 04:01:39, the trace's local time, a Wednesday); ``service_sec`` the run time, **capped
at 172,800 s (48 h) by the re-publisher** (1.9% of the jobs); ``gpu_count`` the GPUs. CPU-only jobs and jobs
with no run time are already left out; VC, user and state are not in the file.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from gpucluster_env.traces.files import gpu_counts, read_csv, run_times, time_offsets
from gpucluster_env.traces.tables import LoadReport, RowChecker, TraceFormatError, finish

JOBS_COLUMNS = ("job_id", "arrival_s", "service_sec", "gpu_count")
CAP_S = 172_800.0
"""The run-time cap the re-publisher applied (48 h): a job at exactly this length ran at least this long."""
START_HOUR = 4 + 1 / 60 + 39 / 3600
"""Hour of day of the first job, 2020-03-18 04:01:39."""
START_WEEKDAY = 2
"""Day of week of 2020-03-18 (Monday = 0): a Wednesday."""


def load_helios_jobs(path: str | Path, skip_bad_rows: bool = False) -> tuple[pd.DataFrame, LoadReport]:
    """Load the Venus GPU-job table into the normalized table; ``capped`` marks the jobs whose run time is the
    48-hour cap, ``attrs["capped"]`` counts them. Bad rows are one-line errors naming the file, row and
    field."""
    report = LoadReport(str(path))
    df = read_csv(path, JOBS_COLUMNS, report=report, skip_bad_rows=skip_bad_rows)
    report.rows_read = len(df) + report.skipped_count
    chk = RowChecker.for_table(path, df, report, skip_bad_rows)
    chk.ident(df["job_id"], "job_id")
    chk.unique(df["job_id"], "job_id")
    sub = time_offsets(chk, df, "arrival_s", "seconds", "the first job")
    dur = run_times(chk, df, "service_sec")
    gpus = gpu_counts(chk, df, "gpu_count")
    keep = chk.keep
    if not keep.any():
        raise TraceFormatError(f"{path}: no GPU job left ({report.summary()})")
    d = dur[keep].to_numpy(float)
    out = pd.DataFrame(
        {
            "job_id": df["job_id"][keep].to_numpy(),
            "submit_s": sub[keep].to_numpy(float),
            "num_gpus": gpus[keep].to_numpy(),
            "duration_s": d,
            "capped": d >= CAP_S,
        }
    )
    t0 = float(out["submit_s"].min())
    table = finish(out, path, (START_HOUR + t0 / 3600.0) % 24.0)
    table.attrs["start_weekday"] = int((START_WEEKDAY + (START_HOUR * 3600 + t0) // 86400) % 7)
    table.attrs["capped"] = int(table["capped"].sum())
    return table, report
