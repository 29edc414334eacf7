"""Pollux's workload recipe (castor-philly, castor-venus, sjfbsbf-philly): determinism, agreement with Pollux's
published workloads within stated tolerances, the scenarios' contention, and the reproduction script's cells."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from gpucluster_env.traces.pollux_workloads import (
    GPU_HOUR_CLASSES,
    POLLUX_APP_SHARE,
    POLLUX_BATCH,
    POLLUX_MEAN_ARRIVAL_S,
    POLLUX_REPLICAS,
    find_pollux_workloads,
    fit_batches,
    fit_replicas,
    pollux_applications,
    pollux_batch,
    pollux_iterations,
    pollux_pool,
    pollux_replicas,
    workload_stats,
)

from gpucluster_env.catalog import default_catalog
from gpucluster_env.engine.build import make_engine
from gpucluster_env.policy import run_episode
from gpucluster_env.scenarios import get_scenario

POLLUX_SCENARIOS = ("castor-philly", "castor-venus", "sjfbsbf-philly")


def _toy(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"job_id": [f"t{i}" for i in range(n)], "submit_s": np.sort(rng.uniform(0, 72 * 3600, n)),
                       "num_gpus": rng.choice([1, 2, 8], n), "duration_s": rng.lognormal(7.5, 2.0, n)})
    df.attrs["start_hour"] = 1.0  # the trace starts at 1:00
    return df


def test_pollux_pool_keeps_period_and_filters() -> None:
    df = _toy()
    pool, start = pollux_pool(df, 2.0)
    assert start == 2.0 and len(pool) > 0
    assert pool["submit_s"].between(0, 8 * 3600, inclusive="left").all()
    assert (pool["duration_s"] >= 60).all() and (pool["duration_s"] * pool["num_gpus"] < 1000 * 3600).all()
    tod = (df["submit_s"] / 3600 + 1.0) % 24
    expect = ((tod >= 2) & (tod < 10) & (df["duration_s"] >= 60)).sum()
    assert len(pool) == expect
    busiest, s2 = pollux_pool(df, None)
    assert 0 <= s2 < 24 and len(busiest) >= len(pool)


def test_pollux_applications_follow_gpu_time_classes() -> None:
    raw = pd.DataFrame({"num_gpus": [1, 1, 2, 8, 8], "duration_s": [600, 7200, 3 * 3600, 5 * 3600, 20 * 3600]})
    apps = pollux_applications(raw, np.random.default_rng(0))
    assert apps[0] in GPU_HOUR_CLASSES[0][1] and apps[1] in GPU_HOUR_CLASSES[1][1]
    assert apps[2] in GPU_HOUR_CLASSES[1][1] and apps[3] == "yolov3" and apps[4] == "imagenet"
    reps = pollux_replicas(np.array(["imagenet", "ncf", "yolov3"] * 50, dtype=object), np.random.default_rng(1))
    assert set(reps[0::3]) <= set(POLLUX_REPLICAS["imagenet"]) and set(reps[1::3]) == {1}
    # fixed work per application at Pollux's batch: iterations x global batch ~ epochs x dataset
    cat = default_catalog()
    assert pollux_batch("cifar10", 6) == 341 and pollux_batch("imagenet", 32) == 200
    assert pollux_batch("ncf", 1) == 32768 and pollux_batch("imagenet", 40) == 160  # nearest: 6400 on 32 / 48
    n = pollux_iterations("cifar10", 6, cat)
    assert n * 6 * 341 >= 100 * 50_000 > (n - 1) * 6 * 341


def test_pollux_step_time_accumulates_above_the_measured_batch() -> None:
    """Above the largest measured local batch, Pollux's simulator splits the batch into micro-batches and pays
    one compute pass (step - sync) per extra micro-batch."""
    from gpucluster_env.traces.pollux_workloads import pollux_step_time

    from gpucluster_env.catalog.measured import data_dir, load_pollux_placements

    if data_dir() is None:
        pytest.skip("Pollux's placements.csv (profiles/pollux) not found")
    rows = [r for r in load_pollux_placements("bert") if r["placement"] == "24"]
    top = max(rows, key=lambda r: r["local_bsz"])
    b = float(top["local_bsz"])
    assert pollux_step_time("bert", 6, b) == pytest.approx(top["step_time"])
    extra = top["step_time"] - top["sync_time"]
    assert pollux_step_time("bert", 6, 3 * b) == pytest.approx(top["step_time"] + 2 * extra)


@pytest.mark.parametrize("name", POLLUX_SCENARIOS)
def test_pollux_recipe_is_deterministic_per_seed(name: str) -> None:
    sc = get_scenario(name)
    a, note = sc.build_jobs(0)
    b, _ = sc.build_jobs(0)
    c, _ = sc.build_jobs(1)
    pd.testing.assert_frame_equal(a, b)
    assert not a["job_id"].equals(c["job_id"])
    assert "Pollux recipe" in note and len(a) == 240
    assert a["submit_s"].max() < 8 * 3600 and a["num_gpus"].max() <= sc.cluster.num_gpus
    assert set(a["model"]) <= set(POLLUX_APP_SHARE)
    half, _ = get_scenario(name, num_jobs=480).build_jobs(0)
    assert len(half) == 480 and half["submit_s"].max() < 8 * 3600  # more jobs, same period: higher rate


def test_shipped_pollux_numbers_match_the_workload_files() -> None:
    files = find_pollux_workloads()
    if not files:
        pytest.skip("Pollux workloads (traces/philly/pollux_workloads/workload-*.csv) not found under "
                    "$GPUCLUSTER_DATA or ../shared/data")
    reps, share, mean_t = fit_replicas(files)
    assert fit_batches(files) == POLLUX_BATCH
    assert reps == POLLUX_REPLICAS
    assert share == pytest.approx(POLLUX_APP_SHARE)
    assert mean_t == pytest.approx(POLLUX_MEAN_ARRIVAL_S)


def test_castor_philly_statistics_match_pollux_workloads() -> None:
    """Averaged over 4 seeds of 240 jobs, against Pollux's 1,280 jobs: every application's share within 0.06,
    mean GPUs within 15%, share of jobs over 4 GPUs within 0.08, mean arrival within 10% (real Philly only)."""
    sc = get_scenario("castor-philly")
    jobs = [sc.build_jobs(s) for s in range(4)]
    if not jobs[0][1].startswith("real"):
        pytest.skip("the real Philly trace is not available (the shipped synthetic one has other GPU times)")
    st = {k: float(np.mean([workload_stats(j)[k] for j, _ in jobs])) for k in workload_stats(jobs[0][0])}
    tot = sum(sum(r.values()) for r in POLLUX_REPLICAS.values())
    mean_g = sum(g * c for r in POLLUX_REPLICAS.values() for g, c in r.items()) / tot
    gt4 = sum(c for r in POLLUX_REPLICAS.values() for g, c in r.items() if g > 4) / tot
    for app, share in POLLUX_APP_SHARE.items():
        assert abs(st[f"share_{app}"] - share) < 0.06, app
    assert st["mean_gpus"] == pytest.approx(mean_g, rel=0.15)
    assert abs(st["share_gt4_gpus"] - gt4) < 0.08
    assert st["mean_arrival_s"] == pytest.approx(POLLUX_MEAN_ARRIVAL_S, rel=0.10)


@pytest.mark.parametrize("name", ["castor-philly", "sjfbsbf-philly"])
def test_pollux_scenarios_are_contended(name: str) -> None:
    """FIFO queues (the earlier busiest-window tables gave zero queueing for every policy)."""
    r = run_episode(name, "fifo", 0, scenario_options={"restart_s": 30.0})
    s = run_episode(name, "sjf", 0, scenario_options={"restart_s": 30.0})
    assert r["avg_queue_s"] > 600.0
    assert r["avg_jct_s"] > s["avg_jct_s"]  # and the policies differ


def test_reproduction_boards_cover_every_setting_the_document_reads() -> None:
    """The castor and sjf-bsbf boards hold, with 10 seeds each, every cell docs/results/reproduction.md reads: the paper
    settings, the load sweep, time-slicing, the xi injection and the Tiresias threshold sweep; every cell charges
    the 30 s restart; nothing wires a world by hand."""
    from gpucluster_env.leaderboard.board import load_board
    from render_reproduction import (
        BOARDS,
        MAIN,
        POLICIES,
        RESTART_S,
        SWEEP_JOBS,
        SWEEP_POLICIES,
        SWEEP_SCENARIOS,
        TIRESIAS_THRESHOLDS_H,
        XI_VALUES,
        _tiresias_popts,
    )

    todo = [c for b in BOARDS for c in load_board(b).cells]
    n_seeds = 10  # issue 27: every reproduced setting at 10 seeds
    assert all(c.scenario_options.get("restart_s") == RESTART_S for c in todo)
    assert all("catalog" not in c.scenario_options and set(c.env_options) <= {"xi"} for c in todo)

    def seeds(sc: str, p: str, opts: dict | None = None, xi: float | None = None, popts: dict | None = None) -> int:
        return len([c for c in todo if c.scenario == sc and c.policy == p and c.policy_options == (popts or {})
                    and {k: v for k, v in c.scenario_options.items() if k != "restart_s"} == (opts or {})
                    and c.env_options == ({"xi": xi} if xi is not None else {})])

    for sc, opts in MAIN:
        for p in POLICIES:
            assert seeds(sc, p, opts) == n_seeds, (sc, p, opts)
    for sc in SWEEP_SCENARIOS:
        for n in SWEEP_JOBS:
            for p in SWEEP_POLICIES:
                assert seeds(sc, p, {} if n == 240 else {"num_jobs": n}) == n_seeds, (sc, p, n)
        for h in TIRESIAS_THRESHOLDS_H:
            assert seeds(sc, "tiresias", popts={} if h == 16.0 else _tiresias_popts(h)) == n_seeds, (sc, h)
    for sc in ("castor-philly", "castor-venus"):
        assert seeds(sc, "castor-timeslice") == n_seeds
    for xi in XI_VALUES:
        for p in ("sjf-ffs", "castor", "castor-oracle"):
            assert seeds("sjfbsbf-philly", p, xi=xi) == n_seeds, (p, xi)


def test_record_rows_carry_the_labels_and_size_split_the_document_reads() -> None:
    """A leaderboard record becomes a row with the labels the tables select on and per-size statistics that
    recombine into the episode's averages (from the record's per-job results)."""
    from gpucluster_env.leaderboard.board import Cell
    from gpucluster_env.leaderboard.cells import run_cell
    from gpucluster_env.leaderboard.store import make_record
    from render_reproduction import record_row

    cell = Cell("sjfbsbf-philly", "tiresias", 0, {"restart_s": 30.0, "num_jobs": 60}, {"thresholds": [3600.0]},
                {"xi": 1.5})
    row = record_row(make_record(cell, run_cell(cell), {}))
    assert (row["options"], row["xi"], row["popts"]) == ("num_jobs=60", 1.5, "thresholds=[3600.0]")
    f = row["frac_large"]
    assert 0.0 < f < 1.0
    for k in ("jct", "queue"):
        mix = f * row[f"avg_{k}_large_s"] + (1 - f) * row[f"avg_{k}_small_s"]
        assert mix == pytest.approx(row[f"avg_{k}_s"], rel=1e-4)  # per-job times are stored to 10 ms
        # castor Tables 5-6's split (more than 8 GPUs): each class's share of the average, adding up to it
        assert row[f"{k}_large8_s"] + row[f"{k}_small8_s"] == pytest.approx(row[f"avg_{k}_s"], rel=1e-4)
    assert 0.0 < row["frac_large8"] < f


def test_castor_size_tables_are_shares_of_the_average() -> None:
    """Castor Tables 5-6's Large and Small columns add up to All Jobs (so they are shares of the average, which
    the document's table computes alike), and the section renders ours beside them."""
    from castor_sizes import CASTOR_SIZE_POLICIES, castor_size_section, contributions_by_size
    from gpucluster_env.leaderboard.papers import CASTOR_SIZES, PAPER

    for sc, rows in CASTOR_SIZES.items():
        for p, (jl, js, ql, qs) in rows.items():
            assert (jl + js, ql + qs) == pytest.approx(PAPER[(sc, "")][p], abs=0.0101), (sc, p)
    got = contributions_by_size(np.array([16, 8, 2, 12]), np.array([4.0, 2.0, 1.0, np.nan]),
                                np.array([1.0, 0.0, 1.0, 2.0]))
    assert got == {"frac_large8": 0.5, "jct_large8_s": 1.0, "jct_small8_s": 0.75, "queue_large8_s": 0.75,
                   "queue_small8_s": 0.25}

    class Res:
        def m(self, sc: str, p: str, key: str) -> float:
            return 0.25 if key == "frac_large8" else 3600.0

    text = "\n".join(castor_size_section(Res(), lambda x: f"{x:.2f}"))
    assert "castor-venus: 25% of our jobs ask for more than 8 GPUs" in text
    assert "| lucid | 1.00 / 1.14 | 1.00 / 2.21 | 1.00 / 2.05 | 1.00 / 0.02 |" in text
    assert text.count("\n| ") == 2 * len(CASTOR_SIZE_POLICIES) + 2


def test_pollux_time_work_matches_pollux_measured_time_on_t4() -> None:
    """``annotate=pollux-time``: on the catalog's T4 (Pollux's hardware, 4-GPU nodes) a job runs as long as
    Pollux's iterations took at Pollux's measured step time (within one iteration), and ImageNet's work is
    below the catalog's own count of Pollux's iterations (the reason for the recipe)."""
    from gpucluster_env.traces.pollux_workloads import (
        POLLUX_GPU,
        POLLUX_INTER_NODE_GBS,
        POLLUX_NODE_GPUS,
        pollux_placement,
        pollux_step_time,
        pollux_time_iterations,
    )

    from gpucluster_env.catalog.measured import data_dir
    from gpucluster_env.performance import comm_time, compute_time, footprint_gb, iteration_time

    if data_dir() is None:
        pytest.skip("Pollux's placements.csv (profiles/pollux) not found")
    assert pollux_placement(6) == "24" and pollux_placement(16) == "4444" and pollux_placement(48) == "4444"
    assert pollux_placement(1) == "1"
    cat = default_catalog()
    for app, g in (("cifar10", 8), ("bert", 12), ("yolov3", 4), ("imagenet", 32)):
        p, gt, b = cat.model(app), cat.gpu_type(POLLUX_GPU), pollux_batch(app, g)
        s = 1
        while footprint_gb(p, b, s) > gt.memory_gb:
            s *= 2
        tc = compute_time(p, b / s, cat.model_speed(p, POLLUX_GPU))
        comm = comm_time(p, g, -(-g // POLLUX_NODE_GPUS), gt.intra_node_bw_gbps, POLLUX_INTER_NODE_GBS)
        t_cat = iteration_time(tc, s, comm, p.delta)
        want = pollux_iterations(app, g, cat) * pollux_step_time(app, g, b)
        assert pollux_time_iterations(app, g, cat) * t_cat == pytest.approx(want, abs=t_cat + 1e-9)
    # With the all-reduce latency fitted on Pollux's multi-node runs (catalog fit-comm) the catalog's 32-GPU
    # ImageNet iteration is much closer to Pollux's measured one than the single-node extrapolation was (0.80 of
    # the count, where it was under 0.5); it is still slower, so the recipe still matters.
    assert pollux_time_iterations("imagenet", 32, cat) < 0.85 * pollux_iterations("imagenet", 32, cat)


@pytest.mark.parametrize("name", ("castor-philly", "castor-venus"))
def test_lucid_work_keeps_the_trace_gpu_time_on_the_scenario_gpus(name: str) -> None:
    """``annotate="pollux-lucid"``: each job, alone and packed on the scenario's own GPUs, runs its sampled trace
    job's GPU time spread over Pollux's GPU count (Lucid keeps the trace's durations), to within one
    iteration."""
    from gpucluster_env.traces.scenario_jobs import trace_source

    sc = get_scenario(name)
    eng = make_engine(sc, 0)
    full, _ = trace_source(sc.trace)
    gpu_time = dict(zip(full["job_id"].astype(str), full["num_gpus"] * full["duration_s"], strict=True))
    for j in range(0, eng.n_jobs, 7):
        orig = str(eng.job_ids[j]).rsplit("#", 1)[0]
        want = gpu_time[orig] / eng.req_gpus[j]
        per_iter = eng.solo_time[j] / eng.iterations[j]
        assert abs(eng.solo_time[j] - want) <= per_iter + 1e-6


def test_size_split_and_implied_large_share() -> None:
    """The per-size statistics recombine into the episode's averages, and the paper's implied share of large jobs
    is recovered exactly from a table built with a known share."""
    from gpucluster_env.leaderboard.papers import implied_large_share
    from render_reproduction import size_split

    r = run_episode("sjfbsbf-philly", "sjf", 0, scenario_options={"num_jobs": 60}, extra=size_split)
    f = r["frac_large"]
    assert 0.0 < f < 1.0
    for k in ("jct", "queue"):
        mix = f * r[f"avg_{k}_large_s"] + (1 - f) * r[f"avg_{k}_small_s"]
        assert mix == pytest.approx(r[f"avg_{k}_s"], rel=1e-9)
    paper = {"a": (4.0, 1.0, 3.0, 0.5), "b": (6.0, 2.0, 2.0, 1.0)}
    totals = {p: (0.25 * v[0] + 0.75 * v[1], 0.25 * v[2] + 0.75 * v[3]) for p, v in paper.items()}
    assert implied_large_share(paper, totals) == pytest.approx(0.25)
