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

import numpy as np
import pandas as pd
from gpucluster_env.traces.files import numbers, read_csv
from gpucluster_env.traces.tables import MAX_TIME_S, LoadReport, RowChecker, TraceFormatError, finish

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
    sub_us, bad = numbers(df, "submit_time")
    sub = sub_us / MICROSECONDS
    v = sub.to_numpy(float)
    with np.errstate(invalid="ignore"):
        out_of_range = ~np.isfinite(v) | (v < 0) | (v > MAX_TIME_S)
    chk.check(bad.to_numpy() | out_of_range, "submit_time",
              f"not a time in microseconds from the window start (0 to {MAX_TIME_S * MICROSECONDS:g})",
              df["submit_time"])
    dur, bad = numbers(df, "duration_s")
    chk.check(bad.to_numpy() | dur.isna().to_numpy(), "duration_s", "not a number", df["duration_s"])
    chk.duration(dur, df["duration_s"], "duration_s")
    gpus, bad = numbers(df, "num_chips")
    chk.count(gpus, df["num_chips"], bad, "num_chips")
    chk.drop_cpu_only((gpus == 0).to_numpy())
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
