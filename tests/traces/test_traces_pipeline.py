"""Samplers, annotation, synthetic generators (statistics within stated tolerances of the real traces), the
shipped traces, every scenario's job table, and one round trip loader -> sampler -> scenario -> engine run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from gpucluster_env.traces.annotate import assign_models, gimbal_deadlines, hadar_class, mix_raw
from gpucluster_env.traces.comparison import trace_stats
from gpucluster_env.traces.profiles import PROFILES
from gpucluster_env.traces.registry import load_trace
from gpucluster_env.traces.samplers import downscale_gpus, fit_to_cluster, sample
from gpucluster_env.traces.shipped import EMBEDDED_JOBS, embedded_path, load_embedded, write_embedded
from gpucluster_env.traces.synthetic import generate

from gpucluster_env.catalog import default_catalog
from gpucluster_env.engine.actions import Place
from gpucluster_env.engine.build import make_engine
from gpucluster_env.scenarios import SCENARIOS, get_scenario


def toy(n: int = 500) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0, 48 * 3600, n))
    t[200:260] = 30 * 3600 + np.arange(60)  # a burst
    df = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "submit_s": np.sort(t),
            "num_gpus": rng.choice([1, 2, 8, 64], n),
            "duration_s": rng.uniform(10, 1e4, n),
            "vc": "",
            "user": "",
            "status": "",
        }
    )
    df.attrs["start_hour"] = 0.0
    return df


def test_samplers_windows_deterministic_and_reported() -> None:
    df = toy()
    a, rep = sample(df, 50, "busiest", np.random.default_rng(3))
    b, _ = sample(df, 50, "busiest", np.random.default_rng(3))
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 50 and a["submit_s"].min() == 0 and a["submit_s"].max() <= 8 * 3600
    r, _ = sample(df, 40, "random", np.random.default_rng(0))
    assert len(r) == 40
    h, _ = sample(df, 30, "hours:3-10", np.random.default_rng(0))
    hours = (df.set_index("job_id").loc[h["job_id"], "submit_s"] / 3600) % 24
    assert len(h) == 30 and ((hours >= 3) & (hours < 10)).all()
    capped = fit_to_cluster(a, 8, "cap", rep)
    assert capped["num_gpus"].max() <= 8 and rep.capped == int((a["num_gpus"] > 8).sum())
    dropped = fit_to_cluster(a, 8, "drop", rep)
    assert len(dropped) == 50 - rep.capped and "dropped (more than 8 GPUs)" in rep.summary()
    assert downscale_gpus(a, 4)["num_gpus"].max() == 16
    with pytest.raises(ValueError, match="unknown window"):
        sample(df, 5, "weekly", np.random.default_rng(0))


def test_annotation_hadar_classes_gimbal_deadlines_and_mixes() -> None:
    assert hadar_class(np.array([0.5, 1.0, 9.9, 10, 49, 60, 150])).tolist() == [0, 1, 1, 2, 2, 3, 3]
    raw = pd.DataFrame(
        {
            "num_gpus": [1, 1, 8, 16],
            "duration_s": [600, 7200, 7200, 18000],
            "submit_s": [0.0, 1, 2, 3],
            "job_id": list("abcd"),
        }
    )
    m = assign_models(
        raw,
        ("resnet50", "lm", "transformer", "recommendation", "mima"),
        "hadar-class",
        np.random.default_rng(0),
    )
    assert m[0] == "mima" and m[1] == "mima" and m[2] in ("lm", "transformer")
    assert m[3] in ("resnet50", "recommendation")
    d = gimbal_deadlines(raw, np.random.default_rng(0))
    lam = (d - raw["submit_s"]) / raw["duration_s"]
    assert ((lam >= 1.5) & (lam <= 2.5)).all()
    assert (
        mix_raw("M-8")["model"].tolist() == ["resnet50", "lm", "transformer", "recommendation"] + ["mima"] * 4
    )


def test_max_gpu_hours_leaves_out_longer_jobs_and_says_so() -> None:
    from gpucluster_env.traces.scenario_jobs import within_gpu_hours

    from gpucluster_env.settings import SettingError

    raw = pd.DataFrame({"num_gpus": [1, 4, 8, 2], "duration_s": [3600.0, 90_000.0, 45_000.0, np.nan],
                        "submit_s": [0.0, 1, 2, 3], "job_id": list("abcd")})
    # GPU-hours 1, 100, 100 (kept: at most the limit), 8 x 12.5 = 100; the job without a duration is kept
    kept, out = within_gpu_hours(raw, 100.0)
    assert out == 0 and len(kept) == 4
    kept, out = within_gpu_hours(raw, 99.0)
    assert out == 2 and kept["job_id"].tolist() == ["a", "d"]
    # hadar-philly samples only Hadar's GPU-time classes (at most 100 GPU-hours) and its note says how many left
    sc = get_scenario("hadar-philly")
    assert sc.max_gpu_hours == 100.0
    jobs, note = sc.build_jobs(0)
    assert "over 100 GPU-hours left out" in note
    assert (jobs["num_gpus"] * jobs["duration_s"] / 3600.0).max() <= 100.0
    assert get_scenario("castor-philly").max_gpu_hours is None
    with pytest.raises(SettingError, match="max_gpu_hours"):
        sc.with_options(max_gpu_hours=0.0)


def test_max_duration_h_leaves_out_longer_jobs_and_says_so() -> None:
    from gpucluster_env.traces.scenario_jobs import within_gpu_hours

    from gpucluster_env.settings import SettingError

    raw = pd.DataFrame({"num_gpus": [1, 8, 2, 1], "duration_s": [3600.0, 16_200.0, 16_201.0, np.nan],
                        "submit_s": [0.0, 1, 2, 3], "job_id": list("abcd")})
    # by duration alone, not GPUs x duration: the 8-GPU 4.5 h job is kept, the 2-GPU one a second longer is not
    kept, out = within_gpu_hours(raw, 4.5, per_gpu=False)
    assert out == 1 and kept["job_id"].tolist() == ["a", "b", "d"]
    # the gimbal scenarios fit every job in Gavel's published makespan (gimbal §7.2) and say how many are left out
    for name, limit in (("gimbal-philly", 4.5), ("gimbal-alibaba", 17.6)):
        sc = get_scenario(name)
        assert sc.max_duration_h == limit
        jobs, note = sc.build_jobs(0)
        assert f"running over {limit:g} h left out" in note
        assert jobs["duration_s"].max() <= limit * 3600.0
    assert get_scenario("hadar-philly").max_duration_h is None
    # Gimbal's recipe counts iterations on the scenario's own A40 nodes: each job alone on the cluster runs
    # exactly its traced duration (to the iteration), so none runs past Gavel's published makespan either
    from gpucluster_env.engine.build import make_engine

    eng = make_engine(get_scenario("gimbal-philly"), 0)
    jobs, _ = get_scenario("gimbal-philly").build_jobs(0)
    per_iter = eng.solo_time / jobs["iterations"].to_numpy()
    assert np.all(eng.solo_time >= jobs["duration_s"].to_numpy() - 1e-6)
    assert np.all(eng.solo_time <= jobs["duration_s"].to_numpy() + per_iter + 1e-6)
    with pytest.raises(SettingError, match="max_duration_h"):
        get_scenario("gimbal-philly").with_options(max_duration_h=-1.0)


def _log_q(df: pd.DataFrame, q: float) -> float:
    return float(np.log10(df.loc[df["duration_s"] > 0, "duration_s"].quantile(q)))


@pytest.mark.parametrize("name, real", [("philly", "philly"), ("alibaba", "alibaba-gpu")])
def test_synthetic_matches_real_within_tolerance(name: str, real: str) -> None:
    """Tolerances: GPU-count fractions within 0.01 absolute; duration p25/p50/p75/p90 within 0.1 in log10
    (26%); arrival rate within 5%."""
    loaded = load_trace(real)
    if loaded is None:
        pytest.skip(f"real trace {real!r} not found under $GPUCLUSTER_DATA, the cache or ../shared/data")
    real_df = loaded[0]
    syn = generate(PROFILES[name], 20000, np.random.default_rng(7))
    rs, ss = trace_stats(real_df), trace_stats(syn)
    for k in rs:
        if k.startswith("gpus") and k != "gpus other":
            assert abs(rs[k] - ss[k]) < 0.01, k
    for q in (0.25, 0.5, 0.75, 0.9):
        assert abs(_log_q(real_df, q) - _log_q(syn, q)) < 0.1, q
    assert ss["arrivals per hour"] == pytest.approx(rs["arrivals per hour"], rel=0.05)


def test_synthetic_is_seeded() -> None:
    a = generate(PROFILES["alibaba"], 300, np.random.default_rng(5))
    pd.testing.assert_frame_equal(a, generate(PROFILES["alibaba"], 300, np.random.default_rng(5)))
    assert (a["gpu_milli"] < 1000).any()


def test_shipped_traces_regenerate_bit_for_bit(tmp_path: Path) -> None:
    for name in EMBEDDED_JOBS:
        assert write_embedded(name, tmp_path).read_bytes() == embedded_path(name).read_bytes(), name
        df = load_embedded(name)
        assert len(df) == EMBEDDED_JOBS[name] and df["submit_s"].iloc[0] == 0


def _models_known(sc) -> bool:  # noqa: ANN001
    return set(sc.models) <= set(default_catalog().models) and (
        sc.trace != "mix" or set(mix_raw(sc.mix or "M-5")["model"]) <= set(default_catalog().models)
    )


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("source", ["auto", "synthetic"])
def test_every_scenario_builds_and_names_its_trace(name: str, source: str, monkeypatch) -> None:  # noqa: ANN001
    sc = SCENARIOS[name]
    if not _models_known(sc):
        pytest.skip(f"scenario {name}: models {sc.models} not all in the catalog yet")
    monkeypatch.setenv("GPUCLUSTER_TRACE_SOURCE", source)
    if source == "synthetic" and name == "gimbal-alibaba":
        from gpucluster_env.settings import SettingError

        # the synthetic Alibaba stand-in spreads 300 arrivals over 153 h or more: it cannot give Gimbal's 300 jobs
        # arriving within 17.6 h, and says so in one line instead of running another workload
        with pytest.raises(SettingError, match="no 300 consecutive arrivals span at most 17.6 h"):
            sc.build_jobs(0)
        return
    jobs, note = sc.build_jobs(0)
    jobs2, _ = sc.build_jobs(0)
    pd.testing.assert_frame_equal(jobs, jobs2)
    expected = sc.num_jobs if sc.trace != "mix" else len(mix_raw(sc.mix or "M-5"))
    assert 0 < len(jobs) <= expected and (len(jobs) == expected or sc.window == "all"
                                          or f"fewer than the {expected} asked" in note)
    assert jobs["num_gpus"].max() <= sc.cluster.num_gpus
    assert "real" in note or "synthetic" in note or "mix" in note
    if source == "synthetic" and sc.trace not in ("tiny", "mix"):
        assert note.startswith("synthetic")
    if sc.all_at_zero:
        assert (jobs["submit_s"] == 0).all()
    if sc.deadlines:
        assert (jobs["deadline_s"] > jobs["submit_s"]).all()


def test_round_trip_loader_sampler_scenario_run(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """A Philly CSV in $GPUCLUSTER_DATA -> busiest window -> castor-philly (30 jobs) -> engine to
    completion."""
    rng = np.random.default_rng(0)
    n = 120
    ts = pd.Timestamp("2017-10-01 00:00:00") + pd.to_timedelta(
        np.sort(rng.uniform(0, 20 * 3600, n)), unit="s"
    )
    csv = pd.DataFrame(
        {
            "timestamp": ts.strftime("%Y-%m-%d %H:%M:%S"),
            "duration": rng.uniform(60, 3600, n).round(),
            "num_gpus": rng.choice([1, 2, 4, 8, 256], n),
            "gpu_time": 0,
            "cluster": "vc1",
        }
    )
    path = tmp_path / "traces" / "philly" / "philly_jobs.csv"
    path.parent.mkdir(parents=True)
    csv.to_csv(path, index=False)
    monkeypatch.setenv("GPUCLUSTER_DATA", str(tmp_path))
    sc = get_scenario("castor-philly", num_jobs=30)
    eng = make_engine(sc, seed=1)
    assert str(path) in eng.trace_note and "Pollux recipe" in eng.trace_note
    eng.advance()
    steps = 0
    while not eng.done:
        for j in eng.pending_jobs():
            if eng.plan_place(int(j)) is not None:
                eng.apply(Place(int(j)))
        eng.advance()
        steps += 1
        assert steps < 10000
    assert len(eng.job_table()) == 30


def test_max_span_h_bounds_a_random_window_and_keeps_the_windows_that_fit() -> None:
    from gpucluster_env.traces.samplers import random_window

    from gpucluster_env.settings import SettingError

    # arrivals every hour, then a 100 h gap, then every hour: 3 consecutive arrivals span 2 h or >= 101 h
    t = np.array([0, 1, 2, 3, 104, 105, 106, 107], float) * 3600.0
    df = pd.DataFrame({"submit_s": t, "num_gpus": 1, "duration_s": 60.0, "job_id": [str(i) for i in range(8)]})
    starts = set()
    for seed in range(40):
        out = random_window(df, 3, np.random.default_rng(seed), max_span_s=2 * 3600.0)
        assert out["submit_s"].max() == 2 * 3600.0  # every drawn window spans 2 h
        starts.add(out["job_id"].iloc[0])
        # a seed whose unbounded window fits draws the same window with the bound
        free = random_window(df, 3, np.random.default_rng(seed))
        if free["submit_s"].max() <= 2 * 3600.0:
            assert free["job_id"].tolist() == out["job_id"].tolist()
    assert starts == {"0", "1", "4", "5"}  # uniform over the windows that fit: each seen
    with pytest.raises(ValueError, match="narrowest spans 2.0 h"):
        random_window(df, 3, np.random.default_rng(0), max_span_s=3600.0)
    # gimbal-philly: 150 Philly jobs arriving within Gavel's published makespan (gimbal §7.2), said in the note
    sc = get_scenario("gimbal-philly")
    assert sc.max_span_h == 4.5
    for seed in (7, 8):  # their unbounded windows span 7.9 h and 6.7 h
        jobs, note = sc.build_jobs(seed)
        assert jobs["submit_s"].max() <= 4.5 * 3600.0 and "arrivals within 4.5 h" in note
        assert sc.with_options(max_span_h=None).build_jobs(seed)[0]["submit_s"].max() > 4.5 * 3600.0
    # the bound is on the arrivals the episode sees (after load) and applies only to a random window
    with pytest.raises(SettingError, match="max_span_h.*narrowest"):
        get_scenario("gimbal-alibaba", max_span_h=2.0).build_jobs(0)  # the narrowest spans 8.5 h
    get_scenario("gimbal-alibaba", max_span_h=1.0, load=20.0).build_jobs(0)
    with pytest.raises(SettingError, match="'max_span_h' bounds the arrival span of a 'random' window"):
        get_scenario("hadar-philly", max_span_h=4.0)
    with pytest.raises(SettingError, match="max_span_h"):
        get_scenario("castor-philly", window="random", max_span_h=4.0)
