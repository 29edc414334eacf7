"""The cluster-independent ``sets`` view and the permutation-invariant policy: one model on every scenario."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.env.sets import MAX_TYPES
from gpucluster_env.scenarios import SCENARIOS

EVERY = tuple(s for s in SCENARIOS if s != "philly-scale")  # 80,000 jobs: its own test below builds it once


def _steps(env: GPUClusterEnv, choose, n: int) -> int:  # noqa: ANN001
    """Play ``n`` steps of ``choose(obs, mask)`` (resetting after an episode end); returns the steps taken."""
    obs, _ = env.reset(seed=0)
    for _ in range(n):
        mask = env.action_masks()
        a = choose(obs, mask)
        assert mask[a], (env.scenario.name, a)
        obs, _, term, trunc, _ = env.step(a)
        assert env.observation_space.contains(obs)
        if term or trunc:
            obs, _ = env.reset(seed=1)
    return n


def test_the_view_has_one_shape_on_every_scenario() -> None:
    """Spaces identical across clusters of 1 to 5 GPU types; absent types are zero rows, masked columns."""
    ref = GPUClusterEnv("tiny", observation="sets")
    for sc in EVERY:
        env = GPUClusterEnv(sc, observation="sets")
        assert env.observation_space == ref.observation_space, sc
        assert env.action_space == ref.action_space, sc
        obs, _ = env.reset(seed=0)
        t = len(env.engine.type_names)
        types = obs["types"].reshape(MAX_TYPES, -1)
        assert (types[:t, -1] == 1).all() and not types[t:].any(), sc
        mask = env.action_masks().reshape(-1)
        cols = mask[1:1 + 16 * (MAX_TYPES + 1)].reshape(16, MAX_TYPES + 1)
        lo = t if t > 1 else 0  # on one type only "any" (the same GPUs) is offered
        assert not cols[:, lo:MAX_TYPES].any(), sc


@pytest.mark.parametrize("scenario", ["tiny", "hadar-philly", "gimbal-philly"])
def test_the_view_is_the_layout_relabelled(scenario: str) -> None:
    """Random masked actions of the view, replayed as the layout's ints on a default env: the same rewards,
    the same pending/running observation, and the two masks allow the same actions one to one."""
    a_env = GPUClusterEnv(scenario, observation="sets")
    b_env = GPUClusterEnv(scenario)
    oa, _ = a_env.reset(seed=3)
    ob, _ = b_env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(300):
        ma, mb = a_env.action_masks(), b_env.action_masks()
        assert ma.sum() == mb.sum()
        valid = np.flatnonzero(ma)
        assert mb[a_env.sets_view.to_layout[valid]].all()
        a = int(valid[rng.integers(len(valid))])
        b = int(a_env.sets_view.to_layout[a])
        assert a_env.to_view_action(b) == a
        assert a_env.describe_action(a) == b_env.describe_action(b)
        oa, ra, ta, _, _ = a_env.step(a)
        ob, rb, tb, _, _ = b_env.step(b)
        assert ra == rb and ta == tb
        assert np.array_equal(oa["pending"], ob["pending"]) and np.array_equal(oa["running"], ob["running"])
        if ta:
            break


def test_an_absent_type_column_is_an_out_of_mask_action() -> None:
    env = GPUClusterEnv("tiny", observation="sets", invalid_action="raise")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="GPU type this cluster does not have"):
        env.step(1 + 5)  # place(0, type 5) on a 3-type cluster
    soft = GPUClusterEnv("tiny", observation="sets")
    soft.reset(seed=0)
    _, _, _, _, info = soft.step(1 + 5)
    assert info["invalid_actions"] == 1
    with pytest.raises(ValueError, match=r"^observation='sets' needs action_layout='compact'"):
        GPUClusterEnv("tiny", observation="sets", action_layout="full")


def _model(env: GPUClusterEnv):  # noqa: ANN202
    import torch
    from gpucluster_env.agents.sets_policy import SetsPolicy
    from sb3_contrib import MaskablePPO

    torch.manual_seed(0)
    return MaskablePPO(SetsPolicy, env, seed=0, device="cpu", policy_kwargs={"dim": 16})


def test_one_model_acts_on_every_registered_scenario() -> None:
    """One model instance, built on tiny (3 types), acts inside the mask on every scenario (1, 3, 5 types)."""
    model = _model(GPUClusterEnv("tiny", observation="sets"))
    for sc in EVERY:
        env = GPUClusterEnv(sc, observation="sets")
        _steps(env, lambda o, m: int(model.predict(o, action_masks=m, deterministic=True)[0]), 40)


def test_scores_follow_the_jobs_not_their_slots() -> None:
    """Swapping two pending slots (their rows, pairs and job_types) swaps their place and share scores and
    leaves wait and the value unchanged: the network is permutation-invariant over the pending set."""
    import torch

    env = GPUClusterEnv("tiny", observation="sets")
    model = _model(env)
    obs, _ = env.reset(seed=0)
    for _ in range(60):  # to a state with at least two pending jobs
        if obs["pending"].reshape(16, -1)[1, 0] == 1:
            break
        obs, *_ = env.step(int(np.flatnonzero(env.action_masks())[-1]))
    assert obs["pending"].reshape(16, -1)[1, 0] == 1
    perm = np.arange(16)
    perm[[0, 1]] = [1, 0]
    swapped = {k: v.copy() for k, v in obs.items()}
    swapped["pending"] = obs["pending"].reshape(16, -1)[perm].ravel()
    swapped["pairs"] = obs["pairs"].reshape(16, 32, 2)[perm].ravel()
    swapped["job_types"] = obs["job_types"].reshape(16, MAX_TYPES, 2)[perm].ravel()
    pol = model.policy
    with torch.no_grad():
        outs = []
        for o in (obs, swapped):
            t, _ = pol.obs_to_tensor(o)
            f = pol.extract_features(t)
            outs.append((pol.action_net(f)[0].numpy(), pol.value_net(f)[0].numpy()))
    (la, va), (lb, vb) = outs
    w = MAX_TYPES + 1
    place_a, place_b = la[1:1 + 16 * w].reshape(16, w), lb[1:1 + 16 * w].reshape(16, w)
    np.testing.assert_allclose(place_a[perm], place_b, rtol=1e-5, atol=1e-6)
    share = slice(1 + 16 * w, 1 + 16 * w + 16)
    np.testing.assert_allclose(la[share][perm], lb[share], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(la[0], lb[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(va, vb, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_philly_scale_takes_the_same_model() -> None:
    model = _model(GPUClusterEnv("tiny", observation="sets"))
    env = GPUClusterEnv("philly-scale", observation="sets")
    _steps(env, lambda o, m: int(model.predict(o, action_masks=m, deterministic=True)[0]), 20)


@pytest.mark.slow
def test_a_sets_model_trains_runs_anywhere_and_names_shapes_it_cannot_take(tmp_path: Path) -> None:
    """Through the CLI: a short cloning run of a sets model on tiny, then the model plays other clusters by
    ``rl:DIR``; an env of other slot counts is one line naming both shapes."""
    from gpucluster_env.cli.main import main
    from gpucluster_env.policy import make_policy, run_episode

    out = tmp_path / "sets"
    rc = main(["train", "--process", "full", "--scenario", "tiny", "--timesteps", "64", "--n-steps", "32",
               "--out", str(out),
               "--bc-episodes", "1", "--bc-epochs", "1", "--bc-expert", "srsf", "--env-arg", "observation=sets",
               "--eval-freq", "1000", "--checkpoint-freq", "1000", "--no-progress", "--windows", "", "--vec",
               "dummy", "--n-envs", "1"])
    assert rc == 0
    for sc in ("tiny", "hadare-aws", "castor-philly"):
        res = run_episode(sc, f"rl:{out}", 0, scenario_options={"num_jobs": 20} if sc == "castor-philly" else None)
        assert res["steps"] > 0 and (res["jobs_done"] > 0 or res["truncated_by"]), sc  # it acted there
    pol = make_policy(f"rl:{out}")
    env = GPUClusterEnv("tiny", observation="sets", n_pending=8)
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError, match=r"'pending' \(192,\) vs \(96,\).*'sets' view .* 16 pending and 32 running"
                                         r" slots, this env has observation='sets' with 8 and 32"):
        pol.act(obs, env)


def test_the_cli_takes_only_the_sets_observation() -> None:
    from gpucluster_env.cli.train_cmd import env_args

    assert env_args(["observation=sets"]) == {"observation": "sets"}
    with pytest.raises(ValueError, match=r"^--env-arg observation: only 'sets'"):
        env_args(["observation=box"])
