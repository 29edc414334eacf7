"""A trained model's folder: its ``meta.json`` (how it was trained and the environment it expects, read by every
learned policy's loader) and its SB3 model."""

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


def load_model(model_dir: str | Path, zip_name: str = "model.zip") -> tuple[Any, dict[str, Any]]:
    """The trained SB3 model of ``model_dir`` (on the CPU; ``zip_name``: another file of the run, e.g. a
    checkpoint) and its metadata."""
    meta = read_meta(model_dir)
    zip_path = Path(model_dir) / zip_name
    if not zip_path.is_file():
        raise FileNotFoundError(f"{model_dir}: no {zip_name}")
    algo = meta.get("algo")
    if algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO as cls
    elif algo == "ppo":
        from stable_baselines3 import PPO as cls
    elif algo == "a2c":
        from stable_baselines3 import A2C as cls
    elif algo == "dqn":
        from stable_baselines3 import DQN as cls
    else:
        raise ValueError(f"{model_dir}: unknown algorithm {algo!r} in meta.json")
    return cls.load(str(zip_path), device="cpu"), meta
