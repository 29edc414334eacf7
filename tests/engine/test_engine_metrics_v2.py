"""Issue 12's metrics, worked out by hand: the sharing benefit priced at the job's own solo accumulation
(Castor eq. 24), its median beside its mean, and the estimated SM activity beside GPU occupancy."""

from __future__ import annotations

import numpy as np
import pytest

from gpucluster_env.engine import Colocate, Place, Squeeze, Swell
from gpucluster_env.engine.metrics import episode_metrics, sharing_benefit_ratios

REL = 1e-9


def test_sharing_benefit_at_own_solo_accumulation(build):
    """One fast GPU (16 GB), xi 1.5. Model 'big' needs 2 + 0.5 b GB at micro-batch b, batch 32: alone it fits at
    s = 2 (10 GB); beside another 'big' (10 GB) only 6 GB are left, so the colocated job runs at s = 4 (6 GB).
    Iteration alone on fast (speed 2): s (0.01 + 0.005 * 32 / s) / 2 = 0.09 s at s = 2, 0.1 s at s = 4;
    colocated x 1.5: 0.135 s and 0.15 s.
    j0 (1000 it) placed at 0, j1 (500 it) colocated at 0. Waiting: j0 done alone at 1000 * 0.09 = 90 s, then
    j1 alone at its own s = 2: 500 * 0.09 = 45 s, t_solo = 135 s (at the colocated s = 4 it would be
    90 + 50 = 140 s, the old pricing). Colocated: j1 done at 500 * 0.15 = 75 s, before j0 (1000 * 0.135 =
    135 s), so t_co = 75 s. Benefit 135 / 75 = 1.8."""
    eng = build([("fast", 1, 1)], [{"model": "big", "iterations": 1000}, {"model": "big", "iterations": 500}])
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Colocate(1, 0))
    assert eng.accum.tolist() == [2, 4]
    assert eng.rates.solo_accumulation(1, eng.gpus_of(1)) == 2
    ((j, t_solo, t_co),) = eng.sharing_benefits
    assert j == 1 and t_solo == pytest.approx(135.0, rel=REL) and t_co == pytest.approx(75.0, rel=REL)
    while not eng.done:
        eng.advance()
    m = eng.metrics()
    assert m["sharing_benefit"] == pytest.approx(1.8, rel=REL)
    assert m["sharing_benefit_median"] == pytest.approx(1.8, rel=REL)


def test_sharing_benefit_median_beside_mean(build):
    """Ratios 9/1, 1/1, 2/1 (and a decision with t_co = 0, skipped): mean 4, median 2."""
    eng = build([("fast", 1, 1)], [{"iterations": 10}])
    eng.advance()
    eng.apply(Place(0))
    while not eng.done:
        eng.advance()
    eng.sharing_benefits[:] = [(0, 9.0, 1.0), (0, 1.0, 1.0), (0, 2.0, 1.0), (0, 5.0, 0.0)]
    assert sharing_benefit_ratios(eng.sharing_benefits) == [9.0, 1.0, 2.0]
    m = episode_metrics(eng)
    assert m["sharing_benefit"] == pytest.approx(4.0) and m["sharing_benefit_median"] == pytest.approx(2.0)


def test_sm_activity_alone_and_fifo(build):
    """Two fast GPUs, model 'a' (demand 0.9), FIFO: j0 on GPU 0 for 0-100 s, j1 on GPU 1 for 0-40 s, j2 on GPU
    1 for 40-70 s. Occupancy (100 + 40 + 30) / 200 = 0.85; each busy GPU keeps 0.9 of its SMs active, so SM
    activity 0.9 * 170 / 200 = 0.765."""
    rows = [{"iterations": 625}, {"iterations": 250}, {"iterations": 187.5, "submit_s": 10.0}]
    eng = build([("fast", 1, 2)], rows)
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Place(1))
    while not eng.done:
        eng.advance()
        for j in eng.pending_jobs():
            if eng.plan_place(int(j)) is not None:
                eng.apply(Place(int(j)))
    m = eng.metrics()
    assert m["gpu_occupancy"] == pytest.approx(0.85, rel=REL)
    assert m["sm_activity_est"] == pytest.approx(0.765, rel=REL)


def test_sm_activity_shared_gpu_is_capped(build):
    """One fast GPU: 'a' (demand 0.9) and 'b' (demand 0.6) colocated at full shares from 0: 0.9 + 0.6 > 1, the
    GPU counts 1. Once one finishes, the other keeps its own demand. With every time span known from the event
    log: SM GPU-time = 1 * t1 + d_last * (t2 - t1) over t2."""
    eng = build([("fast", 1, 1)], [{"model": "a", "iterations": 100}, {"model": "b", "iterations": 100}])
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Colocate(1, 0))
    while not eng.done:
        eng.advance()
    t1, t2 = sorted(eng.finish_t.tolist())
    last = int(eng.finish_t.argmax())
    d_last = (0.9, 0.6)[last]
    m = eng.metrics()
    assert m["gpu_occupancy"] == pytest.approx(1.0)
    assert m["sm_activity_est"] == pytest.approx((t1 + d_last * (t2 - t1)) / t2, rel=REL)


def test_sm_activity_follows_the_share(build):
    """One job 'a' (demand 0.9) squeezed twice at 0 to an 80% share: min(0.9, 0.8) = 0.8 of the SMs active all
    its run, whatever the run's length; occupancy stays 1."""
    eng = build([("fast", 1, 1)], [{"iterations": 100}])
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Squeeze(0))
    eng.apply(Squeeze(0))
    while not eng.done:
        eng.advance()
    m = eng.metrics()
    assert m["gpu_occupancy"] == pytest.approx(1.0)
    assert m["sm_activity_est"] == pytest.approx(0.8, rel=REL)


def test_sm_activity_kept_per_gpu_is_the_formula_everywhere(build):
    """After every start, colocation, squeeze and swell of named GPUs, the per-GPU figures kept incrementally
    equal the formula on every GPU (a share change marks only the GPUs whose shares moved)."""
    eng = build([("fast", 2, 2)], [{"num_gpus": 2, "iterations": 1e5}, {"model": "b", "iterations": 1e5},
                                   {"iterations": 1e5}])
    st = eng.state

    def check() -> None:
        total = st.sm_activity.total(st.slot_job_flat, st.slot_share_flat)
        every = [st.sm_activity.gpu(st.slot_job_flat, st.slot_share_flat, g) for g in range(eng.num_gpus)]
        assert st.sm_activity.per_gpu.tolist() == every and total == float(np.sum(every))

    eng.advance()
    for action in (Place(0, gpus=(0, 1)), Place(2, gpus=(2,)), Colocate(1, 2, gpus=(2,)), Squeeze(0, gpus=(1,)),
                   Squeeze(1), Swell(0, gpus=(1,)), Squeeze(2)):
        eng.apply(action)
        check()
