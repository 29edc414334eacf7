"""The project's own trace format: the normalized table as CSV, which ``gpucluster traces sample`` writes, so a
sampled (or hand-written) file runs again with ``gpucluster run --trace FILE``.

Columns (header required): ``job_id``, ``submit_s`` (seconds, any origin), ``num_gpus``, ``duration_s``, and
optionally ``vc``, ``user``, ``status`` and ``model`` (the job's model: the ``file-models`` recipe runs each job
as its own model, and ``gpucluster run --trace`` picks that recipe when the column is there); see
:mod:`gpucluster_env.traces.tables`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from gpucluster_env.traces.files import numbers, read_csv
from gpucluster_env.traces.tables import LoadReport, RowChecker, finish

REQUIRED = ("job_id", "submit_s", "num_gpus", "duration_s")
OPTIONAL = ("vc", "user", "status", "model")


def load_normalized_csv(path: str | Path, skip_bad_rows: bool = False) -> tuple[pd.DataFrame, LoadReport]:
    """Load a normalized-table CSV, checking every row as the other loaders do (ids, finite submit times,
    integer GPU counts, real run times); jobs without GPUs are dropped and counted (``CPU-only``)."""
    report = LoadReport(str(path))
    df = read_csv(path, REQUIRED, report=report, skip_bad_rows=skip_bad_rows)
    return check_table(df, path, report, skip_bad_rows)


def check_table(df: pd.DataFrame, path: str | Path, report: LoadReport, skip_bad_rows: bool,
                scale: dict[str, float] | None = None) -> tuple[pd.DataFrame, LoadReport]:
    """The normalized table of ``df`` (its columns named as :data:`REQUIRED`, plus any of :data:`OPTIONAL`, all
    strings as read), every row checked; ``scale``: seconds per unit of ``submit_s`` / ``duration_s`` where a
    file gives them in other units (:mod:`gpucluster_env.traces.column_map`)."""
    scale = scale or {}
    report.rows_read = len(df) + report.skipped_count
    chk = RowChecker.for_table(path, df, report, skip_bad_rows)
    chk.ident(df["job_id"], "job_id")
    sub, bad_sub = numbers(df, "submit_s")
    sub = sub * scale.get("submit_s", 1.0)
    chk.time(sub, df["submit_s"], bad_sub, "submit_s", required=True)
    dur, bad_dur = numbers(df, "duration_s")
    dur = dur * scale.get("duration_s", 1.0)
    chk.check(bad_dur.to_numpy() | dur.isna().to_numpy(), "duration_s", "not a number", df["duration_s"])
    chk.duration(dur, df["duration_s"], "duration_s")
    gpus, bad_g = numbers(df, "num_gpus")
    chk.count(gpus, df["num_gpus"], bad_g, "num_gpus")
    if "model" in df.columns:
        chk.check((df["model"].str.strip() == "").to_numpy(), "model", "empty", df["model"])
    chk.drop_cpu_only((gpus == 0).to_numpy())
    keep = chk.keep
    out = pd.DataFrame(
        {
            "job_id": df["job_id"][keep].to_numpy(),
            "submit_s": sub[keep].to_numpy(),
            "num_gpus": gpus[keep].to_numpy(),
            "duration_s": dur[keep].to_numpy(),
            **{c: df[c][keep].to_numpy() for c in OPTIONAL if c in df.columns},
        }
    )
    if "model" in out.columns:
        out["model"] = out["model"].astype(str).str.strip()
    return finish(out, path), report
