"""The traces the project knows by name (declared in :mod:`.known_traces`): where their files live
(``$GPUCLUSTER_DATA``, the user cache, ``../shared/data`` beside a source checkout, or the package's own copy),
and how to load them.

Every data root is laid out like ``../shared/data``: ``traces/philly/philly_jobs.csv``,
``traces/venus/cluster_log.csv``, ``traces/alibaba/pai_v2020/pai_job_table.csv``,
``traces/alibaba/gpu_v2023/openb_pod_list_default.csv`` …
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import pandas as pd
from gpucluster_env.traces.known_traces import TRACES, TraceSpec
from gpucluster_env.traces.known_traces import RemoteFile as RemoteFile  # re-exported: fetch and tests use it
from gpucluster_env.traces.tables import LoadReport
from gpucluster_env.traces.trace_options import TRACE_FILE_FORMATS

from gpucluster_env import data_folders


def get_trace(name: str) -> TraceSpec:
    try:
        return TRACES[name]
    except KeyError:
        raise ValueError(f"unknown trace {name!r}; known: {', '.join(TRACES)}") from None


cache_dir = data_folders.cache_dir
data_roots = data_folders.data_roots
"""The folders trace files are looked for in (:mod:`gpucluster_env.data_folders`, the one resolver)."""


def locate(name: str) -> Path | None:
    """The primary file (or folder) of trace ``name`` in the first data root that has all its files, else the
    package's shipped copy (:func:`shipped_copy`), else None."""
    spec = get_trace(name)
    for root in data_roots():
        if all((root / f.relpath).exists() for f in spec.files):
            return root / spec.primary
    return shipped_copy(name)


SHIPPED_DIR = Path(__file__).resolve().parent / "embedded"
"""Where the package keeps its copies of the real job tables it may redistribute (CC-BY-4.0), with their
licences and attribution (``embedded/REAL_TRACES.md``)."""


def shipped_copy(name: str) -> Path | None:
    """The package's gzip copy of trace ``name``'s file (byte for byte the pinned source once decompressed;
    ``tests/traces/test_shipped_real.py`` checks it), or None when it ships none."""
    spec = get_trace(name)
    if spec.shipped is None:
        return None
    path = SHIPPED_DIR / spec.shipped
    return path if path.is_file() else None


def is_shipped(name: str, path: Path) -> bool:
    """Whether ``path`` (from :func:`locate`) is the package's shipped copy of trace ``name``."""
    copy = shipped_copy(name)
    return copy is not None and Path(path) == copy


def loader_for(fmt: str) -> Callable[..., tuple[pd.DataFrame, LoadReport]]:
    """The loader function of a format key (one of :data:`~gpucluster_env.traces.trace_options.TRACE_FILE_FORMATS`)."""
    from gpucluster_env.traces import alibaba, gavel, helios, helios_slice, normalized, philly
    from gpucluster_env.traces.helios_jobs import load_helios_jobs
    from gpucluster_env.traces.pollux_workloads import load_pollux_workload

    table: dict[str, Callable[..., tuple[pd.DataFrame, LoadReport]]] = {
        "philly-csv": philly.load_philly_csv,
        "philly-json": philly.load_philly_job_log,
        "gavel": gavel.load_gavel_trace,
        "gavel-dir": gavel.load_gavel_dir,
        "helios": helios.load_helios,
        "helios-slice": helios_slice.load_helios_slice,
        "helios-jobs": load_helios_jobs,
        "pai": alibaba.load_pai,
        "openb": alibaba.load_openb_pods,
        "pai-jobs": alibaba.load_pai_jobs,
        "pollux-workload": load_pollux_workload,
        "table": normalized.load_normalized_csv,
    }
    if fmt not in TRACE_FILE_FORMATS:  # the one list (a loader not listed there is unreachable; a test checks)
        raise ValueError(f"unknown trace format {fmt!r}; known: {', '.join(TRACE_FILE_FORMATS)}")
    return table[fmt]


FORMAT_NAMES = TRACE_FILE_FORMATS  # declared with the scenario options (scenarios.py)


def _sniff(p: Path) -> str | None:
    """The format of a trace file from its first line (the header columns each format has), or None."""
    from gpucluster_env.traces.files import open_text

    first = next((ln for ln in open_text(p).getvalue().splitlines() if ln.strip() and not ln.startswith("#")), "")
    if first.lstrip().startswith("["):
        return "philly-json"
    cols = {c.strip() for c in first.split(",")}
    if {"timestamp", "duration", "num_gpus"} <= cols:
        return "philly-csv"
    if {"job_id", "gpu_num", "submit_time"} <= cols:
        return "helios"
    if {"job_id", "tenant", "submit_time", "num_chips"} <= cols:
        return "helios-slice"
    if {"job_id", "arrival_s", "service_sec", "gpu_count"} <= cols:
        return "helios-jobs"
    if {"job_name", "submit_time", "duration", "num_gpu", "gpu_types"} <= cols:
        return "pai-jobs"
    if {"name", "num_gpu", "gpu_milli"} <= cols:
        return "openb"
    if first.count("\t") == 6 and "(batch size" in first:
        return "gavel"
    if {"name", "time", "application", "num_replicas", "batch_size"} <= cols:
        return "pollux-workload"  # Pollux's workload-N.csv (its artifact's simulator inputs)
    if {"job_id", "submit_s", "num_gpus", "duration_s"} <= cols:
        return "table"  # the normalized table, as `traces sample` writes it
    return None


_NAME_HINTS = (
    ("cluster_job_log", "philly-json"),
    ("philly", "philly-csv"),
    (".trace", "gavel"),
    ("cluster_log", "helios"),
    ("pai_job_table", "pai"),
    ("pai_gpu_jobs", "pai-jobs"),
    ("openb_pod_list", "openb"),
)
"""Parts of the official file names and their formats: a hint, used when the content does not tell."""


def guess_format(path: str | Path) -> str:
    """The format of a trace file: from its content (the first line's columns), else from its name (the
    official file names; PAI's tables have no header), so a renamed or re-sampled file reads as what it is."""
    p = Path(path)
    n = p.name.lower()
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or folder")
    if p.is_dir():
        return "gavel-dir"
    sniffed = _sniff(p)
    if sniffed:
        return sniffed
    for key, fmt in _NAME_HINTS:
        if key in n:
            return fmt
    if n.endswith(".json") or n.endswith(".json.gz"):
        return "philly-json"
    raise ValueError(
        f"{p}: cannot tell the trace format from its first line or its file name; pass a format "
        f"({', '.join(FORMAT_NAMES)}), or name its columns (run --columns submit_s=COL,num_gpus=COL,duration_s=COL)"
    )


def load_file(
    path: str | Path, fmt: str | None = None, skip_bad_rows: bool = False, columns: str | None = None
) -> tuple[pd.DataFrame, LoadReport]:
    """Load a trace file in any supported official format into the normalized table; ``columns``: any CSV read
    through a column map instead (:mod:`gpucluster_env.traces.column_map`)."""
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if columns is not None:
        from gpucluster_env.traces.column_map import load_mapped_csv

        return load_mapped_csv(path, columns, skip_bad_rows)
    return loader_for(fmt or guess_format(path))(path, skip_bad_rows=skip_bad_rows)


@lru_cache(maxsize=8)
def _load_cached(path: str, fmt: str, mtime: float) -> tuple[pd.DataFrame, LoadReport]:
    return load_file(path, fmt)


def load_trace(name: str) -> tuple[pd.DataFrame, LoadReport] | None:
    """The real trace ``name`` if its files are found (cached per file version), else None. The returned
    table is a copy the caller may change."""
    path = locate(name)
    if path is None:
        return None
    fmt = get_trace(name).loader
    df, rep = _load_cached(str(path), fmt, path.stat().st_mtime)
    out = df.copy()
    out.attrs = dict(df.attrs)
    return out, rep
