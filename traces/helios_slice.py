"""Loader for the real per-job Venus slice ``helios_venus_2vc_sept.csv``: 1,867 GPU jobs of two Venus virtual
clusters (vcvGl, vcvlY), 2020-09-01..26, cut from HeliosData's Venus ``cluster_log.csv`` (CC-BY-4.0; Hu et al.,
"Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU Datacenters", SC'21) and
re-published in the canonical schema of felivalencia3/mini-compute-simulator (Apache-2.0, commit ce41673,
``tests/validation_traces/``).

Schema, after ``#`` provenance lines: ``job_id,user,tenant,class,submit_time,num_chips,chip_type,num_nodes,
duration_s,walltime_limit_s,final_status``. ``tenant`` is the VC, ``submit_time`` is in MICROseconds from
2020-09-01 00:00 (a Tuesday), ``num_chips`` the GPU count; ``class`` and ``chip_type`` carry nothing and
``walltime_limit_s`` repeats ``duration_s``, so they are not read.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from gpucluster_env.traces.files import gpu_counts, read_csv, run_times, time_offsets
from gpucluster_env.traces.tables import LoadReport, RowChecker, TraceFormatError, finish

SLICE_COLUMNS = ("job_id", "user", "tenant", "submit_time", "num_chips", "duration_s", "final_status")
"""The columns the loader reads (the file has four more that carry nothing, see the module docstring)."""
MICROSECONDS = 1e6
WINDOW_START_WEEKDAY = 1
"""Day of week of the slice's time origin, 2020-09-01 00:00 (Monday = 0): a Tuesday."""


def load_helios_slice(path: str | Path, skip_bad_rows: bool = False) -> tuple[pd.DataFrame, LoadReport]:
    """Load the slice into the normalized table (``vc`` = ``tenant``, ``status`` = ``final_status``).
    ``attrs["start_hour"]`` and ``attrs["start_weekday"]`` place the earliest job on the clock and the week of
    the slice's origin; bad rows are one-line errors naming the file, row and field."""
    report = LoadReport(str(path))
    df = read_csv(path, SLICE_COLUMNS, report=report, skip_bad_rows=skip_bad_rows, comment="#")
    report.rows_read = len(df) + report.skipped_count
    chk = RowChecker.for_table(path, df, report, skip_bad_rows)
    chk.ident(df["job_id"], "job_id")
    sub = time_offsets(chk, df, "submit_time", "microseconds", "the window start", MICROSECONDS)
    dur = run_times(chk, df, "duration_s")
    gpus = gpu_counts(chk, df, "num_chips")
    keep = chk.keep
    if not keep.any():
        raise TraceFormatError(f"{path}: no GPU job left ({report.summary()})")
    t0 = float(sub[keep].min())
    out = pd.DataFrame(
        {
            "job_id": df["job_id"][keep].to_numpy(),
            "submit_s": sub[keep].to_numpy(),
            "num_gpus": gpus[keep].to_numpy(),
            "duration_s": dur[keep].to_numpy(),
            "vc": df["tenant"][keep].to_numpy(),
            "user": df["user"][keep].to_numpy(),
            "status": df["final_status"][keep].to_numpy(),
        }
    )
    table = finish(out, path, (t0 / 3600.0) % 24.0)
    table.attrs["start_weekday"] = int((WINDOW_START_WEEKDAY + t0 // 86400) % 7)
    return table, report
