"""Microsoft Philly loaders: the official ``cluster_job_log`` JSON (msr-fiddle/philly-traces) and the Pollux
authors' preprocessed ``philly_jobs.csv`` (``timestamp,duration,num_gpus,gpu_time,cluster``).

Cite: Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads", ATC'19.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from gpucluster_env.traces.files import gpu_counts, open_text, read_csv, run_times, timestamps
from gpucluster_env.traces.tables import LoadReport, RowChecker, TraceFormatError, finish, row_error

PHILLY_CSV_COLUMNS = ("timestamp", "duration", "num_gpus", "cluster")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def _start_hour(ts: pd.Series) -> float:
    t0 = ts.min()
    return 0.0 if pd.isna(t0) else t0.hour + t0.minute / 60 + t0.second / 3600


def load_philly_csv(path: str | Path, skip_bad_rows: bool = False) -> tuple[pd.DataFrame, LoadReport]:
    """Load the preprocessed Philly CSV into the normalized table (``vc`` = the ``cluster`` column); jobs
    without GPUs are dropped and counted (``CPU-only``), as every loader does."""
    report = LoadReport(str(path))
    df = read_csv(path, PHILLY_CSV_COLUMNS, report=report, skip_bad_rows=skip_bad_rows)
    report.rows_read = len(df) + report.skipped_count
    chk = RowChecker.for_table(path, df, report, skip_bad_rows)
    ts, bad_ts = timestamps(df, "timestamp", TIME_FORMAT)
    chk.check(
        bad_ts.to_numpy() | df["timestamp"].isna().to_numpy(),
        "timestamp",
        f"not a timestamp {TIME_FORMAT!r}",
        df["timestamp"],
    )
    dur = run_times(chk, df, "duration")
    gpus = gpu_counts(chk, df, "num_gpus")
    keep = chk.keep
    ids = np.char.add("philly-", np.asarray(chk.rows).astype(str))
    out = pd.DataFrame(
        {
            "job_id": ids[keep],
            "submit_s": ((ts[keep] - ts[keep].min()).dt.total_seconds()).to_numpy(),
            "num_gpus": gpus[keep].to_numpy(),
            "duration_s": dur[keep].to_numpy(),
            "vc": df["cluster"][keep].to_numpy(),
        }
    )
    return finish(out, path, _start_hour(ts[keep])), report


_SCALAR = (str, int, float)


def _job_log_row(path: str | Path, r: int, job: object) -> tuple[str, str, str, str, str, str, str, int] | None:
    """One job of the job log as text fields and its GPU count, None when it never started; a field of the
    wrong JSON type is an error naming the row and the field."""
    if not isinstance(job, dict):
        raise row_error(path, r, "jobid", f"expected a JSON object for the job, got {type(job).__name__}")
    for fld in ("jobid", "submitted_time", "attempts"):
        if fld not in job:
            raise row_error(path, r, fld, "missing")
    for fld in ("jobid", "submitted_time", "vc", "user", "status"):
        if job.get(fld) is not None and not isinstance(job[fld], _SCALAR):
            raise row_error(path, r, fld, f"expected a string, got a JSON {type(job[fld]).__name__}")
    if job["jobid"] is None or str(job["jobid"]).strip() == "":
        raise row_error(path, r, "jobid", "empty job id")
    attempts = job["attempts"] if job["attempts"] is not None else []
    if not isinstance(attempts, list):
        raise row_error(path, r, "attempts", f"expected a list, got a JSON {type(attempts).__name__}")
    for a in attempts:
        if not isinstance(a, dict):
            raise row_error(path, r, "attempts", f"expected objects in the list, got a JSON {type(a).__name__}")
        for fld in ("start_time", "end_time"):
            if a.get(fld) is not None and not isinstance(a[fld], str):
                raise row_error(path, r, f"attempts.{fld}", f"expected a time string, got {a[fld]!r}")
    started = [a for a in attempts if a.get("start_time") and a.get("end_time")]
    if not started:
        return None
    last = started[-1]
    detail = last.get("detail") if last.get("detail") is not None else []
    if not isinstance(detail, list) or not all(isinstance(d, dict) for d in detail):
        raise row_error(path, r, "attempts.detail", "expected a list of {ip, gpus} objects")
    gpus = 0
    for d in detail:
        g = d.get("gpus") if d.get("gpus") is not None else []
        if not isinstance(g, list):
            raise row_error(path, r, "attempts.detail.gpus", f"expected a list of GPU names, got {g!r}")
        gpus += len(g)
    return (str(job["jobid"]), str(job["submitted_time"]), str(started[0]["start_time"]), str(last["end_time"]),
            str(job.get("vc") or ""), str(job.get("user") or ""), str(job.get("status") or ""), gpus)


def _read_job_list(path: str | Path) -> list[Any]:
    """The job log's JSON list of jobs; anything else is a one-line :class:`TraceFormatError` naming the file."""
    try:
        jobs = json.load(open_text(path))
    except json.JSONDecodeError as e:
        raise TraceFormatError(
            f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})"
        ) from None
    except RecursionError:
        raise TraceFormatError(f"{path}: JSON nested too deeply to be a job log") from None
    if not isinstance(jobs, list):
        raise TraceFormatError(f"{path}: expected a JSON list of jobs, got {type(jobs).__name__}")
    return jobs


def load_philly_job_log(path: str | Path, skip_bad_rows: bool = False) -> tuple[pd.DataFrame, LoadReport]:
    """Load the official ``cluster_job_log`` (a JSON list of jobs with ``jobid``, ``vc``, ``user``, ``status``,
    ``submitted_time`` and ``attempts``, each attempt with ``start_time``, ``end_time`` and ``detail``, a list
    of ``{"ip", "gpus"}``). GPUs = the GPUs of the last attempt (at most
    :data:`~gpucluster_env.traces.tables.MAX_JOB_GPUS`); duration = last attempt end - first attempt
    start. Jobs that never started (no attempt with both times) and jobs without GPUs (CPU-only) are dropped and
    counted."""
    jobs = _read_job_list(path)
    report = LoadReport(str(path), rows_read=len(jobs))
    rows: list[tuple[str, str, str, str, str, str, str, int]] = []
    row_nums: list[int] = []
    not_started = 0
    for r, job in enumerate(jobs, start=1):
        try:
            started = _job_log_row(path, r, job)
            if started is None:
                not_started += 1
                continue
            rows.append(started)
            row_nums.append(r)
        except TraceFormatError as e:
            if not skip_bad_rows:
                raise
            report.skipped.append((r, str(e).split("field ")[-1].split(":")[0].strip("'"), str(e)))
    report.dropped["never started"] = not_started
    df = pd.DataFrame(
        rows, columns=["job_id", "submitted", "start", "end", "vc", "user", "status", "num_gpus"]
    )
    if len(df) == 0:
        raise TraceFormatError(f"{path}: no job with a started attempt")
    chk = RowChecker(path, len(df), report, skip_bad_rows, np.asarray(row_nums))
    sub, bad_sub = timestamps(df, "submitted", TIME_FORMAT)
    chk.check(bad_sub.to_numpy(), "submitted_time", f"not a timestamp {TIME_FORMAT!r}", df["submitted"])
    st, bad_st = timestamps(df, "start", TIME_FORMAT)
    chk.check(bad_st.to_numpy(), "attempts.start_time", f"not a timestamp {TIME_FORMAT!r}", df["start"])
    en, bad_en = timestamps(df, "end", TIME_FORMAT)
    chk.check(bad_en.to_numpy(), "attempts.end_time", f"not a timestamp {TIME_FORMAT!r}", df["end"])
    dur = (en - st).dt.total_seconds()
    chk.duration(dur, df["end"], "attempts.end_time", "ends before it starts (negative duration)")
    gpus = df["num_gpus"].astype(float)
    chk.count(gpus, df["num_gpus"], pd.Series(False, index=df.index), "attempts.detail.gpus")
    chk.drop_cpu_only((df["num_gpus"] == 0).to_numpy())
    if not chk.keep.any():
        raise TraceFormatError(f"{path}: no GPU job left ({report.summary()})")
    keep = chk.keep
    out = df[keep].copy()
    out["submit_s"] = (sub[keep] - sub[keep].min()).dt.total_seconds()
    out["duration_s"] = dur[keep]
    out = out.drop(columns=["submitted", "start", "end"])
    return finish(out, path, _start_hour(sub[keep])), report
