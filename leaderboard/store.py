"""The results folder: one JSON record per finished cell, written atomically, read back with checks.

Layout: ``DIR/<cell key>.json`` per cell (see :attr:`~gpucluster_env.leaderboard.board.Cell.key`); a record is
written with :func:`~gpucluster_env.atomic_write.atomic_output` (a hidden temporary file in ``DIR``, renamed over
its final name), so a killed run leaves complete records or none. Reading a folder never changes it: temporary
files (another process's write in flight, or one a killed run left) are skipped; a writer removes the stale
ones on its first write (:func:`~gpucluster_env.atomic_write.remove_stale_temporaries`). Sub-folders (e.g.
plots) are ignored; any other file is foreign and stops the command with a one-line error, as does a record
that is not valid JSON or not of this format.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic_write import atomic_output, is_temporary, remove_stale_temporaries
from .board import Cell, canonical

RECORD_FORMAT = "gpucluster-leaderboard-record"
RECORD_VERSION = 1


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
    if path.suffix != ".json":
        raise ValueError(f"{path}: foreign file in the results folder (not a leaderboard record); move it out")
    try:
        rec = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: corrupt record ({e}); delete it and run again to redo the cell") from None
    if not isinstance(rec, dict) or rec.get("format") != RECORD_FORMAT:
        raise ValueError(f"{path}: foreign file in the results folder (not a {RECORD_FORMAT}); move it out")
    if rec.get("format_version") != RECORD_VERSION:
        raise ValueError(f"{path}: record format version {rec.get('format_version')!r}, this package reads "
                         f"{RECORD_VERSION}")
    try:
        cell = Cell.from_dict(rec["cell"])
        ok = cell.key == rec["key"] == path.stem and isinstance(rec["metrics"], dict)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path}: corrupt record (missing or bad field {e}); delete it and run again") from None
    if not ok:
        raise ValueError(f"{path}: corrupt record (its cell does not match its key or name); delete it and run again")
    return rec


def make_record(cell: Cell, result: dict[str, Any], provenance: dict[str, Any]) -> dict[str, Any]:
    """The record of a finished cell: its cell, metrics, per-job results, wall time and provenance."""
    result = dict(result)
    detail = result.pop("jobs_detail", None)
    meta = {k: result.pop(k) for k in ("scenario", "policy", "policy_options", "seed", "trace", "wall_s", "steps",
                                       "truncated") if k in result}
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
        "wall_s": meta.get("wall_s"),
        **provenance,
    }
