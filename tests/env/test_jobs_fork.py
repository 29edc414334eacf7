"""Fork rows of the job-centric process (``JobsEnv(fork=True)``): the running jobs again, whose action forks the job
as HadarE does. Checked: the spaces and the checkers, that a fork row forks its job, that every job is done once
under random play, that a scenario without rounds refuses the option, and that the common runner plays the same
episode through the full vocabulary."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

from gpucluster_env.env.jobs_env import JobsEnv, JobsView
from gpucluster_env.policy import Policy, run_episode

SMALL = {"num_jobs": 12}


def _env(**kw) -> JobsEnv:
    return JobsEnv("gavel-hetero", scenario_options=SMALL, fork=True, **kw)


def test_fork_rows_add_running_rows_and_their_features():
    env = _env()
    v = env.view
    assert v.n_fork == v.n_running == 32 and env.action_space.n == 1 + 32 + 32 + 32
    assert env.features[0][-2:] == ("fork", "copies")
    assert "fork" not in JobsEnv("gavel-hetero", scenario_options=SMALL).features[0]  # off by default


def test_checkers_pass_with_fork_rows():
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    env_id = "gpucluster_env/GavelHeteroJobs-v1"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(env_id, render_mode="rgb_array", fork=True, scenario_options=SMALL).unwrapped,
                  skip_render_check=False)
        sb3_check(gym.make(env_id, fork=True, scenario_options=SMALL).unwrapped, warn=True, skip_render_check=True)


def test_a_fork_row_forks_its_job_and_its_row_says_so():
    env = _env(invalid_action="raise")
    obs, _ = env.reset(seed=1)
    v = env.view
    f0 = 1 + v.n_pending + v.n_running
    for _ in range(2000):
        mask = env.action_masks()
        forks = np.flatnonzero(mask[f0:f0 + v.n_fork])
        if len(forks):
            break
        legal = np.flatnonzero(mask[1:1 + v.n_pending])
        obs, *_ = env.step(int(1 + legal[0]) if len(legal) else 0)
    else:
        pytest.fail("no fork row became legal")
    r = int(forks[0])
    job = int(env.wrapped.running_window[r])
    names = env.features[0]
    row = obs["jobs"].reshape(v.rows, len(names))[v.n_pending + v.n_running + r]
    assert row[names.index("fork")] == 1.0 and row[names.index("pending")] == 0.0
    assert env.describe_action(f0 + r) == f"fork running row {r}"
    before = len(env.engine.copies.get(job, [None]))
    obs, *_ = env.step(f0 + r)
    assert len(env.engine.copies[job]) == before + 1
    row = obs["jobs"].reshape(v.rows, len(names))
    forked = np.flatnonzero(env.wrapped.running_window[:v.n_running] == job)
    assert len(forked) and row[v.n_pending + forked[0], names.index("copies")] > 0.0


def test_every_job_done_once_under_random_play():
    env = _env()
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    forks = 0
    while True:
        a = int(rng.choice(np.flatnonzero(env.action_masks())))
        forks += env.describe_action(a).startswith("fork")
        _, _, term, trunc, info = env.step(a)
        if term or trunc:
            break
    assert term and info["metrics"]["jobs_done"] == env.engine.n_jobs == 12 and forks > 0


def test_a_scenario_without_rounds_refuses_fork_rows():
    with pytest.raises(ValueError, match="fork.*rounds"):
        JobsEnv("tiny", fork=True)
    with pytest.raises(ValueError, match="fork"):
        JobsEnv("gavel-hetero", fork="yes")


class _FirstForkThenStart(Policy):
    """Fork the first legal fork row, else start the first legal pending row, through the runner's env."""

    name = "first-fork-test"

    def __init__(self, view: JobsView) -> None:
        self.view = view

    def env_kwargs(self) -> dict:
        return self.view.env_kwargs()

    def act(self, observation, env) -> int:
        ints = self.view.layout_ints(env.unwrapped)
        mask = self.view.mask(env.unwrapped, ints)
        return int(ints[_pick(self.view, mask)])


def _pick(view: JobsView, mask: np.ndarray) -> int:
    f0 = 1 + view.n_pending + view.n_running
    for lo, hi in ((f0, f0 + view.n_fork), (1, 1 + view.n_pending)):
        legal = np.flatnonzero(mask[lo:hi])
        if len(legal):
            return lo + int(legal[0])
    return 0


def test_the_runner_plays_the_same_forking_episode():
    env = _env()
    env.reset(seed=4)
    forks = 0
    while True:
        a = _pick(env.view, env.action_masks())
        forks += env.describe_action(a).startswith("fork")
        _, _, term, trunc, info = env.step(a)
        if term or trunc:
            break
    wrapped_seed = int(gym.utils.seeding.np_random(4)[0].integers(0, 2**31 - 1))
    res = run_episode("gavel-hetero", _FirstForkThenStart(env.view), seed=wrapped_seed, scenario_options=SMALL)
    assert res["avg_jct_s"] == info["metrics"]["avg_jct_s"] and res["jobs_done"] == 12 and forks > 0
