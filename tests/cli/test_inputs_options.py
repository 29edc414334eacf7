"""Typed options (issue #14): scenario, engine and policy options parsed and checked by their declared types and
ranges, cluster specs, scenario TOML files that round-trip, and env actions that must be ints."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from gpucluster_env.catalog.gpus import GPU_TYPES
from gpucluster_env.cli.main import main
from gpucluster_env.cli.option_args import parse_options, parse_policy_options
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.hardware import ClusterSpec, parse_cluster_spec
from gpucluster_env.scenario_files import load_scenario_file, scenario_from_toml, scenario_to_toml
from gpucluster_env.scenarios import SCENARIOS, get_scenario
from gpucluster_env.settings import SettingError


@pytest.mark.parametrize("text, value", [
    ("all_at_zero=False", False), ("all_at_zero=no", False), ("all_at_zero=0", False), ("all_at_zero=true", True),
    ("deadlines=off", False), ("num_jobs=480", 480), ("load=2", 2.0), ("round_s=null", None),
    ("models=bert,ncf", ("bert", "ncf")), ("models=[\"bert\"]", ("bert",)), ("sample_stealing=yes", True),
    ("share_step=0.05", 0.05), ("share_step=0.1", 0.1),
])
def test_options_parse_by_declared_type(text: str, value: object) -> None:
    key = text.split("=")[0]
    got = parse_options([text])[key]
    assert got == value and type(got) is type(value)
    assert get_scenario("tiny", **{key: got}) is not None


@pytest.mark.parametrize("text", [
    "all_at_zero=maybe", "deadlines=False2", "num_jobs=0", "num_jobs=2.5", "num_jobs=abc", "num_jobs=null",
    "num_jobs=-5", "num_jobs=1e3", "num_jobs=100000000000", "load=fast", "load=Infinity", "load=nan", "load=0",
    "load=1e-300", "load=-1", "tick_s=abc", "tick_s=1e-9", "round_s=inf", "restart_s=-1", "cluster=1",
    "cluster=36:36:36", "cluster=V100:0x4", "cluster=Bogus:1x4", "cluster=V100:1x4,net=0", "config=1",
    "cluster=V100:2x4,net=1e-300", "cluster=V100:2x4,net=0.001", "cluster=V100:2x4,net=1e5",
    "max_idle_ticks=2.5", "models=[1]", "xi=1", "share_step=0.03", "share_step=0", "share_step=1",
    "share_step=0.3", "share_step=abc",
    # accepted and ignored before (issue #25): now one line naming the option and its allowed values
    "window=bogus", "window=hours:10-3", "window=hours:3-30", "mix=M-99", "trace_format=bogus", "trace=bogus",
    "annotate=bogus",
])
def test_bad_options_are_one_line_errors(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--option", text]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gpucluster run: error:") and text.split("=")[0] in err


def test_deeply_nested_list_option_is_one_short_line(capsys: pytest.CaptureFixture[str]) -> None:
    deep = "[" * 50_000 + "]" * 50_000
    for argv in (["--option", f"models={deep}"], ["--policy", "tiresias", "--policy-option", f"thresholds={deep}"]):
        assert main(["run", "--scenario", "tiny", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "recursion" not in err and len(err) < 300, err[:300]
        assert "'models'" in err or "thresholds" in err


def test_python_keywords_are_checked_too() -> None:
    with pytest.raises(SettingError, match="'num_jobs'"):
        get_scenario("tiny", num_jobs=2.5)
    with pytest.raises(SettingError, match="'all_at_zero'"):
        get_scenario("tiny", all_at_zero="False")
    with pytest.raises(SettingError, match="'load'"):
        get_scenario("tiny", load=math.inf)
    assert get_scenario("tiny", restart_s=30).config.restart_s == 30.0  # an int is a float, not an error
    with pytest.raises(SettingError):
        GPUClusterEnv("tiny", scenario_options={"num_jobs": True})


@pytest.mark.parametrize("scenario, options, needle", [
    ("castor-philly", {"mix": "M-5"}, "option 'mix' applies only to trace 'mix'"),
    ("castor-philly", {"trace_format": "pai"}, "option 'trace_format' applies only to trace 'file'"),
    ("tiny", {"max_gpu_hours": 5.0}, "option 'max_gpu_hours': trace 'tiny' is generated whole"),
    ("hadare-testbed", {"max_duration_h": 1.0}, "option 'max_duration_h': trace 'mix' is generated whole"),
    ("gavel-hetero", {"window": "random"}, "option 'window' = 'random': trace 'gavel' is generated whole"),
    ("tiny", {"annotate": "gavel"}, "annotation 'gavel' is Gavel's job generator and goes with trace 'gavel'"),
    ("castor-philly", {"annotate": "trace"}, "annotation 'trace' reads a trace file's own models"),
    ("castor-philly", {"models": ("bert",)}, "option 'models': annotation 'pollux-lucid' uses its own models"),
    ("gimbal-philly", {"models": ("bert",)}, "option 'models': annotation 'gimbal' uses its own models"),
    ("gavel-hetero", {"models": ("bert",)}, "option 'models': annotation 'gavel' uses its own models"),
    ("hadare-aws", {"models": ("bert",)}, "option 'models': trace 'mix' uses its own models"),
    ("hadare-aws", {"num_jobs": 100}, "option 'num_jobs' = 100: workload mix 'M-5' has 5 jobs"),
    ("hadare-aws", {"mix": "M-12", "num_jobs": 5}, "option 'num_jobs' = 5: workload mix 'M-12' has 12 jobs"),
])
def test_options_a_scenario_cannot_honour_are_refused(scenario: str, options: dict, needle: str) -> None:
    """Before, each of these was accepted and changed nothing (issue #25)."""
    with pytest.raises(SettingError, match=needle) as e:
        get_scenario(scenario, **options)
    assert "\n" not in str(e.value) and scenario in str(e.value)


def test_trace_bounds_apply_to_every_sampled_recipe() -> None:
    """``max_gpu_hours`` / ``max_duration_h`` work on the Pollux recipes too (castor-philly ignored them), and a
    bound that leaves no job is a one-line error naming the option, not an empty episode."""
    sc = get_scenario("castor-philly", num_jobs=20)
    _, note = sc.build_jobs(0)
    assert "left out" not in note
    for name, what in (("max_gpu_hours", " GPU-hours"), ("max_duration_h", " h")):
        jobs, note = sc.with_options(**{name: 0.5}).build_jobs(0)
        assert f"over 0.5{what} left out" in note and len(jobs) == 20
        with pytest.raises(SettingError, match=rf"'castor-philly': option '{name}' = 1e-09 leaves no job"):
            sc.with_options(**{name: 1e-9}).build_jobs(0)
    with pytest.raises(SettingError, match="leaves no job"):
        GPUClusterEnv("castor-philly", scenario_options={"max_gpu_hours": 1e-9})


def test_a_mix_sets_its_own_number_of_jobs() -> None:
    sc = get_scenario("hadare-testbed", mix="M-12")
    assert sc.num_jobs == 12 and len(sc.build_jobs(0)[0]) == 12


@pytest.mark.parametrize("scenario", ["castor-philly", "gimbal-philly", "gavel-hetero"])
def test_arrival_and_deadline_options_act_on_every_recipe(scenario: str) -> None:
    """``all_at_zero`` and ``deadlines`` were ignored by the Pollux, Gimbal (all_at_zero) and Gavel (deadlines)
    recipes; now each acts on every recipe, and the default episode is unchanged."""
    sc = get_scenario(scenario, num_jobs=30)
    jobs, _ = sc.build_jobs(0)
    zero, _ = sc.with_options(all_at_zero=True).build_jobs(0)
    assert jobs["submit_s"].max() > 0 and (zero["submit_s"] == 0).all()
    dl, _ = sc.with_options(deadlines=True).build_jobs(0)
    assert dl["deadline_s"].notna().all() and (dl["deadline_s"] > dl["submit_s"]).all()
    assert jobs.equals(sc.build_jobs(0)[0])


def test_pollux_recipe_honours_the_window() -> None:
    """castor-philly's recipe samples Pollux's 8 hours; a window now picks which hours (it was ignored, so the
    training curriculum over windows saw one window)."""
    sc = get_scenario("castor-philly", num_jobs=20)
    assert "submitted 2:00-10:00" in sc.build_jobs(0)[1]
    assert "submitted 2:00-10:00" in sc.with_options(window="busiest").build_jobs(0)[1]
    assert "submitted 12:00-18:00" in sc.with_options(window="hours:12-18").build_jobs(0)[1]
    assert "submitted 0:00-24:00" in sc.with_options(window="all").build_jobs(0)[1]
    starts = {sc.with_options(window="random").build_jobs(seed)[1].split("submitted ")[1][:5] for seed in range(6)}
    assert len(starts) > 1


@pytest.mark.parametrize("policy, text", [
    ("tiresias", "thresholds=-1"), ("tiresias", "thresholds=[NaN]"), ("tiresias", "thresholds=[-5]"),
    ("tiresias", "starve_factor=-1"), ("tiresias", "starve_factor=abc"), ("castor", "xi_scale=-1"),
    ("castor", "predictor=1"), ("castor", "xi_scale=inf"),
])
def test_bad_policy_options(policy: str, text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--policy", policy, "--policy-option", text]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and text.split("=")[0] in err


def test_policy_options_typed() -> None:
    assert parse_policy_options(["thresholds=[3600, 7200]", "starve_factor=null"], "tiresias") == {
        "thresholds": (3600.0, 7200.0), "starve_factor": None}
    assert parse_policy_options(["xi_scale=1.5", "predictor=null"], "castor") == {"xi_scale": 1.5, "predictor": None}


def test_seed_must_be_in_range(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--seed", "-1"]) == 2
    assert "--seed -1" in capsys.readouterr().err


def test_cluster_spec_parse_and_round_trip() -> None:
    c = parse_cluster_spec("v100:9x4,P100:9x4,K80:9x4,net=25", GPU_TYPES)
    assert c.gpus_by_type() == {"V100": 36, "P100": 36, "K80": 36} and c.inter_node_bw_gbps == 25.0
    assert parse_cluster_spec(c.to_spec(), GPU_TYPES) == c
    for s in SCENARIOS.values():
        assert parse_cluster_spec(s.cluster.to_spec(), GPU_TYPES, name=s.cluster.name) == s.cluster
    for bad in ("", "V100", "V100:9", "V100:9x", "V100:1e20x4", "V100:9x4,net=inf", "V100:9x65", "V100:100001x1"):
        with pytest.raises(ValueError, match="cluster spec"):
            parse_cluster_spec(bad, GPU_TYPES)
    assert isinstance(c, ClusterSpec)
    for bw in (1e-300, 0.001, 0.0, math.nan, 1e5):  # too slow to simulate (iteration times overflow), or absurd
        with pytest.raises(ValueError, match="inter-node bandwidth must be a number of GB/s from 0.01 to 10000"):
            ClusterSpec.homogeneous("V100", 2, 4, inter_node_bw_gbps=bw)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_scenario_round_trips_through_toml(name: str) -> None:
    sc = SCENARIOS[name]
    assert scenario_from_toml(scenario_to_toml(sc)) == sc


def test_scenarios_show_toml_loads_back_and_runs_alike(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios", "show", "tiny", "--toml"]) == 0
    f = tmp_path / "tiny.toml"
    f.write_text(capsys.readouterr().out)
    assert load_scenario_file(f) == SCENARIOS["tiny"]
    assert main(["run", "--scenario", str(f), "--option", "num_jobs=12", "--json"]) == 0
    a = capsys.readouterr().out
    assert main(["run", "--scenario", "tiny", "--option", "num_jobs=12", "--json"]) == 0
    b = capsys.readouterr().out
    strip = (lambda s: s.split('"wall_s"')[0])  # noqa: E731 - wall time differs
    assert strip(a) == strip(b)


def test_share_step_from_a_scenario_file(tmp_path: Path) -> None:
    # the engine's share grid is an [engine] setting like the others: TOML, --option and Python alike
    text = scenario_to_toml(get_scenario("gimbal-philly", share_step=0.05))
    assert "share_step = 0.05" in text
    f = tmp_path / "g5.toml"
    f.write_text(text)
    sc = load_scenario_file(f)
    assert sc.config.share_step == 0.05 and sc.config.share_units == 20
    assert SCENARIOS["gimbal-philly"].config.share_units == 10
    with pytest.raises(SettingError, match="'share_step'"):
        get_scenario("tiny", share_step=0.07)


@pytest.mark.parametrize("edit, needle", [
    (("num_jobs = 40", "num_jobs = 2.5"), "'num_jobs'"),
    (("all_at_zero = false", "all_at_zero = \"False\""), "'all_at_zero'"),
    (("load = 1.0", "load = inf"), "'load'"),
    (("idle_tick_s = 60.0", "idle_tick_s = -1"), "'idle_tick_s'"),
    (("trace = \"tiny\"", "trace = \"tiny\"\nbogus = 1"), "unknown key(s) bogus"),
    (("[engine]", "[engine]\nround = 3"), "unknown key(s) round"),
    (("name = \"tiny\"", "name = "), "not valid TOML"),
    (("cluster = \"V100:2x4,P100:1x4,K80:1x4,net=12.5\"", "cluster = \"36:36:36\""), "cluster spec"),
])
def test_bad_scenario_files(tmp_path: Path, edit: tuple[str, str], needle: str,
                            capsys: pytest.CaptureFixture[str]) -> None:
    text = scenario_to_toml(SCENARIOS["tiny"])
    assert edit[0] in text
    f = tmp_path / "bad.toml"
    f.write_text(text.replace(edit[0], edit[1]))
    assert main(["run", "--scenario", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(f) in err and needle in err


@pytest.mark.parametrize("action", [1.5, "0", [0], True, np.float64(1.0), np.array([0]), None])
def test_env_step_rejects_non_int_actions(action: object) -> None:
    env = GPUClusterEnv("tiny", scenario_options={"num_jobs": 5})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action must be an int"):
        env.step(action)


def test_env_step_accepts_numpy_ints() -> None:
    env = GPUClusterEnv("tiny", scenario_options={"num_jobs": 5})
    env.reset(seed=0)
    env.step(np.int64(0))
    env.step(np.array(0))


def test_env_docstring_lists_every_registered_id() -> None:
    from gpucluster_env.registration import env_id

    for name in SCENARIOS:
        assert f"``{env_id(name).split('/')[1]}``" in (GPUClusterEnv.__doc__ or "")


def test_scenarios_module_makes_no_engine() -> None:
    import gpucluster_env.scenarios as scenarios

    assert not hasattr(scenarios.Scenario, "make_engine") and "ClusterEngine" not in vars(scenarios)


def test_window_curriculum_applies_windows_only_where_a_trace_is_sampled() -> None:
    """Training's window curriculum sets ``window`` only on scenarios that sample a trace (on ``tiny`` it was
    accepted and ignored, and is now refused by the scenario)."""
    from gpucluster_env.agents.train import TraceWindows

    tw = TraceWindows(GPUClusterEnv("tiny", observation="none"), ("tiny", "castor-philly"), ("busiest", "random"), 0)
    assert [(c.name, c.window) for c in tw.choices] == [
        ("tiny", "all"), ("castor-philly", "busiest"), ("castor-philly", "random")]
