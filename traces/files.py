"""Opening trace files: read once within a size bound, gzip by content (and a clear error when a ``.gz`` file
is not gzip), strict UTF-8, empty files, CSV headers checked for the columns a format needs and every row for
the header's number of fields."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd
from gpucluster_env.traces.tables import MAX_TIME_S, LoadReport, RowChecker, TraceFormatError

from gpucluster_env.input_files import InputFileError, read_text


def open_text(path: str | Path) -> io.StringIO:
    """A text stream over ``path``, read once within the input bound and decompressed when gzip (by content;
    see :mod:`gpucluster_env.input_files`). A missing file, a folder, a file named ``*.gz`` that is not gzip,
    a corrupt gzip stream, binary data, bytes that are not UTF-8, or an empty file raise an error naming it."""
    p = Path(path)
    try:
        data = read_text(p, gunzip=True)
    except InputFileError as e:
        raise TraceFormatError(str(e)) from None
    if not data.strip():
        raise TraceFormatError(f"{p}: empty file")
    return io.StringIO(data, newline="")


def _field_counts(text: str, sep: str) -> tuple[list[int], list[list[str]] | None]:
    """The number of fields of every non-blank line (data rows and header alike), and the parsed rows when the
    text has quotes (then lines and rows differ, and the csv module splits them)."""
    if '"' not in text:
        lines = [ln for ln in text.replace("\r\n", "\n").split("\n") if ln != ""]
        return [ln.count(sep) + 1 for ln in lines], None
    rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=sep) if r]
    return [len(r) for r in rows], rows


def _header(path: str | Path, text: str, sep: str, parsed: list[list[str]] | None, names: tuple[str, ...] | None,
            required: tuple[str, ...]) -> tuple[list[str], bool]:
    """The CSV's column names (its first line, or ``names`` for a headerless file) and whether the first line is
    a header; a column named twice or a ``required`` one missing is a one-line :class:`TraceFormatError`."""
    if names is not None:
        first = parsed[0] if parsed is not None else next(ln for ln in text.splitlines() if ln).split(sep)
        has_header = [c.strip() for c in first] == list(names)
        header = list(names)
    else:
        has_header = True
        header = [c.strip() for c in (parsed[0] if parsed is not None else
                                      next(ln for ln in text.splitlines() if ln).split(sep))]
    dup = sorted({c for c in header if header.count(c) > 1})
    if dup:
        raise TraceFormatError(f"{path}: header: column(s) {', '.join(repr(c) for c in dup)} appear more than once")
    missing = [c for c in required if c not in header]
    if missing:
        raise TraceFormatError(f"{path}: missing column(s) {', '.join(repr(c) for c in missing)} "
                               f"(found: {', '.join(header)})")
    return header, has_header


def read_csv(
    path: str | Path,
    required: tuple[str, ...],
    names: tuple[str, ...] | None = None,
    sep: str = ",",
    report: LoadReport | None = None,
    skip_bad_rows: bool = False,
    comment: str | None = None,
) -> pd.DataFrame:
    """Read a CSV (all columns as strings, converted by the caller) and check the ``required`` columns.

    Every data row must have as many fields as the header (or ``names``): a row with a field more or less
    would shift every column after it, so it is an error naming the file and the row, or with
    ``skip_bad_rows`` a skipped row recorded in ``report``. ``df.attrs["rows"]`` then holds the data-row
    numbers (1-based, header not counted) of the rows kept.

    ``names``: the column names for a headerless file (Alibaba PAI tables ship without a header, the names are
    in ``*.header``); a first line equal to the names is taken as a header and skipped.

    ``comment``: lines starting with it before the header (a provenance preamble) are dropped.
    """
    text = open_text(path).getvalue()
    if comment is not None:
        text = strip_preamble(text, comment)
        if not text.strip():
            raise TraceFormatError(f"{path}: no header line after the {comment!r} lines")
    counts, parsed = _field_counts(text, sep)
    header, has_header = _header(path, text, sep, parsed, names, required)
    data_counts = counts[1:] if has_header else counts
    bad = [i for i, c in enumerate(data_counts) if c != len(header)]
    if bad and not skip_bad_rows:
        i = bad[0]
        raise TraceFormatError(f"{path}: row {i + 1}: expected {len(header)} fields "
                               f"({', '.join(header[:3])}, …), found {data_counts[i]}")
    for i in bad:
        if report is not None:
            report.skipped.append((i + 1, "(row)", f"expected {len(header)} fields, found {data_counts[i]}"))
    if parsed is not None or bad:
        rows = parsed[1:] if (parsed is not None and has_header) else parsed
        if rows is None:
            lines = [ln for ln in text.replace("\r\n", "\n").split("\n") if ln != ""]
            rows = [ln.split(sep) for ln in (lines[1:] if has_header else lines)]
        drop = set(bad)
        kept = [r for i, r in enumerate(rows) if i not in drop]
        df = pd.DataFrame(kept, columns=header, dtype=object).replace("", None)
        df.attrs["rows"] = tuple(i + 1 for i in range(len(rows)) if i not in drop)  # a tuple: pandas compares attrs
    else:
        df = pd.read_csv(io.StringIO(text, newline=""), sep=sep, header=0 if has_header else None,
                         names=header, dtype=str, keep_default_na=False, na_values=[""], index_col=False,
                         skip_blank_lines=True)
    df.columns = [str(c).strip() for c in df.columns]
    if len(df) == 0:
        raise TraceFormatError(f"{path}: no data rows")
    return df


def strip_preamble(text: str, comment: str) -> str:
    """``text`` without its leading lines that start with ``comment`` (blank lines among them included)."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and (lines[i].startswith(comment) or not lines[i].strip()):
        i += 1
    return "".join(lines[i:])


def numbers(df: pd.DataFrame, col: str) -> tuple[pd.Series, pd.Series]:
    """Column ``col`` as floats and the mask of rows whose non-empty text is not a number."""
    raw = df[col]
    num = pd.to_numeric(raw, errors="coerce")
    return num, num.isna() & raw.notna()


def time_offsets(chk: RowChecker, df: pd.DataFrame, col: str, unit: str, origin: str, per_second: float = 1.0
                 ) -> pd.Series:
    """Column ``col`` as times in seconds after the trace's ``origin``, the column counting ``unit`` (``per_second``
    of them a second), each row checked by ``chk``: a number from 0 to :data:`~.tables.MAX_TIME_S` seconds."""
    num, bad = numbers(df, col)
    sub = num / per_second
    v = sub.to_numpy(float)
    with np.errstate(invalid="ignore"):
        out_of_range = ~np.isfinite(v) | (v < 0) | (v > MAX_TIME_S)
    chk.check(bad.to_numpy() | out_of_range, col,
              f"not a time in {unit} from {origin} (0 to {MAX_TIME_S * per_second:g})", df[col])
    return sub


def run_times(chk: RowChecker, df: pd.DataFrame, col: str) -> pd.Series:
    """Column ``col`` as required run times in seconds, each row checked by ``chk`` (a number, not negative, not
    beyond a year)."""
    dur, bad = numbers(df, col)
    chk.check(bad.to_numpy() | dur.isna().to_numpy(), col, "not a number", df[col])
    chk.duration(dur, df[col], col)
    return dur


def gpu_counts(chk: RowChecker, df: pd.DataFrame, col: str) -> pd.Series:
    """Column ``col`` as whole GPU counts, each row checked by ``chk``; rows asking for none are dropped and
    counted as CPU-only."""
    gpus, bad = numbers(df, col)
    chk.count(gpus, df[col], bad, col)
    chk.drop_cpu_only((gpus == 0).to_numpy())
    return gpus


def timestamps(df: pd.DataFrame, col: str, fmt: str = "%Y-%m-%d %H:%M:%S") -> tuple[pd.Series, pd.Series]:
    """Column ``col`` parsed as datetimes and the mask of rows whose non-empty text does not parse."""
    raw = df[col]
    ts = pd.to_datetime(raw, format=fmt, errors="coerce")
    return ts, ts.isna() & raw.notna()
