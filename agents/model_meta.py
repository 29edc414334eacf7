"""A trained model's ``meta.json``: how it was trained and the environment it expects (read by every learned
policy's loader)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def read_meta(model_dir: str | Path) -> dict[str, Any]:
    """The ``meta.json`` saved beside a model (algorithm, environment arguments, seeds, versions)."""
    path = Path(model_dir) / "meta.json"
    if not path.is_file():
        raise FileNotFoundError(f"{model_dir}: no meta.json (not a directory written by `gpucluster train`)")
    from gpucluster_env.input_files import parse_json, read_text

    meta = parse_json(read_text(path), str(path))
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: expected a JSON object of metadata, got {type(meta).__name__}")
    return meta
