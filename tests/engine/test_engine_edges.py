"""Engine edge cases: placeability checked at load, stalls in round-based scenarios, exact-set consistency."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_catalog, make_jobs

from gpucluster_env.engine import ActionError, ClusterEngine, EngineConfig, Place, StalledError
from gpucluster_env.hardware import ClusterSpec
from gpucluster_env.jobs import JobTableError


def test_job_needing_more_gpus_than_can_hold_its_model_is_refused_at_load():
    # 'big' needs 2 + 0.5 * 1 = 2.5 GB at full accumulation: it fits on both types; give it a cluster where only
    # 2 GPUs are big enough by shrinking the memory with a custom model.
    from gpucluster_env.workloads import ModelProfile

    cat = make_catalog()
    huge = ModelProfile("huge", 8, (8,), 0.01, 0.01, 100.0, mem_base_gb=12.0, mem_per_sample_gb=1.0)
    cat = type(cat)(gpu_types=cat.gpu_types, models={**cat.models, "huge": huge}, interference=cat.interference)
    cluster = ClusterSpec.from_groups([("fast", 1, 2), ("slow", 1, 4)])  # 16 GB fast x2, 8 GB slow x4
    with pytest.raises(JobTableError, match=r"row 0 .*num_gpus.*only 2 GPUs of the cluster can hold 'huge'"):
        ClusterEngine(cluster, make_jobs([{"model": "huge", "num_gpus": 4}]), cat)
    too_big = ModelProfile("toobig", 8, (8,), 0.01, 0.01, 100.0, mem_base_gb=20.0, mem_per_sample_gb=1.0)
    cat2 = type(cat)(gpu_types=cat.gpu_types, models={"toobig": too_big}, interference=cat.interference)
    with pytest.raises(JobTableError, match="does not fit in the memory of any GPU"):
        ClusterEngine(cluster, make_jobs([{"model": "toobig"}]), cat2)
    eng = ClusterEngine(cluster, make_jobs([{"model": "huge", "num_gpus": 2}]), cat)
    assert eng.fits_type[0].tolist() == [True, False]


def test_round_based_scenario_stalls_when_the_agent_only_waits():
    cluster = ClusterSpec.from_groups([("fast", 1, 2)])
    eng = ClusterEngine(cluster, make_jobs([{}]), make_catalog(), EngineConfig(round_s=60.0, max_idle_ticks=5))
    eng.advance()
    with pytest.raises(StalledError, match="1 pending jobs, nothing running"):
        for _ in range(20):
            eng.advance()
    assert eng.now <= 60.0 * 7


def test_arrivals_reset_the_idle_count():
    cluster = ClusterSpec.from_groups([("fast", 1, 2)])
    rows = [{"submit_s": 100.0 * i} for i in range(8)]
    eng = ClusterEngine(cluster, make_jobs(rows), make_catalog(), EngineConfig(tick_s=30.0, max_idle_ticks=4))
    eng.advance()
    for _ in range(30):  # waiting through arrivals every 100 s with ticks every 30 s: never 4 idle in a row
        if eng.next_arrival == eng.n_jobs:
            break
        eng.advance()
    assert eng.next_arrival == eng.n_jobs


def test_place_with_type_and_gpus_must_agree(build):
    eng = build([("fast", 1, 2), ("slow", 1, 2)], [{}])
    eng.advance()
    with pytest.raises(ActionError, match="not every GPU named is a fast"):
        eng.apply(Place(0, gpu_type="fast", gpus=(2,)))
    eng.apply(Place(0, gpu_type="slow", gpus=(2,)))
    assert eng.gpus_of(0).tolist() == [2]


def test_boolean_job_index_is_rejected(build):
    eng = build([("fast", 1, 2)], [{}, {}])
    eng.advance()
    with pytest.raises(ActionError, match="no job with index True"):
        eng.apply(Place(True))  # type: ignore[arg-type]


def test_solo_rate_cleared_when_a_job_stops(build):
    eng = build([("fast", 1, 2)], [{}, {"iterations": 1e6}], restart_s=0.0)
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Place(1))
    assert eng.solo_rate[0] > 0 and eng.solo_rate[1] > 0
    from gpucluster_env.engine import Preempt

    eng.apply(Preempt(1))
    eng.advance()
    assert eng.solo_rate[1] == 0.0
    while eng.status[0] != 3:
        eng.advance()
    assert eng.solo_rate[0] == 0.0 and np.isfinite(eng.finish_t[0])
