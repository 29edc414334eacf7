"""The Gymnasium environment: registration, checkers, determinism, pickling, vector envs, masks, reward."""

from __future__ import annotations

import copy
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest

import gpucluster_env
from gpucluster_env.engine import Place, Wait
from gpucluster_env.env import GPUClusterEnv

ALL_IDS = list(gpucluster_env.ENV_IDS)
# The generic id needs no keyword (defaults to the tiny scenario); philly-scale has 80,000 jobs per reset, so
# the checkers, which reset many times, run on the small scenarios and philly-scale gets one reset below.
CHECKED_IDS = [i for i in ALL_IDS if not i.endswith("PhillyScale-v1")]


def random_rollout(env: gym.Env, seed: int, steps: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    out = []
    for _ in range(steps):
        mask = env.unwrapped.action_masks()
        a = int(rng.choice(np.flatnonzero(mask)))
        obs, r, term, trunc, info = env.step(a)
        flat = np.concatenate([np.ravel(v) for v in obs.values()]) if isinstance(obs, dict) else obs
        out.append((a, flat.copy(), r, term, trunc, mask.copy()))
        if term or trunc:
            obs, _ = env.reset()
    return out


def test_registration_is_idempotent_and_complete():
    before = len(gym.registry)
    assert gpucluster_env.register_envs() == ALL_IDS
    assert len(gym.registry) == before
    assert "gpucluster_env/GPUCluster-v1" in ALL_IDS
    assert gpucluster_env.env_id("castor-philly") == "gpucluster_env/CastorPhilly-v1"
    from gpucluster_env.scenarios import SCENARIOS

    assert len(ALL_IDS) == len(SCENARIOS) + 1


@pytest.mark.parametrize("env_id", CHECKED_IDS)
def test_gymnasium_check_env(env_id):
    from gymnasium.utils.env_checker import check_env

    # The checkers step randomly sampled (unmasked) actions: by default an out-of-mask action is a counted
    # no-op, so they pass with the defaults (and the rgb_array frame RecordVideo needs).
    env = gym.make(env_id, render_mode="rgb_array")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning left unexplained
        check_env(env.unwrapped, skip_render_check=False)
    env.close()


@pytest.mark.parametrize("env_id", CHECKED_IDS)
def test_sb3_check_env(env_id):
    from stable_baselines3.common.env_checker import check_env

    env = gym.make(env_id).unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, warn=True, skip_render_check=True)


def test_philly_scale_id_resets_and_steps():
    from gpucluster_env.traces.registry import locate

    env = gym.make("gpucluster_env/PhillyScale-v1", observation="none").unwrapped
    obs, info = env.reset(seed=0)
    # 80,000 jobs of the real Philly trace; without it, the whole shipped synthetic trace (3,000 jobs)
    assert env.engine.n_jobs == (80_000 if locate("philly") is not None else 3_000) and env.engine.num_gpus == 2490
    obs, r, term, trunc, info = env.step(0)
    assert r <= 0 and not term


def test_same_seed_same_trajectory():
    a = random_rollout(gym.make("gpucluster_env/Tiny-v1"), seed=3, steps=400)
    b = random_rollout(gym.make("gpucluster_env/Tiny-v1"), seed=3, steps=400)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x[0] == y[0] and x[2] == y[2] and x[3:5] == y[3:5]
        assert np.array_equal(x[1], y[1]) and np.array_equal(x[5], y[5])
    c = random_rollout(gym.make("gpucluster_env/Tiny-v1"), seed=4, steps=50)
    assert any(not np.array_equal(x[1], y[1]) for x, y in zip(a, c, strict=False))


def test_env_pickles_and_continues_identically():
    env = GPUClusterEnv("tiny")
    env.reset(seed=1)
    for _ in range(20):
        env.step(int(np.flatnonzero(env.action_masks())[-1]))
    clone = pickle.loads(pickle.dumps(env))
    for _ in range(30):
        a = int(np.flatnonzero(env.action_masks())[-1])
        o1, r1, *_ = env.step(a)
        o2, r2, *_ = clone.step(a)
        assert r1 == r2 and all(np.array_equal(o1[k], o2[k]) for k in o1)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec(mode):
    envs = gym.make_vec("gpucluster_env/Tiny-v1", num_envs=2, vectorization_mode=mode)
    obs, info = envs.reset(seed=[0, 1])
    assert obs["pending"].shape == (2, 16 * 12)
    for _ in range(5):
        obs, r, term, trunc, info = envs.step(np.zeros(2, dtype=np.int64))
        assert r.shape == (2,) and np.all(r <= 0)
    envs.close()


def test_mask_is_exact_on_visited_states():
    """Every action the mask allows is accepted (by a copy of the env); every other action is rejected."""
    env = GPUClusterEnv("tiny", scenario_options={"num_jobs": 25}, invalid_action="raise")
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    checked = 0
    for step in range(160):
        mask = env.action_masks()
        if step % 8 == 0:
            for a in np.flatnonzero(mask):
                copy.deepcopy(env).step(int(a))  # must not raise
                checked += 1
            for a in rng.choice(np.flatnonzero(~mask), size=min(20, int((~mask).sum())), replace=False):
                with pytest.raises(ValueError):
                    env.step(int(a))
        _, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        if term or trunc:
            env.reset(seed=step)
    assert checked > 100


def _kinds_seen(env: GPUClusterEnv, steps: int) -> set[str]:
    env.reset(seed=0)
    L = env.layout
    seen = set()
    rng = np.random.default_rng(1)
    for _ in range(steps):
        m = env.action_masks()
        for name, lo, hi in (("place", L.place_off, L.share_off), ("share", L.share_off, L.colocate_off),
                             ("colocate", L.colocate_off, L.squeeze_off),
                             ("squeeze", L.squeeze_off, L.swell_off), ("swell", L.swell_off, L.preempt_off),
                             ("preempt", L.preempt_off, L.fork_off), ("fork", L.fork_off, L.size)):
            if m[lo:hi].any():
                seen.add(name)
        _, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(m))))
        if term or trunc:
            env.reset()
    return seen


@pytest.mark.parametrize("layout", ["compact", "full"])
def test_every_action_kind_appears_in_masks_and_round_scenarios_allow_fork(layout):
    share = "share" if layout == "compact" else "colocate"
    hadar = GPUClusterEnv("hadar-philly", scenario_options={"num_jobs": 30}, action_layout=layout)
    assert _kinds_seen(hadar, 400) == {"place", share, "preempt", "fork"}  # no calibration ticks: no shares
    gimbal = GPUClusterEnv("gimbal-philly", scenario_options={"num_jobs": 30}, action_layout=layout)
    assert {"squeeze", "swell", share} <= _kinds_seen(gimbal, 400)
    tiny = GPUClusterEnv("tiny")
    tiny.reset(seed=0)
    assert not tiny.action_masks()[tiny.layout.fork_off:].any()  # no rounds, no forking


def test_invalid_action_raise_or_wait():
    env = GPUClusterEnv("tiny", invalid_action="raise")
    env.reset(seed=0)
    bad = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.raises(ValueError, match="invalid action"):
        env.step(bad)
    with pytest.raises(ValueError, match="outside the action space"):
        env.step(env.action_space.n)
    lenient = GPUClusterEnv("tiny")  # the default: a counted no-op that advances the clock as wait
    lenient.reset(seed=0)
    t0 = lenient.engine.now
    _, _, _, _, info = lenient.step(bad)
    assert info["invalid_actions"] == 1 and lenient.engine.now > t0


def test_typed_actions_and_decode():
    env = GPUClusterEnv("tiny")
    env.reset(seed=0)
    j = int(env.engine.pending_jobs()[0])
    g = tuple(int(x) for x in env.engine.plan_place(j))
    env.step(Place(j, gpus=g))
    assert env.engine.status[j] == 2 and tuple(env.engine.gpus_of(j)) == g
    a = env.layout.place_off + env.layout.n_types  # place(pending[0], any)
    if env.action_masks()[a]:
        typed = env.decode_action(a)
        assert isinstance(typed, Place) and typed.gpu_type is None
    assert env.describe_action(0) == "wait"
    env.step(Wait())


@pytest.mark.parametrize(("scenario", "scale"), [("tiny", 100.0), ("tiny", None), ("castor-philly", None),
                                                 ("gimbal-philly", None), ("hadare-testbed", None)])
def test_return_is_minus_total_jct(scenario, scale):
    """The return is minus total JCT over the scale; by default (None) the episode's total solo time, which
    makes returns O(1)-O(100) on every scenario."""
    env = GPUClusterEnv(scenario, reward_scale=scale, observation="none")
    env.reset(seed=2)
    rng = np.random.default_rng(2)
    total = 0.0
    while True:
        _, r, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        total += r
        assert set(info["rewards"]) == {"jct", "makespan", "deadlines", "utilization"}
        if term or trunc:
            break
    assert term
    jct = info["metrics"]["avg_jct_s"] * info["metrics"]["jobs"]
    assert total == pytest.approx(-jct / (scale or env.engine.solo_time.sum()), rel=1e-9)
    if scale is None:
        assert 0.5 <= -total <= 200


@pytest.mark.parametrize("objective", ["makespan", "utilization", "deadlines"])
def test_other_objectives(objective):
    scenario = "gimbal-philly" if objective == "deadlines" else "tiny"
    env = GPUClusterEnv(scenario, objective=objective, scenario_options={"num_jobs": 20})
    env.reset(seed=0)
    total = 0.0
    L = env.layout
    while True:
        places = np.flatnonzero(env.action_masks()[L.place_off:L.colocate_off])
        a = L.place_off + int(places[0]) if len(places) else 0  # greedy exclusive placement, else wait
        _, r, term, trunc, info = env.step(a)
        total += r
        if term or trunc:
            break
    metrics = info["metrics"]
    if objective == "makespan":
        last = env.engine.finish_t.max()
        assert total == pytest.approx(-last / 3600.0)
    elif objective == "utilization":
        assert total == pytest.approx(metrics["gpu_occupancy"] * metrics["makespan_s"] / 3600.0, rel=1e-6)
    else:
        sat = metrics["deadline_satisfaction"]
        assert total == pytest.approx(sat - (1 - sat))


def test_box_observation_is_bounded_and_flat():
    env = GPUClusterEnv("tiny", observation="box")
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    rng = np.random.default_rng(0)
    for _ in range(200):
        obs, *_ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        assert env.observation_space.contains(obs) and np.isfinite(obs).all()


def test_render_ansi_and_human(capsys):
    env = GPUClusterEnv("tiny", render_mode="ansi")
    env.reset(seed=0)
    for _ in range(10):
        env.step(int(np.flatnonzero(env.action_masks())[-1]))
    text = env.render()
    assert "gpucluster · tiny" in text and "V100" in text and "K80" in text and "queue" in text
    human = GPUClusterEnv("tiny", render_mode="human")
    human.reset(seed=0)
    human.step(0)
    assert "GPUs by node" in capsys.readouterr().out


def test_bad_arguments_are_clear():
    with pytest.raises(ValueError, match="unknown scenario"):
        GPUClusterEnv("nope")
    with pytest.raises(ValueError, match="objective"):
        GPUClusterEnv("tiny", objective="speed")
    with pytest.raises(ValueError, match="unknown option"):
        GPUClusterEnv("tiny", scenario_options={"bogus": 1})
    with pytest.raises(ValueError, match="action kind"):
        GPUClusterEnv("tiny", actions=("place", "teleport"))


@pytest.mark.slow
def test_maskable_ppo_trains_through_subproc_vec_env():
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    # The env class itself as the factory: the subprocesses need not import gpucluster_env to find the id.
    vec = make_vec_env(GPUClusterEnv, n_envs=2, seed=0, vec_env_cls=SubprocVecEnv,
                       env_kwargs={"scenario": "tiny", "invalid_action": "raise"})
    model = MaskablePPO("MultiInputPolicy", vec, n_steps=512, batch_size=256, n_epochs=2, seed=0, device="cpu")
    model.learn(total_timesteps=2048)
    assert model.num_timesteps >= 2048
    vec.close()


def test_import_is_light():
    """``import gpucluster_env`` registers the ids without importing torch, stable-baselines3, xgboost or numba
    (the environment's compiled kernel is imported when an environment is built)."""
    import subprocess
    import sys

    code = ("import sys, gpucluster_env, gymnasium as gym; "
            "heavy = [m for m in ('torch', 'stable_baselines3', 'sb3_contrib', 'xgboost', 'numba') "
            "if m in sys.modules]; "
            "assert not heavy, heavy; assert 'gpucluster_env/Tiny-v1' in gym.registry")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_human_render_in_a_real_terminal():
    """``render_mode="human"`` draws with colours when its output is a terminal (a pseudo-terminal here)."""
    import os
    import pty
    import subprocess
    import sys

    code = ("from gpucluster_env.env import GPUClusterEnv; "
            "env = GPUClusterEnv('tiny', render_mode='human'); env.reset(seed=0); "
            "[env.step(int(env.action_masks().nonzero()[0][-1])) for _ in range(12)]")
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=follower, stderr=follower, close_fds=True,
                            env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"})
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait()
    os.close(leader)
    out = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, out[-2000:]
    assert "\x1b[" in out  # ANSI colour codes: rich saw a terminal
    assert "GPUs by node" in out and "queue (" in out
    assert out.count("gpucluster · tiny") >= 12  # one frame per step


def test_five_percent_share_grid_keeps_the_spaces_and_passes_check_env():
    """``share_step=0.05`` (Gimbal's 5% granularity) changes what a squeeze does, not the spaces: the same
    observation and action spaces, the mean-share feature still in [0, 1] (5% steps now), and both checkers
    pass."""
    from gymnasium.utils.env_checker import check_env

    opts = {"num_jobs": 30}
    five = GPUClusterEnv("gimbal-philly", scenario_options={**opts, "share_step": 0.05})
    ten = GPUClusterEnv("gimbal-philly", scenario_options=opts)
    assert five.engine.share_units == 20 and ten.engine.share_units == 10
    assert five.observation_space == ten.observation_space and five.action_space == ten.action_space
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(five, skip_render_check=True)
    five.reset(seed=0)
    rng = np.random.default_rng(0)
    L, seen = five.layout, set()
    for _ in range(600):
        m = five.action_masks()
        a = int(rng.choice(np.flatnonzero(m)))
        obs, _, term, trunc, _ = five.step(a)
        share = obs["running"].reshape(L.n_running, -1)[:, 2]
        assert ((share >= 0) & (share <= 1)).all()
        seen |= {round(float(x) * 20) / 20 - float(x) for x in share}  # multiples of 5% (to float32 rounding)
        if term or trunc:
            five.reset()
    assert five.engine.counts["squeezes"] > 0 and max(abs(x) for x in seen) < 1e-6
