"""Opening trace files: gzip by content (and a clear error when a ``.gz`` file is not gzip), empty files,
CSV headers checked for the columns a format needs."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pandas as pd

from .tables import TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"


def read_bytes_head(path: Path, n: int = 2) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


def open_text(path: str | Path) -> io.TextIOBase:
    """A text stream over ``path``, decompressing gzip (detected by content). A file named ``*.gz`` that is
    not
    gzip, or an empty file, raises :class:`TraceFormatError` naming it."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file")
    if p.is_dir():
        raise TraceFormatError(f"{p}: is a directory, expected a trace file")
    head = read_bytes_head(p)
    if p.suffix == ".gz" and head != GZIP_MAGIC:
        raise TraceFormatError(f"{p}: named .gz but is not gzip-compressed (starts with {head!r})")
    if head == GZIP_MAGIC:
        try:
            data = gzip.open(p, "rt", encoding="utf-8", newline="").read()
        except (OSError, EOFError) as e:
            raise TraceFormatError(f"{p}: corrupt gzip stream ({e})") from None
    else:
        data = p.read_text(encoding="utf-8", errors="replace")
    if not data.strip():
        raise TraceFormatError(f"{p}: empty file")
    return io.StringIO(data)


def read_csv(
    path: str | Path, required: tuple[str, ...], names: tuple[str, ...] | None = None, sep: str = ","
) -> pd.DataFrame:
    """Read a CSV (all columns as strings, converted by the caller) and check the ``required`` columns.

    ``names``: the column names for a headerless file (Alibaba PAI tables ship without a header, the names are
    in ``*.header``); a first line equal to the names is taken as a header and skipped.
    """
    stream = open_text(path)
    if names is not None:
        first = stream.readline().strip().split(sep)
        if [c.strip() for c in first] != list(names):
            stream.seek(0)
        df = pd.read_csv(
            stream,
            sep=sep,
            header=None,
            names=list(names),
            dtype=str,
            keep_default_na=False,
            na_values=[""],
            index_col=False,
        )
    else:
        df = pd.read_csv(stream, sep=sep, dtype=str, keep_default_na=False, na_values=[""])
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise TraceFormatError(
            f"{path}: missing column(s) {', '.join(repr(c) for c in missing)} "
            f"(found: {', '.join(df.columns)})"
        )
    if len(df) == 0:
        raise TraceFormatError(f"{path}: no data rows")
    return df


def numbers(df: pd.DataFrame, col: str) -> tuple[pd.Series, pd.Series]:
    """Column ``col`` as floats and the mask of rows whose non-empty text is not a number."""
    raw = df[col]
    num = pd.to_numeric(raw, errors="coerce")
    return num, num.isna() & raw.notna()


def timestamps(df: pd.DataFrame, col: str, fmt: str = "%Y-%m-%d %H:%M:%S") -> tuple[pd.Series, pd.Series]:
    """Column ``col`` parsed as datetimes and the mask of rows whose non-empty text does not parse."""
    raw = df[col]
    ts = pd.to_datetime(raw, format=fmt, errors="coerce")
    return ts, ts.isna() & raw.notna()
