"""A trained model's folder: its ``meta.json`` (how it was trained and the environment it expects, read by every
learned policy's loader) and its SB3 model.

Loading a model runs no code from its folder. SB3's own ``load`` unpickles entries of ``model.zip``'s ``data``
member (the policy class, spaces, schedules, buffers), so a crafted file runs whatever its author wrote. Here the
network is rebuilt by the project's own code from ``meta.json`` (plain JSON: the training configuration, as
:func:`.model_build.make_model` built it), and only the weights are read from ``model.zip``, through torch's
weights-only loader (tensors and plain containers, nothing callable). ``data`` is never read. What a model folder
can still do is choose weights: it decides the policy's actions, not what runs.
"""

from __future__ import annotations

import zipfile
from dataclasses import fields
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
    for key in ("config", "env_kwargs"):
        if key in meta and not isinstance(meta[key], dict):
            raise ValueError(f"{path}: {key!r} must be a JSON object, got {type(meta[key]).__name__}")
    return meta


def config_of(meta: dict[str, Any], model_dir: str | Path) -> Any:
    """The :class:`.train_config.TrainConfig` a model was trained with, as its ``meta.json`` records it, made
    ready to rebuild the network in one process (one in-process env, no cloning, no selection)."""
    from gpucluster_env.agents.train_config import TrainConfig

    where = Path(model_dir) / "meta.json"
    saved = meta.get("config")
    if not isinstance(saved, dict) or "algo" not in saved:
        raise ValueError(f"{where}: no training configuration ('config'), so the network cannot be rebuilt")
    if saved.get("algo") != meta.get("algo"):
        raise ValueError(f"{where}: 'algo' is {meta.get('algo')!r} but config.algo is {saved.get('algo')!r}")
    known = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(saved) - known)
    if unknown:
        raise ValueError(f"{where}: unknown training settings in 'config': {', '.join(unknown)}")
    cfg = {"process": "full", **saved}  # runs from before the job-centric process have no 'process'
    cfg.update(n_envs=1, vec="dummy", progress=False, bc_episodes=0, dagger_rounds=0, select_seeds=())
    for key in ("scenarios", "windows", "net_arch", "bc_experts"):
        if isinstance(cfg.get(key), list):
            cfg[key] = tuple(cfg[key])
    if isinstance(cfg.get("scenarios"), tuple) and cfg["scenarios"]:
        cfg["scenarios"] = (_stand_in(cfg["scenarios"][0], meta),)
    try:
        return TrainConfig(**cfg)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: its training configuration is not valid: {e}") from None


def _stand_in(scenario: str, meta: dict[str, Any]) -> str:
    """``scenario``, or where it cannot be read here (a scenario file of another machine or folder) a built-in
    scenario with as many GPU types (what the network's shapes depend on besides meta.json's windows and
    features), so a model loads wherever it is copied."""
    import os

    from gpucluster_env.scenarios import SCENARIOS

    if not isinstance(scenario, str) or scenario in SCENARIOS or os.path.exists(scenario):
        return scenario
    types = meta.get("gpu_types")
    for name, sc in SCENARIOS.items():
        if types is None or len({n.gpu_type for n in sc.cluster.nodes}) == types:
            return name
    return scenario


def play_on_one_thread() -> None:
    """Let torch run one intra-op thread, as a policy playing a model asks: it feeds one observation at a time,
    where more threads only contend for the cores (on the 2-core machine under load, one episode of
    ``rl-scratch-mixed`` took 4x the CPU with torch's default of two threads; the same episode either way).
    Called by the policies that play a loaded model, not by :func:`load_model` (training sets its own
    ``--threads``, also when it continues from a model)."""
    import torch

    torch.set_num_threads(1)


def load_model(model_dir: str | Path, zip_name: str = "model.zip") -> tuple[Any, dict[str, Any]]:
    """The trained SB3 model of ``model_dir`` (on the CPU; ``zip_name``: another file of the run, e.g. a
    checkpoint) and its metadata: the network rebuilt from ``meta.json``, the weights read weights-only (module
    docstring). A model whose weights do not fit the network its ``meta.json`` describes is refused with one
    line."""
    meta = read_meta(model_dir)
    zip_path = Path(model_dir) / zip_name
    if not zip_path.is_file():
        raise FileNotFoundError(f"{model_dir}: no {zip_name}")
    algo = meta.get("algo")
    from gpucluster_env.agents.train_config import ALGOS

    if algo not in ALGOS:
        raise ValueError(f"{model_dir}: unknown algorithm {algo!r} in meta.json; known: {', '.join(ALGOS)}")
    cfg = config_of(meta, model_dir)
    from gpucluster_env.agents.model_build import make_env, make_model
    from stable_baselines3.common.vec_env import DummyVecEnv

    model = make_model(cfg, DummyVecEnv([make_env(cfg, 0)]), None, inference=True)
    try:
        with zipfile.ZipFile(zip_path) as z:
            names = set(z.namelist())
    except (zipfile.BadZipFile, OSError) as e:
        raise ValueError(f"{zip_path}: not a readable zip archive ({e})") from None
    if "policy.pth" not in names:
        raise ValueError(f"{zip_path}: no policy.pth member (the network's weights)")
    try:
        model.set_parameters(str(zip_path), exact_match=True, device="cpu")  # reads the .pth members only
    except Exception as e:  # torch's unpickler, a shape or name mismatch: all one answer
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{zip_path}: its weights do not load into the {algo} network that meta.json describes "
                         f"({type(e).__name__}: {first[:160]})") from None
    if isinstance(meta.get("timesteps"), int):
        model.num_timesteps = meta["timesteps"]  # the run's count, as meta.json records it (not read from data)
    return model, meta
