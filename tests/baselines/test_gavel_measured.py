"""Gavel's own numbers where it measured them (issue 27): the measured solo throughput table, its use by the
engine (measured time, measured zero = cannot run), Gavel's between-resets rule and the round-based FIFO."""

from __future__ import annotations

import json
import math
from importlib import resources
from typing import Any

import pandas as pd
import pytest

from gpucluster_env.catalog import default_catalog
from gpucluster_env.catalog.measured import data_dir
from gpucluster_env.catalog.solo import SOLO_FILE, MeasuredSolo, build_solo_table
from gpucluster_env.engine import ActionError, ClusterEngine, EngineConfig, Place
from gpucluster_env.hardware import ClusterSpec
from gpucluster_env.policy import check_policy_options, make_policy
from gpucluster_env.settings import SettingError
from tests.baselines.test_baselines import drive


def _gavel_file() -> Any:
    d = data_dir()
    path = None if d is None else d / "profiles" / "gavel" / "simulation_throughputs.json"
    if path is None or not path.is_file():
        pytest.skip("Gavel's simulation_throughputs.json not found (set GPUCLUSTER_DATA or ../shared/data)")
    return path


def test_shipped_table_is_present_without_data() -> None:
    solo = MeasuredSolo()
    # ResNet-50 (batch 64) on 4 V100s, consolidated: 9.45 steps/s summed over the GPUs (Gavel's file)
    assert solo.steps_per_s("resnet50", 64, "V100", 4) == pytest.approx(9.451949566394442, rel=1e-12)
    assert solo.iter_s("resnet50", 64, "V100", 4) == pytest.approx(4 / 9.451949566394442, rel=1e-12)
    # measured zero: ResNet-50 at batch 128 on 4 K80s does not run; unmeasured configurations: None
    assert solo.iter_s("resnet50", 128, "K80", 4) == math.inf
    assert solo.iter_s("resnet50", 128, "K80", 1) > 0
    assert solo.iter_s("bert", 12, "V100", 1) is None and solo.iter_s("resnet50", 64, "A100", 1) is None
    assert MeasuredSolo(enabled=False).iter_s("resnet50", 64, "V100", 4) is None
    # spread over more nodes than it needs: Gavel's unconsolidated measurement (LM batch 80 on 8 V100s: 48 steps/s
    # against 231); placement-blind, as Gavel's simulator, the consolidated one
    assert solo.steps_per_s("lm", 80, "V100", 8, consolidated=False) == pytest.approx(47.89, abs=0.01)
    assert MeasuredSolo(placement_blind=True).steps_per_s("lm", 80, "V100", 8, consolidated=False) == \
        solo.steps_per_s("lm", 80, "V100", 8) == pytest.approx(231.18, abs=0.01)


@pytest.mark.data
def test_shipped_table_equals_the_measurement() -> None:
    path = _gavel_file()
    shipped = json.loads(resources.files("gpucluster_env").joinpath("data", SOLO_FILE).read_text())
    assert build_solo_table(path) == shipped
    raw = json.loads(path.read_text())
    # every consolidated entry of Gavel's families, by catalog name: 26 job types x 4 GPU counts per type
    assert len(shipped["consolidated"]["V100"]) == len(raw["v100"]) == 83
    assert shipped["unconsolidated"]["K80"]["resnet18|32|2"] == raw["k80_unconsolidated"][
        "('ResNet-18 (batch size 32)', 2)"]["null"]
    assert shipped["consolidated"]["P100"]["a3c|1|1"] == raw["p100"]["('A3C', 1)"]["null"]


def _engine(groups: list[tuple[str, int, int]], rows: list[dict], measured: bool = True) -> ClusterEngine:
    cat = default_catalog()
    if not measured:
        cat = cat.with_solo(MeasuredSolo(enabled=False))
    jobs = pd.DataFrame([{"job_id": f"j{i}", "submit_s": 0.0, "iterations": 1000.0, **r} for i, r in enumerate(rows)])
    return ClusterEngine(ClusterSpec.from_groups(groups), jobs, cat, EngineConfig())


def test_engine_runs_measured_configurations_at_the_measured_time() -> None:
    rows = [{"model": "resnet50", "batch_size": 64, "num_gpus": 4}, {"model": "resnet18", "batch_size": 64,
                                                                     "num_gpus": 1}]
    solo = MeasuredSolo()
    eng = _engine([("V100", 1, 4), ("K80", 1, 4)], rows)
    fitted = _engine([("V100", 1, 4), ("K80", 1, 4)], rows, measured=False)
    # each job's solo time: on its fastest type (V100), the measured iteration time x iterations
    assert eng.solo_time[0] == pytest.approx(1000 * solo.iter_s("resnet50", 64, "V100", 4), rel=1e-12)
    assert eng.solo_time[1] == pytest.approx(1000 * solo.iter_s("resnet18", 64, "V100", 1), rel=1e-12)
    # the fitted model differs: it runs ResNet-50 on 4 V100s (one node) 1.75x faster than Gavel measured
    assert fitted.solo_time[0] / eng.solo_time[0] == pytest.approx(0.571, abs=0.01)
    # a placement runs at the measured rate: ResNet-18 alone on one K80 finishes at 1000 x measured time
    eng.advance()
    k80 = [g for g in range(eng.num_gpus) if eng.type_names[eng.gpu_type[g]] == "K80"]
    eng.apply(Place(1, gpus=(k80[0],)))
    eng.apply(Place(0))
    while not eng.done:
        eng.advance()
    assert eng.finish_t[1] == pytest.approx(1000 * solo.iter_s("resnet18", 64, "K80", 1), rel=1e-9)


def test_measured_zero_masks_the_type_and_refuses_a_placement() -> None:
    eng = _engine([("V100", 1, 4), ("K80", 1, 4)], [{"model": "resnet50", "batch_size": 128, "num_gpus": 4}])
    k80 = eng.type_names.index("K80")
    assert not eng.fits_type[0, k80] and eng.fits_type[0, eng.type_names.index("V100")]
    eng.advance()
    gpus = tuple(g for g in range(eng.num_gpus) if eng.gpu_type[g] == k80)
    with pytest.raises(ActionError, match="Gavel measured zero throughput"):
        eng.apply(Place(0, gpus=gpus))
    # the fitted model alone would have run it there (accumulation)
    assert _engine([("K80", 1, 4)], [{"model": "resnet50", "batch_size": 128, "num_gpus": 4}],
                   measured=False).fits_type[0, 0]


def test_between_resets_rule(build: Any) -> None:
    # two fast GPUs, 100 s rounds, allocation recomputed at most every 1,000 s. Job 0 (long) starts at t=0;
    # job 1 arrives at t=150. Without the rule it takes the idle GPU at the next round (t=200); with it, it
    # waits for the next reset (t=1000), as in Gavel's simulator.
    rows = [{"iterations": 50_000.0}, {"submit_s": 150.0}]
    free = drive(build([("fast", 1, 2)], rows, round_s=100.0), make_policy("gavel", min_reset_s=1000.0))
    waits = drive(build([("fast", 1, 2)], rows, round_s=100.0),
                  make_policy("gavel", min_reset_s=1000.0, wait_for_reset=True))
    first = {kind: next(t for t, a in acts if isinstance(a, Place) and a.job == 1)
             for kind, acts in (("free", free), ("waits", waits))}
    assert first == {"free": 200.0, "waits": 1000.0}
    # a typed option (baselines.options): a bool, checked where it is given
    assert check_policy_options("gavel", {"wait_for_reset": True}) == {"wait_for_reset": True}
    assert check_policy_options("gavel-packed", {"wait_for_reset": False}) == {}
    with pytest.raises(SettingError, match="wait_for_reset"):
        check_policy_options("gavel", {"wait_for_reset": "sometimes"})


def test_gavel_fifo_fastest_type_in_arrival_order_and_deterministic(build: Any) -> None:
    # one fast and one slow GPU, three 1-GPU jobs at t=0: job 0 on fast, job 1 on slow, job 2 waits (FIFO: no
    # job jumps ahead); 100 s rounds, resets every 100 s
    rows = [{"iterations": 100.0}, {"iterations": 100.0}, {"iterations": 100.0}]
    runs = [drive(build([("fast", 1, 1), ("slow", 1, 1)], rows, round_s=100.0),
                  make_policy("gavel-fifo", min_reset_s=100.0)) for _ in range(2)]
    assert [(t, type(a).__name__, a.job, a.gpus) for t, a in runs[0]] == \
        [(t, type(a).__name__, a.job, a.gpus) for t, a in runs[1]]
    places = [(t, a.job, a.gpus) for t, a in runs[0] if isinstance(a, Place)]
    assert places[:2] == [(0.0, 0, (0,)), (0.0, 1, (1,))]
    # job 0 ends at 16 s (100 x 0.16 s on fast): job 2 starts at the next round's reset, on the fast GPU
    assert places[2] == (100.0, 2, (0,))
