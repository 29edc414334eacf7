"""The fork rows' own kind bias in :class:`~gpucluster_env.agents.job_policy.JobScorePolicy` (issue 41).

Checked: the untrained policy on an observation with fork rows scores a fork row at the start rows' prior (0 nats)
and a preempt row 3 nats lower; a model without fork rows has exactly the parameters of before (the shipped
``rl-scratch`` weights fit a freshly built network, two kind biases, no ``fork_col``); a model with fork rows keeps
the option through the project's loader and through SB3's own ``save``/``load``.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
import torch
from gpucluster_env.agents.job_policy import FORK_PRIOR, PREEMPT_PRIOR, JobScorePolicy, fork_column

SMALL = {"num_jobs": 12}


def _model(tmp_path: Path, fork: bool):
    from gpucluster_env.agents.model_build import make_env, make_model
    from gpucluster_env.agents.train_config import TrainConfig
    from stable_baselines3.common.vec_env import DummyVecEnv

    kw = {"scenario_options": SMALL, **({"fork": True} if fork else {})}
    cfg = TrainConfig(out=str(tmp_path), process="jobs", scenarios=("gavel-hetero",), windows=("",), n_envs=1,
                      vec="dummy", env_kwargs=kw)
    vec = DummyVecEnv([make_env(cfg, 0)])
    return cfg, vec, make_model(cfg, vec, None)


def _kind_obs(view, rng: np.random.Generator, fork_col: int | None) -> dict[str, torch.Tensor]:
    """A batch of one observation with every row real: random features, the kind columns set by the row's place."""
    f = len(view.job_features)
    jobs = rng.random((view.rows, f)).astype(np.float32)
    jobs[:, 0] = 0.0
    jobs[:view.n_pending, 0] = 1.0
    if fork_col is not None:
        jobs[:, fork_col] = 0.0
        jobs[view.n_pending + view.n_running:, fork_col] = 1.0
    ctx = rng.random(len(view.context_features)).astype(np.float32)
    return {"jobs": torch.as_tensor(jobs.ravel())[None], "job_mask": torch.ones(1, view.rows),
            "context": torch.as_tensor(ctx)[None]}


def test_fork_column_is_the_fork_features_place() -> None:
    assert fork_column(("pending", "gpus", "fork", "copies")) == 2
    assert fork_column(("pending", "gpus")) is None


def test_untrained_policy_tries_a_fork_row_as_often_as_a_start_row(tmp_path: Path) -> None:
    _, vec, model = _model(tmp_path, fork=True)
    view = vec.envs[0].unwrapped.view
    pol = model.policy
    assert view.fork and pol.fork_col == view.job_features.index("fork")
    assert pol.action_net.kind_bias.tolist() == [0.0, -PREEMPT_PRIOR, -FORK_PRIOR] and FORK_PRIOR == 0.0
    obs = _kind_obs(view, np.random.default_rng(0), pol.fork_col)
    with torch.no_grad():
        logits = pol.action_net(pol.extract_features(obs, pol.pi_features_extractor))[0, 1:].numpy()
        bias = pol.action_net.kind_bias.data.clone()
        pol.action_net.kind_bias.data.zero_()
        bare = pol.action_net(pol.extract_features(obs, pol.pi_features_extractor))[0, 1:].numpy()
        pol.action_net.kind_bias.data.copy_(bias)
    p, r = view.n_pending, view.n_running
    kinds = {"start": slice(0, p), "preempt": slice(p, p + r), "fork": slice(p + r, p + 2 * r)}
    added = {k: logits[s] - bare[s] for k, s in kinds.items()}
    np.testing.assert_allclose(added["start"], 0.0, atol=1e-6)
    np.testing.assert_allclose(added["preempt"], -PREEMPT_PRIOR, atol=1e-6)
    np.testing.assert_allclose(added["fork"], -FORK_PRIOR, atol=1e-6)
    means = {k: float(logits[s].mean()) for k, s in kinds.items()}  # the heads start near zero
    assert abs(means["fork"] - means["start"]) < 0.5 and abs(means["preempt"] + PREEMPT_PRIOR) < 0.5


def test_the_fork_bias_is_trained(tmp_path: Path) -> None:
    _, vec, model = _model(tmp_path, fork=True)
    pol = model.policy
    obs = _kind_obs(vec.envs[0].unwrapped.view, np.random.default_rng(1), pol.fork_col)
    logits = pol.action_net(pol.extract_features(obs, pol.pi_features_extractor))
    logits[0, -1].backward()  # the last row is a fork row
    assert pol.action_net.kind_bias.grad[2] != 0.0


def test_without_fork_rows_the_network_is_the_one_before(tmp_path: Path) -> None:
    from gpucluster_env.agents.job_model import SHIPPED_JOBS_DIR
    from gpucluster_env.agents.model_meta import load_model

    _, _, model = _model(tmp_path, fork=False)
    pol = model.policy
    assert pol.fork_col is None and "fork_col" not in pol._get_constructor_parameters()
    assert pol.action_net.kind_bias.tolist() == [0.0, -PREEMPT_PRIOR]
    shipped, _ = load_model(SHIPPED_JOBS_DIR)  # its weights load with exact_match into the rebuilt network
    sp = shipped.policy
    assert sp.fork_col is None and sp.action_net.kind_bias.shape == (2,)
    names = {k: tuple(v.shape) for k, v in sp.state_dict().items()}
    assert set(names) == set(pol.state_dict())  # same keys; the shapes differ only by the features' count
    assert names["action_net.kind_bias"] == tuple(pol.state_dict()["action_net.kind_bias"].shape) == (2,)
    assert sp.features_extractor.features_dim == sp.action_net.rows * (sp.job_dim + 1) + sp.job_dim


@pytest.mark.parametrize("how", ["project", "sb3"])
def test_save_and_load_keep_the_fork_option(tmp_path: Path, how: str) -> None:
    cfg, vec, model = _model(tmp_path, fork=True)
    with torch.no_grad():
        model.policy.action_net.kind_bias[2] = 1.25  # a trained-looking value, to see it come back
    model.save(str(tmp_path / "model.zip"))
    if how == "project":
        from gpucluster_env.agents.model_meta import load_model

        (tmp_path / "meta.json").write_text(json.dumps({"algo": "maskable_ppo", "config": asdict(cfg),
                                                        "env_kwargs": cfg.env_args()}))
        loaded, _ = load_model(tmp_path)
    else:
        from sb3_contrib import MaskablePPO

        loaded = MaskablePPO.load(str(tmp_path / "model.zip"), device="cpu")
        assert isinstance(loaded.policy, JobScorePolicy)
    assert loaded.policy.fork_col == model.policy.fork_col is not None
    assert loaded.policy.action_net.kind_bias.tolist() == [0.0, -PREEMPT_PRIOR, 1.25]
    obs = _kind_obs(vec.envs[0].unwrapped.view, np.random.default_rng(2), model.policy.fork_col)
    with torch.no_grad():
        a = model.policy.get_distribution(obs).distribution.logits
        b = loaded.policy.get_distribution(obs).distribution.logits
    torch.testing.assert_close(a, b)
