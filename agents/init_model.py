"""Continue training from a saved job-centric model (``gpucluster train --init-model DIR_OR_NAME``).

The new run's network starts from the old model's weights. Features are declared by name and a model pins the
names it was trained on (``meta.json``'s ``env_kwargs.features``); a run over other clusters may offer features the
old run lacked (a mixed-cluster run offers the GPU-type features a one-type run does not). The only layers that
read features directly are the first layer of ``phi`` (``[job features, context]``) and of ``rho`` (``[mean h,
max h, context]``): their columns are copied by name, and the columns of inputs the old model lacks start at zero,
so before any training step the new network computes exactly the old model's scores, value and action
probabilities on the features both have. Every other weight is copied as it is.

Refused, in one line: a model that is not MaskablePPO with the job-scoring network on the job-centric process, a
run that is not one; different network widths; a different action layout (rows, fork rows) or other environment
arguments than the features; a feature of the old model the new run does not offer. The optimizer starts fresh.
This is still RL through the gym interface (no expert labels): the run's ``meta.json`` records the model it
continued from (:func:`init_record`), and its kind reads "RL from scratch, continued from NAME".
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

SHIPPED_MODELS = Path(__file__).with_name("models")
"""The folder of the models shipped with the package (``rl-scratch``, ...), each a ``gpucluster train`` folder."""
INPUT_LAYERS = ("features_extractor.phi.0.weight", "features_extractor.rho.0.weight")
"""The layers whose input columns are features (after the feature extractor's aliases are folded in)."""


def resolve(spec: str) -> tuple[Path, str]:
    """The folder of ``spec`` (a ``gpucluster train`` folder, or the name of a shipped model) and its label (the
    name, or the folder's path)."""
    path = Path(spec)
    if (path / "meta.json").is_file():
        return path.resolve(), str(path.resolve())
    shipped = SHIPPED_MODELS / spec
    if "/" not in spec and (shipped / "meta.json").is_file():
        return shipped, spec
    known = sorted(p.name for p in SHIPPED_MODELS.iterdir() if (p / "meta.json").is_file())
    raise ValueError(f"--init-model {spec}: neither a folder written by `gpucluster train` nor a shipped model "
                     f"({', '.join(known)})")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _aliases(key: str) -> str:
    """``pi_features_extractor.*`` and ``vf_features_extractor.*`` are the shared extractor's other names."""
    for alias in ("pi_features_extractor.", "vf_features_extractor."):
        if key.startswith(alias):
            return "features_extractor." + key[len(alias):]
    return key


def init_from(model: Any, cfg: Any, spec: str) -> dict[str, Any]:
    """Load the weights of model ``spec`` into ``model`` (a new run's MaskablePPO built by ``cfg``), mapping
    input columns by feature name (module docstring); returns the record kept in the new run's ``meta.json``.
    A ``ValueError`` in one line where the two cannot be mapped."""
    from gpucluster_env.agents.model_meta import load_model, read_meta

    where, label = resolve(spec)
    head = f"--init-model {spec}"
    meta = read_meta(where)
    old_feats, new_feats = _check_run(head, meta, cfg)
    old_model, _ = load_model(where)
    if old_model.action_space.n != model.action_space.n:
        raise ValueError(f"{head}: {old_model.action_space.n} actions, this run's network {model.action_space.n} "
                         "(a different action layout)")
    old_sd = {_aliases(k): v for k, v in old_model.policy.state_dict().items()}
    new_sd = model.policy.state_dict()
    if {_aliases(k) for k in new_sd} != set(old_sd):
        extra = sorted({_aliases(k) for k in new_sd} ^ set(old_sd))
        raise ValueError(f"{head}: the networks differ in their layers ({extra[0]}; fork rows on one side only?)")
    jf_old, cf_old = list(old_feats[0]), list(old_feats[1])
    jf_new, cf_new = list(new_feats[0]), list(new_feats[1])
    d = cfg.job_dim
    # new column of each old column, per input layer: phi reads [job, context], rho [mean h, max h, context]
    cols = {
        INPUT_LAYERS[0]: [jf_new.index(n) for n in jf_old] + [len(jf_new) + cf_new.index(n) for n in cf_old],
        INPUT_LAYERS[1]: list(range(2 * d)) + [2 * d + cf_new.index(n) for n in cf_old],
    }
    model.policy.load_state_dict(_mapped_state(head, old_sd, new_sd, cols), strict=True)
    zero = ([n for n in jf_new if n not in jf_old], [n for n in cf_new if n not in cf_old])
    return init_record(spec, label, where, meta, zero)


def _check_run(head: str, meta: dict[str, Any], cfg: Any) -> tuple[Any, Any]:
    """The old model's and the new run's feature names (job, context), after checking that the old model is a
    job-centric MaskablePPO model and the new run one of the same width and environment arguments (a
    ``ValueError`` in one line naming the first difference)."""
    from gpucluster_env.agents.job_model import is_jobs_model

    if not is_jobs_model(meta) or meta.get("algo") != "maskable_ppo" or meta["config"].get("library_defaults"):
        raise ValueError(f"{head}: not a MaskablePPO model of the job-centric process (process 'jobs'); "
                         "only those continue")
    if cfg.process != "jobs" or cfg.algo != "maskable_ppo" or cfg.library_defaults:
        raise ValueError(f"{head}: continues only a maskable_ppo run of the job-centric process (--process jobs)")
    old_dim = int(meta["config"].get("job_dim", 64))
    if old_dim != cfg.job_dim:
        raise ValueError(f"{head}: its network is {old_dim} units a layer, this run's {cfg.job_dim}")
    old_kw = dict(meta.get("env_kwargs", {}))
    new_kw = dict(cfg.env_args())
    old_feats, new_feats = old_kw.pop("features", None), new_kw.pop("features", None)
    if not old_feats or not new_feats or len(old_feats) != 2 or len(new_feats) != 2:
        raise ValueError(f"{head}: no job-centric feature names to map (env_kwargs.features)")
    if old_kw != new_kw:
        diff = sorted(k for k in set(old_kw) | set(new_kw) if old_kw.get(k) != new_kw.get(k))
        k = diff[0]
        raise ValueError(f"{head}: trained with environment argument {k}={old_kw.get(k)!r}, this run has "
                         f"{new_kw.get(k)!r} (a different action layout or view; give the same --env-arg)")
    for kind, old, new in (("job", old_feats[0], new_feats[0]), ("context", old_feats[1], new_feats[1])):
        missing = [n for n in old if n not in new]
        if missing:
            raise ValueError(f"{head}: its {kind} feature(s) {', '.join(missing)} are not offered by this run "
                             f"(this run's: {', '.join(new)})")
    return old_feats, new_feats


def _mapped_state(head: str, old_sd: dict[str, Any], new_sd: dict[str, Any],
                  cols: dict[str, list[int]]) -> dict[str, Any]:
    """The new network's state: every old tensor copied, an input layer's old columns put at their new
    positions (``cols``) and its new columns zero."""
    import torch

    loaded: dict[str, torch.Tensor] = {}
    for key, target in new_sd.items():
        src = old_sd[_aliases(key)]
        if _aliases(key) in cols:
            w = torch.zeros_like(target)
            if src.shape[1] != len(cols[_aliases(key)]) or src.shape[0] != target.shape[0]:
                raise ValueError(f"{head}: layer {_aliases(key)} has shape {tuple(src.shape)}, which its "
                                 "feature names do not explain")
            w[:, cols[_aliases(key)]] = src
            loaded[key] = w
        elif src.shape != target.shape:
            raise ValueError(f"{head}: layer {_aliases(key)} is {tuple(src.shape)} there, "
                             f"{tuple(target.shape)} here (different network sizes)")
        else:
            loaded[key] = src.clone()
    return loaded


def init_record(spec: str, label: str, where: Path, meta: dict[str, Any],
                zero: tuple[list[str], list[str]]) -> dict[str, Any]:
    """What the new run's ``meta.json`` says of the model it continued from: its name or path, the sha256 of
    its ``model.zip`` and ``meta.json``, its own command and timesteps, and the inputs that started at zero."""
    return {
        "model": label,
        "given": spec,
        "path": str(where),
        "model_zip_sha256": sha256(where / "model.zip"),
        "meta_sha256": sha256(where / "meta.json"),
        "timesteps": meta.get("timesteps"),
        "command": meta.get("command"),
        "kind": meta.get("kind", "RL from scratch"),
        "zero_initialised_inputs": {"job": zero[0], "context": zero[1]},
    }


def continued_kind(record: dict[str, Any]) -> str:
    """The kind of a run continued from ``record``'s model: "RL from scratch, continued from NAME" (NAME: the
    shipped model's name, or the folder's name)."""
    name = record["model"] if "/" not in record["model"] else Path(record["model"]).name
    base = record.get("kind", "RL from scratch").split(", continued from")[0]
    return f"{base}, continued from {name}"
