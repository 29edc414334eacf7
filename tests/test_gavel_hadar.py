"""Gavel / Hadar issue: the YARN-CS option, the Gavel-style scenario, HadarE's mixes, decision timing path."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gpucluster_env.baselines import make_policy
from gpucluster_env.scenarios import get_scenario
from gpucluster_env.traces.annotate import MIXES
from gpucluster_env.traces.gavel_synth import GAVEL_JOB_TYPES, gavel_raw
from tests.test_baselines import drive


def test_yarn_cs_without_backfill_blocks_like_tiresias_fifo(build: Any) -> None:
    # job 0 holds 1 of 2 GPUs; job 1 (2 GPUs) heads the queue; job 2 (1 GPU) could use the free GPU.
    # Backfilling YARN-CS starts job 2 at t = 2; without backfill (Tiresias' simulator) job 1 waits for job 0
    # (1000 iterations on the 'fast' type end at t = 160) and starts first, job 2 after it.
    rows = [{"iterations": 1000.0}, {"submit_s": 1.0, "num_gpus": 2}, {"submit_s": 2.0}]
    yarn = drive(build([("fast", 1, 2)], rows), make_policy("yarn-cs"))
    strict = drive(build([("fast", 1, 2)], rows), make_policy("yarn-cs", backfill=False))
    assert yarn[1][0] == 2.0 and yarn[1][1].job == 2
    assert strict[1][0] == pytest.approx(160.0) and strict[1][1].job == 1
    with pytest.raises(ValueError, match="backfill"):
        make_policy("yarn-cs", backfill="no")


def test_gavel_generator_follows_gavel() -> None:
    raw = gavel_raw(4000, np.random.default_rng(1), rate_per_hour=2.0)
    # GPU counts 1/2/4/8 at 70/10/15/5 %
    share = raw["num_gpus"].value_counts(normalize=True)
    for g, p in ((1, 0.7), (2, 0.1), (4, 0.15), (8, 0.05)):
        assert share[g] == pytest.approx(p, abs=0.03)
    # multi-GPU jobs only of the families that run distributed
    dist = {m for m, _, d in GAVEL_JOB_TYPES if d}
    assert set(raw.loc[raw["num_gpus"] > 1, "model"]) <= dist
    # run times: 60 * 10^U(1.5, 3) s (80 %) or 60 * 10^U(3, 4) s: between 1,897 s and 600,000 s; 20 % above
    # 60,000 s (all of the long ones, none of the short)
    d = raw["duration_s"].to_numpy()
    assert d.min() >= 60 * 10 ** 1.5 and d.max() <= 60 * 10 ** 4
    assert (d > 60_000).mean() == pytest.approx(0.2, abs=0.03)
    # Poisson arrivals at 2 jobs/h: mean gap 1,800 s
    assert np.diff(raw["submit_s"]).mean() == pytest.approx(1800.0, rel=0.06)


def test_gavel_scenario_cluster_and_jobs() -> None:
    sc = get_scenario("gavel-hetero", num_jobs=50)
    assert sc.cluster.gpus_by_type() == {"V100": 36, "P100": 36, "K80": 36}
    jobs, note = sc.build_jobs(0)
    assert len(jobs) == 50 and "Gavel" in note
    assert set(jobs["model"]) <= {m for m, _, _ in GAVEL_JOB_TYPES}


@pytest.mark.parametrize("scenario", ["hadare-testbed", "hadare-aws"])
def test_hadare_scenarios_offer_every_mix(scenario: str) -> None:
    # the paper's seven mixes M-1, M-3, M-4, M-5, M-8, M-10, M-12 (§VI-B)
    assert list(MIXES) == ["M-1", "M-3", "M-4", "M-5", "M-8", "M-10", "M-12"]
    for mix, models in MIXES.items():
        jobs, _ = get_scenario(scenario, mix=mix).build_jobs(0)
        assert len(jobs) == len(models)


def test_decision_timing_code_path_tiny() -> None:
    from gpucluster_env.leaderboard.decision_speed import decision_times

    out = decision_times(sizes=(8,), repeats=1)
    assert set(out) == {f"{p}_decision_s_8" for p in ("gavel", "gavel_makespan", "gavel_packed", "hadar")}
    assert all(v > 0 for v in out.values())
