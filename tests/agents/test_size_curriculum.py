"""The curriculum over episode size (``gpucluster train --size-curriculum FIRST:FRACTION``): episodes start short
and grow to the scenario's own number of jobs, each env over its share of the run's steps."""

from __future__ import annotations

import pytest
from gpucluster_env.agents.model_build import TraceWindows, make_env
from gpucluster_env.agents.train_config import TrainConfig

from gpucluster_env.env.jobs_env import JobsEnv


def test_episodes_grow_linearly_to_the_scenarios_size() -> None:
    tw = TraceWindows(JobsEnv("castor-philly"), ("castor-philly",), ("busiest",), seed=0, size=(40, 1000))
    full = tw.choices[0].num_jobs
    sizes = []
    for _ in range(3):
        tw.reset(seed=1)
        sizes.append(tw.unwrapped.engine.n_jobs)
        for _ in range(500):
            _, _, term, trunc, _ = tw.step(0)
            if term or trunc:
                tw.reset(seed=1)
    assert sizes == [40, round(40 + (full - 40) * 0.5), full]
    tw.reset(seed=1)
    assert tw.unwrapped.engine.n_jobs == full  # past the ramp: whole episodes
    tw.unwrapped.close()


def test_the_run_config_ramps_each_env_over_its_share_and_evaluates_whole_episodes() -> None:
    cfg = TrainConfig(out="unused", scenarios=("castor-philly",), timesteps=10_000, n_envs=2,
                      size_curriculum=(30, 0.4))
    env = make_env(cfg, 0)()
    tw = env
    while not isinstance(tw, TraceWindows):
        tw = tw.env
    assert tw.size == (30, 0.4 * 10_000 / 2)
    env.reset(seed=0)
    assert env.unwrapped.engine.n_jobs == 30
    with pytest.raises(ValueError, match="size_curriculum"):
        TrainConfig(out="unused", size_curriculum=(0, 0.5), timesteps=100)
    with pytest.raises(ValueError, match="size_curriculum"):
        TrainConfig(out="unused", size_curriculum=(30, 1.5), timesteps=100)
    assert TrainConfig(out="unused", size_curriculum=[30, 1], timesteps=100).size_curriculum == (30, 1.0)
