"""Hand-computed cases of the engine's performance model (DESIGN.md "The performance model"; Castor eq. 1-3,
Theorem 1 eq. 16-23; Gimbal's squeeze and LISS; HadarE forking; preemption with restart overhead).

Every expected value below is worked out by hand from the test catalog's own numbers (tests/conftest.py):
model ``a``: t_comp = 0.32 s / speed (fast 2.0 -> 0.16 s, slow 1.0 -> 0.32 s); model ``b``:
(0.04 + 0.02 b)/speed (fast 3.0 -> 0.12 s at b = 16); model ``big``: (0.01 + 0.005 b)/speed, memory
2 + 0.5 b GB.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import PairXi

from gpucluster_env.engine import ActionError, Colocate, Fork, Place, Preempt, Squeeze, Swell

REL = 1e-9


def run_to_end(eng, policy=None, max_steps=10_000):
    """Advance to the end, calling ``policy(eng, reasons)`` at every decision point."""
    reasons = eng.advance()
    for _ in range(max_steps):
        if eng.done:
            return eng
        if policy is not None:
            policy(eng, reasons)
        reasons = eng.advance()
    raise AssertionError("episode did not finish")


def place_fifo(eng, reasons):
    for j in eng.pending_jobs():
        if eng.plan_place(int(j)) is not None:
            eng.apply(Place(int(j)))


def jct(eng):
    return eng.finish_t - eng.submit


# ---------------------------------------------------------------- one job alone
def test_one_job_alone_one_gpu(build):
    eng = run_to_end(build([("fast", 1, 1)], [{"iterations": 625}]), place_fifo)
    assert jct(eng)[0] == pytest.approx(625 * 0.16, rel=REL)
    assert eng.solo_time[0] == pytest.approx(100.0, rel=REL)


@pytest.mark.parametrize(
    ("groups", "n_nodes"), [([("fast", 1, 4)], 1), ([("fast", 2, 2)], 2)], ids=["one-node", "two-nodes"]
)
def test_one_job_alone_multi_gpu_eq_1_to_3(build, groups, n_nodes):
    eng = run_to_end(build(groups, [{"num_gpus": 4, "iterations": 300}]), place_fifo)
    tc = 0.32 / 2.0
    bw = 100.0 if n_nodes == 1 else 12.5  # intra-node NVLink-ish vs the cluster's inter-node network
    comm = 0.002 * (1 + math.log2(4)) * n_nodes + 2 * 3 / 4 * (100.0 / 1000.0) / bw  # eq. 2
    t_iter = math.sqrt(tc**2 + comm**2)  # eq. 3, delta = 2, s = 1
    assert jct(eng)[0] == pytest.approx(300 * t_iter, rel=REL)
    assert len(np.unique(eng.gpu_node[eng.job_table()["gpus"][0]])) == n_nodes


def test_gradient_accumulation_eq_3(build):
    """``big`` at batch 32 needs 18 GB > 16 GB: the engine picks s = 2 (10 GB) on fast, s = 4 (6 GB) on
    slow."""
    rows = [{"model": "big", "num_gpus": 2, "iterations": 1000}]
    eng = run_to_end(build([("fast", 1, 2)], rows), place_fifo)
    starts = [r for r in eng.log if r["kind"] == "start"]
    assert starts[0]["accumulation"] == 2
    tc = (0.01 + 0.005 * 16) / 2.0  # t_comp(B/s) on fast
    comm = 0.002 * 2 * 1 + 2 * 1 / 2 * 0.4 / 100.0
    t_iter = (2 - 1) * tc + math.sqrt(tc**2 + comm**2)
    assert jct(eng)[0] == pytest.approx(1000 * t_iter, rel=REL)

    eng = build([("slow", 1, 2)], [{"model": "big", "num_gpus": 2}])
    eng.advance()
    eng.apply(Place(0))
    assert eng.accum[0] == 4
    assert eng.footprint[0] == pytest.approx(2 + 0.5 * 8)
    # an explicit factor that does not fit is refused with the numbers
    eng2 = build([("slow", 1, 2)], [{"model": "big", "num_gpus": 2}])
    eng2.advance()
    with pytest.raises(ActionError, match="memory does not fit"):
        eng2.apply(Place(0, accumulation=2))


# ---------------------------------------------------------------- Castor Theorem 1
T_A, T_B = 0.16, 0.12  # solo iteration times of a and b on one fast GPU


def _pair(build, i_a, i_b, xi_a, xi_b, mode, kappa=0.0):
    """A (model a) and B (model b) on one fast GPU, both submitted at 0. ``mode``: 'concurrent' (B colocated
    at kappa via a tick), 'AB' / 'BA' (sequential, the second placed when the first finishes)."""
    xi = PairXi({("a", "b"): xi_a, ("b", "a"): xi_b})
    cfg = {"tick_s": kappa} if kappa > 0 else {}
    eng = build([("fast", 1, 1)], [{"model": "a", "iterations": i_a}, {"model": "b", "iterations": i_b}], xi,
                **cfg)
    first = 1 if mode == "BA" else 0

    def policy(e, reasons):
        if e.status[first] == 1 and e.num_running == 0:
            e.apply(Place(first))
        if mode == "concurrent" and e.status[1] == 1 and e.now >= kappa and e.status[0] == 2:
            e.apply(Colocate(1, 0))
        elif mode != "concurrent" and e.num_running == 0 and e.num_pending:
            e.apply(Place(int(e.pending_jobs()[0])))

    run_to_end(eng, policy)
    if mode == "concurrent":
        assert eng.counts["colocations"] == 1
    return jct(eng)


@pytest.mark.parametrize(("xi_a", "xi_b"), [(1.5, 1.2), (2.0, 2.0), (1.1, 1.9)])
def test_theorem1_case1_eq16_to_19(build, xi_a, xi_b):
    """Case 1: hat t_A i_A >= hat t_B i_B: B finishes first, A then runs alone."""
    i_a, i_b = 1000.0, 500.0
    ha, hb = T_A * xi_a, T_B * xi_b
    assert ha * i_a >= hb * i_b
    ta, tb = _pair(build, i_a, i_b, xi_a, xi_b, "concurrent")
    assert ta == pytest.approx(hb * i_b + T_A * (i_a - hb * i_b / ha), rel=REL)  # eq. 16
    assert tb == pytest.approx(hb * i_b, rel=REL)  # eq. 17
    assert (ta + tb) / 2 == pytest.approx(hb * i_b + T_A * i_a / 2 - hb * i_b / (2 * xi_a), rel=REL)  # eq. 19


def _eq23(kappa, i_a, i_b, xi_a, xi_b):
    return ((2 * xi_b + xi_a - 2 * xi_a * xi_b) / (2 * xi_b) * kappa + (1 - 1 / (2 * xi_b)) * T_A * xi_a * i_a
            + T_B * i_b / 2)


@pytest.mark.parametrize(("xi_a", "xi_b"), [(1.5, 1.2), (2.0, 2.0)])
def test_theorem1_case2_eq20_to_23_both_orders(build, xi_a, xi_b):
    """Case 2: hat t_A i_A < hat t_B i_B. Concurrent (kappa = 0), inserted later (0 < kappa < t_A i_A),
    sequential A then B (kappa = t_A i_A) all match eq. 23; the better of the two extremes is the one the sign
    of 2 xi_B + xi_A - 2 xi_A xi_B says; B then A is the plain sum."""
    i_a, i_b = 200.0, 1000.0
    ha, hb = T_A * xi_a, T_B * xi_b
    assert ha * i_a < hb * i_b
    ta, tb = _pair(build, i_a, i_b, xi_a, xi_b, "concurrent")
    assert ta == pytest.approx(ha * i_a, rel=REL)  # eq. 20 at kappa = 0
    assert tb == pytest.approx(ha * i_a + T_B * (i_b - ha * i_a / hb), rel=REL)  # eq. 21 at kappa = 0
    concurrent = (ta + tb) / 2
    assert concurrent == pytest.approx(_eq23(0.0, i_a, i_b, xi_a, xi_b), rel=REL)

    kappa = 8.0
    ta_k, tb_k = _pair(build, i_a, i_b, xi_a, xi_b, "concurrent", kappa=kappa)
    assert ta_k == pytest.approx(kappa + xi_a * (T_A * i_a - kappa), rel=REL)
    assert (ta_k + tb_k) / 2 == pytest.approx(_eq23(kappa, i_a, i_b, xi_a, xi_b), rel=REL)

    ta_s, tb_s = _pair(build, i_a, i_b, xi_a, xi_b, "AB")
    assert (ta_s, tb_s) == pytest.approx((T_A * i_a, T_A * i_a + T_B * i_b), rel=REL)
    sequential = (ta_s + tb_s) / 2
    assert sequential == pytest.approx(_eq23(T_A * i_a, i_a, i_b, xi_a, xi_b), rel=REL)
    if 2 * xi_b + xi_a - 2 * xi_a * xi_b > 0:
        assert concurrent < sequential
    else:
        assert concurrent > sequential

    ta_r, tb_r = _pair(build, i_a, i_b, xi_a, xi_b, "BA")
    assert (ta_r, tb_r) == pytest.approx((T_B * i_b + T_A * i_a, T_B * i_b), rel=REL)


# ---------------------------------------------------------------- MPS shares (Gimbal squeeze / swell)
def test_squeeze_speeds_partner(build):
    """A (a, demand 0.9) and B (b, demand 0.6) share a fast GPU at xi 1.5. Squeezing B to 90%: A may contend
    for o = (0.9 + 0.9 - 1)/0.9 of its demand, so xi_A = 1 + 0.5 (0.1 + 0.9 * 0.8/0.9) = 1.45; B keeps
    u = 0.6, o = 1 and its own cap min(1, 0.9/0.6) = 1: xi_B = 1.5."""
    rows = [{"model": "a", "iterations": 100}, {"model": "b", "iterations": 10_000}]

    def run(squeeze):
        eng = build([("fast", 1, 1)], rows, 1.5)

        def policy(e, reasons):
            if e.now == 0 and e.status[0] == 1:
                e.apply(Place(0))
                e.apply(Colocate(1, 0))
                if squeeze:
                    e.apply(Squeeze(1))

        return jct(run_to_end(eng, policy))

    plain, squeezed = run(False), run(True)
    assert plain[0] == pytest.approx(100 * 0.16 * 1.5, rel=REL)
    assert squeezed[0] == pytest.approx(100 * 0.16 * 1.45, rel=REL)
    assert squeezed[0] < plain[0]
    shared = 100 * 0.16 * 1.45
    assert squeezed[1] == pytest.approx(shared + T_B * (10_000 - shared / (T_B * 1.5)), rel=REL)


def test_squeeze_below_demand_slows_self_and_alone(build):
    """B squeezed to 50% (< its demand 0.6) is capped at 0.5/0.6 of its speed. Shared with A (100%, xi_free
    1.5): B uses 0.5 of the GPU, A may contend for 0.5 + 1 - 1 = 0.5 of it, o = 0.5/0.6, so xi_B = (1 + 0.5
    (0.1 + 0.9 * 0.5/0.6)) / (0.5/0.6) = 1.425 * 1.2 = 1.71 (above its 1.5 at full share). A (demand 0.9):
    o = (0.9 + 0.5 - 1)/0.9, xi_A = 1 + 0.5 (0.1 + 0.4) = 1.25. Alone after A leaves: 0.6/0.5 = 1.2 (a
    lone job keeps its share)."""
    eng = build([("fast", 1, 1)], [{"model": "a", "iterations": 100}, {"model": "b", "iterations": 1000}])
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Colocate(1, 0))
    for _ in range(5):
        eng.apply(Squeeze(1))
    assert eng.share_of(1) == pytest.approx(0.5)
    assert 1.0 / eng.rate[1] == pytest.approx(T_B * 1.71, rel=REL)
    assert 1.0 / eng.rate[0] == pytest.approx(T_A * (1 + 0.5 * 0.5), rel=REL)
    run_to_end(eng)
    t_a = 100 * T_A * 1.25
    done_shared = t_a / (T_B * 1.71)
    assert jct(eng)[1] == pytest.approx(t_a + (1000 - done_shared) * T_B * 1.2, rel=REL)


def test_shares_monotone(build):
    """Over every (own, partner) share pair: own share up never slows; partner share up never speeds."""
    for models in (("a", "b"), ("b", "big")):
        eng = build([("fast", 1, 1)], [{"model": models[0]}, {"model": models[1]}], 1.7)
        eng.advance()
        eng.apply(Place(0))
        eng.apply(Colocate(1, 0, accumulation=None))
        rate = np.zeros((10, 10))  # [own tenths - 1, partner tenths - 1] of job 0
        for own in range(10, 0, -1):
            for partner in range(10, 0, -1):
                rate[own - 1, partner - 1] = eng.rate[0]
                if partner > 1:
                    eng.apply(Squeeze(1))
            for _ in range(9):
                eng.apply(Swell(1))
            if own > 1:
                eng.apply(Squeeze(0))
        assert (np.diff(rate, axis=0) >= -1e-12).all(), "own share up slowed the job"
        assert (np.diff(rate, axis=1) <= 1e-12).all(), "partner share up sped the job"
        assert rate[9, 0] > rate[9, 9]  # a partner squeezed to 10% frees the GPU
        assert rate[0, 9] < rate[9, 9]  # 10% of the GPU is below either model's demand


# ---------------------------------------------------------------- the share grid (EngineConfig.share_step)
def _ab_pair(build, **config):
    """A (model a, demand 0.9) and B (model b, demand 0.6) sharing one fast GPU at free-competition xi 1.5."""
    eng = build([("fast", 1, 1)], [{"model": "a", "iterations": 1e4}, {"model": "b", "iterations": 1e4}], 1.5,
                **config)
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Colocate(1, 0))
    return eng


def test_five_percent_grid_moves_shares_by_five_percent(build):
    """On the 5% grid one Squeeze of B takes it to 95%: A (demand 0.9) may contend for o = (0.9 + 0.95 - 1) /
    0.9 of its demand, xi_A = 1 + 0.5 (0.1 + 0.85) = 1.475 (between the 10% grid's 1.5 at 100% and 1.45 at
    90%). A share ranges over 5% .. 100% (20 steps of 5%), and the environment's masks follow."""
    eng = _ab_pair(build, share_step=0.05)
    assert (eng.share_units, eng.share_step) == (20, 0.05)
    assert eng.state.xi_share_tab.shape[-2:] == (21, 21)  # own and partner share: 0 .. 20 steps
    eng.apply(Squeeze(1))
    assert (eng.share_lo[1], eng.share_hi[1]) == (19, 19)
    assert eng.share_of(1) == pytest.approx(0.95)
    assert 1.0 / eng.rate[0] == pytest.approx(0.16 * 1.475, rel=REL)
    assert 1.0 / eng.rate[1] == pytest.approx(T_B * 1.5, rel=REL)  # B keeps u = 0.6 < 0.95: no own cap
    for _ in range(18):
        eng.apply(Squeeze(1))
    assert eng.share_lo[1] == 1 and eng.share_of(1) == pytest.approx(0.05)  # the least share: one step
    with pytest.raises(ActionError, match="already at the minimum"):
        eng.apply(Squeeze(1))
    for _ in range(19):
        eng.apply(Swell(1))
    assert eng.share_of(1) == 1.0
    with pytest.raises(ActionError, match="already at the maximum"):
        eng.apply(Swell(1))
    assert eng.counts["squeezes"] == 19 and eng.counts["swells"] == 19


def test_five_percent_grid_shares_summing_to_a_gpu(build):
    """A at 55% and B at 45% (shares only the 5% grid has) sum to 100%: no overlap is left, so each worker
    keeps its own cap and the memory term 1 + 0.1 * 0.5 = 1.05: xi_A = 1.05 / (0.55 / 0.9), xi_B = 1.05 /
    (0.45 / 0.6) = 1.4 (both above their value at full own share against the same partner, 1.225 and 1.1625,
    so the cap binds). The SM-activity estimate sums min(demand, share): 0.55 + 0.45 = one GPU. Memory does
    not depend on shares: the same accumulations and footprints as on the 10% grid."""
    eng = _ab_pair(build, share_step=0.05)
    for _ in range(9):
        eng.apply(Squeeze(0))
    for _ in range(11):
        eng.apply(Squeeze(1))
    assert eng.share_of(0) == pytest.approx(0.55) and eng.share_of(1) == pytest.approx(0.45)
    assert 1.0 / eng.rate[0] == pytest.approx(0.16 * 1.05 / (0.55 / 0.9), rel=REL)
    assert 1.0 / eng.rate[1] == pytest.approx(T_B * 1.4, rel=REL)
    assert eng.state.sm_activity.gpu(eng.state.slot_job_flat, eng.state.slot_share_flat, 0) == pytest.approx(1.0)
    ref = _ab_pair(build)
    assert eng.accum.tolist() == ref.accum.tolist() and eng.footprint.tolist() == ref.footprint.tolist()


@pytest.mark.parametrize("bad", [0.0, 0.3, 0.07, 0.01, -0.1, 1.0])
def test_share_step_must_cut_the_gpu_into_equal_steps(build, bad):
    from gpucluster_env.engine import EngineConfig

    with pytest.raises(ValueError, match="share_step"):
        EngineConfig(share_step=bad)
    assert EngineConfig(share_step=0.05).share_units == 20 and EngineConfig().share_units == 10


def _ten_percent_schedule(build, share_step):
    """A fixed schedule of 10% share moves played on the grid of ``share_step`` (each move repeated
    0.1 / share_step times): a 4-GPU job of b on two nodes, two 1-GPU jobs of a packed beside it, squeezes and
    swells on all and on some GPUs, a 2 s pause per share change. Returns the engine and the rates after every
    decision point."""
    k = round(0.1 / share_step)
    rows = [{"model": "b", "num_gpus": 4, "iterations": 3000.0}, {"model": "a", "iterations": 800.0},
            {"model": "a", "iterations": 2000.0, "submit_s": 5.0}]
    eng = build([("fast", 2, 2)], rows, 1.6, tick_s=10.0, calibration_overhead_s=2.0, share_step=share_step)
    plan = {
        0: [Place(0, gpus=(0, 1, 2, 3)), Colocate(1, 0, gpus=(0,))] + [Squeeze(0, gpus=(0,))] * (3 * k)
        + [Squeeze(1)] * (2 * k),
        1: [Colocate(2, 0, gpus=(2,))] + [Squeeze(2)] * (6 * k) + [Squeeze(0, gpus=(2,))] * k,
        3: [Swell(0)] * k + [Squeeze(1)] * k,
        5: [Swell(2)] * (2 * k) + [Squeeze(0)] * k,
        8: [Swell(0, gpus=(1, 3))] * k,
    }
    rates = []
    step = [0]

    def policy(e, reasons):
        for a in plan.get(step[0], []):
            e.apply(a)
        rates.append(e.rate.tolist())
        step[0] += 1

    run_to_end(eng, policy)
    return eng, rates


def test_ten_percent_schedule_on_five_percent_grid_is_identical(build):
    """The 10% grid's shares are exactly the even steps of the 5% grid (k/10 and 2k/20 are the same double),
    and share changes at one instant pause a job once: the same schedule with every move doubled gives the
    same rates at every decision point, the same finish times and the same metrics, bit for bit, with twice
    the squeezes and swells. The GPU-time integrals behind the utilization figures agree to rounding only:
    the half-way rate of each doubled move pushes a completion event that is stale by the time it is popped,
    and the clock still stops there, so the same integral is summed over more pieces."""
    ten, r10 = _ten_percent_schedule(build, 0.1)
    five, r5 = _ten_percent_schedule(build, 0.05)
    assert r10 == r5 and len(r10) > 8
    assert ten.finish_t.tolist() == five.finish_t.tolist()
    m10, m5 = ten.metrics(), five.metrics()
    assert (m5["squeezes"], m5["swells"]) == (2 * m10["squeezes"], 2 * m10["swells"]) and m10["squeezes"] > 0
    integrals = ("squeezes", "swells", "gpu_occupancy", "sm_activity_est", "sharing_utilization")
    assert ({k: repr(v) for k, v in m10.items() if k not in integrals}
            == {k: repr(v) for k, v in m5.items() if k not in integrals})
    for k in integrals[2:]:
        assert m5[k] == pytest.approx(m10[k], rel=1e-12)
    assert ten.sharing_benefits == five.sharing_benefits


# ---------------------------------------------------------------- mixed GPU types, LISS
def _mixed(build, liss):
    eng = build([("fast", 1, 1), ("slow", 1, 1)], [{"model": "b", "num_gpus": 2, "iterations": 100}],
                sample_stealing=liss)
    run_to_end(eng, place_fifo)
    assert sorted(eng.gpu_type[eng.job_table()["gpus"][0]].tolist()) == [0, 1]  # one of each type
    return jct(eng)[0]


def test_mixed_types_paced_by_slowest_and_liss_balanced(build):
    comm = 0.003 * (1 + 1) * 2 + 2 * 1 / 2 * 0.2 / 12.5
    delta = 1.5
    paced_tc = (0.04 + 0.02 * 16) / 1.0  # the slow worker
    # LISS: b_fast = 25, b_slow = 7 (sum 32) finish together: (0.04 + 0.5)/3 = (0.04 + 0.14)/1 = 0.18
    liss_tc = 0.18
    assert (0.04 + 0.02 * 25) / 3.0 == pytest.approx(liss_tc) == pytest.approx((0.04 + 0.02 * 7) / 1.0)
    paced, liss = _mixed(build, False), _mixed(build, True)
    assert paced == pytest.approx(100 * (paced_tc**delta + comm**delta) ** (1 / delta), rel=REL)
    assert liss == pytest.approx(100 * (liss_tc**delta + comm**delta) ** (1 / delta), rel=REL)
    assert liss < paced


def test_liss_never_below_slowest_workers_fixed_cost(build):
    """Fixed bug: with a slow worker slowed further by interference (v_slow = 1/8) the balanced batch of that
    worker would be negative; the iteration cannot be shorter than that worker's fixed alpha / v_slow."""
    eng = build([("fast", 1, 1), ("slow", 1, 1)],
                [{"model": "a", "iterations": 1e6}, {"model": "b", "num_gpus": 2, "iterations": 100}],
                PairXi({("b", "a"): 8.0}), sample_stealing=True)
    eng.advance()
    eng.apply(Place(0, gpus=(1,)))
    eng.apply(Colocate(1, 0, gpus=(0, 1)))
    unclamped = (2 * 0.04 + 2 * 0.02 * 16) / (3.0 + 1 / 8)
    assert unclamped < 0.04 * 8  # the naive LISS formula undercuts the slow worker's fixed cost
    comm = 0.003 * 2 * 2 + 0.2 / 12.5
    # interference scope "iteration": the all-reduce is slowed by the largest worker xi, 8, too
    assert 1 / eng.rate[1] == pytest.approx(((0.04 * 8) ** 1.5 + (8 * comm) ** 1.5) ** (1 / 1.5), rel=REL)


# ---------------------------------------------------------------- forking (HadarE)
def test_fork_finishes_sooner_paying_consolidation_every_round(build):
    """625 iterations at 0.16 s: 100 s alone. Forked at 0 onto the second node (rate x2 = 12.5 it/s), rounds
    of 20 s each costing 2 s: [0,20) 250 it, pause, [22,40) 225 it, pause, [42,54) 150 it -> JCT 54."""
    rows = [{"iterations": 625}]
    eng = build([("fast", 2, 1)], rows, round_s=20.0, consolidation_s=2.0)

    def policy(e, reasons):
        if e.status[0] == 1:
            e.apply(Place(0))
            assert e.plan_fork(0) is not None
            e.apply(Fork(0))

    run_to_end(eng, policy)
    assert jct(eng)[0] == pytest.approx(54.0, rel=REL)
    assert eng.max_copies[0] == 2 and eng.counts["forks"] == 1
    forks = [r for r in eng.log if r["kind"] == "fork"]
    assert len(forks) == 1 and forks[0]["gpus"] == [1]
    assert [r["t"] for r in eng.log if r["kind"] == "round"][:2] == pytest.approx([20.0, 40.0])
    alone = run_to_end(build([("fast", 2, 1)], rows, round_s=20.0, consolidation_s=2.0), place_fifo)
    assert jct(alone)[0] == pytest.approx(100.0, rel=REL)  # no fork, no consolidation


def test_fork_is_all_or_nothing(build):
    """Fixed bug: Fork(copies=3) with room for one copy used to occupy that copy and then raise, leaving the
    GPU held without a log record, a rate update or a forked mark."""
    eng = build([("fast", 2, 1)], [{"iterations": 625}], round_s=20.0)
    eng.advance()
    eng.apply(Place(0))
    before = (eng.slot_job.copy(), eng.free_nt.copy(), eng.busy_gpus, int(eng.held[0]), eng.solo_rate[0])
    with pytest.raises(ActionError, match="no free node"):
        eng.apply(Fork(0, copies=3))
    after = (eng.slot_job, eng.free_nt, eng.busy_gpus, int(eng.held[0]), eng.solo_rate[0])
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])
    assert before[2:] == after[2:]
    assert len(eng.copies[0]) == 1 and eng.rate[0] == pytest.approx(1 / 0.16)
    eng.apply(Fork(0, copies=1))  # the one copy that fits still can be made
    assert eng.rate[0] == pytest.approx(2 / 0.16)


def test_fork_planner_respects_memory(build):
    """A copy of ``big`` (10 GB at s = 2 on fast) cannot go to an 8 GB slow GPU: plan_fork says no and Fork
    refuses without changing anything."""
    eng = build([("fast", 1, 1), ("slow", 1, 1)], [{"model": "big"}], round_s=10.0)
    eng.advance()
    eng.apply(Place(0))
    assert eng.accum[0] == 2 and eng.plan_fork(0) is None
    with pytest.raises(ActionError, match="job 0"):
        eng.apply(Fork(0))
    with pytest.raises(ActionError, match="memory"):
        eng.apply(Fork(0, gpus=(1,)))
    assert eng.slot_job[1, 0] == -1


# ---------------------------------------------------------------- preemption
@pytest.mark.parametrize("gap_ticks", [0, 1])
def test_preempt_pays_restart_overhead(build, gap_ticks):
    """100 s of work; preempted at 30 s, restarted at 30 s (or 60 s), 5 s restart: 70 s of work left."""
    eng = build([("fast", 1, 1)], [{"iterations": 625}], tick_s=30.0, restart_s=5.0)
    state = {"preempted_at": None}

    def policy(e, reasons):
        if e.now == 0:
            e.apply(Place(0))
        elif e.now == 30.0 and state["preempted_at"] is None:
            e.apply(Preempt(0))
            state["preempted_at"] = e.now
            assert e.remaining_now()[0] == pytest.approx(625 - 30 / 0.16)
        if e.status[0] == 1 and e.now >= 30.0 + 30.0 * gap_ticks:
            e.apply(Place(0))

    run_to_end(eng, policy)
    restart = 30.0 + 30.0 * gap_ticks
    assert jct(eng)[0] == pytest.approx(restart + 5.0 + 70.0, rel=REL)
    assert eng.queue_s[0] == pytest.approx(30.0 * gap_ticks)
    assert eng.n_preempt[0] == 1 and eng.counts["preemptions"] == 1
    kinds = [r["kind"] for r in eng.log if r["job"] == 0]
    assert kinds == ["arrive", "start", "preempt", "start", "finish"]


def test_restart_overhead_only_after_preemption(build):
    eng = run_to_end(build([("fast", 1, 1)], [{"iterations": 625}], restart_s=50.0), place_fifo)
    assert jct(eng)[0] == pytest.approx(100.0, rel=REL)


def test_fork_updates_share_range(build):
    """Fixed bug: share_lo / share_hi (read by the env's observation and squeeze/swell masks) kept the
    squeezed range after a fork added a copy at 100%: a job squeezed to the minimum then forked looked
    unsqueezable."""
    eng = build([("fast", 2, 1)], [{"iterations": 625}], round_s=20.0)
    eng.advance()
    eng.apply(Place(0))
    for _ in range(9):
        eng.apply(Squeeze(0))
    assert (eng.share_lo[0], eng.share_hi[0]) == (1, 1)
    eng.apply(Fork(0))
    assert (eng.share_lo[0], eng.share_hi[0]) == (1, 10)
    eng.apply(Squeeze(0))  # the new copy can still be squeezed
    assert (eng.share_lo[0], eng.share_hi[0]) == (1, 9)


@pytest.mark.parametrize(("iterations", "expected"), [(470, 39.6), (475, 40.0), (480, 42.4)])
def test_fork_done_exactly_at_round_boundary_pays_no_consolidation(build, iterations, expected):
    """Fixed bug: at equal times the round event was handled before the completion, so a forked job finishing
    exactly at a boundary (475 it: 250 by 20 s, 225 more by 40 s) paid 2 s more: JCT jumped from 40 to 42."""
    eng = build([("fast", 2, 1)], [{"iterations": iterations}], round_s=20.0, consolidation_s=2.0)
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Fork(0))
    run_to_end(eng)
    assert eng.finish_t[0] == pytest.approx(expected, rel=REL)
