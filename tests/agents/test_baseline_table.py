"""The baseline table (``gpucluster rl-table``): normalized scores against the reference on the same jobs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gpucluster_env.agents.baseline_table import TableConfig, algo_summary, finite_mean, markdown, run_table

from gpucluster_env.cli.main import main
from gpucluster_env.policy import run_episode


def test_fixed_policies_are_scored_against_the_reference_on_the_same_seeds() -> None:
    cfg = TableConfig("tiny", algos=(), curve_seeds=(5,), eval_seeds=(3, 4), policies=("srsf", "fifo"))
    res = run_table(cfg, log=lambda _: None)
    assert res["policies"]["srsf"]["final"] == [1.0, 1.0]  # the reference against itself
    fifo = [run_episode("tiny", "fifo", s)["avg_jct_s"] / run_episode("tiny", "srsf", s)["avg_jct_s"]
            for s in (3, 4)]
    np.testing.assert_allclose(res["policies"]["fifo"]["final"], fifo)
    assert res["policies"]["fifo"]["n"] == 2 and res["policies"]["fifo"]["ci95"] is not None
    assert "| fifo | " in markdown(res)


def test_an_algorithm_is_summarized_over_its_training_seeds() -> None:
    """Unfinished episodes are left out and counted; the interval is over the per-seed means."""
    runs = [{"final": [0.9, 1.1], "curve": [{"timesteps": 10, "mean": 2.0}], "train_s": 1.0},
            {"final": [1.2, float("nan")], "curve": [{"timesteps": 10, "mean": 3.0}], "train_s": 3.0},
            {"final": [float("nan"), float("nan")], "curve": [{"timesteps": 10}], "train_s": 2.0}]
    s = algo_summary(runs)
    assert s["n"] == 2 and s["truncated"] == 3 and s["episodes"] == 6
    assert s["mean"] == pytest.approx((1.0 + 1.2) / 2)
    assert s["curve"][0]["mean"] == pytest.approx(2.5) and s["train_s"] == pytest.approx(2.0)


def test_an_algorithm_that_never_finishes_has_no_score_and_no_numpy_warning() -> None:
    """PPO and DQN without masks finish no episode on the paper scenarios: their summary and curve are NaN,
    said without numpy's empty-slice warning on the user's terminal."""
    runs = [{"final": [float("nan")] * 2, "curve": [{"timesteps": 10}], "train_s": 1.0}] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = algo_summary(runs)
        assert np.isnan(finite_mean([None, float("nan")])) and finite_mean([1.0, None, 3.0]) == 2.0
    assert s["n"] == 0 and s["truncated"] == 6 and "mean" not in s and np.isnan(s["curve"][0]["mean"])


def test_bad_arguments_are_one_line(capsys: pytest.CaptureFixture) -> None:
    assert main(["rl-table", "--algos", "sac"]) == 2
    assert "unknown algorithm 'sac'" in capsys.readouterr().err
    assert main(["rl-table", "--algos", "a2c:full"]) == 2
    assert "--algos: a2c trains on the job-centric process" in capsys.readouterr().err
    assert main(["rl-table", "--policies", "nope"]) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err


def test_every_variant_trains_and_scores(tmp_path) -> None:
    """ALGO (job-centric, project defaults), ALGO:lib (library defaults) and ALGO:full each train a curve point
    and score the final model on held-out seeds against the reference."""
    from gpucluster_env.agents.baseline_table import train_config

    assert train_config("maskable_ppo", "tiny", 0, 64).time_discount_s == 7200.0
    lib = train_config("ppo:lib", "tiny", 0, 64)
    assert lib.library_defaults and lib.reference is None and lib.time_discount_s == 0.0
    assert train_config("dqn:full", "tiny", 0, 64).process == "full"
    cfg = TableConfig("tiny", algos=("maskable_ppo", "a2c:lib"), train_seeds=(0,), timesteps=128, points=1,
                      curve_seeds=(5,), eval_seeds=(3,), policies=())
    res = run_table(cfg, log=lambda *_: None)
    for algo in cfg.algos:
        run = res["algos"][algo]["runs"][0]
        assert len(run["curve"]) == 1 and len(run["final"]) == 1 and np.isfinite(run["final"][0])


def _group(seeds: list[int], ref: float = 100.0, policies: dict | None = None) -> dict:
    """A row group as `rl-table --out` writes it, with made-up scores (seed k scores 1 + k / 10)."""
    runs = [{"algo": "ppo", "seed": k, "final": [1.0 + k / 10, 1.0 + k / 10],
             "curve": [{"timesteps": 10, "mean": 2.0 + k}], "train_s": 1.0} for k in seeds]
    cfg = {"scenario": "tiny", "algos": ["ppo"], "train_seeds": seeds, "timesteps": 10, "points": 1,
           "curve_seeds": [5], "eval_seeds": [3, 4], "policies": list(policies or {}), "reference": "srsf"}
    return {"config": cfg, "reference_jct_s": {"3": ref, "4": 50.0}, "algos": {"ppo": {"runs": runs}},
            "policies": policies or {}, "wall_s": 1.0}


def test_row_groups_over_different_training_seeds_merge_into_one() -> None:
    from gpucluster_env.agents.baseline_table import merge_tables

    sjf = {"policy": "sjf", "final": [0.9, 1.1], "n": 2, "mean": 1.0, "ci95": [0.0, 2.0], "wall_s_per_episode": 0.1}
    m = merge_tables([_group([0, 1, 2], policies={"sjf": sjf}), _group([3, 4])], ["a.json", "b.json"])
    ppo = m["algos"]["ppo"]
    assert [r["seed"] for r in ppo["runs"]] == [0, 1, 2, 3, 4] and m["config"]["train_seeds"] == [0, 1, 2, 3, 4]
    assert ppo["n"] == 5 and ppo["mean"] == pytest.approx(1.2)  # the mean of 1.0, 1.1, ..., 1.4
    assert ppo["curve"][0]["per_seed"] == [2.0, 3.0, 4.0, 5.0, 6.0]
    assert m["policies"] == {"sjf": sjf} and m["merged_from"] == ["a.json", "b.json"]
    assert "| ppo | 1.200 [" in markdown(m) and "5 training seeds" in markdown(m)
    with pytest.raises(ValueError, match="b.json: ppo seed 2 is in an earlier group too"):
        merge_tables([_group([0, 1, 2]), _group([2, 3])], ["a.json", "b.json"])
    with pytest.raises(ValueError, match="b.json: the reference's JCT on seed 3 differs"):
        merge_tables([_group([0]), _group([1], ref=101.0)], ["a.json", "b.json"])
    other = _group([1])
    other["config"]["timesteps"] = 20
    with pytest.raises(ValueError, match="b.json: timesteps 20 differs from a.json's 10"):
        merge_tables([_group([0]), other], ["a.json", "b.json"])


def test_rl_table_merge_from_the_command_line(tmp_path, capsys: pytest.CaptureFixture) -> None:
    import json

    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "m.json"
    a.write_text(json.dumps(_group([0, 1])))
    b.write_text(json.dumps(_group([2])))
    assert main(["rl-table", "--merge", str(a), str(b), "--out", str(out)]) == 0
    assert "3 training seeds" in capsys.readouterr().out
    assert json.loads(out.read_text())["config"]["train_seeds"] == [0, 1, 2]
    (tmp_path / "bad.json").write_text("{}")
    assert main(["rl-table", "--merge", str(a), str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert "bad.json: not an rl-table result" in err and len(err.strip().splitlines()) == 1
