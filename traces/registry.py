"""The traces the project knows by name: where their files live (``$GPUCLUSTER_DATA``, the user cache, or
``../shared/data`` beside a source checkout), where they come from upstream, and how to load them.

Every data root is laid out like ``../shared/data``: ``traces/philly/philly_jobs.csv``,
``traces/venus/cluster_log.csv``, ``traces/alibaba/pai_v2020/pai_job_table.csv``,
``traces/alibaba/gpu_v2023/openb_pod_list_default.csv`` …
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd
from gpucluster_env.traces.tables import LoadReport
from gpucluster_env.traces.trace_options import TRACE_FILE_FORMATS


@dataclass(frozen=True)
class RemoteFile:
    """One file of a trace: its path under a data root, its public URL, and its sha256 when pinned (None: the
    upstream file could not be checked from here; ``fetch`` then prints the hash it got)."""

    relpath: str
    url: str
    sha256: str | None = None
    unpack: str | None = None  # member to extract when the URL is a .tar.gz archive


@dataclass(frozen=True)
class TraceSpec:
    """A named trace: its files, its loader, the synthetic generator standing in for it, and its citation."""

    name: str
    description: str
    files: tuple[RemoteFile, ...]
    loader: str
    synthetic: str
    citation: str
    license: str

    @property
    def primary(self) -> str:
        return self.files[0].relpath


_PHILLY_CSV_SHA = "ebffb3dd1589bdf4e7bcd74496201c5ded1d557d498ee14f560463f37ec353da"
_OPENB_SHA = "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8"
_VENUS_2VC_SHA = "15c4738f1e1da88bafc66fdb823f9455db18d89276aeb0dea2f70ab93ceae117"
"""The slice as published at mini-compute-simulator commit ce41673 (checked equal to ../shared/data's copy)."""

TRACES: dict[str, TraceSpec] = {
    t.name: t
    for t in (
        TraceSpec(
            "philly",
            "Microsoft Philly, Sep-Dec 2017: 82,247 GPU jobs (Pollux's preprocessing of cluster_job_log)",
            (
                RemoteFile(
                    "traces/philly/philly_jobs.csv",
                    "https://raw.githubusercontent.com/petuum/adaptdl/osdi21-artifact/simulator/traces/"
                    "philly_jobs.csv",
                    _PHILLY_CSV_SHA,
                ),
            ),
            "philly-csv",
            "philly",
            "Jeon et al., ATC'19; Qiao et al. (Pollux), OSDI'21",
            "CC-BY-4.0",
        ),
        TraceSpec(
            "philly-joblog",
            "Microsoft Philly official cluster_job_log (JSON; jobs with their attempts, VC, user, status)",
            (
                RemoteFile(
                    "traces/philly/cluster_job_log",
                    "https://github.com/msr-fiddle/philly-traces/raw/master/trace-data.tar.gz",
                    None,
                    unpack="trace-data/cluster_job_log",
                ),
            ),
            "philly-json",
            "philly",
            "Jeon et al., ATC'19 (msr-fiddle/philly-traces)",
            "CC-BY-4.0",
        ),
        TraceSpec(
            "philly-gavel",
            "Gavel's per-VC Philly-derived .trace files (job types, steps, arrivals)",
            (
                RemoteFile(
                    "traces/philly/gavel_msr_seed0",
                    "https://github.com/stanford-futuredata/gavel/tree/master/scheduler/traces/msr/seed=0",
                ),
            ),
            "gavel-dir",
            "philly",
            "Narayanan et al. (Gavel), OSDI'20",
            "MIT",
        ),
        TraceSpec(
            "venus",
            "SenseTime Helios 'Venus' cluster, Apr-Sep 2020: per-job cluster_log.csv",
            (
                RemoteFile(
                    "traces/venus/cluster_log.csv",
                    "https://github.com/S-Lab-System-Group/HeliosData/raw/main/data/Venus/cluster_log.csv",
                ),
            ),
            "helios",
            "venus",
            "Hu et al. (Helios), SC'21",
            "CC-BY-4.0",
        ),
        TraceSpec(
            "venus-2vc",
            "SenseTime Helios 'Venus', two VCs (vcvGl, vcvlY), 2020-09-01..26: 1,867 real per-job rows",
            (
                RemoteFile(
                    "traces/venus/helios_venus_2vc_sept.csv",
                    "https://raw.githubusercontent.com/felivalencia3/mini-compute-simulator/"
                    "ce41673615cb5430db4ef19a74bff2bbcfd1de75/tests/validation_traces/helios_venus_2vc_sept.csv",
                    _VENUS_2VC_SHA,
                ),
            ),
            "helios-slice",
            "venus",
            "Hu et al. (Helios), SC'21; slice re-published by felivalencia3/mini-compute-simulator (Apache-2.0)",
            "CC-BY-4.0",
        ),
        TraceSpec(
            "alibaba",
            "Alibaba PAI 2020 (cluster-trace-gpu-v2020): pai_job_table + pai_task_table",
            (
                RemoteFile(
                    "traces/alibaba/pai_v2020/pai_job_table.csv",
                    "https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/pai_job_table.tar.gz",
                    None,
                    unpack="pai_job_table.csv",
                ),
                RemoteFile(
                    "traces/alibaba/pai_v2020/pai_task_table.csv",
                    "https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/pai_task_table.tar.gz",
                    None,
                    unpack="pai_task_table.csv",
                ),
            ),
            "pai",
            "alibaba",
            "Weng et al. (MLaaS in the Wild), NSDI'22",
            "CC-BY-4.0",
        ),
        TraceSpec(
            "alibaba-gpu",
            "Alibaba GPU-sharing cluster 2023 (openb): 8,152 pods, fractional GPUs, GPU-type specs",
            (
                RemoteFile(
                    "traces/alibaba/gpu_v2023/openb_pod_list_default.csv",
                    "https://raw.githubusercontent.com/alibaba/clusterdata/master/cluster-trace-gpu-v2023/"
                    "csv/openb_pod_list_default.csv",
                    _OPENB_SHA,
                ),
            ),
            "openb",
            "alibaba",
            "Weng et al. (Beware of Fragmentation), ATC'23",
            "CC-BY-4.0",
        ),
    )
}


def get_trace(name: str) -> TraceSpec:
    try:
        return TRACES[name]
    except KeyError:
        raise ValueError(f"unknown trace {name!r}; known: {', '.join(TRACES)}") from None


def cache_dir() -> Path:
    """The user cache for fetched traces: ``$GPUCLUSTER_CACHE``, else ``$XDG_CACHE_HOME/gpucluster``, else
    ``~/.cache/gpucluster``; laid out like ``../shared/data``."""
    if os.environ.get("GPUCLUSTER_CACHE"):
        return Path(os.environ["GPUCLUSTER_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpucluster"


def repo_shared_data() -> Path:
    """``../shared/data`` beside the source checkout (present for developers and tests, not in a wheel)."""
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def data_roots(include_shared: bool = True) -> list[Path]:
    """Where trace files are looked for, in order: ``$GPUCLUSTER_DATA``, the user cache,
    ``../shared/data``."""
    roots = []
    if os.environ.get("GPUCLUSTER_DATA"):
        roots.append(Path(os.environ["GPUCLUSTER_DATA"]))
    roots.append(cache_dir())
    if include_shared:
        roots.append(repo_shared_data())
    return roots


def locate(name: str) -> Path | None:
    """The primary file (or folder) of trace ``name`` in the first data root that has all its files."""
    spec = get_trace(name)
    for root in data_roots():
        if all((root / f.relpath).exists() for f in spec.files):
            return root / spec.primary
    return None


def loader_for(fmt: str) -> Callable[..., tuple[pd.DataFrame, LoadReport]]:
    """The loader function of a format key (one of :data:`~gpucluster_env.traces.trace_options.TRACE_FILE_FORMATS`)."""
    from gpucluster_env.traces import alibaba, gavel, helios, helios_slice, normalized, philly
    from gpucluster_env.traces.pollux_workloads import load_pollux_workload

    table: dict[str, Callable[..., tuple[pd.DataFrame, LoadReport]]] = {
        "philly-csv": philly.load_philly_csv,
        "philly-json": philly.load_philly_job_log,
        "gavel": gavel.load_gavel_trace,
        "gavel-dir": gavel.load_gavel_dir,
        "helios": helios.load_helios,
        "helios-slice": helios_slice.load_helios_slice,
        "pai": alibaba.load_pai,
        "openb": alibaba.load_openb_pods,
        "pollux-workload": load_pollux_workload,
        "table": normalized.load_normalized_csv,
    }
    try:
        return table[fmt]
    except KeyError:
        raise ValueError(f"unknown trace format {fmt!r}; known: {', '.join(table)}") from None


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
