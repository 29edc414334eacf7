"""HadarE's initial throughput estimate from GPU specs (hadar-hadare §V-A) and its replacement by measured rates."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from gpucluster_env.baselines.parts.throughput_estimate import SpecEstimate

from gpucluster_env.catalog import GPU_TYPES, Catalog
from gpucluster_env.engine import ClusterEngine, EngineConfig, Place, Reallocate
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.hardware import ClusterSpec
from gpucluster_env.interference import ConstantInterference
from gpucluster_env.policy import make_policy
from tests.baselines.test_baselines import play_env
from tests.conftest import TEST_MODELS, make_jobs

# The paper's expression as read in the catalog: exp(c) * (TFLOPS * sqrt(VRAM))^gamma * (1 + 0.05 (gen - 3)),
# c = -3.585, gamma = 0.874. V100: 15.7 TFLOPS, 16 GB, PCIe 3; K80 (one die): 4.37 TFLOPS, 12 GB, PCIe 3.
V100_SPEED = math.exp(-3.585) * (15.7 * math.sqrt(16.0)) ** 0.874
K80_SPEED = math.exp(-3.585) * (4.37 * math.sqrt(12.0)) ** 0.874


def _engine(num_gpus: int = 1) -> ClusterEngine:
    """One V100 node and one K80 node; model 'a' (0.32 s per iteration on the reference GPU) measured at
    V100 1.0 and K80 0.5: it truly runs 3.125 it/s on the V100, 1.5625 it/s on the K80."""
    model = TEST_MODELS["a"]
    cat = Catalog(gpu_types={"V100": GPU_TYPES["V100"], "K80": GPU_TYPES["K80"]},
                  models={"a": replace(model, speed={"V100": 1.0, "K80": 0.5})},
                  interference=ConstantInterference(1.5))
    cluster = ClusterSpec.from_groups([("V100", 1, 1), ("K80", 1, 1)])
    return ClusterEngine(cluster, make_jobs([{"iterations": 10_000.0, "num_gpus": num_gpus}]), cat,
                         EngineConfig(round_s=100.0))


def test_prior_is_the_spec_formula_times_the_reference_rate() -> None:
    eng = _engine()
    est = SpecEstimate(ClusterView(eng), partial=True)
    # before any run: hadare_speed(type) / t_comp on the reference GPU (0.32 s)
    assert est.of(0) == pytest.approx([V100_SPEED / 0.32, K80_SPEED / 0.32], rel=1e-12)


def test_measured_rate_replaces_the_estimate_and_scales_the_others() -> None:
    eng = _engine()
    view = ClusterView(eng)
    est = SpecEstimate(view, partial=True)
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))  # on the V100
    eng.advance()  # the round boundary at 100 s
    est.observe()
    # V100: the measured 3.125 it/s; K80: measured x the spec ratio (hand-computed: 3.125 x 0.2925 = 0.914)
    ratio = K80_SPEED / V100_SPEED
    assert ratio == pytest.approx((4.37 * math.sqrt(12.0) / (15.7 * 4.0)) ** 0.874)
    assert est.of(0) == pytest.approx([3.125, 3.125 * ratio], rel=1e-12)
    # once the job has run on the K80 too, that type's estimate is its measured rate (1.5625 it/s)
    eng.apply(Reallocate(0, gpus=(1,)))
    while eng.now < 200.0 - 1e-9:
        eng.advance()
    est.observe()
    assert est.of(0) == pytest.approx([3.125, 1.5625], rel=1e-12)


def test_job_factor_fitted_to_several_measurements() -> None:
    # V100, K80 and T4 (8.1 TFLOPS, 16 GB, PCIe 3); the job measured at 4 it/s on the V100 and 2 it/s on the
    # K80: the T4 gets its spec speed x the geometric mean of the two job factors (rate / spec speed)
    t4_speed = math.exp(-3.585) * (8.1 * math.sqrt(16.0)) ** 0.874
    cat = Catalog(gpu_types={t: GPU_TYPES[t] for t in ("V100", "K80", "T4")}, models={"a": TEST_MODELS["a"]},
                  interference=ConstantInterference(1.5))
    eng = ClusterEngine(ClusterSpec.from_groups([("V100", 1, 1), ("K80", 1, 1), ("T4", 1, 1)]),
                        make_jobs([{}]), cat, EngineConfig(round_s=100.0))
    est = SpecEstimate(ClusterView(eng), partial=True)
    est.record(0, 0, 4.0)
    est.record(0, 1, 2.0)
    factor = math.sqrt(4.0 / V100_SPEED * 2.0 / K80_SPEED)
    assert est.of(0) == pytest.approx([4.0, 2.0, t4_speed * factor], rel=1e-12)


def test_a_gang_over_two_types_is_not_recorded_and_memory_zeroes() -> None:
    eng = _engine(num_gpus=2)
    view = ClusterView(eng)
    est = SpecEstimate(view, partial=True)
    eng.advance()
    eng.apply(Place(0, gpus=(0, 1)))  # one worker on each type: its rate is the K80's pace, unnamed
    eng.advance()
    est.observe()
    assert not est.measured
    # without partial, neither type holds the 2-GPU gang
    assert (SpecEstimate(view, partial=False).of(0) == 0).all()


@pytest.mark.parametrize("scenario, mix", [("hadare-testbed", "M-3"), ("hadare-aws", "M-4")])
def test_hadare_spec_estimate_finishes_with_invariants(scenario: str, mix: str) -> None:
    env = GPUClusterEnv(scenario, scenario_options={"mix": mix}, observation="none")
    env.reset(seed=0)
    pol = make_policy("hadare")
    assert pol.estimate == "spec" and make_policy("hadar").estimate == "oracle"
    pol.reset(env)
    assert isinstance(pol.tputs, SpecEstimate)
    info = play_env(env, pol)
    m = info["metrics"]
    assert m["jobs_done"] == m["jobs"] and m["forks"] > 0
    # every model measured somewhere, each measurement a real rate
    rows = list(pol.tputs.measured.values())
    assert len(rows) == len({env.engine.profiles[env.engine.state.model_l[j]].name for j in range(env.engine.n_jobs)})
    assert all(np.nanmin(r) > 0 for r in rows)


def test_estimate_option_is_checked() -> None:
    with pytest.raises(ValueError, match="estimate"):
        make_policy("hadare", estimate="profile")
    assert make_policy("hadare", estimate="oracle").estimate == "oracle"
    assert make_policy("hadar", estimate="spec").estimate == "spec"
