"""The normalized trace table every loader returns, the load report, and the one-line errors for bad input.

A normalized trace is a pandas DataFrame with one row per job, sorted by submit time:

================  =======  =====================================================================
``job_id``        str      the trace's own id (or ``<file>:<row>`` when it has none)
``submit_s``      float    submit time, seconds from the trace start (the earliest job is 0)
``num_gpus``      int      GPUs requested (0 for CPU-only rows, which loaders drop by default)
``duration_s``    float    run time in seconds (NaN where the format has none, e.g. Gavel traces)
``vc``            str      virtual cluster (or ``""``)
``user``          str      user (or ``""``)
``status``        str      final state as the trace writes it (or ``""``)
================  =======  =====================================================================

Formats add their own columns (``job_type``, ``model``, ``iterations``, ``gpu_milli``, ``gpu_spec`` …).
``df.attrs["start_hour"]`` is the trace start's hour of day (used by the ``hours:A-B`` window) and
``df.attrs["source"]`` names the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from gpucluster_env.input_files import InputFileError

NORMALIZED_COLUMNS = ("job_id", "submit_s", "num_gpus", "duration_s", "vc", "user", "status")
MAX_JOB_GPUS = 100_000
"""The most GPUs one job may ask for (real traces: at most a few hundred); beyond it a count is an error."""
MAX_DURATION_S = 366 * 86400.0
"""The longest run time a job may have (real traces: Philly 54 days, Alibaba 2023 145 days)."""
MAX_TIME_S = 1e10
"""The largest absolute time stamp in seconds a numeric time column may hold (about 317 years)."""


class TraceFormatError(InputFileError):
    """Input a loader cannot read; the message is one line naming the file, the row and the field."""


@dataclass
class LoadReport:
    """What a loader read, skipped (bad rows, with ``skip_bad_rows=True``) and dropped (by design, e.g.
    CPU-only
    jobs or jobs that never started), so that a user can see exactly what became of every row."""

    source: str
    rows_read: int = 0
    skipped: list[tuple[int, str, str]] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def skipped_count(self) -> int:
        return len(self.skipped)

    def summary(self) -> str:
        """One line: rows read, kept, skipped as bad, dropped by reason."""
        parts = [f"{self.rows_read} rows read"]
        if self.skipped:
            first = self.skipped[0]
            parts.append(
                f"{len(self.skipped)} bad rows skipped (first: row {first[0]}, field {first[1]!r}: "
                f"{first[2]})"
            )
        for why, n in self.dropped.items():
            if n:
                parts.append(f"{n} dropped ({why})")
        return f"{self.source}: " + "; ".join(parts)


def row_error(source: str | Path, row: int, fld: str, problem: str) -> TraceFormatError:
    """The error for one bad row: ``FILE: row R: field 'F': PROBLEM`` (rows count data rows from 1)."""
    return TraceFormatError(f"{source}: row {row}: field {fld!r}: {problem}")


class RowChecker:
    """Collects vectorized row checks; raises on the first bad row, or with ``skip_bad_rows`` records it in
    the
    report and marks it to be dropped. Row numbers are 1-based data rows (the header is not counted)."""

    def __init__(
        self,
        source: str | Path,
        n: int,
        report: LoadReport,
        skip_bad_rows: bool,
        row_numbers: np.ndarray | None = None,
    ) -> None:
        self.source = str(source)
        self.keep = np.ones(n, dtype=bool)
        self.report = report
        self.skip = skip_bad_rows
        self.rows = row_numbers if row_numbers is not None else np.arange(1, n + 1)

    @classmethod
    def for_table(cls, source: str | Path, df: pd.DataFrame, report: LoadReport, skip_bad_rows: bool) -> RowChecker:
        """A checker over ``df`` as :func:`~.files.read_csv` returned it (its data-row numbers in
        ``df.attrs["rows"]`` when rows were skipped there)."""
        rows = df.attrs.get("rows")
        numbers = None if rows is None else np.asarray(rows, dtype=np.int64)
        return cls(source, len(df), report, skip_bad_rows, numbers)

    def drop_cpu_only(self, no_gpu: np.ndarray) -> None:
        """Drop the kept rows that ask for no GPU (``no_gpu`` true), counted as ``CPU-only`` in the report, as
        every loader does."""
        cpu = self.keep & no_gpu
        self.report.dropped["CPU-only"] = int(cpu.sum())
        self.keep &= ~cpu

    def ident(self, raw: pd.Series, fld: str) -> None:
        """A job's id: not empty (an empty id would become the text ``nan``)."""
        self.check(raw.isna().to_numpy() | (raw.astype(str).str.strip() == "").to_numpy(), fld, "empty job id")

    def unique(self, raw: pd.Series, fld: str) -> None:
        """A key that names one row only (a job table's job name): a later kept row repeating the key of an
        earlier kept row is an error (skipped, with ``skip_bad_rows``: the first row stays)."""
        idx = np.flatnonzero(self.keep)
        dup = np.zeros(len(self.keep), dtype=bool)
        dup[idx] = raw.iloc[idx].astype(str).str.strip().duplicated(keep="first").to_numpy()
        self.check(dup, fld, "repeats an earlier row's value (each job is one row)", raw)

    def count(self, values: pd.Series, raw: pd.Series, bad_text: pd.Series, fld: str, low: int = 0) -> None:
        """A GPU or instance count: an integer from ``low`` to :data:`MAX_JOB_GPUS` (``1e20``, ``inf``, ``2.5``
        and ``-1`` are errors, never a wrapped or rounded number)."""
        v = values.to_numpy(float)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(v) & (v >= low) & (v <= MAX_JOB_GPUS) & (np.mod(v, 1) == 0)
        self.check(bad_text.to_numpy() | ~ok, fld, f"not an integer from {low} to {MAX_JOB_GPUS:,}", raw)

    def duration(self, values: pd.Series, raw: pd.Series, fld: str, problem: str = "negative duration") -> None:
        """A run time: finite, >= 0 and at most :data:`MAX_DURATION_S` (NaN is left to the caller)."""
        v = values.to_numpy(float)
        with np.errstate(invalid="ignore"):
            self.check(v < 0, fld, problem, raw)
            self.check(np.isinf(v) | (v > MAX_DURATION_S), fld,
                       f"longer than {MAX_DURATION_S / 86400:g} days (not a real run time)", raw)

    def time(self, values: pd.Series, raw: pd.Series, bad_text: pd.Series, fld: str, required: bool) -> None:
        """A numeric time stamp in seconds: finite and within :data:`MAX_TIME_S` of 0 (NaN allowed unless
        ``required``)."""
        v = values.to_numpy(float)
        missing = np.isnan(v) if required else np.zeros(len(v), dtype=bool)
        with np.errstate(invalid="ignore"):
            out = np.isinf(v) | (np.abs(v) > MAX_TIME_S)
        self.check(bad_text.to_numpy() | missing | out, fld, f"not a time in seconds within {MAX_TIME_S:g}", raw)

    def check(
        self, bad: np.ndarray, fld: str, problem: str, values: np.ndarray | pd.Series | None = None
    ) -> None:
        """Flag the rows where ``bad`` is true as having ``problem`` in field ``fld``."""
        bad = np.asarray(bad, dtype=bool) & self.keep
        idx = np.flatnonzero(bad)
        if len(idx) == 0:
            return
        vals = None if values is None else np.asarray(values, dtype=object)

        def text(i: int) -> str:
            return problem if vals is None else f"{problem}, got {vals[i]!r}"

        if not self.skip:
            i = int(idx[0])
            raise row_error(self.source, int(self.rows[i]), fld, text(i))
        for i in idx:
            self.report.skipped.append((int(self.rows[i]), fld, text(int(i))))
        self.keep &= ~bad


def finish(df: pd.DataFrame, source: str | Path, start_hour: float = 0.0) -> pd.DataFrame:
    """Put a loader's table in normalized form: columns in order, types, submit from 0, sorted (stable)."""
    for col, default in (("vc", ""), ("user", ""), ("status", "")):
        if col not in df.columns:
            df[col] = default
        df[col] = df[col].fillna("").astype(str)
    df["job_id"] = df["job_id"].astype(str)
    df["num_gpus"] = df["num_gpus"].astype(np.int64)
    df["submit_s"] = df["submit_s"].astype(float)
    df["duration_s"] = df["duration_s"].astype(float)
    if len(df):
        t0 = float(df["submit_s"].min())
        df["submit_s"] -= t0
    extra = [c for c in df.columns if c not in NORMALIZED_COLUMNS]
    out = df[list(NORMALIZED_COLUMNS) + extra].sort_values("submit_s", kind="stable").reset_index(drop=True)
    out.attrs["source"] = str(source)
    out.attrs["start_hour"] = float(start_hour)
    return out
