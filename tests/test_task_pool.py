"""Independent tasks run the same in this process, in local processes and as Ray tasks
(:mod:`gpucluster_env.task_pool`): the search expert's evaluation, rl-table's training seeds and
train-advantage's labels give the same results on every backend."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gpucluster_env.task_pool import TaskFailed, check_backend, in_order, run_tasks


def test_results_come_back_by_index_on_local_backends() -> None:
    items = [4.0, 9.0, 16.0, 25.0]
    for workers in (1, 2):
        assert in_order(run_tasks(math.sqrt, items, workers), len(items)) == [2.0, 3.0, 4.0, 5.0]


def test_a_failing_task_names_its_index() -> None:
    for workers in (1, 2):
        with pytest.raises(TaskFailed) as e:
            in_order(run_tasks(int, ["1", "2", "x"], workers), 3)
        assert e.value.index == 2 and isinstance(e.value.cause, ValueError)


def test_bad_combinations_are_one_line_errors() -> None:
    with pytest.raises(ValueError, match="--workers must be at least 1"):
        check_backend(0, "local", None)
    with pytest.raises(ValueError, match="--backend must be one of local, ray"):
        check_backend(1, "dask", None)
    with pytest.raises(ValueError, match="goes with --backend ray"):
        check_backend(1, "local", "127.0.0.1:6379")
    with pytest.raises(ValueError, match="nothing answers there"):
        check_backend(1, "ray", "127.0.0.1:9")


def _stable_eval(res: dict) -> list:
    return [(r["policy"], r["seed"], r["avg_jct_s"], r["makespan_s"]) for r in res["runs"]]


def _stable_table(res: dict) -> dict:
    return {"algos": {a: [r["final"] for r in v["runs"]] for a, v in res["algos"].items()},
            "curves": {a: [[p["mean"] for p in r["curve"]] for r in v["runs"]] for a, v in res["algos"].items()},
            "policies": {p: v["final"] for p, v in res["policies"].items()}}


@pytest.mark.slow
def test_evaluation_training_and_labels_are_the_same_on_ray(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'gpucluster-env[ray]')")
    import ray
    from gpucluster_env.agents.advantage_train import AdvantageConfig, train_advantage
    from gpucluster_env.agents.baseline_table import TableConfig, run_table
    from gpucluster_env.agents.evaluate import evaluate

    table = TableConfig("tiny", ("a2c",), (0, 1), 256, 1, (200,), (300, 301), ("random",), "srsf")
    adv = {"scenarios": ("tiny",), "episodes": 2, "trees": 5, "horizon_s": 600.0}
    local = {"eval": _stable_eval(evaluate("lookahead", ["tiny"], [0], ["srsf"])),
             "table": _stable_table(run_table(table, log=lambda _m: None, workers=2)),
             "labels": train_advantage(AdvantageConfig(out=str(tmp_path / "local"), workers=2, **adv))}
    try:
        got = {"eval": _stable_eval(evaluate("lookahead", ["tiny"], [0], ["srsf"], workers=2, backend="ray")),
               "table": _stable_table(run_table(table, log=lambda _m: None, workers=2, backend="ray")),
               "labels": train_advantage(AdvantageConfig(out=str(tmp_path / "ray"), workers=2, **adv),
                                         backend="ray")}
        assert ray.get_runtime_context().gcs_address.startswith("127.0.0.1:")  # loopback only
    finally:
        ray.shutdown()
    assert got["eval"] == local["eval"] and got["table"] == local["table"]
    assert (got["labels"] / "model.json").read_bytes() == (local["labels"] / "model.json").read_bytes()
    rounds = [json.loads((d / "meta.json").read_text())["rounds"] for d in (got["labels"], local["labels"])]
    assert [r["labels"] for r in rounds[0]] == [r["labels"] for r in rounds[1]] and rounds[0][0]["labels"] > 0
