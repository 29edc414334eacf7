"""Gavel / Hadar issue: the YARN-CS option, the Gavel-style scenario, HadarE's mixes, decision timing path."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpucluster_env.traces.annotate import MIXES
from gpucluster_env.traces.gavel_synth import GAVEL_JOB_TYPES, gavel_raw

from gpucluster_env.engine import Place
from gpucluster_env.policy import make_policy, registered_policies
from gpucluster_env.scenarios import get_scenario
from tests.baselines.test_baselines import drive, play_env


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
    from gpucluster_env.leaderboard.decision_speed import distinct_decision_times

    out = distinct_decision_times(sizes=(8,))
    assert set(out) == {f"gavel{p}_distinct_decision_s_8" for p in ("", "_makespan", "_ftf", "_packed",
                                                                     "_packed_makespan")}
    assert all(v > 0 for v in out.values())


# ------------------------------------------------------------------------------------ the policies
NEW = ["gavel", "gavel-makespan", "gavel-ftf", "gavel-packed", "hadar", "hadare", "gavel-packed (makespan)",
       "gavel-packed (makespan, partners)"]


def test_gavel_time_slices_by_priority(build: Any) -> None:
    # one fast GPU, 100 s rounds, two jobs of 1000 iterations at 0.16 s (160 s alone). Max-min: X = 1/2 each.
    # Records start at half a round (50 s) each. t=0: fractions 1/2, priority 0.5 / 0.5 = 1 each, tie -> job 0.
    # t=100: 150 s vs 50 s, fractions 3/4 and 1/4, priorities 2/3 and 2 -> swap. t=200: 150 s each, tie ->
    # job 0 (lower index); it has 375 iterations left (60 s), done at 260, the GPU idles to the round's end.
    # t=300: job 1, done at 360.
    eng = build([("fast", 1, 1)], [{"iterations": 1000.0}, {"iterations": 1000.0}], round_s=100.0)
    acts = drive(eng, make_policy("gavel"))
    got = [(t, type(a).__name__, a.job) for t, a in acts]
    assert got == [(0.0, "Place", 0), (100.0, "Preempt", 0), (100.0, "Place", 1), (200.0, "Preempt", 1),
                   (200.0, "Place", 0), (300.0, "Place", 1)]
    assert eng.finish_t[0] == pytest.approx(260.0) and eng.finish_t[1] == pytest.approx(360.0)


def test_hadar_spreads_a_gang_over_gpu_types(build: Any) -> None:
    # one fast and one slow GPU on two nodes; a 2-worker job fits only across both types (task-level
    # heterogeneity): Hadar names both GPUs at t = 0
    eng = build([("fast", 1, 1), ("slow", 1, 1)], [{"num_gpus": 2}], round_s=100.0)
    acts = drive(eng, make_policy("hadar"))
    assert isinstance(acts[0][1], Place) and acts[0][1].gpus == (0, 1) and acts[0][0] == 0.0


@pytest.mark.parametrize("scenario, options", [("tiny", {"round_s": 360.0}), ("tiny", {}),
                                               ("hadare-aws", {}), ("hadare-testbed", {"mix": "M-8"})])
def test_new_policies_finish_with_invariants(scenario: str, options: dict) -> None:
    from gpucluster_env.env import GPUClusterEnv

    sc = get_scenario(scenario, **options)
    for name in NEW:
        if name.startswith("gavel-packed ("):
            lp = "partners" if "partners" in name else "pairs"
            pol = make_policy("gavel-packed", objective="makespan", pair_lp=lp)
        else:
            pol = make_policy(name)
        if not type(pol).applies_to(sc):
            continue
        env = GPUClusterEnv(scenario, scenario_options=options, observation="none")
        env.reset(seed=2)
        m = play_env(env, pol)["metrics"]
        assert m["jobs_done"] == m["jobs"], (scenario, name)
        if name != "hadare":
            assert m["forks"] == 0


def test_policy_options_are_checked() -> None:
    with pytest.raises(ValueError, match="objective"):
        make_policy("gavel", objective="fastest")
    with pytest.raises(ValueError, match="round_s"):
        make_policy("hadar", round_s=0.0)
    assert make_policy("gavel", objective="makespan").objective == "makespan"
    assert make_policy("gavel-ftf").objective == "ftf"
    assert not registered_policies()["hadare"].applies_to(get_scenario("tiny"))
    assert registered_policies()["hadare"].applies_to(get_scenario("hadar-philly"))


def test_gavel_packed_shares_a_gpu_when_the_pair_pays(build: Any) -> None:
    # one fast GPU, two 'a' jobs (4.2 GB each, both fit), interference 1.2: packed, each runs at 1/1.2 = 0.83 of
    # its solo speed against 1/2 by time sharing, so the LP puts all time in the pair and the first round
    # starts job 0 and colocates job 1 beside it
    eng = build([("fast", 1, 1)], [{"iterations": 1000.0}, {"iterations": 1000.0}], xi=1.2, round_s=100.0)
    acts = drive(eng, make_policy("gavel-packed"))
    assert [(t, type(a).__name__, a.job) for t, a in acts[:2]] == [(0.0, "Place", 0), (0.0, "Colocate", 1)]
    # at a ratio of 2.5 a pair runs each at 0.4 < 0.5: time sharing, no colocation
    eng = build([("fast", 1, 1)], [{"iterations": 1000.0}, {"iterations": 1000.0}], xi=2.5, round_s=100.0)
    assert not any(type(a).__name__ == "Colocate" for _, a in drive(eng, make_policy("gavel-packed")))


def test_gavel_packed_makespan_pairs_jobs_when_that_finishes_sooner(build: Any) -> None:
    # the same two jobs under the minimize-makespan objective: at ratio 1.2 the pair (both done at 1000 x 0.16 x
    # 1.2 = 192 s) beats time sharing (320 s), so they start packed; at 2.5 they do not
    eng = build([("fast", 1, 1)], [{"iterations": 1000.0}, {"iterations": 1000.0}], xi=1.2, round_s=100.0)
    acts = drive(eng, make_policy("gavel-packed", objective="makespan"))
    assert [(t, type(a).__name__, a.job) for t, a in acts[:2]] == [(0.0, "Place", 0), (0.0, "Colocate", 1)]
    eng = build([("fast", 1, 1)], [{"iterations": 1000.0}, {"iterations": 1000.0}], xi=2.5, round_s=100.0)
    acts = drive(eng, make_policy("gavel-packed", objective="makespan"))
    assert not any(type(a).__name__ == "Colocate" for _, a in acts)
    with pytest.raises(ValueError, match="objective"):
        make_policy("gavel-packed", objective="ftf")


def test_forked_job_progress_is_the_sum_of_its_copies(build: Any) -> None:
    # two nodes with one fast GPU each, 100 s rounds, no overheads; an 'a' job (0.16 s/iteration alone, 6.25/s)
    # on node 0 and a copy forked onto node 1: 12.5 iterations/s together, so after the first round
    # 10,000 - 100 * 12.5 = 8,750 are left, against 10,000 - 625 = 9,375 for one copy
    from gpucluster_env.engine import Fork
    from gpucluster_env.engine.view import ClusterView

    eng = build([("fast", 2, 1)], [{"iterations": 10_000.0}], round_s=100.0)
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    eng.apply(Fork(0, gpus=(1,)))
    eng.advance()
    assert eng.now == pytest.approx(100.0)
    assert ClusterView(eng).remaining_now()[0] == pytest.approx(8750.0)
