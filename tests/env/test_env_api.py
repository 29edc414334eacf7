"""The Gymnasium API's edges: the generic id's step limit, metrics at every end, and one-line errors naming the
argument for what the environment cannot take."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded

import gpucluster_env  # noqa: F401
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.registration import env_id, max_episode_steps
from gpucluster_env.scenarios import get_scenario

GENERIC = "gpucluster_env/GPUCluster-v1"


def _random_episode(env: gym.Env, seed: int = 0) -> tuple[int, bool, dict]:
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    steps, done, info = 0, False, {}
    while not done:
        legal = np.flatnonzero(env.unwrapped.action_masks())
        _, _, term, trunc, info = env.step(int(rng.choice(legal)))
        steps, done = steps + 1, term or trunc
    return steps, term, info


def test_the_generic_id_takes_the_scenarios_own_step_limit() -> None:
    sc = get_scenario("hadar-philly")
    want = max_episode_steps(sc.num_jobs, sc.config.tick_s)
    assert gym.make(GENERIC, scenario="hadar-philly").unwrapped.step_limit == want
    assert gym.make(env_id("hadar-philly")).unwrapped.step_limit == want
    assert gym.make(GENERIC).unwrapped.step_limit == max_episode_steps(40)  # tiny
    assert gym.make(GENERIC, max_steps=77).unwrapped.step_limit == 77
    more = gym.make(env_id("tiny"), scenario_options={"num_jobs": 400}).unwrapped
    assert more.step_limit == max_episode_steps(400)  # the scenario as its options make it
    jobs = gym.make(env_id("hadar-philly").replace("-v1", "Jobs-v1")).unwrapped
    assert jobs.max_steps == 80 * sc.num_jobs + 2000


def test_every_end_carries_metrics_truncated_or_not() -> None:
    steps, term, info = _random_episode(gym.make(GENERIC, max_steps=30, observation="none"))
    assert steps == 30 and not term and "metrics" in info
    steps, term, info = _random_episode(gym.make(GENERIC, scenario="hadar-philly", observation="none"))
    assert term and info["metrics"]["jobs_done"] == 480  # the README's loop on a long scenario, to its end
    steps, term, info = _random_episode(gym.make(env_id("tiny").replace("-v1", "Jobs-v1"), max_steps=5))
    assert steps == 5 and "metrics" in info


@pytest.mark.parametrize(("kwargs", "error", "needle"), [
    ({"scenario": 3}, TypeError, "scenario must be a scenario name"),
    ({"scenario_options": [1]}, TypeError, "scenario_options must be a mapping"),
    ({"catalog": "default"}, TypeError, "catalog must be a Catalog"),
    ({"actions": ()}, ValueError, "at least one action kind"),
    ({"scenario_options": {"cluster": "V100:2x4,net=10,net=20"}}, ValueError, "net= given twice"),
])
def test_arguments_of_the_wrong_type_are_one_line(kwargs: dict, error: type, needle: str) -> None:
    with pytest.raises(error, match=needle):
        GPUClusterEnv(**kwargs)


def test_a_scenario_file_as_a_path_and_numpy_numbers_are_taken(tmp_path: Path) -> None:
    from gpucluster_env.scenario_files import scenario_to_toml

    f = tmp_path / "mine.toml"
    f.write_text(scenario_to_toml(get_scenario("tiny").with_options(num_jobs=12)))
    env = gym.make(GENERIC, scenario=f, n_pending=np.int64(8), max_sim_time_s=np.float32(1e6))
    assert env.unwrapped.scenario.num_jobs == 12 and env.unwrapped.layout.n_pending == 8


def test_reset_options_are_refused_and_step_needs_a_reset() -> None:
    env = GPUClusterEnv("tiny")
    with pytest.raises(ResetNeeded, match="reset"):
        env.step(0)
    with pytest.raises(ValueError, match=r"reset\(options=...\) takes no options here, got num_jobs"):
        env.reset(seed=0, options={"num_jobs": 3})
    env.reset(seed=0, options={})
    env.step(0)
