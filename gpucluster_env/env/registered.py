"""The entry points of the registered ids (:mod:`gpucluster_env.registration`): each builds its environment
with its scenario's step limit, the scenario as its options make it."""

from __future__ import annotations

from typing import Any

from ..registration import JOBS_STEPS_PER_JOB, max_episode_steps
from .cluster_env import GPUClusterEnv
from .jobs_env import JobsEnv


def scenario_env(**kwargs: Any) -> Any:
    """The environment of the generic id and of each scenario's id: ``GPUClusterEnv(**kwargs)`` with the step
    limit of its scenario (:func:`max_episode_steps` of the scenario as its options make it) unless
    ``max_steps`` is given. The env itself truncates there, so the last ``info`` carries the metrics as at
    every end (a Gymnasium ``TimeLimit`` cuts without telling the env); ``max_steps=N`` changes it."""
    env = GPUClusterEnv(**kwargs)
    if kwargs.get("max_steps") is None:
        env.max_steps = max_episode_steps(env.scenario.num_jobs, env.scenario.config.tick_s)
    return env


def scenario_jobs_env(**kwargs: Any) -> Any:
    """The environment of each job-centric id: ``JobsEnv(**kwargs)`` truncating after
    ``JOBS_STEPS_PER_JOB x jobs + 2,000`` steps unless ``max_steps`` is given (as :func:`scenario_env`)."""
    env = JobsEnv(**kwargs)
    if kwargs.get("max_steps") is None:
        env.max_steps = JOBS_STEPS_PER_JOB * env.scenario.num_jobs + 2000
    return env
