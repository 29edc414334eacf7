"""The environment as a learning problem: the decision bound, the compact action space's coverage of the
reference policies, reward scale, Gymnasium/SB3 conventions with defaults, rendering, the time discount."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import gpucluster_env
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.env.rules import DecisionRules
from gpucluster_env.scenarios import SCENARIOS

SCENARIO_NAMES = [s for s in SCENARIOS if s != "philly-scale"]
IDS = [i for i in gpucluster_env.ENV_IDS if not i.endswith("PhillyScale-v1")]


def _check_bound(env: GPUClusterEnv, rng: np.random.Generator, instants: int, eager: bool) -> int:
    """Play random masked actions (``eager``: never wait while another action is allowed) until ``instants``
    clock advances; assert the actions between two advances never pass the documented bound."""
    forks = env.point.forks
    seen = 0
    jobs = env.engine.num_pending + env.engine.num_running
    while seen < instants:
        mask = env.action_masks()
        valid = np.flatnonzero(mask)
        if eager and len(valid) > 1:
            valid = valid[1:]  # every action but wait
        a = int(valid[rng.integers(len(valid))])
        _, _, term, trunc, info = env.step(a)
        if a == 0:
            seen += 1
            jobs = info["pending"] + info["running"]
            assert info["actions_this_instant"] == 0
        else:
            assert info["actions_this_instant"] <= DecisionRules.bound(jobs, env.calibrates, forks)
        if term or trunc:
            env.reset()
            jobs = env.engine.num_pending + env.engine.num_running
    return seen


@pytest.mark.parametrize("scenario", SCENARIO_NAMES)
def test_actions_between_clock_advances_are_bounded(scenario: str) -> None:
    """Random masked agents (uniform, and eager ones that wait only when nothing else is allowed) over
    1,500 instants: the non-wait actions at one instant stay within (1 + c + f) x jobs in system."""
    env = GPUClusterEnv(scenario, observation="none")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    assert _check_bound(env, rng, 1000, eager=False) == 1000
    env.reset(seed=1)
    assert _check_bound(env, rng, 500, eager=True) == 500


def test_random_masked_episode_is_within_three_times_castors_decisions() -> None:
    from gpucluster_env.policy import run_episode

    castor = run_episode("castor-philly", "castor", 0)
    rnd = run_episode("castor-philly", "random", 0)
    assert rnd["steps"] <= 3 * castor["steps"], (rnd["steps"], castor["steps"])


def test_rules_forbid_undoing_at_the_same_instant() -> None:
    env = GPUClusterEnv("gimbal-philly", scenario_options={"num_jobs": 30}, min_run_s=0.0)
    env.reset(seed=0)
    L = env.layout
    started = False
    for _ in range(200):
        m = env.action_masks()
        places = np.flatnonzero(m[L.place_off:L.share_off])
        if len(places):
            i = int(places[0]) // L.place_width
            job = int(env.pending_window[i])
            env.step(L.place_off + int(places[0]))
            r = int(np.flatnonzero(env.running_window == job)[0])
            assert not env.action_masks()[L.preempt_off + r]  # started at this instant
            if env.action_masks()[L.squeeze_off + r]:
                env.step(L.squeeze_off + r)
                m = env.action_masks()
                assert not m[L.squeeze_off + r] and not m[L.swell_off + r]  # one share change per instant
            started = True
            break
        env.step(0)
    assert started


def test_preempted_job_cannot_restart_at_the_same_instant() -> None:
    env = GPUClusterEnv("castor-philly", min_run_s=0.0)
    env.reset(seed=0)
    L = env.layout
    rng = np.random.default_rng(0)
    for _ in range(3000):
        m = env.action_masks()
        pre = np.flatnonzero(m[L.preempt_off:L.fork_off])
        if len(pre):
            job = int(env.running_window[int(pre[0])])
            env.step(L.preempt_off + int(pre[0]))
            i = np.flatnonzero(env.pending_window == job)
            if len(i):
                m = env.action_masks()
                row = m[L.place_off + int(i[0]) * L.place_width:L.place_off + (int(i[0]) + 1) * L.place_width]
                assert not row.any() and not m[L.share_off + int(i[0])]
                return
        env.step(int(rng.choice(np.flatnonzero(m))))
    pytest.fail("no preemption happened")


@pytest.mark.parametrize("policy", ["castor", "sjf-ffs", "fifo"])
def test_compact_space_expresses_every_reference_action(policy: str) -> None:
    """Every non-wait action the policy takes on castor-philly has an equivalent allowed int action."""
    from gpucluster_env.agents.expert import play

    cov = play("castor-philly", policy, 0).summary()
    assert cov["non_wait"] >= 200 and cov["equivalent"] == 1.0, cov


def test_tiresias_preemptions_are_expressible_without_the_run_quantum() -> None:
    """Tiresias preempts jobs seconds after they restart; the default 600 s quantum masks those (see the
    report in docs/rl.md), without it every Tiresias action has an equivalent."""
    from gpucluster_env.agents.expert import play

    cov = play("castor-philly", "tiresias", 0, env_kwargs={"min_run_s": 0.0}).summary()
    assert cov["by_kind"]["preempt"]["n"] > 50 and cov["equivalent"] == 1.0, cov


def test_compact_space_is_a_few_hundred_actions() -> None:
    for name in SCENARIO_NAMES:
        env = GPUClusterEnv(name, observation="none")
        assert env.action_space.n <= 300, (name, env.action_space.n)
    assert GPUClusterEnv("castor-philly", observation="none").action_space.n == 161
    assert GPUClusterEnv("castor-philly", observation="none", action_layout="full").action_space.n == 1121


@pytest.mark.parametrize("env_id", IDS)
def test_sb3_make_vec_env_and_step_limit_with_defaults(env_id: str) -> None:
    from stable_baselines3.common.env_util import make_vec_env

    assert gym.make(env_id).unwrapped.step_limit > 2000  # each id truncates at its scenario's limit itself
    vec = make_vec_env(env_id, n_envs=2, seed=0)
    vec.reset()
    obs, r, done, info = vec.step(np.zeros(2, dtype=np.int64))
    frame = vec.env_method("render")[0]
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
    vec.close()


def test_record_video_frames_have_one_shape() -> None:
    env = gym.make("gpucluster_env/Tiny-v1", render_mode="rgb_array")
    env.reset(seed=0)
    shapes = set()
    for _ in range(30):
        shapes.add(env.render().shape)
        _, _, term, trunc, _ = env.step(int(np.flatnonzero(env.unwrapped.action_masks())[-1]))
        if term or trunc:
            break
    assert len(shapes) == 1


def test_time_discount_integrates_the_reward_rate() -> None:
    from gpucluster_env.env.wrappers import TimeDiscount

    tau = 3600.0
    env = TimeDiscount(GPUClusterEnv("tiny", observation="none"), tau)
    _, info = env.reset(seed=0)
    t_start = info["time_s"]
    t0 = t_start
    total, expected, raw_total = 0.0, 0.0, 0.0
    rng = np.random.default_rng(0)
    for _ in range(300):
        _, r, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(env.unwrapped.action_masks()))))
        t1 = info["time_s"]
        raw = info["undiscounted_reward"]
        if t1 > t0:  # a constant rate raw / dt over [t0, t1], integrated under exp(-(t - t_start) / tau)
            rate = raw / (t1 - t0)
            expected += rate * tau * (np.exp(-(t0 - t_start) / tau) - np.exp(-(t1 - t_start) / tau))
        else:
            expected += raw * np.exp(-(t0 - t_start) / tau)
        total += r
        raw_total += raw
        t0 = t1
        if term or trunc:
            break
    assert total == pytest.approx(expected, rel=1e-9)
    assert raw_total < total < 0  # later time weighs less
