"""SenseTime Helios loader (Venus, Earth, Saturn, Uranus): the per-job ``cluster_log.csv`` of HeliosData,
``job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue``
with times as ``YYYY-MM-DD HH:MM:SS`` and ``duration`` in seconds. CPU-only jobs (``gpu_num`` 0) are dropped
and counted unless ``gpu_only=False``.

Cite: Hu et al., "Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU Datacenters",
SC'21.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from gpucluster_env.traces.files import numbers, read_csv, run_times, timestamps
from gpucluster_env.traces.tables import LoadReport, RowChecker, TraceFormatError, finish

HELIOS_COLUMNS = (
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
    "queue",
)
REQUIRED = ("job_id", "user", "vc", "gpu_num", "state", "submit_time", "duration")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def load_helios(
    path: str | Path, skip_bad_rows: bool = False, gpu_only: bool = True
) -> tuple[pd.DataFrame, LoadReport]:
    """Load a Helios ``cluster_log.csv`` into the normalized table (``status`` = ``state``)."""
    report = LoadReport(str(path))
    df = read_csv(path, REQUIRED, report=report, skip_bad_rows=skip_bad_rows)
    report.rows_read = len(df) + report.skipped_count
    chk = RowChecker.for_table(path, df, report, skip_bad_rows)
    chk.ident(df["job_id"], "job_id")
    ts, bad = timestamps(df, "submit_time", TIME_FORMAT)
    chk.check(
        bad.to_numpy() | ts.isna().to_numpy(),
        "submit_time",
        f"not a timestamp {TIME_FORMAT!r}",
        df["submit_time"],
    )
    dur = run_times(chk, df, "duration")
    gpus, bad = numbers(df, "gpu_num")
    chk.count(gpus, df["gpu_num"], bad, "gpu_num")
    keep = chk.keep.copy()
    if gpu_only:
        cpu = keep & (gpus == 0).to_numpy()
        report.dropped["CPU-only"] = int(cpu.sum())
        keep &= ~cpu
    if not keep.any():
        raise TraceFormatError(f"{path}: no GPU job left ({report.summary()})")
    t = ts[keep]
    out = pd.DataFrame(
        {
            "job_id": df["job_id"][keep].to_numpy(),
            "submit_s": (t - t.min()).dt.total_seconds().to_numpy(),
            "num_gpus": gpus[keep].to_numpy(),
            "duration_s": dur[keep].to_numpy(),
            "vc": df["vc"][keep].to_numpy(),
            "user": df["user"][keep].to_numpy(),
            "status": df["state"][keep].to_numpy(),
        }
    )
    t0 = t.min()
    start_hour = 0.0 if pd.isna(t0) else t0.hour + t0.minute / 60
    return finish(out, path, start_hour), report
