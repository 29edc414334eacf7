"""A board whose episodes stop at a limit (issue #29): the record keeps the limit that stopped each one
(``truncated_by``, beside ``truncated``, not among the metrics), its utilizations stay fractions (over the time
observed, not the makespan of the jobs finished so far), and ``leaderboard show`` reads it back and marks the
policy with a dagger."""

from __future__ import annotations

import json

from gpucluster_env.cli.main import main
from gpucluster_env.policy import run_episode


def test_utilizations_of_a_truncated_episode_are_fractions():
    r = run_episode("tiny", "castor", 1, env_kwargs={"max_sim_time_s": 3600.0})
    assert r["truncated"] and r["truncated_by"] == "max_sim_time_s" and 0 < r["jobs_done"] < r["jobs"]
    for k in ("gpu_occupancy", "sm_activity_est", "sharing_utilization"):
        assert 0.0 <= r[k] <= 1.0, (k, r[k])
    whole = run_episode("tiny", "castor", 1)
    assert not whole["truncated"] and 0.0 < whole["gpu_occupancy"] <= 1.0


def test_a_truncated_board_is_recorded_and_shown(tmp_path, capsys):
    board = tmp_path / "cut.toml"
    board.write_text('name = "cut"\ndescription = "episodes stopped at one simulated hour"\nseeds = 2\n'
                     'reference = "fifo"\nmetrics = ["avg_jct_s"]\n\n[[group]]\nscenarios = ["tiny"]\n'
                     'policies = ["fifo", "castor"]\nenv_options = { max_sim_time_s = 3600 }\n')
    out = tmp_path / "res"
    assert main(["leaderboard", "run", str(board), "--out", str(out), "--no-show"]) == 0
    recs = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    assert recs and all(r["truncated"] and r["truncated_by"] == "max_sim_time_s" for r in recs)
    assert all("truncated_by" not in r["metrics"] and r["metrics"]["gpu_occupancy"] <= 1.0 for r in recs)
    capsys.readouterr()
    assert main(["leaderboard", "show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "castor †" in shown and "† truncated episodes" in " ".join(shown.split())
