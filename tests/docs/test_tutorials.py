"""The tutorials of docs/tutorials/ run as written: each page shows its example files exactly as they are in
docs/tutorials/examples/, its commands are the ones run here, and every example runs end to end on a small
scenario with the outcome the page describes (not only without an error)."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "docs" / "tutorials"
EXAMPLES = TUTORIALS / "examples"
SHOWN = re.compile(r"<!-- example: (?P<file>[\w./-]+) -->\n```\w*\n(?P<text>.*?)```", re.S)
"""A page shows an example file as a marker line, then a fenced block holding the whole file."""
LAB_COLUMNS = "job_id=id,submit_s=arrival_min:min,num_gpus=gpus,duration_s=runtime_h:h,model=arch"
LAB_TRACE = ["--trace", "lab_jobs.csv", "--cluster", "V100:1x8,T4:2x4"]


@pytest.fixture(scope="module")
def examples() -> Iterator[None]:
    """The examples folder on the import path, as it is when a reader runs them from there."""
    sys.path.insert(0, str(EXAMPLES))
    yield
    sys.path.remove(str(EXAMPLES))


def example(name: str) -> ModuleType:
    """The example module ``name`` (the ``examples`` fixture puts its folder on the import path)."""
    return importlib.import_module(name)


def page(name: str) -> str:
    """A tutorial page's text, with shell line continuations joined, so a command reads as one line."""
    return re.sub(r"\\\n\s*", "", (TUTORIALS / name).read_text())


def gpucluster(*args: str, page_name: str | None = None, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """``gpucluster ARGS EXTRA --json`` run from the examples folder, its JSON output; with ``page_name``, the
    command ``gpucluster ARGS`` is first checked to be on that page word for word."""
    if page_name is not None:
        assert "gpucluster " + " ".join(args) in page(page_name), f"{page_name} does not show: {args}"
    done = subprocess.run([sys.executable, "-m", "gpucluster_env.cli.main", *args, *extra, "--json"], cwd=EXAMPLES,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_pages_show_their_example_files_as_they_are() -> None:
    shown: set[Path] = set()
    for md in sorted(TUTORIALS.glob("*.md")):
        blocks = list(SHOWN.finditer(md.read_text()))
        assert blocks or md.name == "index.md", f"{md.name} shows no example file"
        for m in blocks:
            path = TUTORIALS / m["file"]
            assert path.is_file(), f"{md.name} shows {m['file']}, which does not exist"
            assert m["text"] == path.read_text(), f"{md.name}'s copy of {m['file']} differs from the file"
            shown.add(path)
    files = {p for p in EXAMPLES.iterdir() if p.suffix in (".py", ".csv", ".toml")}
    assert files == shown, f"example files no page shows: {sorted(p.name for p in files - shown)}"


def test_the_shown_block_check_sees_a_drifted_copy() -> None:
    text = "<!-- example: examples/x.py -->\n```python\nprint(1)\n```\n"
    assert [(m["file"], m["text"]) for m in SHOWN.finditer(text)] == [("examples/x.py", "print(1)\n")]


def test_own_policy_starts_the_fewest_gpus_first_and_runs_by_reference(examples: None, tmp_path: Path) -> None:
    from gpucluster_env.engine import Place

    mod = example("fewest_gpus_first")

    class Checked(mod.FewestGPUsFirst):  # records, at each start, the GPUs asked and the least a startable job asks
        starts: list[tuple[int, int]] = []

        def act(self, observation: Any, env: Any) -> Any:
            action = super().act(observation, env)
            if isinstance(action, Place):
                view = self.view(env)
                startable = [j for j in view.pending_jobs().tolist()
                             if view.req_gpus[j] <= view.num_free() and view.plan_place(j) is not None]
                self.starts.append((int(view.req_gpus[action.job]), min(int(view.req_gpus[j]) for j in startable)))
            return action

    from gpucluster_env.policy import run_episode

    checked = run_episode("tiny", Checked(), 0)
    assert len(Checked.starts) == checked["jobs"] == 40 and all(asked == least for asked, least in Checked.starts)
    results = mod.compare()
    assert all(r["jobs_done"] == r["jobs"] == 40 and not r["truncated"] for r in results.values())
    assert results["fewest-gpus-first"]["avg_jct_s"] == checked["avg_jct_s"] != results["fifo"]["avg_jct_s"]
    ref = "fewest_gpus_first:FewestGPUsFirst"
    run = gpucluster("run", "--scenario", "tiny", "--policy", ref, "--seed", "0", page_name="policy.md")
    assert (run["policy"], run["avg_jct_s"]) == (ref, checked["avg_jct_s"])
    board = gpucluster("leaderboard", "run", "--scenarios", "tiny", "--policies", f"{ref},fifo,sjf", "--seeds", "3",
                       page_name="policy.md", extra=("--out", str(tmp_path / "board")))
    rows = {r["policy"]: r for r in board["summary"][0]["scenarios"][0]["rows"]}
    assert board["ran"] == 9 and (rows[ref]["n"], rows[ref]["truncated"]) == (3, 0)


def test_own_trace_is_read_through_its_column_map(examples: None) -> None:
    jobs = example("read_lab_trace").read_jobs()
    raw = pd.read_csv(EXAMPLES / "lab_jobs.csv")
    assert len(jobs) == len(raw) == 12
    assert jobs["submit_s"].tolist() == (raw["arrival_min"] * 60.0).tolist()
    assert jobs["duration_s"].tolist() == (raw["runtime_h"] * 3600.0).tolist()
    assert jobs["model"].tolist() == raw["arch"].tolist() and jobs["job_id"].tolist() == raw["id"].tolist()
    run = gpucluster("run", *LAB_TRACE, "--policy", "sjf", "--columns", LAB_COLUMNS, page_name="trace.md")
    assert run["jobs"] == run["jobs_done"] == 12 and not run["truncated"]


def test_the_fairness_metric_is_computed_from_the_job_table(examples: None) -> None:
    mod = example("slowdown_fairness")
    even = pd.DataFrame({"finish_s": [1.0, 2.0, np.nan], "jct_s": [4.0, 6.0, np.nan], "solo_s": [2.0, 3.0, 1.0]})
    assert mod.slowdown_fairness(even) == 1.0  # both finished jobs slowed down 2x; the unfinished one left out
    skewed = even.assign(jct_s=[2.0, 300.0, np.nan])
    assert 0.5 <= mod.slowdown_fairness(skewed) < 0.52  # 1/n with n = 2 is the floor
    from gpucluster_env.policy import run_episode

    def both(env: Any) -> dict[str, float]:
        table = env.unwrapped.engine.job_table()
        return {**mod.with_fairness(env), "table_slowdown": float((table["jct_s"] / table["solo_s"]).mean())}

    results = {p: [run_episode("tiny", p, seed, extra=both) for seed in (0, 1, 2)] for p in ("fifo", "sjf")}
    for r in (r for rs in results.values() for r in rs):
        assert 1.0 / r["jobs"] <= r["slowdown_fairness"] <= 1.0
        assert r["table_slowdown"] == pytest.approx(r["avg_slowdown"], rel=1e-12)
    assert mod.measure(("fifo",), seeds=(0,))["fifo"][0]["slowdown_fairness"] == results["fifo"][0]["slowdown_fairness"]
    fairness = {p: np.mean([r["slowdown_fairness"] for r in rs]) for p, rs in results.items()}
    assert fairness["fifo"] < fairness["sjf"]  # the page's reading of its output


def test_a_new_gpu_type_runs_with_its_measured_numbers(examples: None) -> None:
    from gpucluster_env.catalog import default_catalog

    mod = example("add_gpu_type")
    cat = mod.catalog_with(mod.L4)
    assert "L4" not in default_catalog().gpu_types  # the package's catalog is left as it was
    for name, speed in mod.MEASURED_SPEED.items():
        assert cat.model_speed(cat.model(name), "L4") == speed
    for pair, xi in mod.MEASURED_PAIRS.items():
        a, b = pair.split("|")
        assert cat.interference.xi_one(cat.model(a), cat.model(b), "L4") == xi
        assert cat.interference.source_of(a, b, "L4") == "measured"
    assert cat.interference.source_of("bert", "imagenet", "L4") == "regression"
    result = mod.run_on(cat, "L4:2x4,V100:1x4")
    assert result["jobs_done"] == result["jobs"] == 40
    halved = {m: s / 2 for m, s in mod.MEASURED_SPEED.items()}
    slower = mod.run_on(mod.catalog_with(replace(mod.L4, speed=mod.L4.speed / 2, model_speed=halved)),
                        "L4:2x4,V100:1x4")
    assert slower["avg_jct_s"] > result["avg_jct_s"]  # the engine runs the type's own speeds


def test_an_rl_agent_trains_and_plays_legal_actions_to_the_end(examples: None) -> None:
    mod = example("train_tiny_agent")
    model = mod.train(steps=256)
    assert model.num_timesteps == 256
    greedy = mod.greedy(model)
    played: list[bool] = []

    def legal(obs: Any, mask: np.ndarray) -> int:
        action = greedy(obs, mask)
        played.append(bool(mask[action]))
        return action

    metrics = mod.play(legal, seeds=range(100, 102))
    assert played and all(played)
    assert all(m["jobs_done"] == m["jobs"] == 40 for m in metrics)
    assert all(m["jobs_done"] == m["jobs"] for m in mod.play(mod.random_masked(), seeds=range(100, 101)))


def test_the_rl_command_line_trains_a_model_that_runs_as_a_policy(tmp_path: Path) -> None:
    out = str(tmp_path / "tiny")
    assert "gpucluster run --scenario tiny --policy rl:runs/tiny --seed 100" in page("rl-agent.md")
    args = ("train", "--scenario", "tiny", "--timesteps", "512", "--n-steps", "128", "--out")
    assert "gpucluster " + " ".join(args) + " runs/tiny --no-progress" in page("rl-agent.md")
    done = subprocess.run([sys.executable, "-m", "gpucluster_env.cli.main", *args, out, "--no-progress"],
                          cwd=EXAMPLES, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    run = gpucluster("run", "--scenario", "tiny", "--policy", f"rl:{out}", "--seed", "100")
    assert run["jobs_done"] == run["jobs"] == 40 and not run["truncated"]


def test_the_scenario_file_runs_the_trace_tutorials_episode_with_its_engine_setting() -> None:
    sjf = gpucluster("run", "--scenario", "lab.toml", "--policy", "sjf", page_name="scenario-file.md")
    flags = gpucluster("run", *LAB_TRACE, "--policy", "sjf", "--columns", LAB_COLUMNS)
    assert (sjf["scenario"], sjf["jobs_done"]) == ("lab", 12)
    assert sjf["avg_jct_s"] == flags["avg_jct_s"]  # the same episode as the command line's flags
    srsf = gpucluster("run", "--scenario", "lab.toml", "--policy", "srsf", page_name="scenario-file.md")
    free = gpucluster("run", "--scenario", "lab.toml", "--policy", "srsf", "--option", "restart_s=0",
                      page_name="scenario-file.md")
    assert srsf["preemptions"] > 0 and srsf["avg_jct_s"] > free["avg_jct_s"]  # restart_s = 30 of the file
    from gpucluster_env.policy import run_episode

    assert run_episode(str(EXAMPLES / "lab.toml"), "srsf", seed=0)["avg_jct_s"] == srsf["avg_jct_s"]
