"""Gavel's ``.trace`` files (per virtual cluster, derived from Philly): tab-separated, no header, in one of two
layouts, told apart by the number of fields of the file's first row:

* 7 fields (the Philly-derived files shipped with Gavel's OSDI'20 artifact): ``job_type, command,
  num_steps_arg, needs_data_dir, total_steps, arrival_time_s, scale_factor``. (``../shared/data/README.md``
  lists ``scale_factor`` fourth, but the real files hold ``needs_data_dir`` (0/1) there and the GPU count
  last, e.g. A3C rows with 0 in column 4.)
* 10 fields (what Gavel's current generator writes and its ``parse_trace`` reads): ``job_type, command,
  working_directory, num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight, SLO,
  arrival_time_s``.

Step units: Gavel's ``total_steps`` of an n-GPU job counts steps summed over its n workers (its generator
multiplies the run time by the job's throughput at scale factor n, which Gavel's throughput tables give summed
over the workers, e.g. LM 28 steps/s on one V100 and 58 on two). The engine's iteration is one synchronous step
of all workers, so ``iterations = total_steps / scale_factor``.

The job type (e.g. ``ResNet-50 (batch size 64)``) is kept and mapped to the catalog's model name and batch
size. Durations are not in the file: with a Gavel throughput table (``simulation_throughputs.json``) they are
``total_steps / steps_per_s`` on the reference GPU type (both summed over the workers), otherwise NaN.

Cite: Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads",
OSDI'20.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
from gpucluster_env.traces.files import numbers, open_text, read_csv
from gpucluster_env.traces.tables import LoadReport, RowChecker, TraceFormatError, finish

from gpucluster_env.catalog.solo import GAVEL_FAMILY_MODEL
from gpucluster_env.jobs import MAX_BATCH_SIZE

GAVEL_COLUMNS = (
    "job_type",
    "command",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "arrival_time_s",
    "scale_factor",
)
"""The 7-field layout of the OSDI'20 artifact's Philly-derived files."""

GAVEL_COLUMNS_10 = (
    "job_type",
    "command",
    "working_directory",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "scale_factor",
    "priority_weight",
    "slo",
    "arrival_time_s",
)
"""The 10-field layout Gavel's current generator writes (``SLO`` < 0 or absent: none)."""

GAVEL_LAYOUTS = {len(GAVEL_COLUMNS): GAVEL_COLUMNS, len(GAVEL_COLUMNS_10): GAVEL_COLUMNS_10}

GAVEL_MODEL_NAMES = GAVEL_FAMILY_MODEL
"""Gavel's job-type families -> the catalog's model names (:data:`gpucluster_env.catalog.solo.GAVEL_FAMILY_MODEL`)."""
"""Gavel job-type family -> catalog model name (scenarios.GAVEL_MODELS)."""

MAX_STEPS = 1e12
"""The most training steps a job may have (Gavel's traces: at most a few million)."""

_JOB_TYPE = re.compile(r"^(?P<family>.+?)\s*\(batch size (?P<batch>\d+)\)\s*$")


def parse_job_type(job_type: str) -> tuple[str, int | None]:
    """``'ResNet-50 (batch size 64)'`` -> ``('resnet50', 64)``; unknown families are lower-cased."""
    m = _JOB_TYPE.match(job_type)
    family, batch = (m.group("family"), int(m.group("batch"))) if m else (job_type.strip(), None)
    return GAVEL_MODEL_NAMES.get(family, family.lower().replace("-", "")), batch


def load_gavel_throughputs(path: str | Path, gpu_type: str = "v100") -> dict[tuple[str, int], float]:
    """Solo steps/s per ``(job_type, scale_factor)`` on ``gpu_type`` from Gavel's throughput JSON."""
    raw = json.loads(Path(path).read_text())
    out: dict[tuple[str, int], float] = {}
    for key, val in raw[gpu_type].items():
        m = re.match(r"^\('(.+)', (\d+)\)$", key)
        if m and isinstance(val, dict) and val.get("null"):
            out[(m.group(1), int(m.group(2)))] = float(val["null"])
    return out


def gavel_layout(path: str | Path) -> tuple[str, ...]:
    """The column names of a Gavel ``.trace`` file, from the number of fields of its first non-blank row (7 or
    10); any other count is an error naming the file and the row."""
    first = next(ln for ln in open_text(path).getvalue().splitlines() if ln.strip())
    n = first.count("\t") + 1
    if n not in GAVEL_LAYOUTS:
        raise TraceFormatError(
            f"{path}: row 1: expected {len(GAVEL_COLUMNS)} tab-separated fields ({', '.join(GAVEL_COLUMNS)}) or "
            f"{len(GAVEL_COLUMNS_10)} ({', '.join(GAVEL_COLUMNS_10)}), found {n}")
    return GAVEL_LAYOUTS[n]


def load_gavel_trace(
    path: str | Path, skip_bad_rows: bool = False, throughputs: dict[tuple[str, int], float] | None = None
) -> tuple[pd.DataFrame, LoadReport]:
    """Load one Gavel ``.trace`` file (either layout, :func:`gavel_layout`); ``vc`` is the file's stem,
    ``model``/``batch_size`` come from the job type, ``iterations`` is ``total_steps / scale_factor`` (one
    iteration is a step of every worker). The 10-field layout adds ``priority_weight`` and ``slo`` (NaN: none)."""
    report = LoadReport(str(path))
    cols = gavel_layout(path)
    df = read_csv(path, cols, names=cols, sep="\t", report=report, skip_bad_rows=skip_bad_rows)
    report.rows_read = len(df) + report.skipped_count
    chk = RowChecker.for_table(path, df, report, skip_bad_rows)
    chk.check(df["job_type"].isna().to_numpy(), "job_type", "empty")
    gpus, bad = numbers(df, "scale_factor")
    chk.count(gpus, df["scale_factor"], bad, "scale_factor", low=1)
    steps, bad = numbers(df, "total_steps")
    with np.errstate(invalid="ignore"):
        ok = (steps > 0).to_numpy() & (steps <= MAX_STEPS).to_numpy()
    chk.check(bad.to_numpy() | ~ok, "total_steps", f"not a number of steps in (0, {MAX_STEPS:g}]", df["total_steps"])
    arr, bad = numbers(df, "arrival_time_s")
    chk.time(arr, df["arrival_time_s"], bad, "arrival_time_s", required=True)
    chk.check((arr < 0).to_numpy(), "arrival_time_s", "negative arrival time", df["arrival_time_s"])
    extra: dict[str, np.ndarray] = {}
    if "priority_weight" in df.columns:
        w, bad = numbers(df, "priority_weight")
        with np.errstate(invalid="ignore"):
            okw = np.isfinite(w.to_numpy(float)) & (w.to_numpy(float) > 0)
        chk.check(bad.to_numpy() | ~okw, "priority_weight", "not a positive number", df["priority_weight"])
        slo, bad = numbers(df, "slo")
        chk.check(bad.to_numpy() | np.isnan(slo.to_numpy(float)) | np.isinf(slo.to_numpy(float)), "slo",
                  "not a number (Gavel writes -1 for no SLO)", df["slo"])
        extra = {"priority_weight": w.to_numpy(float), "slo": np.where(slo.to_numpy(float) > 0, slo, np.nan)}
    batches = [parse_job_type(t)[1] if isinstance(t, str) else None for t in df["job_type"]]
    chk.check(np.array([b is not None and not (1 <= b <= MAX_BATCH_SIZE) for b in batches], dtype=bool),
              "job_type", f"batch size must be from 1 to {MAX_BATCH_SIZE:,}", df["job_type"])
    k = chk.keep
    jt = df["job_type"][k].astype(str).to_numpy()
    parsed = [parse_job_type(t) for t in jt]
    g = gpus[k].to_numpy().astype(np.int64)
    st = steps[k].to_numpy(float)
    if throughputs:
        rate = np.array([throughputs.get((t, int(n)), np.nan) for t, n in zip(jt, g, strict=True)])
        dur = st / rate
    else:
        dur = np.full(len(st), np.nan)
    stem = Path(path).name.split(".")[0]
    out = pd.DataFrame(
        {
            "job_id": [f"{stem}-{i}" for i in np.asarray(chk.rows)[k]],
            "submit_s": arr[k].to_numpy(float),
            "num_gpus": g,
            "duration_s": dur,
            "vc": stem,
            "job_type": jt,
            "model": [p[0] for p in parsed],
            "batch_size": [p[1] if p[1] is not None else -1 for p in parsed],
            "iterations": st / g,
            **{c: v[k] for c, v in extra.items()},
        }
    )
    return finish(out, path), report


def load_gavel_dir(
    path: str | Path, skip_bad_rows: bool = False, throughputs: dict[tuple[str, int], float] | None = None
) -> tuple[pd.DataFrame, LoadReport]:
    """All ``*.trace`` files of a folder (one per VC) as one table; arrival times are per file from 0."""
    files = sorted(Path(path).glob("*.trace"))
    if not files:
        raise FileNotFoundError(f"{path}: no *.trace files")
    parts, report = [], LoadReport(str(path))
    for f in files:
        df, rep = load_gavel_trace(f, skip_bad_rows, throughputs)
        parts.append(df)
        report.rows_read += rep.rows_read
        report.skipped += rep.skipped
    return finish(pd.concat(parts, ignore_index=True), path), report
