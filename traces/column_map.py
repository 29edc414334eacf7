"""Any CSV of jobs as a trace, by naming its columns: ``--columns submit_s=arrival:min,num_gpus=gpus,...``
(a scenario's ``trace_columns``), so a user's own log runs without renaming its header or converting its units.

The spec maps each field of the normalized table (:mod:`gpucluster_env.traces.normalized`) to a column of the
file, with an optional unit for the times: ``FIELD=COLUMN[:UNIT]``, comma-separated. Fields: ``submit_s`` and
``duration_s`` (required; units ``s``, ``ms``, ``min``, ``h``; default ``s``), ``num_gpus`` (required),
``job_id`` (default: the row number) and ``model`` (the job's model, used by the ``file-models`` recipe, which
``gpucluster run --trace`` picks when a file has one). Every row is checked as the normalized table's are
(one line naming the file, the row and the field). Columns the spec does not name are ignored.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from gpucluster_env.traces.tables import LoadReport

FIELDS = ("job_id", "submit_s", "num_gpus", "duration_s", "model")
REQUIRED_FIELDS = ("submit_s", "num_gpus", "duration_s")
TIME_FIELDS = ("submit_s", "duration_s")
UNITS = {"s": 1.0, "ms": 0.001, "min": 60.0, "h": 3600.0}
"""Seconds per unit of a time column."""


def parse_columns(spec: str) -> dict[str, tuple[str, float]]:
    """``FIELD=COLUMN[:UNIT],...`` as ``{field: (column, seconds per unit)}``; a one-line ``ValueError`` naming
    the part that is wrong (an unknown field or unit, a field twice, a required field missing)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError("trace columns: expected FIELD=COLUMN[:UNIT],... (e.g. submit_s=arrival:min,"
                         "num_gpus=gpus,duration_s=runtime:min)")
    out: dict[str, tuple[str, float]] = {}
    for part in spec.split(","):
        field, eq, rest = part.strip().partition("=")
        column, _, unit = rest.partition(":")
        if not eq or not field or not column:
            raise ValueError(f"trace columns: {part.strip()!r} is not FIELD=COLUMN[:UNIT]")
        if field not in FIELDS:
            raise ValueError(f"trace columns: unknown field {field!r}; fields: {', '.join(FIELDS)}")
        if field in out:
            raise ValueError(f"trace columns: field {field!r} given twice")
        if unit and field not in TIME_FIELDS:
            raise ValueError(f"trace columns: {field!r} takes no unit (units are for {', '.join(TIME_FIELDS)})")
        if unit and unit not in UNITS:
            raise ValueError(f"trace columns: unknown unit {unit!r} for {field!r}; units: {', '.join(UNITS)}")
        out[field] = (column.strip(), UNITS[unit or "s"])
    missing = [f for f in REQUIRED_FIELDS if f not in out]
    if missing:
        raise ValueError(f"trace columns: missing {', '.join(missing)} (required: {', '.join(REQUIRED_FIELDS)})")
    return out


def load_mapped_csv(path: str | Path, spec: str, skip_bad_rows: bool = False) -> tuple[pd.DataFrame, LoadReport]:
    """The CSV at ``path`` read through the column map ``spec`` into the normalized table, every row checked
    (:func:`gpucluster_env.traces.normalized.check_table`)."""
    from gpucluster_env.traces.files import read_csv
    from gpucluster_env.traces.normalized import check_table

    cols = parse_columns(spec)
    report = LoadReport(str(path))
    raw = read_csv(path, tuple(dict.fromkeys(c for c, _ in cols.values())), report=report,
                   skip_bad_rows=skip_bad_rows)
    df = pd.DataFrame({field: raw[column] for field, (column, _) in cols.items()})
    df.attrs = dict(raw.attrs)
    if "job_id" not in df.columns:
        rows = raw.attrs.get("rows", range(1, len(raw) + 1))
        df.insert(0, "job_id", [f"row-{r}" for r in rows])
    scale = {field: factor for field, (_, factor) in cols.items() if field in TIME_FIELDS}
    return check_table(df, path, report, skip_bad_rows, scale)
