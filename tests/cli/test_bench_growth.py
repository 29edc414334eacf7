"""``gpucluster bench --growth-jobs``: every policy as its own ``gpucluster run`` process at each size, its CPU,
memory and the excess growth of its own work (:mod:`gpucluster_env.leaderboard.policy_growth`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpucluster_env.leaderboard.policy_growth import excess_growth, run_process

GPUCLUSTER = str(Path(sys.executable).parent / "gpucluster")


@pytest.mark.slow
def test_bench_growth_runs_each_policy_in_its_own_process_and_draws_the_plot(tmp_path: Path) -> None:
    png = tmp_path / "growth.png"
    args = [GPUCLUSTER, "bench", "--jobs", "200", "--env-scenario", "tiny", "--env-steps", "200",
            "--train-steps", "0", "--decision-sizes", "", "--distinct-sizes", "", "--policy-jobs", "",
            "--growth-jobs", "60,240", "--growth-scenario", "tiny", "--policies", "sjf,tiresias",
            "--growth-plot", str(png), "--json"]
    done = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, COLUMNS="200"), timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    rows = out["policy_growth"]
    # FIFO again after the last policy (--growth-fifo-every 4): each ratio over the FIFO runs on either side
    order = [(p, n) for n in (60, 240) for p in ("fifo", "sjf", "tiresias", "fifo")]
    assert [(r["policy"], r["jobs"]) for r in rows] == order
    assert [r.get("repeat") for r in rows] == [None, None, None, 1] * 2
    for r in rows:
        assert not r["stopped"] and r["cpu_s"] > 0.1 and r["steps"] >= r["jobs"] and 20 < r["peak_rss_mb"] < 2000
    for n in (60, 240):
        fifo = [r["cpu_s"] for r in rows if r["policy"] == "fifo" and r["jobs"] == n]
        for r in rows:
            if r["jobs"] == n:
                assert r["fifo_cpu_s"] == sum(fifo) / 2 and r["x_fifo_cpu"] == r["cpu_s"] / r["fifo_cpu_s"]
    # the same runs as `gpucluster run` (episodes are deterministic): tiresias at 240 jobs
    ref = json.loads(subprocess.run([GPUCLUSTER, "run", "--scenario", "tiny", "--policy", "tiresias", "--option",
                                     "num_jobs=240", "--no-progress", "--json"], capture_output=True, text=True,
                                    check=True).stdout)
    ours = next(r for r in rows if r["policy"] == "tiresias" and r["jobs"] == 240)
    assert (ours["steps"], ours["avg_jct_s"]) == (ref["steps"], ref["avg_jct_s"])
    assert {(e["policy"], e["from_jobs"], e["to_jobs"]) for e in out["policy_excess_growth"]} == {
        ("sjf", 60, 240), ("tiresias", 60, 240)}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out["growth_plot"] == str(png)


def test_a_run_past_its_time_limit_is_stopped_and_says_so() -> None:
    row = run_process("tiny", "castor", 2000, 0, timeout_s=1.0)
    assert row["stopped"] and "steps" not in row and 0 < row["cpu_s"] and 1.0 <= row["wall_s"] < 10


def test_a_failed_run_keeps_its_one_line_error() -> None:
    row = run_process("tiny", "no-such-policy", 10, 0, timeout_s=60)
    assert not row["stopped"] and "unknown policy 'no-such-policy'" in row["error"]


def test_excess_growth_is_own_cpu_growth_over_steps_growth() -> None:
    def row(policy: str, jobs: int, cpu: float, steps: int) -> dict:
        return {"policy": policy, "jobs": jobs, "cpu_s": cpu, "steps": steps, "stopped": False}

    rows = [row("fifo", 1000, 2.0, 100), row("p", 1000, 4.0, 100), row("q", 1000, 2.3, 100),
            row("fifo", 10000, 11.0, 1000), row("p", 10000, 71.0, 1000), row("q", 10000, 30.0, 1000),
            {"policy": "r", "jobs": 1000, "cpu_s": 5.0, "stopped": True}]
    got = {e["policy"]: e for e in excess_growth(rows)}
    assert set(got) == {"p", "q"}  # r never finished: no growth to read
    assert got["p"]["own_cpu_growth"] == 30.0 and got["p"]["steps_growth"] == 10.0
    assert got["p"]["excess_growth"] == 3.0 and got["p"]["within_target"] is False
    assert got["q"]["excess_growth"] is None and got["q"]["within_target"] is None  # 0.3 s: too small to read


def test_each_ratio_is_over_the_fifo_runs_beside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpucluster_env.leaderboard import policy_growth

    cpu = iter([2.0, 10.0, 20.0, 4.0, 30.0, 6.0])  # fifo, sjf, ssf, fifo, srsf, fifo
    ran: list[str] = []

    def fake(scenario: str, policy: str, jobs: int, seed: int, timeout_s: float, cluster: str | None) -> dict:
        ran.append(policy)
        return {"policy": policy, "jobs": jobs, "cpu_s": next(cpu), "steps": 10, "stopped": False}

    monkeypatch.setattr(policy_growth, "run_process", fake)
    rows = policy_growth.growth_runs((50,), ["sjf", "ssf", "srsf"], "tiny", fifo_every=2)
    assert ran == ["fifo", "sjf", "ssf", "fifo", "srsf", "fifo"]
    x = {(r["policy"], r.get("repeat")): r["x_fifo_cpu"] for r in rows}
    assert x[("sjf", None)] == 10.0 / 3.0 and x[("ssf", None)] == 20.0 / 3.0 and x[("srsf", None)] == 30.0 / 5.0
    assert x[("fifo", None)] == 2.0 / 4.0 and x[("fifo", 2)] == 6.0 / 4.0
    # the growth of a policy's own work reads its own FIFO yardstick, and FIFO's repeats are not policies
    big = policy_growth._fifo_ratios([{"policy": "fifo", "jobs": 500, "cpu_s": 8.0, "steps": 100},
                                      {"policy": "sjf", "jobs": 500, "cpu_s": 48.0, "steps": 100}])
    got = policy_growth.excess_growth(rows + big)
    assert [(e["policy"], e["own_cpu_growth"]) for e in got] == [("sjf", 40.0 / 7.0)]


def test_scaled_cluster_keeps_node_shapes_and_scales_the_node_counts() -> None:
    from gpucluster_env.leaderboard.policy_growth import growth_runs

    from gpucluster_env.scenarios import get_scenario

    full = get_scenario("philly-scale").cluster
    assert full.scaled(1.0).to_spec() == full.to_spec()
    assert full.scaled(0.1).to_spec() == "P100:32x2,P100:23x8,net=12.5"
    assert full.scaled(0.001).num_gpus == 2 + 8  # at least one node a group
    rows = growth_runs((60, 240), ["sjf"], "philly-loaded", timeout_s=120, scale_cluster=True)
    assert [r["cluster"] for r in rows] == ["P100:10x8,net=12.5"] * 2 + ["P100:40x8,net=12.5"] * 2
    assert all(r["steps"] >= r["jobs"] for r in rows)
