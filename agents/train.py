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


class TraceWindows(gym.Wrapper):
    """Curriculum over trace windows: each ``reset`` draws the episode's scenario among ``scenarios`` and its
    trace window among ``windows`` (``busiest``, ``random``, ``hours:A-B``) from the wrapper's own generator.
    A scenario whose jobs are generated, not sampled from a trace (``tiny``), has no windows: it is one choice.
    The scenarios must share the cluster's GPU types (the spaces do not change)."""

    def __init__(self, env: gym.Env, scenarios: tuple[str, ...], windows: tuple[str, ...], seed: int) -> None:
        super().__init__(env)
        from gpucluster_env.scenarios import get_scenario, samples_trace

        self.choices = []
        for s in scenarios:
            sc = get_scenario(s)
            self.choices += [sc.with_options(window=w) if w else sc for w in windows] if samples_trace(sc) else [sc]
        self._rng = np.random.default_rng(seed)

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        u = self.env.unwrapped
        (getattr(u, "wrapped", u)).scenario = self.choices[int(self._rng.integers(len(self.choices)))]
        return self.env.reset(**kwargs)

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


def _make_env(cfg: TrainConfig, rank: int) -> Any:
    def thunk() -> gym.Env:
        from stable_baselines3.common.monitor import Monitor

        from gpucluster_env.env import GPUClusterEnv
        from gpucluster_env.registration import max_episode_steps

        if cfg.process == "jobs":
            from gpucluster_env.env.jobs_env import JobsEnv
            from gpucluster_env.registration import JOBS_STEPS_PER_JOB

            env = JobsEnv(cfg.scenarios[0], **cfg.env_args())
            env = gym.wrappers.TimeLimit(env, JOBS_STEPS_PER_JOB * env.engine.n_jobs + 2000)
        else:
            env = GPUClusterEnv(cfg.scenarios[0], **cfg.env_args())
            env = gym.wrappers.TimeLimit(env, max_episode_steps(env.engine.n_jobs, env.engine.config.tick_s))
        env = TraceWindows(env, cfg.scenarios, cfg.windows, seed=cfg.seed * 1000 + rank)
        if cfg.process == "jobs" and cfg.reference is not None:
            from gpucluster_env.agents.reference_reward import ReferenceRelative

            env = ReferenceRelative(env, cfg.reference)
        if cfg.algo != "maskable_ppo":
            return Monitor(env)
        from gpucluster_env.agents.vec_masks import MaskInInfo

        return MaskInInfo(Monitor(env))

    return thunk


def make_vec(cfg: TrainConfig) -> Any:
    """The training vector env: ``n_envs`` environments in subprocesses (or in-process with ``vec='dummy'``),
    seeded ``seed + rank``; for MaskablePPO the masks come back with each step (:mod:`.vec_masks`)."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    fns = [_make_env(cfg, r) for r in range(cfg.n_envs)]
    # forkserver (SB3's default here), not fork: forking a process whose torch threads already ran can deadlock
    vec = SubprocVecEnv(fns) if cfg.vec == "subproc" and cfg.n_envs > 1 else DummyVecEnv(fns)
    vec.seed(cfg.seed)
    if cfg.algo == "maskable_ppo":
        from gpucluster_env.agents.vec_masks import CachedMasks

        vec = CachedMasks(vec)
    return vec


def make_model(cfg: TrainConfig, vec: Any, logdir: Path | None, inference: bool = False) -> Any:
    """A new SB3 model of ``cfg.algo`` on ``vec`` (``inference``: to receive trained weights and act, so DQN's
    replay buffer is not allocated at full size; :func:`.model_meta.load_model`)."""
    common = {"seed": cfg.seed, "device": "cpu", "verbose": 0,
              "policy_kwargs": {"net_arch": list(cfg.net_arch)}}
    if cfg.algo == "dqn":
        from stable_baselines3 import DQN

        return DQN("MlpPolicy", vec, learning_rate=cfg.learning_rate, gamma=cfg.gamma,
                   buffer_size=16 if inference else 100_000,
                   learning_starts=min(5_000, cfg.timesteps // 4), batch_size=cfg.batch_size, **common)
    ppo_args = {"learning_rate": cfg.learning_rate, "n_steps": cfg.n_steps, "batch_size": cfg.batch_size,
                "n_epochs": cfg.n_epochs, "gamma": cfg.gamma, "gae_lambda": cfg.gae_lambda,
                "ent_coef": cfg.ent_coef, "clip_range": cfg.clip_range, "target_kl": cfg.target_kl, **common}
    if cfg.process == "jobs":
        return _jobs_model(cfg, vec, ppo_args)
    if cfg.algo == "ppo":
        from stable_baselines3 import PPO

        return PPO("MlpPolicy", vec, **ppo_args)
    from sb3_contrib import MaskablePPO

    if cfg.env_args().get("observation") == "sets":  # the permutation-invariant network (.sets_policy)
        from gpucluster_env.agents.sets_policy import SetsPolicy

        return MaskablePPO(SetsPolicy, vec, **ppo_args)
    return MaskablePPO("MultiInputPolicy", vec, **ppo_args)


def _jobs_model(cfg: TrainConfig, vec: Any, ppo_args: dict[str, Any]) -> Any:
    """A model on the job-centric process: MaskablePPO with the job-scoring network (discounted by simulated
    time when ``time_discount_s`` is set); PPO or A2C with SB3's own ``MultiInputPolicy`` (no masks). With
    ``library_defaults`` every hyperparameter is the library's own."""
    if cfg.library_defaults:
        return _library_model(cfg, vec, {k: ppo_args[k] for k in ("seed", "device", "verbose")})
    if cfg.algo == "maskable_ppo":
        from gpucluster_env.agents.job_policy import JobScorePolicy
        from sb3_contrib import MaskablePPO

        if cfg.time_discount_s:
            from gpucluster_env.agents.time_discount import TimeDiscountBuffer

            ppo_args = {**ppo_args, "rollout_buffer_class": TimeDiscountBuffer,
                        "rollout_buffer_kwargs": {"tau_s": cfg.time_discount_s}}
        ppo_args["policy_kwargs"] = {"dim": cfg.job_dim}
        return MaskablePPO(JobScorePolicy, vec, **ppo_args)
    if cfg.algo == "ppo":
        from stable_baselines3 import PPO

        return PPO("MultiInputPolicy", vec, **ppo_args)
    from stable_baselines3 import A2C

    a2c = {k: ppo_args[k] for k in ("learning_rate", "gamma", "gae_lambda", "ent_coef", "seed", "device",
                                    "verbose", "policy_kwargs")}
    return A2C("MultiInputPolicy", vec, n_steps=8, **a2c)


def _library_model(cfg: TrainConfig, vec: Any, common: dict[str, Any]) -> Any:
    """The algorithm with SB3's / sb3-contrib's default hyperparameters on the job-centric env."""
    if cfg.algo == "maskable_ppo":
        from gpucluster_env.agents.job_policy import JobScorePolicy
        from sb3_contrib import MaskablePPO

        return MaskablePPO(JobScorePolicy, vec, **common)
    from stable_baselines3 import A2C, PPO

    return (PPO if cfg.algo == "ppo" else A2C)("MultiInputPolicy", vec, **common)


def _callbacks(cfg: TrainConfig, out: Path) -> list[Any]:
    from stable_baselines3.common.callbacks import CheckpointCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    eval_cfg = TrainConfig(**{**asdict(cfg), "windows": ("",), "seed": EVAL_SEED, "n_envs": 1})
    eval_env = DummyVecEnv([_make_env(eval_cfg, 0)])
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
    if cfg.process == "jobs" and cfg.time_discount_s and cfg.algo == "maskable_ppo":
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
    from gpucluster_env.registration import env_id, jobs_env_id

    make_id = jobs_env_id if cfg.process == "jobs" else env_id
    env = gym.make(make_id(cfg.scenarios[0]), **cfg.env_args())
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
    """The job-centric env's default feature names on the run's first scenario."""
    from gpucluster_env.env.jobs_env import JobsEnv

    env = JobsEnv(cfg.scenarios[0], **cfg.env_args())
    try:
        return env.features
    finally:
        env.close()


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
    _write_meta(out, meta)  # now, so checkpoints of an interrupted run can be loaded
    vec = make_vec(cfg)
    try:
        model = make_model(cfg, vec, out)
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
