"""The environments and the SB3 model of a training run, built from its :class:`.train_config.TrainConfig`:
what :mod:`.train` trains and what :func:`.model_meta.load_model` rebuilds to receive a saved model's weights
(one builder for both, so a loaded network is the trained one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gpucluster_env.agents.train_config import TrainConfig


class TraceWindows(gym.Wrapper):
    """Curriculum over trace windows: each ``reset`` draws the episode's scenario among ``scenarios`` and its
    trace window among ``windows`` (``busiest``, ``random``, ``hours:A-B``) from the wrapper's own generator.
    A scenario whose jobs are generated, not sampled from a trace (``tiny``), has no windows: it is one choice.
    On the full vocabulary the scenarios must share the number of GPU types (its actions name them); the
    job-centric env plays any cluster (:class:`~gpucluster_env.env.jobs_env.JobsEnv` keeps a wrapped env per
    type count).

    ``size=(first, ramp_steps)``: a curriculum over episode size: the episode that starts after this env's
    ``t``-th step has ``first + (N - first) * min(1, t / ramp_steps)`` jobs (rounded; ``N`` the scenario's own), the
    trace's same arrivals cut shorter."""

    def __init__(self, env: gym.Env, scenarios: tuple[str, ...], windows: tuple[str, ...], seed: int,
                 size: tuple[int, float] | None = None) -> None:
        super().__init__(env)
        from gpucluster_env.scenarios import get_scenario, samples_trace

        self.choices = []
        for s in scenarios:
            sc = get_scenario(s)
            self.choices += [sc.with_options(window=w) if w else sc for w in windows] if samples_trace(sc) else [sc]
        self._rng = np.random.default_rng(seed)
        self.size = size
        self.steps = 0

    def jobs_now(self, full: int) -> int:
        """The number of jobs of an episode starting now, of a scenario of ``full`` jobs."""
        if self.size is None:
            return full
        first, ramp = self.size
        return min(full, round(first + (full - first) * min(1.0, self.steps / ramp)))

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        u = self.env.unwrapped
        sc = self.choices[int(self._rng.integers(len(self.choices)))]
        n = self.jobs_now(sc.num_jobs)
        (getattr(u, "wrapped", u)).scenario = sc if n == sc.num_jobs else sc.with_options(num_jobs=n)
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.steps += 1
        return self.env.step(action)

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


def make_env(cfg: TrainConfig, rank: int) -> Any:
    """A thunk building training environment ``rank`` of ``cfg``: its process's env under a step limit, the
    trace windows, the reference reward (``jobs``), and the mask in ``info`` for MaskablePPO."""
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
        size = None
        if cfg.size_curriculum is not None:  # each env ramps over its share of the run's steps
            size = (cfg.size_curriculum[0], cfg.size_curriculum[1] * cfg.timesteps / cfg.n_envs)
        env = TraceWindows(env, cfg.scenarios, cfg.windows, seed=cfg.seed * 1000 + rank, size=size)
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

    fns = [make_env(cfg, r) for r in range(cfg.n_envs)]
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
        ppo_args["policy_kwargs"] = {"dim": cfg.job_dim, **_fork_kwargs(vec)}
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

        return MaskablePPO(JobScorePolicy, vec, policy_kwargs=_fork_kwargs(vec), **common)
    from stable_baselines3 import A2C, PPO

    return (PPO if cfg.algo == "ppo" else A2C)("MultiInputPolicy", vec, **common)


def _fork_kwargs(vec: Any) -> dict[str, Any]:
    """``JobScorePolicy``'s ``fork_col`` where the job-centric envs of ``vec`` have the ``fork`` feature (fork rows,
    which then get their own kind bias); nothing otherwise, so a model without fork rows is built as before."""
    from gpucluster_env.agents.job_policy import fork_column

    col = fork_column(vec.get_attr("features", indices=0)[0][0])
    return {} if col is None else {"fork_col": col}
