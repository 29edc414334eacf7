"""The results folder: one JSON record per finished cell, written atomically, read back with checks.

Layout: ``DIR/<cell key>.json`` per cell (see :attr:`~gpucluster_env.leaderboard.board.Cell.key`); a record is
written with :func:`~gpucluster_env.atomic_write.atomic_output` (a hidden temporary file in ``DIR``, renamed over
its final name), so a killed run leaves complete records or none. Reading a folder never changes it: temporary
files (another process's write in flight, or one a killed run left) are skipped; a writer removes the stale
ones on its first write (:func:`~gpucluster_env.atomic_write.remove_stale_temporaries`). Sub-folders (e.g.
plots) are ignored; any other file is foreign and stops the command with a one-line error, as does a record
that is not valid JSON or not of this format.
Records are checked on reading: one that is not valid JSON or not of this format, or whose cell or metrics are
not what a run writes (:func:`check_metrics`), stops the command with one line naming the file; a record is never
dropped or averaged in without a word.

Format version 2 added the trace to a cell's identity and wrote options in canonical form; a version-1 record
names other cells, so it stops the command (run into a new results folder).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucluster_env.leaderboard.board import Cell
from gpucluster_env.leaderboard.cell_options import canonical

from gpucluster_env.atomic_write import atomic_output, is_temporary, remove_stale_temporaries
from gpucluster_env.input_files import InputFileError, parse_json, read_text

RECORD_FORMAT = "gpucluster-leaderboard-record"
RECORD_VERSION = 3
CORE_METRICS = ("jobs", "jobs_done", "avg_jct_s", "median_jct_s", "p95_jct_s", "makespan_s", "avg_queue_s")
"""Metrics every episode's record has; the times among them are numbers (not null) once a job has finished."""
FRACTIONS = ("gpu_occupancy", "sm_activity_est", "sharing_utilization", "deadline_satisfaction")
"""Metrics that are fractions of a whole (at most 1)."""


@dataclass(frozen=True)
class Stale:
    """A record made under another environment spec or package/policy version than the current one."""

    path: Path
    why: str


class ResultStore:
    """The records of one results folder, keyed by cell key."""

    def __init__(self, root: str | Path, create: bool = False) -> None:
        self.root = Path(root)
        if not self.root.exists():
            if not create:
                raise FileNotFoundError(f"results folder {self.root} does not exist")
            self.root.mkdir(parents=True)
        if not self.root.is_dir():
            raise ValueError(f"{self.root} is not a folder")
        self.records: dict[str, dict[str, Any]] = {}
        self.paths: dict[str, Path] = {}
        self._cleaned = False
        for path in sorted(self.root.iterdir()):
            if path.is_dir() or is_temporary(path.name):  # a write in flight, or one a killed run left
                continue
            rec = read_record(path)
            self.records[rec["key"]] = rec
            self.paths[rec["key"]] = path

    def __len__(self) -> int:
        return len(self.records)

    def write(self, record: dict[str, Any]) -> Path:
        """Write ``record`` atomically (temporary file in the folder, then rename) under its cell key; the
        first write also removes the temporary files of writers that died."""
        key = record["key"]
        path = self.root / f"{key}.json"
        record = {**record, "checksum": record_checksum(record)}
        text = json.dumps(record, allow_nan=False, separators=(",", ":"))
        if not self._cleaned:
            remove_stale_temporaries(self.root)
            self._cleaned = True
        with atomic_output(path) as f:
            f.write(text.encode())
        self.records[key] = record
        self.paths[key] = path
        return path

    def stale(self, current: dict[str, dict[str, Any]]) -> list[Stale]:
        """Records of cells in ``current`` (cell key -> provenance: ``env_spec``, ``package_version``,
        ``policy_version``) whose provenance differs from the current one."""
        out = []
        for key, want in current.items():
            rec = self.records.get(key)
            if rec is None:
                continue
            diff = [k for k, v in want.items() if canonical(rec.get(k)) != canonical(v)]
            if diff:
                out.append(Stale(self.paths[key], ", ".join(
                    f"{k} {_short(rec.get(k))} (current {_short(want[k])})" for k in diff)))
        return out

    def select(self, keys: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """The records (of ``keys`` where given), in a stable order."""
        if keys is None:
            return [self.records[k] for k in sorted(self.records)]
        return [self.records[k] for k in keys if k in self.records]


def _short(v: Any) -> str:
    text = v if isinstance(v, str) else canonical(v)
    return text if len(text) <= 24 else f"{text[:10]}…(spec hash {hash_text(text)})"


def hash_text(text: str) -> str:
    """A short stable digest of ``text``."""
    import hashlib

    return hashlib.sha1(text.encode()).hexdigest()[:8]


def read_record(path: Path) -> dict[str, Any]:
    """One record, checked: JSON, this format, a cell whose key matches; else a one-line ``ValueError``."""
    if path.suffix != ".json" or not path.is_file():  # a device, FIFO or link to one is never read: it may not end
        raise ValueError(f"{path}: foreign file in the results folder (not a leaderboard record); move it out")
    try:
        rec = parse_json(read_text(path), str(path))
    except InputFileError as e:
        raise ValueError(f"{e}: a corrupt record; delete it and run again to redo the cell") from None
    if not isinstance(rec, dict) or rec.get("format") != RECORD_FORMAT:
        raise ValueError(f"{path}: foreign file in the results folder (not a {RECORD_FORMAT}); move it out")
    if rec.get("format_version") != RECORD_VERSION:
        older = {1: " (made before a cell's identity held its trace and canonical options)",
                 2: " (made before records carried a checksum)"}.get(rec.get("format_version"), "")
        raise ValueError(f"{path}: record format version {json.dumps(rec.get('format_version'))}{older}, this "
                         f"package reads {RECORD_VERSION}; run into a new results folder (--out)")
    try:
        cell = Cell.from_dict(rec["cell"])
        ok = cell.key == rec["key"] == path.stem
    except KeyError as e:
        raise ValueError(f"{path}: corrupt record (missing field {e}); delete it and run again") from None
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: corrupt record ({e}); delete it and run again") from None
    if not ok:
        raise ValueError(f"{path}: corrupt record (its cell does not match its key or name); delete it and run again")
    check_metrics(rec.get("metrics"), f"{path}: corrupt record")
    check_fields(rec, f"{path}: corrupt record")
    if rec.get("checksum") != record_checksum(rec):
        raise ValueError(f"{path}: record edited after it was written (its checksum does not match its content); "
                         "delete it and run again to redo the cell")
    return rec


def record_checksum(rec: dict[str, Any]) -> str:
    """A digest of everything in a record but its ``checksum`` field (canonical JSON, keys sorted): written with
    every record and checked by every reader, so a hand-edited metric is refused, not ranked."""
    import hashlib

    body = {k: v for k, v in rec.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _count(v: Any) -> bool:
    return v is None or (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0)


def check_fields(rec: dict[str, Any], where: str) -> None:
    """A record's other fields as a run writes them (the tables, plots and reproduction pages read them), or a
    one-line ``ValueError`` naming ``where`` and the field: ``truncated`` true or false, ``truncated_by`` (the
    limit that stopped a truncated episode) and ``trace`` text,
    ``steps`` and ``wall_s`` numbers >= 0 or null, ``versions`` an object of version texts, ``per_job`` null or
    lists (``jct_s``, ``queue_s``: numbers >= 0 or null; ``gpus``: counts) of one length per job."""
    if not isinstance(rec.get("truncated"), bool):
        raise ValueError(f"{where}: field 'truncated' must be true or false, got {json.dumps(rec.get('truncated'))}")
    if not isinstance(rec.get("truncated_by", ""), str):
        raise ValueError(f"{where}: field 'truncated_by' must be text, got {json.dumps(rec.get('truncated_by'))}")
    if not isinstance(rec.get("trace", ""), str):
        raise ValueError(f"{where}: field 'trace' must be text, got {json.dumps(rec.get('trace'))}")
    for k in ("steps", "wall_s"):
        if not _count(rec.get(k)):
            raise ValueError(f"{where}: field {k!r} must be a number >= 0 or null, got {json.dumps(rec.get(k))}")
    vers = rec.get("versions")
    if not (vers is None or (isinstance(vers, dict) and all(isinstance(v, str | None) for v in vers.values()))):
        raise ValueError(f"{where}: field 'versions' must be an object of version texts, got {json.dumps(vers)}")
    per_job = rec.get("per_job")
    if per_job is None:
        return
    if not isinstance(per_job, dict):
        raise ValueError(f"{where}: field 'per_job' must be an object or null, got {json.dumps(per_job)}")
    lengths = set()
    for k, v in per_job.items():
        ok = isinstance(v, list) and all(
            (isinstance(x, int) and not isinstance(x, bool) and x >= 0) if k == "gpus" else _count(x) for x in v)
        if not ok:
            raise ValueError(f"{where}: field 'per_job.{k}' must be a list of numbers >= 0 (or null)")
        lengths.add(len(v))
    if len(lengths) > 1 or (lengths and lengths != {rec["metrics"]["jobs"]}):
        raise ValueError(f"{where}: field 'per_job' lists must each have one entry per job ({rec['metrics']['jobs']})")


def check_metrics(metrics: Any, where: str) -> None:
    """A record's metrics as a run writes them, or a one-line ``ValueError`` naming ``where`` and the field:
    every value a finite number >= 0 (times, counts, fractions) or null (undefined in that episode, e.g.
    deadline satisfaction without deadlines); :data:`CORE_METRICS` present, the job counts integers, and the
    times numbers once a job has finished."""
    if not isinstance(metrics, dict):
        raise ValueError(f"{where}: field 'metrics' must be an object, got {metrics!r}")
    missing = [m for m in CORE_METRICS if m not in metrics]
    if missing:
        raise ValueError(f"{where}: metric {missing[0]!r} is missing")
    for k, v in metrics.items():
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise ValueError(f"{where}: metric {k!r} is {json.dumps(v)}; a metric is a finite number >= 0, or "
                             "null where undefined")
    for k in FRACTIONS:
        if isinstance(metrics.get(k), float | int) and metrics[k] > 1.0 + 1e-9:
            raise ValueError(f"{where}: metric {k!r} is {json.dumps(metrics[k])}; a fraction is at most 1")
    for k in ("jobs", "jobs_done"):
        if not isinstance(metrics[k], int):
            raise ValueError(f"{where}: metric {k!r} must be an integer count, got {json.dumps(metrics[k])}")
    if metrics["jobs_done"] > metrics["jobs"]:
        raise ValueError(f"{where}: metric 'jobs_done' ({metrics['jobs_done']}) exceeds 'jobs' ({metrics['jobs']})")
    if metrics["jobs_done"] > 0:
        for k in CORE_METRICS[2:]:
            if metrics[k] is None:
                raise ValueError(f"{where}: metric {k!r} is null although {metrics['jobs_done']} job(s) finished")


def make_record(cell: Cell, result: dict[str, Any], provenance: dict[str, Any],
                versions: dict[str, str | None] | None = None) -> dict[str, Any]:
    """The record of a finished cell: its cell, metrics, per-job results, wall time, provenance and the
    versions of the packages that made it (not part of its identity)."""
    result = dict(result)
    detail = result.pop("jobs_detail", None)
    meta = {k: result.pop(k) for k in ("scenario", "policy", "policy_options", "seed", "trace", "wall_s", "steps",
                                       "truncated", "truncated_by") if k in result}
    return {
        "format": RECORD_FORMAT,
        "format_version": RECORD_VERSION,
        "key": cell.key,
        "cell": cell.as_dict(),
        "metrics": result,
        "per_job": detail,
        "trace": meta.get("trace", ""),
        "steps": meta.get("steps"),
        "truncated": bool(meta.get("truncated", False)),
        **({"truncated_by": meta["truncated_by"]} if "truncated_by" in meta else {}),  # the limit, not a metric
        "wall_s": meta.get("wall_s"),
        "versions": versions,
        **provenance,
    }
