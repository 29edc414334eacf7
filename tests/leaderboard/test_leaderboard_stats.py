"""The leaderboard's statistics against values computed by hand, and the summary built from records."""

from __future__ import annotations

import numpy as np
import pytest
from gpucluster_env.leaderboard import stats
from gpucluster_env.leaderboard.board import Cell
from gpucluster_env.leaderboard.summary import summarize


def test_iqm_cuts_a_quarter_at_each_end() -> None:
    assert stats.iqm(np.arange(1.0, 9.0)) == pytest.approx(4.5)  # mean of 3, 4, 5, 6
    assert stats.iqm(np.array([1.0, 2.0, 3.0, 100.0])) == pytest.approx(2.5)  # mean of 2, 3
    assert stats.aggregate_iqm([np.array([1.0, 2, 3, 4]), np.array([5.0, 6, 7, 8])]) == pytest.approx(4.5)


def test_probability_of_improvement_counts_ties_as_half() -> None:
    # lower is better: pairs (1,2) win, (1,3) win, (3,2) loss, (3,3) tie -> 2.5 / 4
    assert stats.prob_improvement([np.array([1.0, 3.0])], [np.array([2.0, 3.0])]) == pytest.approx(0.625)
    assert stats.prob_improvement([np.array([1.0, 3.0])], [np.array([2.0, 3.0])], lower_better=False) == \
        pytest.approx(0.375)
    # averaged over scenarios: 0.625 and 1.0
    two = stats.prob_improvement([np.array([1.0, 3.0]), np.array([0.0])], [np.array([2.0, 3.0]), np.array([9.0])])
    assert two == pytest.approx((0.625 + 1.0) / 2)
    assert stats.prob_improvement_ci([np.array([1.0, 2.0])], [np.array([3.0, 4.0])]) == (1.0, 1.0)


def test_improvement_of_the_mean_and_its_paired_interval() -> None:
    assert stats.improvement(np.array([90.0, 110.0]), np.array([100.0, 200.0])) == pytest.approx(1 - 100 / 150)
    assert stats.improvement(np.array([2.0]), np.array([1.0]), lower_better=False) == pytest.approx(1.0)
    # every seed 10% better: any paired resample gives exactly +10%
    lo, hi = stats.improvement_ci(np.array([90.0, 180.0, 45.0]), np.array([100.0, 200.0, 50.0]))
    assert lo == pytest.approx(0.1) and hi == pytest.approx(0.1)
    # unpaired, the same numbers vary (seed 0 of one with seed 1 of the other)
    lo, hi = stats.improvement_ci(np.array([90.0, 180.0, 45.0]), np.array([100.0, 200.0, 50.0]), paired=False)
    assert lo < 0.1 - 0.05 and hi > 0.1 + 0.05


def test_bootstrap_interval_of_two_values_spans_them() -> None:
    # resamples of [1, 3]: mean 1 (1/4), 2 (1/2), 3 (1/4): the 2.5th and 97.5th percentiles are 1 and 3
    assert stats.mean_ci(np.array([1.0, 3.0])) == (1.0, 3.0)
    assert stats.mean_ci(np.array([5.0])) == stats.NAN_INTERVAL  # one seed: no interval


def test_stratified_bootstrap_resamples_each_scenario_on_its_own() -> None:
    # scenario means: {1, 2, 3} and always 5 -> the mean over scenarios lies in {3, 3.5, 4}
    assert stats.aggregate_mean([np.array([1.0, 3.0]), np.array([5.0, 5.0])]) == pytest.approx(3.5)
    assert stats.aggregate_mean_ci([np.array([1.0, 3.0]), np.array([5.0, 5.0])]) == (3.0, 4.0)


def test_bootstrap_matches_a_direct_percentile_bootstrap() -> None:
    x = np.random.default_rng(7).lognormal(0.0, 0.5, 12)
    rng = np.random.default_rng(1)
    means = x[rng.integers(0, len(x), (20000, len(x)))].mean(axis=1)
    want = np.percentile(means, [2.5, 97.5])
    lo, hi = stats.mean_ci(x)
    assert lo == pytest.approx(want[0], rel=0.02) and hi == pytest.approx(want[1], rel=0.02)
    assert stats.mean_ci(x) == (lo, hi)  # seeded: the same interval every time


def test_ranks_share_ties_and_put_nan_last() -> None:
    assert stats.ranks([3.0, 1.0, 2.0]) == [3.0, 1.0, 2.0]
    assert stats.ranks([1.0, 1.0, 2.0]) == [1.5, 1.5, 3.0]
    assert stats.ranks([1.0, float("nan"), 2.0], lower_better=False) == [2.0, 3.0, 1.0]
    assert stats.lower_is_better("avg_jct_s") and not stats.lower_is_better("gpu_occupancy")


def _rec(scenario: str, policy: str, seed: int, jct: float, opts: dict | None = None, truncated: bool = False) -> dict:
    cell = Cell(scenario, policy, seed, {"restart_s": 30.0, **(opts or {})})
    return {"key": cell.key, "cell": cell.as_dict(), "metrics": {"avg_jct_s": jct}, "trace": "t",
            "truncated": truncated}


def test_summary_from_records_by_hand() -> None:
    recs = [_rec("a", "fifo", 0, 100.0), _rec("a", "fifo", 1, 200.0), _rec("a", "sjf", 0, 50.0),
            _rec("a", "sjf", 1, 100.0, truncated=True),
            _rec("a", "fifo", 0, 10.0, {"num_jobs": 9}), _rec("a", "fifo", 1, 30.0, {"num_jobs": 9}),
            _rec("a", "sjf", 0, 10.0, {"num_jobs": 9}), _rec("a", "sjf", 1, 10.0, {"num_jobs": 9})]
    s = summarize(recs, "avg_jct_s", "fifo")
    assert s.common_options == "restart_s=30.0"
    assert [t.scenario for t in s.scenarios] == ["a", "a (num_jobs=9)"]
    sjf, fifo = s.scenarios[0].rows
    assert (sjf.policy, sjf.rank, fifo.rank) == ("sjf", 1.0, 2.0)
    assert sjf.mean == pytest.approx(75.0) and sjf.truncated == 1 and fifo.truncated == 0
    assert sjf.improvement == pytest.approx(0.5)
    assert sjf.improvement_ci == pytest.approx((0.5, 0.5))  # both seeds exactly half of fifo's
    assert sjf.p_improvement == pytest.approx(3.5 / 4)  # 50<100, 50<200, 100=100 (half), 100<200
    sjf9 = s.scenarios[1].rows[0]
    assert sjf9.improvement == pytest.approx(0.5) and sjf9.p_improvement == pytest.approx((0.5 + 1 + 0.5 + 1) / 4)
    # overall: runs over fifo's mean per scenario; fifo averages exactly 1
    by = {o.policy: o for o in s.overall}
    assert by["fifo"].mean == pytest.approx(1.0)
    assert by["sjf"].mean == pytest.approx(((50 + 100) / 150 / 2 + (10 + 10) / 20 / 2) / 2)
    assert by["sjf"].rank == 1.0 and by["sjf"].scenarios == 2


def test_plots_put_ours_beside_the_papers_numbers(tmp_path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (the `plot` extra)")
    from gpucluster_env.leaderboard.plots import write_plots

    recs = []
    for p, base in (("fifo", 9000.0), ("castor", 5000.0), ("ssf", 6000.0)):
        for seed in range(3):
            r = _rec("castor-philly", p, seed, base + 100 * seed)
            r["metrics"]["avg_queue_s"] = base / 3
            r["per_job"] = {"jct_s": [base / 2, base, 2 * base], "queue_s": [0.0, 1.0, 2.0], "gpus": [1, 2, 8]}
            recs.append(r)
    files = write_plots(recs, tmp_path / "png")
    assert sorted(f.name for f in files) == ["bars-avg_jct_s.png", "cdf-castor-philly.png", "paper-castor-philly.png"]
    assert all(f.stat().st_size > 10_000 for f in files)


def test_tables_say_what_each_non_heuristic_policy_is() -> None:
    from gpucluster_env.leaderboard.summary_tables import kinds_note

    note = kinds_note(["sjf", "rl-scratch", "lookahead (horizon_s=1800.0)", "rl-advantage", "rl:runs/mine"])
    assert "rl-scratch: RL from scratch" in note and "lookahead (horizon_s=1800.0): search" in note
    assert "rl-advantage: learned from rollouts" in note and "rl:runs/mine: trained model" in note
    assert "sjf" not in note.split(")")[0] and kinds_note(["fifo", "sjf", "castor"]) is None
