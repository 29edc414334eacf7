"""Alibaba loaders: PAI 2020 (cluster-trace-gpu-v2020: ``pai_job_table`` + ``pai_task_table``, headerless CSVs
whose column names ship as ``*.header``) and the 2023 GPU-sharing cluster (``openb_pod_list_*.csv``).

PAI 2020: a job's submit time is the job table's ``start_time`` (seconds), its duration ``end_time -
start_time``; its GPUs are ``sum(inst_num x plan_gpu / 100)`` over its tasks (``plan_gpu`` is in percent of a
GPU), rounded up; ``gpu_type`` is the first task's. ``job_name`` is the job table's key (the task table joins on
it), so a name on two rows is an error, not two jobs. Jobs without GPUs are dropped (``CPU-only``), jobs without
an end time (still running when the trace ended) are dropped (``unfinished``); both counted.

2023: submit = ``creation_time``, duration = ``deletion_time - scheduled_time`` (seconds); ``gpu_milli`` (<
1000:
a fractional, shared GPU) and ``gpu_spec`` (allowed GPU types, ``|``-separated) are kept. Pods never scheduled
and CPU-only pods are dropped and counted.

Cite: Weng et al., "MLaaS in the Wild", NSDI'22; Weng et al., "Beware of Fragmentation", ATC'23.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from gpucluster_env.traces.files import numbers, read_csv, run_times
from gpucluster_env.traces.tables import MAX_JOB_GPUS, LoadReport, RowChecker, TraceFormatError, finish

from gpucluster_env.input_files import read_text

PAI_JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
PAI_TASK_COLUMNS = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
OPENB_POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
MAX_PLAN_GPU = 100.0 * 64
"""The most GPU percent one PAI task instance may plan (64 whole GPUs)."""
OPENB_REQUIRED = ("name", "num_gpu", "gpu_milli", "creation_time", "deletion_time")


def _header_names(table: Path, default: tuple[str, ...]) -> tuple[str, ...]:
    """Column names from ``<table>.header`` beside the table if present, else the documented ones."""
    stem = table.name.split(".")[0]
    for cand in (table.with_name(stem + ".header"), table.with_name(stem + ".csv.header")):
        if cand.exists():
            return tuple(c.strip() for c in read_text(cand).strip().split(","))
    return default


def _gpus_per_job(task_path: Path, tasks: pd.DataFrame, report: LoadReport, skip_bad_rows: bool) -> pd.DataFrame:
    """Per job name, the GPUs its tasks ask for in all (``inst_num x plan_gpu / 100``) and the first task's GPU
    type, from the task table's checked rows (a bad ``inst_num`` or ``plan_gpu`` fails or is skipped)."""
    tchk = RowChecker.for_table(task_path, tasks, report, skip_bad_rows)
    inst, bad = numbers(tasks, "inst_num")
    tchk.count(inst, tasks["inst_num"], bad, "inst_num")
    pg, bad = numbers(tasks, "plan_gpu")
    with np.errstate(invalid="ignore"):
        ok = ~((pg < 0) | (pg > MAX_PLAN_GPU)).to_numpy() & ~np.isinf(pg.to_numpy(float))
    tchk.check(bad.to_numpy() | ~ok, "plan_gpu", f"not a number of GPU percent from 0 to {MAX_PLAN_GPU:g}",
               tasks["plan_gpu"])
    t = tasks[tchk.keep].assign(gpus=(inst.fillna(1) * pg.fillna(0) / 100.0)[tchk.keep])
    per_job = t.groupby("job_name", sort=False).agg(gpus=("gpus", "sum"), gpu_type=("gpu_type", "first"))
    return per_job


def load_pai(
    job_table: str | Path, task_table: str | Path | None = None, skip_bad_rows: bool = False
) -> tuple[pd.DataFrame, LoadReport]:
    """Load Alibaba PAI 2020 jobs (``task_table`` defaults to ``pai_task_table.csv`` beside the job table)."""
    job_path = Path(job_table)
    task_path = (
        Path(task_table)
        if task_table
        else job_path.with_name(job_path.name.replace("pai_job_table", "pai_task_table"))
    )
    if task_path == job_path:
        raise TraceFormatError(f"{job_path}: cannot tell where the PAI task table is: name the job table "
                               "pai_job_table*.csv with pai_task_table*.csv beside it")
    report = LoadReport(str(job_path))
    jobs = read_csv(job_path, PAI_JOB_COLUMNS, names=_header_names(job_path, PAI_JOB_COLUMNS), report=report,
                    skip_bad_rows=skip_bad_rows)
    report.rows_read = len(jobs) + report.skipped_count
    task_report = LoadReport(str(task_path))
    tasks = read_csv(task_path, PAI_TASK_COLUMNS, names=_header_names(task_path, PAI_TASK_COLUMNS),
                     report=task_report, skip_bad_rows=skip_bad_rows)
    report.skipped += [(r, f"{task_path.name}: {f}", why) for r, f, why in task_report.skipped]
    per_job = _gpus_per_job(task_path, tasks, report, skip_bad_rows)

    chk = RowChecker.for_table(job_path, jobs, report, skip_bad_rows)
    chk.ident(jobs["job_name"], "job_name")
    chk.unique(jobs["job_name"], "job_name")  # tasks join their job by name: a repeated name would count twice
    st, bad = numbers(jobs, "start_time")
    chk.time(st, jobs["start_time"], bad, "start_time", required=True)
    en, bad = numbers(jobs, "end_time")
    chk.time(en, jobs["end_time"], bad, "end_time", required=False)
    dur = en - st
    chk.duration(dur, jobs["end_time"], "end_time", "before start_time (negative duration)")
    g = per_job["gpus"].reindex(jobs["job_name"]).fillna(0.0).to_numpy()
    chk.check(g > MAX_JOB_GPUS, "plan_gpu", f"the job's tasks ask for more than {MAX_JOB_GPUS:,} GPUs in all "
              "(sum of inst_num x plan_gpu / 100)", g)
    keep = chk.keep.copy()
    unfinished = keep & en.isna().to_numpy()
    report.dropped["unfinished"] = int(unfinished.sum())
    keep &= ~unfinished
    cpu = keep & (g <= 0)
    report.dropped["CPU-only"] = int(cpu.sum())
    keep &= ~cpu
    if not keep.any():
        raise TraceFormatError(f"{job_path}: no finished GPU job left ({report.summary()})")
    out = pd.DataFrame(
        {
            "job_id": jobs["job_name"][keep].to_numpy(),
            "submit_s": st[keep].to_numpy(),
            "num_gpus": np.ceil(g[keep] - 1e-9).astype(np.int64),
            "duration_s": dur[keep].to_numpy(),
            "user": jobs["user"][keep].to_numpy(),
            "status": jobs["status"][keep].to_numpy(),
            "gpu_request": g[keep],
            "gpu_type": per_job["gpu_type"].reindex(jobs["job_name"][keep]).fillna("").to_numpy(),
        }
    )
    return finish(out, job_path), report


def load_openb_pods(
    path: str | Path, skip_bad_rows: bool = False, gpu_only: bool = True
) -> tuple[pd.DataFrame, LoadReport]:
    """Load an Alibaba GPU 2023 ``openb_pod_list_*.csv`` into the normalized table. ``num_gpus`` is
    ``max(num_gpu, 1)`` for GPU pods (a fractional pod holds one GPU); ``gpu_milli``, ``gpu_spec``, ``qos``,
    ``cpu_milli``, ``memory_mib`` are kept."""
    report = LoadReport(str(path))
    df = read_csv(path, OPENB_REQUIRED, report=report, skip_bad_rows=skip_bad_rows)
    report.rows_read = len(df) + report.skipped_count
    chk = RowChecker.for_table(path, df, report, skip_bad_rows)
    chk.ident(df["name"], "name")
    ng, bad = numbers(df, "num_gpu")
    chk.count(ng, df["num_gpu"], bad, "num_gpu")
    gm, bad = numbers(df, "gpu_milli")
    chk.check(
        bad.to_numpy() | ~((gm >= 0) & (gm <= 1000)).to_numpy(),
        "gpu_milli",
        "not a number in [0, 1000]",
        df["gpu_milli"],
    )
    cr, bad = numbers(df, "creation_time")
    chk.time(cr, df["creation_time"], bad, "creation_time", required=True)
    de, bad = numbers(df, "deletion_time")
    chk.time(de, df["deletion_time"], bad, "deletion_time", required=False)
    if "scheduled_time" in df.columns:
        sc, bad = numbers(df, "scheduled_time")
        chk.time(sc, df["scheduled_time"], bad, "scheduled_time", required=False)
    else:
        sc = cr
    dur = de - sc
    chk.duration(dur, df["deletion_time"], "deletion_time", "before scheduled_time (negative duration)")
    keep = chk.keep.copy()
    never = keep & (sc.isna() | de.isna()).to_numpy()
    report.dropped["never scheduled"] = int(never.sum())
    keep &= ~never
    if gpu_only:
        cpu = keep & ((ng == 0) | (gm == 0)).to_numpy()
        report.dropped["CPU-only"] = int(cpu.sum())
        keep &= ~cpu
    if not keep.any():
        raise TraceFormatError(f"{path}: no GPU pod left after dropping ({report.summary()})")
    n = int(keep.sum())
    col = {c: df[c][keep].to_numpy() if c in df.columns else np.full(n, "", dtype=object)
           for c in ("gpu_spec", "qos", "pod_phase")}
    out = pd.DataFrame(
        {
            "job_id": df["name"][keep].to_numpy(),
            "submit_s": cr[keep].to_numpy(),
            "num_gpus": np.maximum(ng[keep].to_numpy(), 1),
            "duration_s": dur[keep].to_numpy(),
            "status": col["pod_phase"],
            "gpu_milli": gm[keep].to_numpy().astype(np.int64),
            "gpu_spec": pd.Series(col["gpu_spec"]).fillna("").astype(str).to_numpy(),
            "qos": col["qos"],
        }
    )
    return finish(out, path), report


PAI_JOBS_REQUIRED = ("job_id", "job_name", "user", "submit_time", "duration", "num_gpu", "gpu_types")
"""The columns the PAI 2020 per-job subsets (``pai_gpu_jobs_*.csv``, the job and task tables already joined)
are read by."""


def load_pai_jobs(path: str | Path, skip_bad_rows: bool = False) -> tuple[pd.DataFrame, LoadReport]:
    """Load a PAI 2020 per-job subset (``pai_gpu_jobs_sample_6000.csv``: a contiguous window of the official
    simulator sample; ``pai_gpu_jobs_completed_1000.csv``: job and task tables joined) into the normalized table.

    ``submit_s`` = ``submit_time``, ``duration_s`` = ``duration`` (the real run time, seconds), ``num_gpus`` =
    ``num_gpu`` rounded up (the engine places whole GPUs), ``job_id`` the row's key (``job_name`` is PAI's
    job-group name, repeated in the sample, kept as a column); the request as given is kept as ``gpu_request``
    (fractional for a job that shares a GPU) and the GPU model it ran on as ``gpu_type``. Jobs asking for no
    GPU are dropped and counted."""
    report = LoadReport(str(path))
    df = read_csv(path, PAI_JOBS_REQUIRED, report=report, skip_bad_rows=skip_bad_rows)
    report.rows_read = len(df) + report.skipped_count
    chk = RowChecker.for_table(path, df, report, skip_bad_rows)
    chk.ident(df["job_id"], "job_id")
    chk.unique(df["job_id"], "job_id")  # one row a job; a job_name (PAI's group key) may repeat in the sample
    st, bad = numbers(df, "submit_time")
    chk.time(st, df["submit_time"], bad, "submit_time", required=True)
    dur = run_times(chk, df, "duration")
    g, bad = numbers(df, "num_gpu")
    gv = g.to_numpy(float)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(gv) & (gv >= 0) & (gv <= MAX_JOB_GPUS)
    chk.check(bad.to_numpy() | ~ok, "num_gpu", f"not a number of GPUs from 0 to {MAX_JOB_GPUS:,}", df["num_gpu"])
    chk.drop_cpu_only(~(gv > 0))
    keep = chk.keep
    if not keep.any():
        raise TraceFormatError(f"{path}: no GPU job left ({report.summary()})")
    out = pd.DataFrame(
        {
            "job_id": df["job_id"][keep].to_numpy(),
            "submit_s": st[keep].to_numpy(float),
            "num_gpus": np.ceil(gv[keep] - 1e-9).astype(np.int64),
            "duration_s": dur[keep].to_numpy(float),
            "user": df["user"][keep].to_numpy(),
            "job_name": df["job_name"][keep].to_numpy(),
            "gpu_request": gv[keep],
            "gpu_type": df["gpu_types"][keep].fillna("").astype(str).to_numpy(),
        }
    )
    return finish(out, path), report
