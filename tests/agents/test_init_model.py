"""``gpucluster train --init-model``: a run that continues from a saved job-centric model (issue 41).

Checked: before any training step the new network, with inputs the old model lacks (the GPU-type features of a
mixed-cluster run) at zero, gives the old model's logits, action probabilities and value on the same episode;
the run's meta.json names the model it continued from (name, sha256) and its kind says "continued from"; a model
that cannot be mapped (other widths, other action layout, a feature the run does not offer, another process, an
unknown name) is refused in one line, exit status 2 from the command line.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from gpucluster_env.agents.init_model import SHIPPED_MODELS, init_from, sha256
from gpucluster_env.agents.model_meta import load_model

from gpucluster_env.cli.main import main


def _new_model(tmp_path: Path, scenarios: tuple[str, ...] = ("tiny",), **kw):
    from gpucluster_env.agents.train import TrainConfig, default_job_features, make_model, make_vec

    env_kwargs = kw.pop("env_kwargs", {})
    cfg = TrainConfig(out=str(tmp_path), scenarios=scenarios, windows=("",), n_envs=1, progress=False,
                      env_kwargs=env_kwargs, **kw)
    if "features" not in cfg.env_kwargs:
        cfg.env_kwargs["features"] = [list(f) for f in default_job_features(cfg)]
    vec = make_vec(cfg)
    return cfg, make_model(cfg, vec, None)


def _heads(model, obs, mask):
    pol = model.policy
    with torch.no_grad():
        t = pol.obs_to_tensor(obs)[0]
        z = pol.extract_features(t)
        logits = pol.action_net(z)
        probs = pol.get_distribution(t, action_masks=mask).distribution.probs
        value = pol.predict_values(t)
    return logits.numpy(), probs.numpy(), value.numpy()


def test_a_continued_run_starts_at_the_old_models_scores(tmp_path: Path) -> None:
    from gpucluster_env.env.jobs_env import JobsEnv

    cfg, model = _new_model(tmp_path)
    record = init_from(model, cfg, "rl-scratch")
    old, meta = load_model(SHIPPED_MODELS / "rl-scratch")
    f_old = tuple(map(tuple, meta["env_kwargs"]["features"]))
    f_new = tuple(map(tuple, cfg.env_kwargs["features"]))
    assert record["zero_initialised_inputs"] == {"job": ["best_speed"],
                                                 "context": ["free_type0", "free_type1", "free_type2"]}
    assert record["model"] == "rl-scratch"
    assert record["model_zip_sha256"] == sha256(SHIPPED_MODELS / "rl-scratch" / "model.zip")
    phi = model.policy.features_extractor.phi[0].weight
    assert not phi[:, f_new[0].index("best_speed")].any()  # the new input's weights are zero
    assert phi[:, f_new[0].index("preempted")].abs().sum() > 0
    e_old, e_new = JobsEnv("tiny", features=f_old), JobsEnv("tiny", features=f_new)
    o_old, _ = e_old.reset(seed=3)
    o_new, _ = e_new.reset(seed=3)
    assert not np.array_equal(o_new["context"][-3:], np.zeros(3))  # the type features do read something
    for _ in range(60):
        m_old, m_new = e_old.action_masks(), e_new.action_masks()
        assert np.array_equal(m_old, m_new)
        for a, b in zip(_heads(old, o_old, m_old), _heads(model, o_new, m_new), strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
        action = int(np.argmax(_heads(old, o_old, m_old)[1]))
        o_old, _, done, _, _ = e_old.step(action)
        o_new, _, done_new, _, _ = e_new.step(action)
        assert done == done_new
        if done:
            break


def test_train_records_the_model_it_continued_from(tmp_path: Path) -> None:
    from gpucluster_env.agents.job_model import JobModelPolicy

    out = tmp_path / "warm"
    assert main(["train", "--scenario", "tiny", "--init-model", "rl-scratch", "--timesteps", "64",
                 "--n-steps", "32", "--out", str(out), "--no-progress"]) == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["init_model"]["model"] == "rl-scratch"
    assert meta["init_model"]["model_zip_sha256"] == sha256(SHIPPED_MODELS / "rl-scratch" / "model.zip")
    assert meta["config"]["init_model"] == "rl-scratch"
    assert meta["kind"] == "RL from scratch, continued from rl-scratch"
    assert "--init-model rl-scratch" in meta["command"]
    assert JobModelPolicy(out).kind == "RL from scratch, continued from rl-scratch"


@pytest.mark.parametrize("kw, words", [
    ({"job_dim": 32}, "units a layer"),
    ({"env_kwargs": {"fork": True}}, "fork"),
    ({"env_kwargs": {"n_running": 8}}, "n_running"),
    ({"env_kwargs": {"features": [["pending", "actionable", "gpus", "remaining_1h"], ["free_gpus"]]}},
     "not offered by this run"),
])
def test_a_model_that_cannot_be_mapped_is_refused(tmp_path: Path, kw: dict, words: str) -> None:
    scenarios = ("gavel-hetero",) if kw.get("env_kwargs", {}).get("fork") else ("tiny",)
    if scenarios == ("gavel-hetero",):
        kw["env_kwargs"]["scenario_options"] = {"num_jobs": 12}
    cfg, model = _new_model(tmp_path, scenarios, **kw)
    with pytest.raises(ValueError, match=words) as e:
        init_from(model, cfg, "rl-scratch")
    assert "\n" not in str(e.value) and str(e.value).startswith("--init-model rl-scratch")


def test_the_command_line_refuses_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for extra, words in ((["--init-model", "no-such-model"], "neither a folder"),
                         (["--init-model", "rl-castor-philly"], "not a MaskablePPO model of the job-centric"),
                         (["--init-model", "rl-scratch", "--process", "full"], "init_model continues"),
                         (["--init-model", "rl-scratch", "--env-arg", "n_pending=16"], "n_pending")):
        capsys.readouterr()
        assert main(["train", "--scenario", "tiny", "--timesteps", "64", "--n-steps", "32",
                     "--out", str(tmp_path / "x"), "--no-progress", *extra]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
