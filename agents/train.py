"""Training with stable-baselines3 / sb3-contrib. By default MaskablePPO with the shared-weight job-scoring
network (:mod:`.job_policy`) on the job-centric decision process (``process="jobs"``,
:mod:`gpucluster_env.env.jobs_env`), discounted by simulated time (:mod:`.time_discount`), its reward relative to
SRSF on the same trace (:mod:`.reference_reward`). ``process="full"`` trains on the full action vocabulary:
MaskablePPO on the masked Dict env, PPO and DQN on the flat ``Box`` variant (their out-of-mask actions are
counted no-ops). A2C and PPO also train on the job-centric process (without masks: an out-of-mask action is
"nothing more now").

One call of :func:`train` builds ``n_envs`` environments in subprocesses (``SubprocVecEnv``), each drawing every
episode's scenario and trace window from a list (:class:`TraceWindows`: the curriculum over Philly windows),
optionally warm-starts the policy by behaviour cloning from Castor's decisions (:mod:`.bc`), and learns with a
maskable evaluation callback on held-out seeds, periodic checkpoints, CSV and (when the ``tensorboard`` package
is installed) TensorBoard logs, and a ``rich`` progress bar. The output directory holds ``model.zip``,
``meta.json`` (algorithm, configuration, seeds, ``env.spec.to_json()``, package versions, wall time),
``best/best_model.zip``, ``checkpoints/`` and ``logs/``.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gpucluster_env.agents.callbacks import (
    CriticWarmup,
    EpisodeCounter,
    remove_empty_folders,
    run_logger,
    run_summary,
)
from gpucluster_env.agents.model_build import TraceWindows, make_env, make_model, make_vec  # re-exported
from gpucluster_env.agents.train_config import (  # re-exported: the CLI, tests and tables import them from here
    ALGOS,
    EVAL_SEED,
    PROCESS_DEFAULTS,
    PROCESSES,
    SHIPPED,
    TrainConfig,
)

__all__ = ["ALGOS", "EVAL_SEED", "PROCESSES", "PROCESS_DEFAULTS", "SHIPPED", "TrainConfig", "TraceWindows",
           "make_model", "make_vec", "measure_train_speed", "train"]


def _callbacks(cfg: TrainConfig, out: Path) -> list[Any]:
    from stable_baselines3.common.callbacks import CheckpointCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    eval_cfg = TrainConfig(**{**asdict(cfg), "windows": ("",), "seed": EVAL_SEED, "n_envs": 1,
                              "input_baseline": False, "size_curriculum": None})
    eval_env = DummyVecEnv([make_env(eval_cfg, 0)])
    eval_env.seed(EVAL_SEED)
    if cfg.algo == "maskable_ppo":
        from gpucluster_env.agents.vec_masks import CachedMasks

        eval_env = CachedMasks(eval_env)  # the training env's type (SB3 warns when they differ)
    every = max(cfg.eval_freq // cfg.n_envs, 1)
    kwargs = {"eval_freq": every, "n_eval_episodes": cfg.eval_episodes * len(cfg.scenarios), "deterministic": True,
              "best_model_save_path": str(out / "best"), "log_path": str(out / "eval"), "verbose": 0}
    if cfg.algo == "maskable_ppo":
        from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback

        ev = MaskableEvalCallback(eval_env, **kwargs)
    else:
        from stable_baselines3.common.callbacks import EvalCallback

        ev = EvalCallback(eval_env, **kwargs)
    ckpt = CheckpointCallback(max(cfg.checkpoint_freq // cfg.n_envs, 1), str(out / "checkpoints"), "model")
    cbs = [ev, ckpt, EpisodeCounter()]
    if cfg.critic_warmup > 0 and cfg.algo != "dqn":
        cbs.append(CriticWarmup(cfg.critic_warmup))
    if cfg.input_baseline:  # notes each step's time and episode, and takes the padding off the step count
        from gpucluster_env.agents.input_baseline import GroupSteps

        cbs.append(GroupSteps())
    elif cfg.process == "jobs" and cfg.time_discount_s and cfg.algo == "maskable_ppo":
        from gpucluster_env.agents.time_discount import NoteStepTimes

        cbs.append(NoteStepTimes())
    if cfg.progress:
        from gpucluster_env.agents.progress import RichProgress

        cbs.append(RichProgress(cfg.timesteps))
    return cbs


def versions() -> dict[str, str | None]:
    """Versions of the packages a saved model depends on (:func:`gpucluster_env.versions.package_versions`)."""
    from gpucluster_env.versions import package_versions

    return package_versions(("gpucluster-env", "stable-baselines3", "sb3-contrib", "torch", "gymnasium", "numpy"))


def env_spec_json(cfg: TrainConfig) -> str:
    """``env.spec.to_json()`` of the run's first scenario with the run's environment arguments."""
    from gpucluster_env.registration import make_id

    name, kwargs = make_id(cfg.scenarios[0], cfg.process)  # a scenario file goes through the generic id
    env = gym.make(name, **kwargs, **cfg.env_args())
    try:
        return env.spec.to_json()
    finally:
        env.close()


def _trained_actions(cfg: TrainConfig, masks: np.ndarray) -> list[str]:
    """The kinds of action the union of ``masks`` (the training env's masks) allowed."""
    from gpucluster_env.agents.trained_actions import seen_kinds

    from gpucluster_env.env import GPUClusterEnv

    env = GPUClusterEnv(cfg.scenarios[0], **cfg.env_args())
    try:
        return seen_kinds(env, masks)
    finally:
        env.close()


def default_job_features(cfg: TrainConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The job-centric env's default feature names over the run's scenarios: those offered on any of them (a
    feature that cannot vary on one, e.g. a GPU type's free share on a one-type cluster, reads a constant there),
    in the order of their declaration."""
    from gpucluster_env.env.job_features import CONTEXT_NAMES, JOB_NAMES
    from gpucluster_env.env.jobs_env import JobsEnv

    job: set[str] = set()
    ctx: set[str] = set()
    for scenario in dict.fromkeys(cfg.scenarios):
        env = JobsEnv(scenario, **cfg.env_args())
        try:
            job.update(env.features[0])
            ctx.update(env.features[1])
        finally:
            env.close()
    return tuple(n for n in JOB_NAMES if n in job), tuple(n for n in CONTEXT_NAMES if n in ctx)


def _gpu_types(scenario: str) -> int:
    from gpucluster_env.scenarios import get_scenario

    return len({n.gpu_type for n in get_scenario(scenario).cluster.nodes})


class _NoDistributionChecks:
    """Turns off torch.distributions' argument validation while training (SB3 builds a distribution per
    step; the checks cost about a quarter of the policy's forward pass) and restores the setting after."""

    def __enter__(self) -> None:
        from torch.distributions import Distribution

        self._prev = Distribution._validate_args
        Distribution.set_default_validate_args(False)

    def __exit__(self, *exc: object) -> None:
        from torch.distributions import Distribution

        Distribution.set_default_validate_args(self._prev)


def train(cfg: TrainConfig, command: str | None = None) -> Path:
    """Train a model by ``cfg``; returns the output directory."""
    with _NoDistributionChecks():
        return _train(cfg, command)


def _train(cfg: TrainConfig, command: str | None) -> Path:
    import torch

    torch.set_num_threads(cfg.threads)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if cfg.process == "jobs" and "features" not in cfg.env_kwargs:  # pinned: the model reads these by name
        cfg.env_kwargs["features"] = [list(f) for f in default_job_features(cfg)]
    meta = _start_meta(cfg, command)
    _write_meta(out, meta)  # now, so checkpoints of an interrupted run can be loaded
    vec = _training_vec(cfg)
    try:
        model = make_model(cfg, vec, out)
        if cfg.init_model:  # the weights of a saved model, inputs it lacks at zero (.init_model)
            from gpucluster_env.agents.init_model import continued_kind, init_from

            meta["init_model"] = init_from(model, cfg, cfg.init_model)
            meta["kind"] = continued_kind(meta["init_model"])
            _write_meta(out, meta)
        if cfg.input_baseline:
            from gpucluster_env.agents.input_baseline import install_buffer

            install_buffer(model, cfg)
        model.set_logger(run_logger(out))
        bc_stats: dict[str, Any] = {}
        if cfg.bc_episodes > 0:
            from gpucluster_env.agents.bc import behaviour_clone

            bc_stats = behaviour_clone(model, cfg)
            model.save(str(out / "bc_model.zip"))
        cbs = _callbacks(cfg, out)
        t_learn = time.perf_counter()
        model.learn(total_timesteps=cfg.timesteps, callback=cbs)
        learn_s = time.perf_counter() - t_learn
        model.save(str(out / "model.zip"))
    finally:
        vec.close()
        remove_empty_folders(out)
    seen = [m for m in (bc_stats.pop("seen_mask", None), cbs[2].seen) if m is not None]
    meta.update(timesteps=int(model.num_timesteps), wall_s=time.perf_counter() - t0, learn_s=learn_s,
                behaviour_cloning=bc_stats, summary=run_summary(cbs, out))
    if seen and cfg.process == "full":  # the kinds the training masks allowed: the policy plays only those
        meta["trained_actions"] = _trained_actions(cfg, np.stack(seen))
    if cfg.select_seeds:
        from gpucluster_env.agents.select import select_model

        _write_meta(out, meta)
        meta["selection"] = select_model(out, cfg.scenarios, list(cfg.select_seeds))
        meta["wall_s_with_selection"] = time.perf_counter() - t0
    _write_meta(out, meta)
    return out


def _start_meta(cfg: TrainConfig, command: str | None) -> dict[str, Any]:
    """The run's ``meta.json`` as written before training: its configuration, environment, seeds, versions
    and command."""
    meta = {
        "algo": cfg.algo,
        "config": asdict(cfg),
        "env_kwargs": cfg.env_args(),
        "env_spec": json.loads(env_spec_json(cfg)),
        "seeds": {"model": cfg.seed, "envs": [cfg.seed + r for r in range(cfg.n_envs)],
                  "windows": [cfg.seed * 1000 + r for r in range(cfg.n_envs)], "eval": EVAL_SEED},
        "versions": versions(),
        "gpu_types": _gpu_types(cfg.scenarios[0]),
        "command": command,
    }
    if cfg.input_baseline:  # one group: every env's i-th episode on one table (.input_baseline)
        meta["seeds"].update(envs=[cfg.seed] * cfg.n_envs, windows=[cfg.seed * 1000] * cfg.n_envs)
    return meta


def _training_vec(cfg: TrainConfig) -> Any:
    """The run's vector env: :func:`.model_build.make_vec`, or with ``input_baseline`` the group of envs on one
    job table (:func:`.input_baseline.same_table_vec`)."""
    if cfg.input_baseline:
        from gpucluster_env.agents.input_baseline import same_table_vec

        return same_table_vec(cfg)
    return make_vec(cfg)


def _write_meta(out: Path, meta: dict[str, Any]) -> None:
    from gpucluster_env.atomic_write import write_bytes_atomic

    write_bytes_atomic(out / "meta.json", (json.dumps(meta, indent=1, default=str) + "\n").encode())


def measure_train_speed(timesteps: int = 4096, n_envs: int = 2, **overrides: Any) -> float:
    """``sb3_train_steps_per_s``: timesteps per second of the shipped training configuration (:data:`SHIPPED`:
    MaskablePPO, ``n_envs`` subprocess envs (``vec="dummy"``: in one process) on castor-philly and
    sjfbsbf-philly windows) over ``timesteps`` steps, rollouts and updates included."""
    import tempfile

    import torch

    with tempfile.TemporaryDirectory() as tmp, _NoDistributionChecks():
        cfg = TrainConfig(out=tmp, timesteps=timesteps, n_envs=n_envs, progress=False, **{**SHIPPED, **overrides})
        torch.set_num_threads(cfg.threads)
        vec = make_vec(cfg)
        try:
            model = make_model(cfg, vec, None)
            t0 = time.perf_counter()
            model.learn(total_timesteps=timesteps)
            return model.num_timesteps / (time.perf_counter() - t0)
        finally:
            vec.close()
