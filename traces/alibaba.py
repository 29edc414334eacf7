"""Alibaba loaders: PAI 2020 (cluster-trace-gpu-v2020: ``pai_job_table`` + ``pai_task_table``, headerless CSVs
whose column names ship as ``*.header``) and the 2023 GPU-sharing cluster (``openb_pod_list_*.csv``).

PAI 2020: a job's submit time is the job table's ``start_time`` (seconds), its duration ``end_time -
start_time``; its GPUs are ``sum(inst_num x plan_gpu / 100)`` over its tasks (``plan_gpu`` is in percent of a
GPU), rounded up; ``gpu_type`` is the first task's. Jobs without GPUs are dropped (``CPU-only``), jobs without
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

from .files import numbers, read_csv
from .tables import LoadReport, RowChecker, TraceFormatError, finish

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
OPENB_REQUIRED = ("name", "num_gpu", "gpu_milli", "creation_time", "deletion_time")


def _header_names(table: Path, default: tuple[str, ...]) -> tuple[str, ...]:
    """Column names from ``<table>.header`` beside the table if present, else the documented ones."""
    stem = table.name.split(".")[0]
    for cand in (table.with_name(stem + ".header"), table.with_name(stem + ".csv.header")):
        if cand.exists():
            return tuple(c.strip() for c in cand.read_text().strip().split(","))
    return default


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
    jobs = read_csv(job_path, PAI_JOB_COLUMNS, names=_header_names(job_path, PAI_JOB_COLUMNS))
    tasks = read_csv(task_path, PAI_TASK_COLUMNS, names=_header_names(task_path, PAI_TASK_COLUMNS))
    report = LoadReport(str(job_path), rows_read=len(jobs))

    tchk = RowChecker(task_path, len(tasks), report, skip_bad_rows)
    inst, bad = numbers(tasks, "inst_num")
    tchk.check(
        bad.to_numpy() | (inst < 0).to_numpy(), "inst_num", "not a non-negative number", tasks["inst_num"]
    )
    pg, bad = numbers(tasks, "plan_gpu")
    tchk.check(
        bad.to_numpy() | (pg < 0).to_numpy(), "plan_gpu", "not a non-negative number", tasks["plan_gpu"]
    )
    t = tasks[tchk.keep].assign(gpus=(inst.fillna(1) * pg.fillna(0) / 100.0)[tchk.keep])
    per_job = t.groupby("job_name", sort=False).agg(gpus=("gpus", "sum"), gpu_type=("gpu_type", "first"))

    chk = RowChecker(job_path, len(jobs), report, skip_bad_rows)
    st, bad = numbers(jobs, "start_time")
    chk.check(
        bad.to_numpy() | st.isna().to_numpy(), "start_time", "not a number (seconds)", jobs["start_time"]
    )
    en, bad = numbers(jobs, "end_time")
    chk.check(bad.to_numpy(), "end_time", "not a number (seconds)", jobs["end_time"])
    dur = en - st
    chk.check((dur < 0).to_numpy(), "end_time", "before start_time (negative duration)", jobs["end_time"])
    keep = chk.keep.copy()
    unfinished = keep & en.isna().to_numpy()
    report.dropped["unfinished"] = int(unfinished.sum())
    keep &= ~unfinished
    g = per_job["gpus"].reindex(jobs["job_name"]).fillna(0.0).to_numpy()
    cpu = keep & (g <= 0)
    report.dropped["CPU-only"] = int(cpu.sum())
    keep &= ~cpu
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
    df = read_csv(path, OPENB_REQUIRED)
    report = LoadReport(str(path), rows_read=len(df))
    chk = RowChecker(path, len(df), report, skip_bad_rows)
    ng, bad = numbers(df, "num_gpu")
    chk.check(
        bad.to_numpy() | ~((ng >= 0) & (ng % 1 == 0)).to_numpy(),
        "num_gpu",
        "not a non-negative integer",
        df["num_gpu"],
    )
    gm, bad = numbers(df, "gpu_milli")
    chk.check(
        bad.to_numpy() | ~((gm >= 0) & (gm <= 1000)).to_numpy(),
        "gpu_milli",
        "not a number in [0, 1000]",
        df["gpu_milli"],
    )
    cr, bad = numbers(df, "creation_time")
    chk.check(
        bad.to_numpy() | cr.isna().to_numpy(), "creation_time", "not a number (seconds)", df["creation_time"]
    )
    de, bad = numbers(df, "deletion_time")
    chk.check(bad.to_numpy(), "deletion_time", "not a number (seconds)", df["deletion_time"])
    if "scheduled_time" in df.columns:
        sc, bad = numbers(df, "scheduled_time")
        chk.check(bad.to_numpy(), "scheduled_time", "not a number (seconds)", df["scheduled_time"])
    else:
        sc = cr
    dur = de - sc
    chk.check(
        (dur < 0).to_numpy(),
        "deletion_time",
        "before scheduled_time (negative duration)",
        df["deletion_time"],
    )
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
    col = {c: df[c][keep].to_numpy() if c in df.columns else "" for c in ("gpu_spec", "qos", "pod_phase")}
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
