"""The rollout-advantage policy: its features, its training command end to end, the shipped model, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from gpucluster_env.agents.advantage import SHIPPED_ADVANTAGE, AdvantagePolicy, load_advantage_model
from gpucluster_env.agents.advantage_features import FEATURE_NAMES, candidate_features
from gpucluster_env.agents.advantage_train import Labeller
from gpucluster_env.baselines.lookahead import CandidateLister

from gpucluster_env.cli.main import main
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.policy import make_policy, run_episode


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One expert round and one learner round on two tiny episodes, through the CLI, two labelling workers."""
    out = tmp_path_factory.mktemp("adv") / "run"
    rc = main(["train-advantage", "--scenario", "tiny", "--episodes", "2", "--rounds", "1", "--trees", "30",
               "--horizon-s", "1800", "--out", str(out), "--no-progress"])
    assert rc == 0
    return out


def _state_at(scenario: str, seed: int, steps: int) -> GPUClusterEnv:
    env = GPUClusterEnv(scenario)
    env.reset(seed=seed)
    srsf = make_policy("srsf")
    for _ in range(steps):
        env.step(srsf.act(None, env))
    return env


def test_features_one_row_per_candidate_finite_and_cluster_free() -> None:
    for scenario in ("tiny", "castor-philly", "gavel-hetero"):
        env = _state_at(scenario, 1, 40)
        view = make_policy("srsf").view(env)
        own = make_policy("srsf").act(None, env)
        cands = CandidateLister(3).actions(view, own, env.min_run_s)
        rows = candidate_features(view, own, cands)
        assert rows.shape == (len(cands), len(FEATURE_NAMES))  # the same columns on any cluster
        assert np.isfinite(rows).all()
        own_row = rows[0]
        assert own_row[FEATURE_NAMES.index("service_vs_own")] == 0.0
        assert 0 <= own_row[FEATURE_NAMES.index("free_frac")] <= 1


def test_features_read_no_future_job() -> None:
    """Changing the jobs not yet submitted (their count, sizes and durations) changes no feature."""
    env = _state_at("castor-philly", 2, 30)
    eng = env.engine
    view = make_policy("srsf").view(env)
    own = make_policy("srsf").act(None, env)
    cands = CandidateLister(3).actions(view, own, env.min_run_s)
    before = candidate_features(view, own, cands)
    future = eng.submit > eng.now
    assert future.any()
    other = make_policy("srsf").view(env)
    other.solo_time = np.where(future, view.solo_time * 7.0, view.solo_time)
    other.req_gpus = np.where(future, 1, view.req_gpus)
    other.submit = np.where(future, view.submit + 500.0, view.submit)
    after = candidate_features(other, own, cands)
    np.testing.assert_array_equal(before, after)


def test_labels_are_rollout_advantages_over_the_heuristic() -> None:
    """At a searched decision point a label is the candidate's rollout cost minus SRSF's, in job-hours; the
    expert-driven labeller plays the search's choice."""
    lab = Labeller(1800.0, 3)
    res = run_episode("tiny", lab, 3)
    assert res["jobs_done"] == res["jobs"]
    assert len(lab.rows) == len(lab.labels) > 10
    assert all(r.shape == (len(y), len(FEATURE_NAMES)) for r, y in zip(lab.rows, lab.labels, strict=True))
    look = make_policy("lookahead", horizon_s=1800.0, arrivals=False)
    assert run_episode("tiny", look, 3)["avg_jct_s"] == res["avg_jct_s"]


def test_train_advantage_end_to_end(trained: Path, capsys: pytest.CaptureFixture[str]) -> None:
    meta = json.loads((trained / "meta.json").read_text())
    assert meta["algo"] == "rollout_advantage" and meta["features"] == list(FEATURE_NAMES)
    assert [r["actor"] for r in meta["rounds"]] == ["expert", "rounds/0"]
    assert meta["rounds"][1]["labels_total"] > meta["rounds"][0]["labels"] > 0
    assert (trained / "rounds" / "0" / "model.json").is_file()
    assert meta["command"].startswith("gpucluster train-advantage --scenario tiny")
    capsys.readouterr()
    assert main(["run", "--scenario", "tiny", "--seed", "5", "--policy", f"rl:{trained}", "--json",
                 "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["jobs_done"] == out["jobs"]


def test_training_is_deterministic(trained: Path, tmp_path: Path) -> None:
    """The same command writes the same model, whether one process labels or two."""
    again = tmp_path / "again"
    assert main(["train-advantage", "--scenario", "tiny", "--episodes", "2", "--rounds", "1", "--trees", "30",
                 "--horizon-s", "1800", "--out", str(again), "--workers", "1", "--no-progress"]) == 0
    assert (again / "model.json").read_bytes() == (trained / "model.json").read_bytes()


def test_policy_departs_only_past_the_threshold(trained: Path) -> None:
    """A huge threshold makes it SRSF exactly; at 0 it departs where the model predicts a gain."""
    srsf = run_episode("tiny", "srsf", 4)
    strict = AdvantagePolicy(trained, threshold=1e9)
    assert run_episode("tiny", strict, 4)["avg_jct_s"] == srsf["avg_jct_s"]
    assert strict.episode_stats()["departures"] == 0 and strict.episode_stats()["scored"] > 0
    loose = AdvantagePolicy(trained)
    a, b = run_episode("tiny", loose, 4), run_episode("tiny", AdvantagePolicy(trained), 4)
    assert a["avg_jct_s"] == b["avg_jct_s"]  # same seed, same episode


def test_bad_model_folders_are_one_line_errors(trained: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    meta = json.loads((trained / "meta.json").read_text())
    meta["features"] = meta["features"][:-1]
    (bad / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"reads 26 features, this version computes 27 .*retrain it"):
        load_advantage_model(bad)
    meta["features"] = list(FEATURE_NAMES)
    (bad / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(FileNotFoundError, match=r"no model.json"):
        load_advantage_model(bad)
    (bad / "model.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"model.json: not an XGBoost model"):
        load_advantage_model(bad)
    assert main(["train-advantage", "--out", str(tmp_path / "x"), "--episodes", "0"]) == 2
    assert main(["train-advantage", "--out", str(tmp_path / "x"), "--scenario", "nope"]) == 2


def test_shipped_model_runs_on_a_cluster_of_another_shape() -> None:
    assert (SHIPPED_ADVANTAGE / "model.json").is_file()
    res = run_episode("tiny", "rl-advantage", 0)  # three GPU types; trained on one-type clusters
    assert res["jobs_done"] == res["jobs"]
