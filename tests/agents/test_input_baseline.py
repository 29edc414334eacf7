"""Decima's per-time input-dependent baseline (gpucluster_env.agents.input_baseline): the envs of a group play one
job table, the baseline's arithmetic on a hand-built case, determinism, and a short training run end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from gpucluster_env.agents.input_baseline import (
    EPISODE,
    PAD,
    Curve,
    InputBaselineBuffer,
    episode_curve,
    leave_one_out,
    returns_to_go,
)
from gpucluster_env.agents.train import TrainConfig
from gymnasium import spaces


def _table(env) -> tuple:  # noqa: ANN001
    """The job table of an env's current episode, as the engine holds it."""
    eng = env.unwrapped.engine
    return tuple(np.asarray(a).tobytes() for a in (eng.submit, eng.req_gpus, eng.iterations, eng.job_model))


def test_the_envs_of_a_group_play_the_same_job_table_each_episode() -> None:
    """Every member's i-th episode has one job table (read through the engine), the tables change from one
    episode to the next, and a member ahead of the others waits (padding steps) at its next episode's start."""
    from gpucluster_env.agents.input_baseline import same_table_vec

    cfg = TrainConfig(out="", scenarios=("castor-philly",), windows=("busiest", "random"), n_envs=3,
                      input_baseline=True, seed=5)
    vec = same_table_vec(cfg)
    vec.reset()
    envs = vec.venv.envs
    first = [_table(e) for e in envs]
    assert first[0] == first[1] == first[2]
    rng = np.random.default_rng(0)
    tables: dict[int, list[tuple]] = {}
    pads = 0
    while min(envs[0].group.episodes) < 3:
        masks = np.stack(vec.env_method("action_masks"))
        _, _, dones, infos = vec.step(np.array([int(rng.choice(np.flatnonzero(m))) for m in masks]))
        for j, info in enumerate(infos):
            pads += bool(info.get(PAD))
            if dones[j]:  # the member has just reset to its next episode: record that episode's table
                tables.setdefault(envs[j].group.episodes[j], []).append(_table(envs[j]))
    assert set(tables[2]) == {tables[2][0]} and len(tables[2]) == 3
    assert tables[2][0] != first[0]  # a new table each episode
    assert pads > 0  # the members' episodes differ in steps, so the first to finish waited
    vec.close()


def test_baseline_arithmetic_on_a_hand_built_case() -> None:
    """Two members on one table, both finished. Member 0: decisions at t = 0, 0, 10 with rewards 0, -1, -2
    (returns-to-go -3, -3, -2); member 1: at t = 0, 5 with rewards -1, -1 (returns-to-go -2, -1). Member 0's
    baseline at t is member 1's return-to-go there (-2 at 0, 0 after its end at 10); member 1's is member 0's,
    interpolated: -2.5 at t = 5."""
    g0 = returns_to_go(np.array([0.0, -1.0, -2.0]), np.ones(3))
    g1 = returns_to_go(np.array([-1.0, -1.0]), np.ones(2))
    assert g0.tolist() == [-3.0, -3.0, -2.0] and g1.tolist() == [-2.0, -1.0]
    c0 = episode_curve(np.array([0.0, 0.0, 10.0]), np.array([0.0, 10.0, 10.0]), g0, True, 0.0)
    c1 = episode_curve(np.array([0.0, 5.0]), np.array([5.0, 5.0]), g1, True, 0.0)
    assert c0.times.tolist() == [0.0, 10.0, 20.0] and c0.values.tolist() == [-3.0, -2.0, 0.0]
    curves = {0: c0, 1: c1}
    b0 = leave_one_out(0, curves, np.array([0.0, 0.0, 10.0]))
    b1 = leave_one_out(1, curves, np.array([0.0, 5.0]))
    assert (g0 - b0).tolist() == [-1.0, -1.0, -2.0]
    assert (g1 - b1).tolist() == [1.0, 1.5]
    # discounting: d = exp(-dt / tau) per step
    d = np.exp(-np.array([10.0, 10.0]) / 100.0)
    assert returns_to_go(np.array([-1.0, -1.0]), d, tail=-4.0) == pytest.approx(
        [-1.0 + d[0] * (-1.0 + d[1] * -4.0), -1.0 + d[1] * -4.0])


def test_a_curve_still_running_reaches_only_to_its_current_time() -> None:
    """An unfinished episode is bootstrapped (its tail) and known only up to its current time; where no other
    member reaches a time, the baseline is missing (NaN: the step keeps its GAE advantage)."""
    c = episode_curve(np.array([0.0, 4.0]), np.array([4.0, 6.0]), np.array([-3.0, -2.5]), False, -2.0)
    assert c.until == 10.0 and c.at(np.array([2.0, 10.0])).tolist() == [-2.75, -2.0]
    assert np.isnan(c.at(np.array([10.5]))).all()
    mean = leave_one_out(0, {1: c, 2: Curve(np.array([0.0, 1.0]), np.array([-1.0, 0.0]), np.inf)},
                         np.array([2.0, 12.0]))
    assert mean.tolist() == [(-2.75 + 0.0) / 2, 0.0]
    assert np.isnan(leave_one_out(0, {0: c}, np.array([1.0]))).all()


def _buffer(size: int = 3, n_envs: int = 2) -> InputBaselineBuffer:
    obs = spaces.Dict({"x": spaces.Box(0.0, 1.0, (1,), np.float32)})
    return InputBaselineBuffer(size, obs, spaces.Discrete(2), device="cpu", gamma=1.0, gae_lambda=1.0,
                               n_envs=n_envs, tau_s=float("inf"), seed=0)


def test_the_buffer_replaces_advantages_and_never_samples_padding() -> None:
    """The hand-built case above through the rollout buffer: member 1 finishes after two steps and waits
    (padding) while member 0 takes its third; the advantages are the ones computed by hand, the critic's targets
    the returns, and the minibatches hold the five real steps only."""
    buf = _buffer()
    rows = [  # (member 0's info, reward), (member 1's info, reward) per step
        (({"time_s": 0.0, "dt": 0.0, EPISODE: 1}, 0.0), ({"time_s": 5.0, "dt": 5.0, EPISODE: 1}, -1.0)),
        (({"time_s": 10.0, "dt": 10.0, EPISODE: 1}, -1.0),
         ({"time_s": 10.0, "dt": 5.0, EPISODE: 1, "terminal_observation": {}}, -1.0)),
        (({"time_s": 20.0, "dt": 10.0, EPISODE: 1, "terminal_observation": {}}, -2.0),
         ({"time_s": 0.0, "dt": 0.0, EPISODE: 2, PAD: True}, 0.0)),
    ]
    for step, row in enumerate(rows):
        buf.note_dt([info for info, _ in row])
        buf.add({"x": np.zeros((2, 1), np.float32)}, np.zeros((2, 1)), np.array([r for _, r in row]),
                np.array([step == 0, step == 2], dtype=np.float32), torch.zeros(2), torch.zeros(2),
                action_masks=np.ones((2, 2), np.float32))
    buf.compute_returns_and_advantage(torch.zeros(2), np.array([True, False]))
    assert buf.advantages[:, 0].tolist() == [-1.0, -1.0, -2.0]
    assert buf.advantages[:2, 1].tolist() == [1.0, 1.5]
    assert buf.returns[:, 0].tolist() == [-3.0, -3.0, -2.0]  # GAE with lambda 1 from values 0: the returns
    assert buf.covered == 1.0 and buf.padding == pytest.approx(1 / 6)
    batches = list(buf.get(2))
    assert [len(b.actions) for b in batches] == [2, 2, 1]
    assert sorted(float(a) for b in batches for a in b.advantages) == [-2.0, -1.0, -1.0, 1.0, 1.5]
    assert buf._episodes == {}  # both members finished table 1: nothing kept for later rollouts


def _one_rollout_advantages(tmp_path: Path, seed: int) -> np.ndarray:
    from gpucluster_env.agents.input_baseline import GroupSteps, install_buffer, same_table_vec
    from gpucluster_env.agents.model_build import make_model

    cfg = TrainConfig(out=str(tmp_path), scenarios=("tiny",), windows=("",), timesteps=128, n_steps=64,
                      batch_size=64, input_baseline=True, seed=seed, progress=False)
    vec = same_table_vec(cfg)
    try:
        model = make_model(cfg, vec, None)
        install_buffer(model, cfg)
        model.learn(total_timesteps=128, callback=GroupSteps())
        return np.asarray(model.rollout_buffer.advantages).copy()
    finally:
        vec.close()


def test_same_seed_same_advantages(tmp_path: Path) -> None:
    a = _one_rollout_advantages(tmp_path / "a", 3)
    b = _one_rollout_advantages(tmp_path / "b", 3)
    c = _one_rollout_advantages(tmp_path / "c", 4)
    assert a.shape == b.shape and np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_a_short_training_run_writes_a_model_that_loads(tmp_path: Path) -> None:
    """``gpucluster train --input-baseline`` on tiny: the run completes its timesteps (padding not counted),
    logs the share of steps with the per-time baseline, and writes a model that ``load_model`` reads and that
    plays an episode."""
    from gpucluster_env.agents.model_meta import load_model

    from gpucluster_env.cli.main import main
    from gpucluster_env.policy import make_policy, run_episode

    out = tmp_path / "run"
    rc = main(["train", "--scenario", "tiny", "--windows", "", "--timesteps", "384", "--n-steps", "64",
               "--eval-freq", "256", "--eval-episodes", "1", "--out", str(out), "--no-progress",
               "--input-baseline", "--seed", "1"])
    assert rc == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["config"]["input_baseline"] is True and meta["timesteps"] >= 384
    assert meta["seeds"]["envs"] == [1, 1] and "--input-baseline" in meta["command"]
    log = (out / "logs" / "progress.csv").read_text().splitlines()
    header = log[0].split(",")
    cells = [r.split(",")[header.index("input_baseline/covered")] for r in log[1:]]
    covered = [float(c) for c in cells if c]  # rows the evaluations dumped leave it empty
    assert covered and all(0.0 <= c <= 1.0 for c in covered) and max(covered) > 0.5
    model, _ = load_model(out)
    assert model.policy is not None
    r = run_episode("tiny", make_policy(f"rl:{out}"), 0)
    assert r["jobs"] > 0 and not r["truncated"]


def test_the_option_is_refused_where_it_does_not_apply() -> None:
    for kwargs in ({"algo": "ppo"}, {"process": "full"}, {"vec": "subproc"}, {"library_defaults": True}):
        with pytest.raises(ValueError, match="input_baseline is for maskable_ppo"):
            TrainConfig(out="", input_baseline=True, **kwargs)
    from gpucluster_env.agents.input_baseline import same_table_vec

    with pytest.raises(ValueError, match="n_envs >= 2"):
        same_table_vec(TrainConfig(out="", input_baseline=True, n_envs=1))
