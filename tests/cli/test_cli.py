"""Every CLI subcommand end to end, through the installed console script or ``main()``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpucluster_env.cli.main import SUBCOMMAND_MODULES, build_parser, main

GPUCLUSTER = str(Path(sys.executable).parent / "gpucluster")


def run_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    proc = subprocess.run([GPUCLUSTER, *args], capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"gpucluster {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc


def test_help_lists_every_subcommand():
    out = run_cli("--help").stdout
    for cmd in ("run", "scenarios", "policies", "bench"):
        assert cmd in out
    sub = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert len(sub) >= len(SUBCOMMAND_MODULES) - 1
    for name in sub:
        assert run_cli(name, "--help").returncode == 0


def test_run_json_has_the_documented_keys():
    r = json.loads(run_cli("run", "--scenario", "tiny", "--policy", "fifo", "--seed", "0", "--json").stdout)
    for key in ("scenario", "policy", "seed", "jobs", "avg_jct_s", "p95_jct_s", "makespan_s", "avg_queue_s",
                "gpu_occupancy", "wall_s"):
        assert key in r, key
    assert r["scenario"] == "tiny" and r["policy"] == "fifo" and r["jobs"] == 40
    assert r["avg_jct_s"] > 0 and 0 < r["gpu_occupancy"] <= 1
    assert r["p95_jct_s"] >= r["median_jct_s"]


@pytest.mark.slow
def test_run_all_policies_table_and_same_seed_same_result():
    out = run_cli("run", "--scenario", "tiny", "--policy", "all", "--seed", "1").stdout
    assert "fifo" in out and "sjf" in out and "avg JCT" in out
    a = run_cli("run", "--scenario", "tiny", "--policy", "sjf", "--seed", "1", "--json").stdout
    b = run_cli("run", "--scenario", "tiny", "--policy", "sjf", "--seed", "1", "--json").stdout
    strip = lambda s: {k: v for k, v in json.loads(s).items() if k != "wall_s"}  # noqa: E731
    assert strip(a) == strip(b)


def test_run_with_policy_options():
    """``--policy-option`` reaches the policy's constructor: on tiny no job attains Pollux's 16 GPU-hours, so the
    default equals an infinite threshold, while a one-GPU-hour threshold demotes jobs and changes the episode."""
    base = ("run", "--scenario", "tiny", "--policy", "tiresias", "--json")
    strip = lambda s: {k: v for k, v in json.loads(s).items() if k != "wall_s"}  # noqa: E731
    low = strip(run_cli(*base, "--policy-option", "thresholds=[3600]").stdout)
    high = strip(run_cli(*base, "--policy-option", "thresholds=[1e12]").stdout)
    default = strip(run_cli(*base).stdout)
    assert {k: v for k, v in default.items() if k != "policy_options"} == {
        k: v for k, v in high.items() if k != "policy_options"}
    assert low["avg_jct_s"] != high["avg_jct_s"]
    assert low["policy_options"] == {"thresholds": [3600]} and default["policy_options"] == {}


def test_run_with_options_and_record(tmp_path):
    rec = tmp_path / "ep.jsonl"
    r = json.loads(run_cli("run", "--scenario", "tiny", "--option", "num_jobs=12", "--record", str(rec),
                           "--policy", "tiresias", "--policy-option", "thresholds=[7200]", "--json").stdout)
    assert r["jobs"] == 12
    lines = [json.loads(x) for x in rec.read_text().splitlines()]
    assert lines[0]["format"] == "gpucluster-replay" and len(lines[0]["jobs"]) == 12
    assert lines[0]["policy"] == "tiresias" and lines[0]["policy_options"] == {"thresholds": [7200]}
    kinds = [x.get("kind") for x in lines[1:]]
    assert kinds.count("finish") == 12 and kinds.count("arrive") == 12 and kinds[-1] == "metrics"


@pytest.mark.parametrize(
    "args, needle",
    [
        (["run", "--scenario", "nope"], "unknown scenario 'nope'"),
        (["run", "--policy", "nope"], "unknown policy 'nope'"),
        (["run", "--option", "bogus"], "expected KEY=VALUE"),
        (["run", "--option", "bogus=1"], "unknown option"),
        (["bench", "--jobs", "0"], "--jobs 0: must be from 1 to"),
        (["bench", "--decision-sizes", "2"], "--decision-sizes: each job count must be from 4 to"),
        # issue #25's second probe: checked before the first measurement, not after minutes of it
        (["bench", "--env-steps", "1000000000000"], "--env-steps 1000000000000: must be from 1 to"),
        (["bench", "--train-steps", "-1"], "--train-steps -1"),
        (["bench", "--fifo-scenario", "nope"], "--fifo-scenario: unknown scenario 'nope'"),
        (["bench", "--policy-scenario", "nope"], "--policy-scenario: unknown scenario 'nope'"),
        (["bench", "--policies", "fifo,nope"], "--policies: unknown policy nope"),
        (["bench", "--policy-jobs", "0"], "--policy-jobs: each job count must be from 1 to"),
        (["bench", "--growth-jobs", "10,x"], "--growth-jobs: expected comma-separated job counts"),
        (["bench", "--growth-timeout", "0"], "--growth-timeout 0.0: must be positive"),
        (["bench", "--growth-plot", "growth.txt"], "--growth-plot growth.txt: must name a .png file"),
        (["bench", "--growth-scenario", "nope"], "--growth-scenario: unknown scenario 'nope'"),
        (["run", "--policy", "tiresias", "--policy-option", "bogus=1"], "policy 'tiresias': unknown option(s) bogus"),
        (["run", "--policy", "fifo", "--policy-option", "x=1"], "its options: none"),
        (["run", "--policy", "all", "--policy-option", "x=1"], "--policy-option needs a single --policy"),
        (["run", "--policy-option", "oops"], "--policy-option 'oops': expected KEY=VALUE"),
    ],
)
def test_errors_are_one_line(args, needle):
    proc = run_cli(*args, check=False)
    assert proc.returncode == 2
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_scenarios_and_policies(capsys):
    assert main(["scenarios", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {r["name"] for r in rows}
    assert {"tiny", "castor-philly", "hadar-philly", "philly-scale"} <= names
    assert main(["policies", "--json"]) == 0
    pols = json.loads(capsys.readouterr().out)
    assert {"fifo", "sjf"} <= {p["name"] for p in pols}
    assert all(p["description"] for p in pols)
    assert "castor-philly" in run_cli("scenarios").stdout


@pytest.mark.slow
def test_bench_small_run_prints_figures():
    r = json.loads(run_cli("bench", "--jobs", "500", "--env-scenario", "tiny", "--env-steps", "300",
                           "--decision-sizes", "8", "--distinct-sizes", "8", "--policy-jobs", "40",
                           "--policy-scenario", "tiny",
                           "--policies", "sjf-ffs,tiresias", "--json").stdout)
    rows = {row["policy"]: row for row in r["policy_speed"]}
    assert list(rows) == ["fifo", "sjf-ffs", "tiresias"] and rows["fifo"]["x_fifo_wall"] == 1.0
    assert all(row["jobs"] == 40 and row["decisions_per_s"] > 0 and row["wall_s"] > 0 for row in rows.values())
    assert rows["tiresias"]["x_fifo_wall"] == rows["tiresias"]["wall_s"] / rows["fifo"]["wall_s"]
    assert r["fifo_jobs"] == 500 and r["fifo_jobs_per_s"] > 0 and r["fifo_80k_wall_s"] is None
    assert r["env_steps_per_s"] > 0 and r["jobs_env_steps_per_s"] > 0
    assert r["peak_rss_mb"] > 0 and r["engine_decisions_per_s"] > 0
    assert r["gavel_decision_s_8"] > 0 and r["gavel_packed_decision_s_8"] > 0 and r["hadar_decision_s_8"] > 0
    assert r["pollux_decision_s_160"] > 0 and r["pollux_decision_s_160_100x100"] > 0
    assert r["gavel_ftf_distinct_decision_s_8"] > 0 and r["gavel_packed_makespan_distinct_decision_s_8"] > 0


def test_bench_table_wraps_keys_at_underscores_and_prints_no_none(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture) -> None:
    from gpucluster_env.cli.bench_cmd import _figure, wrap_key
    from gpucluster_env.text_tables import Col, make_console, print_table

    assert _figure(None) == "–" and _figure(1234) == "1,234" and _figure(2.5) == "2.50"
    monkeypatch.setenv("COLUMNS", "30")  # the key must wrap
    key = "gavel_packed_makespan_distinct_decision_s_8"
    print_table(make_console(), "t", [Col("figure", "left", key=True), Col("value")],
                [(wrap_key(key, 30 - 1 - 10), _figure(None))])
    out = capsys.readouterr().out
    parts = [line.split("│")[1].strip() for line in out.splitlines() if line.count("│") >= 3]
    parts = [p for p in parts if p and p != "figure"]
    assert "".join(parts) == key and len(parts) > 1 and all(p.endswith("_") for p in parts[:-1]), parts
    assert "None" not in out and "–" in out
