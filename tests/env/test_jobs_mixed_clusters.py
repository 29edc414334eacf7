"""Training one job-centric policy across clusters: an episode's scenario may have another number of GPU types
than the first one's (a curriculum over clusters), on the features offered on any of them."""

from __future__ import annotations

import numpy as np
import pytest
from gpucluster_env.agents.train import TrainConfig, default_job_features

from gpucluster_env.env.jobs_env import JobsEnv
from gpucluster_env.policy import run_episode
from gpucluster_env.scenarios import get_scenario


def _play(env: JobsEnv, seed: int) -> dict:
    """One episode of the first legal row (the pending job with the least remaining work), else "nothing more
    now"."""
    obs, _ = env.reset(seed=seed)
    assert env.observation_space.contains(obs)
    while True:
        rows = np.flatnonzero(env.action_masks()[1:])
        obs, _, terminated, truncated, info = env.step(int(rows[0]) + 1 if rows.size else 0)
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            return info["metrics"]


def test_episodes_switch_between_clusters_of_different_gpu_type_counts() -> None:
    feats = JobsEnv("tiny").features  # three GPU types: the type features are offered
    env = JobsEnv("castor-philly", features=feats)  # one type
    one, space = env.wrapped, env.observation_space
    done = {}
    for name in ("tiny", "castor-philly", "tiny"):
        env.wrapped.scenario = get_scenario(name)  # what the training curriculum sets before each reset
        m = _play(env, 0)
        assert env.observation_space == space and env.engine.n_jobs == m["jobs_done"]
        assert len(env.engine.type_names) == (3 if name == "tiny" else 1)
        done.setdefault(name, m["avg_jct_s"])
        assert done[name] == m["avg_jct_s"]  # the same seed replays the same episode whichever env came before
    assert env.wrapped is not one and len(env._by_types) == 2  # one wrapped env per type count, kept
    env.wrapped.scenario = get_scenario("castor-philly")
    env.reset(seed=0)
    assert env.wrapped is one
    env.close()


def test_a_mixed_run_pins_the_features_offered_on_any_of_its_scenarios() -> None:
    jobs, ctx = default_job_features(TrainConfig(out="unused", scenarios=("castor-philly", "tiny")))
    assert "best_speed" in jobs and {"free_type0", "free_type1", "free_type2"} <= set(ctx)
    assert jobs == tuple(n for n in JobsEnv("tiny").features[0])  # declaration order, tiny's superset
    assert default_job_features(TrainConfig(out="unused")) == \
        JobsEnv("castor-philly").features


def test_the_full_vocabulary_refuses_clusters_of_different_type_counts() -> None:
    with pytest.raises(ValueError, match="same number of GPU types .*castor-philly 1, tiny 3"):
        TrainConfig(out="unused", process="full", scenarios=("castor-philly", "tiny"))


def test_a_mixed_model_plays_through_the_common_runner(tmp_path) -> None:
    """A model trained across clusters acts on each of them through `gpucluster run`'s runner."""
    from gpucluster_env.agents.train import train

    train(TrainConfig(out=str(tmp_path / "m"), scenarios=("castor-philly", "tiny"), windows=("busiest",),
                      timesteps=256, n_steps=128, batch_size=64, n_envs=1, eval_freq=10**6))
    for name in ("tiny", "castor-philly"):
        m = run_episode(name, f"rl:{tmp_path / 'm'}", 3)
        assert m["jobs_done"] == m["jobs"] and not m["truncated"]
