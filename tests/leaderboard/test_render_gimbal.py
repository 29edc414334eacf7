"""docs/_scripts/render_gimbal.py: the Gimbal part's ratios read as the paper's speedups, and a missing
results folder is a one-line error."""

from __future__ import annotations

import pytest
import render_gimbal as rg


def _table() -> rg.Table:
    t: rg.Table = {}
    for seed, (plain, gim) in enumerate([(10.0, 8.0), (10.0, 12.0), (6.0, 6.0)]):
        for cell, jct, dl in ((rg.LUCID, plain, 0.5), (rg._gimbal("lucid"), gim, 0.5 + 0.1 * (seed == 0))):
            t.setdefault((*rg.PHILLY, *cell), {})[seed] = {"avg_jct_s": jct, "deadline_satisfaction": dl}
    return t


def test_ratio_is_plain_over_gimbal_for_times_and_counts_strict_wins() -> None:
    r, better, n = rg.ratio(_table(), rg.PHILLY, "avg_jct_s", rg.LUCID, rg._gimbal("lucid"))
    assert (better, n) == (1, 3)  # seed 0 better, seed 1 worse, seed 2 equal
    assert r == pytest.approx(26.0 / 26.0)


def test_ratio_is_gimbal_over_plain_for_deadlines() -> None:
    r, better, n = rg.ratio(_table(), rg.PHILLY, "deadline_satisfaction", rg.LUCID, rg._gimbal("lucid"))
    assert (better, n) == (1, 3)
    assert r == pytest.approx(1.6 / 1.5)


def test_ratio_without_shared_seeds_names_the_cells() -> None:
    with pytest.raises(SystemExit, match="no shared seeds"):
        rg.ratio(_table(), rg.ALIBABA, "avg_jct_s", rg.LUCID, rg._gimbal("lucid"))


def test_bound_text_names_what_bounds_an_unpacked_makespan() -> None:
    assert rg._bound_text(5.0, 3.0) == "one job 5.00 h"
    assert rg._bound_text(2.0, 7.5) == "work 7.50 h (one job 2.00 h)"


def test_missing_folder_is_one_line_and_status_2(tmp_path, capsys) -> None:
    assert rg.main([str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip()
    assert "nope" in err and "\n" not in err
