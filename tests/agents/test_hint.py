"""The ``sets`` view's SRSF hint (residual learning from the base heuristic) and the trained-action record that
keeps a model to the action kinds its training allowed."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from gpucluster_env.agents.expert import equivalent_action
from gpucluster_env.agents.trained_actions import action_kinds, seen_kinds, trained_mask

from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.policy import make_policy


def _model(env: GPUClusterEnv):  # noqa: ANN202
    import torch
    from gpucluster_env.agents.sets_policy import SetsPolicy
    from sb3_contrib import MaskablePPO

    torch.manual_seed(0)
    return MaskablePPO(SetsPolicy, env, seed=0, device="cpu", policy_kwargs={"dim": 16})


@pytest.mark.parametrize("scenario", ["tiny", "castor-philly"])
def test_the_hint_marks_srsfs_action(scenario: str) -> None:
    """At every step the hint is one-hot at the view's int of the action SRSF takes (or empty where SRSF's
    action has no equivalent int), while SRSF plays the episode; everything else is the plain view's."""
    env = GPUClusterEnv(scenario, observation="sets", hint="srsf", scenario_options={"num_jobs": 30})
    plain = GPUClusterEnv(scenario, observation="sets", scenario_options={"num_jobs": 30})
    obs, _ = env.reset(seed=3)
    ref, _ = plain.reset(seed=3)
    assert set(env.observation_space.spaces) == set(plain.observation_space.spaces) | {"hint"}
    srsf = make_policy("srsf")
    srsf.reset(env)
    marked = 0
    for _ in range(400):
        assert env.observation_space.contains(obs)
        assert all(np.array_equal(obs[k], ref[k]) for k in ref)
        act = srsf.act(obs, env)
        a, _ = equivalent_action(env, act)
        v = None if a is None else env.to_view_action(a)
        want = np.zeros(env.action_space.n, dtype=np.float32)
        if v is not None:
            want[v] = 1.0
            marked += int(v != 0)
        np.testing.assert_array_equal(obs["hint"], want)
        obs, _, term, trunc, _ = env.step(act)
        ref, *_ = plain.step(act)
        if term or trunc:
            break
    assert marked > 20  # it marked starts and preemptions, not only waits


def test_the_hint_needs_the_sets_view_and_a_known_heuristic() -> None:
    with pytest.raises(ValueError, match="hint='srsf' needs observation='sets'"):
        GPUClusterEnv("tiny", hint="srsf")
    with pytest.raises(ValueError, match="hint must be one of srsf or None, got 'castor'"):
        GPUClusterEnv("tiny", observation="sets", hint="castor")
    assert "hint" not in GPUClusterEnv("tiny", observation="sets").observation_space.spaces


def test_a_hinted_env_pickles_and_plays_on_after() -> None:
    env = GPUClusterEnv("tiny", observation="sets", hint="srsf")
    obs, _ = env.reset(seed=0)
    copy = pickle.loads(pickle.dumps(env))
    a = int(np.argmax(obs["hint"]))
    o1, *_ = env.step(a)
    o2, *_ = copy.step(a)
    np.testing.assert_array_equal(o1["hint"], o2["hint"])


def test_an_untrained_hinted_network_copies_srsf() -> None:
    """The head adds a learned bonus to the hinted action's score: before any training the network already
    plays SRSF (the residual's default), and it runs on a cluster of another number of GPU types."""
    env = GPUClusterEnv("castor-philly", observation="sets", hint="srsf", scenario_options={"num_jobs": 40})
    model = _model(env)
    obs, _ = env.reset(seed=1)
    for _ in range(150):
        a, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        if obs["hint"].any():
            assert obs["hint"][int(a)] == 1.0
        obs, _, term, trunc, _ = env.step(int(a))
        if term or trunc:
            break
    tiny = GPUClusterEnv("tiny", observation="sets", hint="srsf")
    obs, _ = tiny.reset(seed=0)
    assert tiny.action_masks()[int(model.predict(obs, action_masks=tiny.action_masks(), deterministic=True)[0])]


def test_trained_kinds_come_from_the_masks_and_gate_the_others() -> None:
    """A network trained where squeeze and swell were always masked does not play them on gimbal-philly, where
    they are offered (without the record it may pick them at every instant: docs/history/rl.md)."""
    env = GPUClusterEnv("gimbal-philly", observation="sets")
    env.reset(seed=0)
    kinds = action_kinds(env)
    assert kinds[0] == "wait" and kinds.count("squeeze") == kinds.count("swell") == 32
    seen = np.zeros(env.action_space.n, dtype=bool)
    seen[[0, kinds.index("preempt")]] = True
    assert seen_kinds(env, seen) == ["preempt", "wait"]
    gate = trained_mask(env, ["place", "preempt"])
    assert gate[0] and not any(gate[a] for a, k in enumerate(kinds) if k in ("squeeze", "swell", "share"))


def test_a_model_keeps_to_its_trained_actions(tmp_path: Path) -> None:
    """``meta.json["trained_actions"]`` masks the other kinds at play time; a model without it plays every
    allowed action as before."""
    from dataclasses import asdict

    from gpucluster_env.agents.model_build import make_env, make_model
    from gpucluster_env.agents.policies import RLPolicy
    from gpucluster_env.agents.train_config import TrainConfig
    from stable_baselines3.common.vec_env import DummyVecEnv

    env = GPUClusterEnv("gimbal-philly", observation="sets")
    cfg = TrainConfig(out=str(tmp_path), process="full", scenarios=("gimbal-philly",), windows=("",), n_envs=1,
                      vec="dummy", env_kwargs={"observation": "sets"})
    model = make_model(cfg, DummyVecEnv([make_env(cfg, 0)]), None)  # as training builds it: the loader rebuilds it
    model.save(str(tmp_path / "model.zip"))
    meta = {"algo": "maskable_ppo", "config": asdict(cfg), "env_kwargs": cfg.env_args()}
    (tmp_path / "meta.json").write_text(json.dumps({**meta, "trained_actions": ["place", "wait"]}))
    pol = RLPolicy(tmp_path)
    obs, _ = env.reset(seed=0)
    pol.reset(env)
    kinds = action_kinds(env)
    for _ in range(200):
        a = pol.act(obs, env)
        assert env.action_masks()[a] and kinds[a] in ("place", "wait")
        obs, _, term, trunc, _ = env.step(a)
        if term or trunc:
            break
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    old = RLPolicy(tmp_path)
    obs, _ = env.reset(seed=0)
    old.reset(env)
    assert old._trained is None


def test_labels_that_depart_from_the_hint_weigh_more() -> None:
    from gpucluster_env.agents.bc import departure_weights

    hint = np.zeros((4, 5), dtype=np.float32)
    hint[0, 2] = hint[1, 2] = hint[2, 0] = 1.0  # row 3: no hinted action (it had no equivalent)
    w = departure_weights({"hint": hint}, np.array([2, 3, 0, 1]), 4.0)
    np.testing.assert_array_equal(w, [1.0, 4.0, 1.0, 4.0])
    assert (departure_weights({"pending": hint}, np.array([2, 3, 0, 1]), 4.0) == 1.0).all()  # no hint entry


def test_workers_play_the_same_episodes_as_one_process(tmp_path: Path) -> None:
    """Cloning episodes played by forked workers give the rows one process gives, in the same order."""
    from gpucluster_env.agents.bc import _episodes
    from gpucluster_env.agents.train import TrainConfig

    def rows(workers: int) -> list[list]:
        cfg = TrainConfig(out=str(tmp_path), process="full", scenarios=("tiny",), windows=("",), bc_experts=("srsf",),
                          env_kwargs={"observation": "sets", "hint": "srsf"}, bc_workers=workers)
        return _episodes(cfg, 3, 7)[0]

    one, two = rows(1), rows(2)
    assert len(one) == len(two) > 0
    assert [r[1] for r in one] == [r[1] for r in two] and [r[3] for r in one] == [r[3] for r in two]
    assert all(np.array_equal(a[0]["hint"], b[0]["hint"]) for a, b in zip(one, two, strict=True))
