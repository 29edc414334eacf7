"""Readers for the public measurements the catalog is calibrated on (``../shared/data/profiles``).

These files are not part of the project: they are read at fit/validation time from ``$GPUCLUSTER_DATA``
or from ``../shared/data`` beside the repository. Every reader raises ``ValueError`` with one line naming the
file and field when a file is malformed.

Sources:
- Gavel (Narayanan et al., OSDI'20), ``gavel/simulation_throughputs.json``: steps/s of 26 job types on K80,
  P100, V100, alone (``"null"``) and pairwise colocated on one GPU.
- Pollux (Qiao et al., OSDI'21), ``pollux/<model>/placements.csv``: step and sync time on T4 (g4dn.12xlarge).
- ElasticFlow (Gu et al., ASPLOS'23), ``elasticflow/{A100,T4}/<model>.csv``: iterations/s vs number of GPUs.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster_env.data_folders import data_folder

GAVEL_TYPES = {"k80": "K80", "p100": "P100", "v100": "V100"}
"""Gavel's GPU-type keys and our catalog names."""

_KEY = re.compile(r"^\('(.+)', (\d+)\)$")


def data_dir() -> Path | None:
    """The public-data folder (:func:`gpucluster_env.data_folders.data_folder`: ``$GPUCLUSTER_DATA`` if set, else
    ``../shared/data`` beside the checkout); ``None`` when it is not a folder."""
    return data_folder()


def require_data_dir() -> Path:
    """:func:`data_dir`, or a ``ValueError`` saying where the data was looked for."""
    p = data_dir()
    if p is None:
        raise ValueError(
            "public measurements not found: set GPUCLUSTER_DATA or place them at ../shared/data "
            "(profiles/gavel, profiles/pollux, profiles/elasticflow, profiles/lucid_rtx3090)"
        )
    return p


def split_job_key(key: str, path: Path | str = "gavel json") -> tuple[str, int]:
    """``"('ResNet-50 (batch size 64)', 1)"`` -> ``("ResNet-50 (batch size 64)", 1)``."""
    m = _KEY.match(key)
    if not m:
        raise ValueError(f"{path}: malformed job key {key!r} (expected \"('<job type>', <scale factor>)\")")
    return m.group(1), int(m.group(2))


def job_family(job_type: str) -> str:
    """Gavel job type -> family: ``"ResNet-50 (batch size 64)"`` -> ``"ResNet-50"``."""
    return job_type.split(" (")[0]


def job_batch(job_type: str) -> int | None:
    """Gavel job type -> batch size, or ``None`` for types without one (A3C, CycleGAN)."""
    m = re.search(r"batch size (\d+)", job_type)
    return int(m.group(1)) if m else None


@dataclass
class GavelData:
    """Gavel's measurements, by our GPU-type name.

    ``solo[gpu][(job_type, scale)]`` = steps/s alone; ``pairs[gpu][(a, b)]`` = (steps/s of a, steps/s of b)
    when the 1-GPU jobs a and b share one GPU (non-zero measurements only; both orders present).
    """

    path: Path
    solo: dict[str, dict[tuple[str, int], float]] = field(default_factory=dict)
    pairs: dict[str, dict[tuple[str, str], tuple[float, float]]] = field(default_factory=dict)

    def xi(self, gpu: str) -> dict[tuple[str, str], float]:
        """Measured interference ratio of the first job of each ordered pair: solo / colocated steps/s."""
        out = {}
        solo = self.solo[gpu]
        for (a, b), (ta, _tb) in self.pairs[gpu].items():
            out[(a, b)] = solo[(a, 1)] / ta
        return out

    def job_types(self, gpu: str) -> list[str]:
        """1-GPU job types measured alone on ``gpu``."""
        return sorted(j for (j, n) in self.solo[gpu] if n == 1)


def _positive(value: object, path: Path, where: str) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{path}: {where}: not a number: {value!r}") from None
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"{path}: {where}: expected a finite non-negative number, got {value!r}")
    return x


def load_gavel(path: Path | None = None) -> GavelData:
    """Read Gavel's ``simulation_throughputs.json`` (consolidated K80/P100/V100 entries)."""
    path = path or require_data_dir() / "profiles" / "gavel" / "simulation_throughputs.json"
    try:
        raw = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: top level must be an object keyed by GPU type")
    out = GavelData(Path(path))
    for gkey, ours in GAVEL_TYPES.items():
        block = raw.get(gkey)
        if not isinstance(block, dict):
            raise ValueError(f"{path}: missing GPU type {gkey!r}")
        solo: dict[tuple[str, int], float] = {}
        pairs: dict[tuple[str, str], tuple[float, float]] = {}
        for key, entry in block.items():
            job, scale = split_job_key(key, path)
            if not isinstance(entry, dict) or "null" not in entry:
                raise ValueError(f"{path}: {gkey}/{key}: missing field 'null' (solo throughput)")
            solo[(job, scale)] = _positive(entry["null"], path, f"{gkey}/{key}/null")
            if scale != 1:
                continue
            for other, val in entry.items():
                if other == "null":
                    continue
                job_b, scale_b = split_job_key(other, path)
                if not (isinstance(val, list) and len(val) == 2):
                    raise ValueError(f"{path}: {gkey}/{key}/{other}: expected [steps/s, steps/s]")
                ta = _positive(val[0], path, f"{gkey}/{key}/{other}[0]")
                tb = _positive(val[1], path, f"{gkey}/{key}/{other}[1]")
                if scale_b == 1 and ta > 0 and tb > 0:
                    pairs[(job, job_b)] = (ta, tb)
        for (a, b), (ta, tb) in list(pairs.items()):
            pairs.setdefault((b, a), (tb, ta))
        out.solo[ours] = solo
        out.pairs[ours] = pairs
    return out


def read_csv_rows(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows of a CSV file as dicts; ``ValueError`` naming the file if a required column is missing."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        cols = reader.fieldnames or []
        missing = [c for c in required if c not in cols]
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
        return list(reader)


def load_pollux_single(model: str, root: Path | None = None) -> list[tuple[int, float]]:
    """Pollux's single-GPU rows of ``placements.csv`` for ``model`` on T4: ``(local_bsz, step_time_s)``."""
    path = (root or require_data_dir()) / "profiles" / "pollux" / model / "placements.csv"
    rows = read_csv_rows(path, ("placement", "local_bsz", "step_time", "sync_time"))
    out = []
    for i, r in enumerate(rows, start=2):
        if r["placement"].strip() != "1":
            continue
        b = int(_positive(r["local_bsz"], path, f"line {i}: local_bsz"))
        t = _positive(r["step_time"], path, f"line {i}: step_time")
        out.append((b, t))
    if not out:
        raise ValueError(f"{path}: no single-GPU rows (placement == 1)")
    return out


def load_pollux_placements(model: str, root: Path | None = None) -> list[dict[str, float | str]]:
    """All rows of Pollux's ``placements.csv`` for ``model``: placement, local_bsz, step and sync time."""
    path = (root or require_data_dir()) / "profiles" / "pollux" / model / "placements.csv"
    rows = read_csv_rows(path, ("placement", "local_bsz", "step_time", "sync_time"))
    out: list[dict[str, float | str]] = []
    for i, r in enumerate(rows, start=2):
        out.append({
            "placement": r["placement"].strip(),
            "local_bsz": _positive(r["local_bsz"], path, f"line {i}: local_bsz"),
            "step_time": _positive(r["step_time"], path, f"line {i}: step_time"),
            "sync_time": _positive(r["sync_time"], path, f"line {i}: sync_time"),
        })
    return out


def load_elasticflow(gpu: str, model: str, root: Path | None = None) -> dict[int, dict[int, float]]:
    """ElasticFlow's iterations/s for ``model`` on ``gpu``: ``{global_batch: {num_gpus: it/s}}`` (missing,
    zero and NaN cells dropped)."""
    path = (root or require_data_dir()) / "profiles" / "elasticflow" / gpu / f"{model}.csv"
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if not header or header[0] != "global_batch_size":
            raise ValueError(f"{path}: first column must be 'global_batch_size'")
        try:
            counts = [int(c) for c in header[1:]]
        except ValueError:
            raise ValueError(f"{path}: header: GPU counts must be integers") from None
        out: dict[int, dict[int, float]] = {}
        for i, row in enumerate(reader, start=2):
            if not row:
                continue
            gbs = int(_positive(row[0], path, f"line {i}: global_batch_size"))
            cells = {}
            for n, cell in zip(counts, row[1:], strict=False):
                if cell.strip() in ("", "nan"):
                    continue
                x = _positive(cell, path, f"line {i}: {n} GPUs")
                if x > 0:
                    cells[n] = x
            out[gbs] = cells
    return out
