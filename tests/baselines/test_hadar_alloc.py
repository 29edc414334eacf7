"""Hadar's price function, FIND_ALLOC and DP job selection, checked by hand on the paper's motivating example.

The example (hadar-hadare §II-A): 2 V100, 3 P100 and 1 K80 GPUs (one server per type here); J1 asks 3 GPUs for
80 epochs, J2 2 GPUs for 30, J3 2 GPUs for 50. The paper's speedup matrix did not survive the text extraction,
so the throughputs (epochs per round, whole gang) are ours: J1 (4, 3, 1), J2 (3, 2, 1), J3 (2, 2, 1) on
(V100, P100, K80); rounds of 1 time unit.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from gpucluster_env.baselines.parts.hadar_alloc import (
    HadarJob,
    Prices,
    find_alloc,
    make_prices,
    select_jobs,
)
from gpucluster_env.baselines.parts.hadar_find import spread
from gpucluster_env.baselines.parts.hadar_free import free_sets

CAP = np.array([[2, 0, 0], [0, 3, 0], [0, 0, 1]])
JOBS = [HadarJob(3, 80, (4, 3, 1), 0.0, 80), HadarJob(2, 30, (3, 2, 1), 0.0, 30), HadarJob(2, 50, (2, 2, 1), 0.0, 50)]


def test_price_function_by_hand() -> None:
    # Eq. (5) with U_min = 0.01, U_max = 0.16, eta = 1, C = 4: p(0) = 0.01/4 = 0.0025,
    # p(2) = 0.0025 * (4 * 16) ** 0.5 = 0.02, p(4) = 0.0025 * 64 = 0.16 = U_max
    p = Prices(np.array([0.01]), np.array([0.16]), 1.0, np.array([[4.0]]))
    assert p.price(0, 0, 0) == pytest.approx(0.0025)
    assert p.price(0, 0, 2) == pytest.approx(0.02)
    assert p.price(0, 0, 4) == pytest.approx(0.16)
    # taking 2 GPUs on an empty server costs p(0) + p(1) = 0.0025 + 0.0025 * 64 ** 0.25
    assert p.cost(np.zeros((1, 1)), [(0, 0, 2)]) == pytest.approx(0.0025 + 0.0025 * 64 ** 0.25)


def test_price_bounds_on_the_example() -> None:
    p = make_prices(JOBS, CAP, 0.0, 1.0)
    # U_max per type: the best utility per GPU-round alone on the type, utility = epochs / finish time.
    # V100: J2 finishes 30/3 = 10 rounds, utility 3, per GPU-round 3 / (2 * 10) = 0.15 (J1: 4/60, J3: 2/50)
    # P100: J2 15 rounds, utility 2, 2 / 30 = 1/15; K80: J2 30 rounds, 1 / 60
    np.testing.assert_allclose(p.u_max, [0.15, 1 / 15, 1 / 60])
    # U_min: finishing at the horizon T = work on the slowest GPUs / 6 GPUs + longest run there
    # = (3*80 + 2*30 + 2*50) / 6 + 80 = 146.67; J2 is least: (30 / T) / (2 T)
    horizon = 400 / 6 + 80
    np.testing.assert_allclose(p.u_min, [30 / horizon / (2 * horizon)] * 3)


def test_find_alloc_mixes_gpu_types() -> None:
    # task-level heterogeneity: J1's 3 workers cannot fit on one server of 2 V100; its fastest gang is
    # 2 V100 + 1 P100 running at the P100's pace (3 epochs/round), not 3 P100 (also 3) on one server,
    # nor anything with the K80
    p = make_prices(JOBS, CAP, 0.0, 1.0)
    ch = find_alloc(JOBS[0], CAP, np.zeros_like(CAP), p, 0.0)
    assert ch is not None and ch.tput == 3
    assert ch.payoff > 0
    # a job asking more GPUs than are free gets nothing
    assert find_alloc(HadarJob(7, 10, (1, 1, 1), 0.0, 10), CAP, np.zeros_like(CAP), p, 0.0) is None


def test_find_alloc_consolidated_vs_spread() -> None:
    # two servers of 2 V100 and one of 4 K80; a 3-worker job at 4/round on V100, 1 on K80: spread over the
    # two V100 servers (4/round) pays more than one K80 server (1/round) unless communication is very dear
    cap = np.array([[2, 0], [2, 0], [0, 4]])
    job = HadarJob(3, 40, (4.0, 1.0), 0.0, 40)
    p = make_prices([job], cap, 0.0, 1.0)
    spread = find_alloc(job, cap, np.zeros_like(cap), p, 0.0)
    assert spread is not None and spread.tput == 4.0 and len({h for h, _, _ in spread.take}) == 2
    cons = find_alloc(job, cap, np.zeros_like(cap), p, 0.0, comm_weight=1e9)
    assert cons is not None and cons.take == ((2, 1, 3),)


def test_dp_picks_the_best_subset_on_the_example() -> None:
    p = make_prices(JOBS, CAP, 0.0, 1.0)
    picked = select_jobs(JOBS, CAP, p, 0.0)
    total = sum(ch.payoff for _, ch in picked)
    # brute force: every subset, allocations made in queue order by FIND_ALLOC on the shrinking state
    best = 0.0
    for mask in itertools.product([0, 1], repeat=3):
        fr, val, ok = CAP.copy(), 0.0, True
        for i in range(3):
            if mask[i]:
                ch = find_alloc(JOBS[i], fr, CAP - fr, p, 0.0)
                if ch is None or ch.payoff <= 0:
                    ok = False
                    break
                val += ch.payoff
                for h, k, c in ch.take:
                    fr[h, k] -= c
        if ok:
            best = max(best, val)
    assert total == pytest.approx(best)
    # the optimum runs J2 on both V100 and J3 on two P100s: J1 (3 GPUs) no longer fits in what is left
    assert [(i, ch.take) for i, ch in picked] == [(1, ((0, 0, 2),)), (2, ((1, 1, 2),))]
    # never more GPUs than exist
    used = np.zeros_like(CAP)
    for _, ch in picked:
        for h, k, c in ch.take:
            used[h, k] += c
    assert (used <= CAP).all()


def test_greedy_after_the_window() -> None:
    p = make_prices(JOBS, CAP, 0.0, 1.0)
    # window 0: pure greedy in queue order -> J1 first (2 V100 + 1 P100), then J2 on 2 P100
    picked = select_jobs(JOBS, CAP, p, 0.0, dp_window=0)
    assert [i for i, _ in picked] == [0, 1]


def test_payoff_by_hand() -> None:
    # J2 alone on the two V100s of an empty cluster: 30 epochs at 3/round -> done at 10, utility 30/10 = 3;
    # a round's cost is p(0) + p(1) on a 2-GPU server: lo + lo * (4 U_max / U_min) ** (1/2), lo = U_min / 4,
    # U_min = (30 / T) / (2 T) with T = 146.67, U_max(V100) = 0.15; Eq. (3a) charges the whole schedule, the
    # 10 rounds the job holds the GPUs
    p = make_prices(JOBS, CAP, 0.0, 1.0)
    ch = find_alloc(JOBS[1], CAP, np.zeros_like(CAP), p, 0.0)
    horizon = 400 / 6 + 80
    u_min = 30 / horizon / (2 * horizon)
    lo = u_min / 4
    per_round = lo + lo * (4 * 0.15 / u_min) ** 0.5
    assert ch is not None and ch.take == ((0, 0, 2),)
    assert ch.payoff == pytest.approx(3.0 - 10 * per_round)
    # with a 1-round restart overhead the job ends at 11 (utility 30/11) and holds the GPUs 11 rounds
    ch = find_alloc(JOBS[1], CAP, np.zeros_like(CAP), p, 0.0, overhead_s=1.0)
    assert ch is not None and ch.payoff == pytest.approx(30 / 11 - 11 * per_round)
    # the earlier reading (run_cost=False): this round's cost only
    ch = find_alloc(JOBS[1], CAP, np.zeros_like(CAP), make_prices(JOBS, CAP, 0.0, 1.0, run_cost=False), 0.0)
    assert ch is not None and ch.payoff == pytest.approx(3.0 - per_round)


def test_full_price_blocks_the_best_job() -> None:
    # §III-B: at U_max (a full server) the price is "high enough to block other jobs". U_max(V100) = 0.15 is
    # J2's utility per GPU-round there (3 / (2 GPUs x 10 rounds)), so charged U_max for each of its 20 GPU-rounds
    # J2 breaks even; charged for one round only it would still gain 3 - 2 x 0.15 = 2.7
    p = make_prices(JOBS, CAP, 0.0, 1.0)
    full = Prices(p.u_max, p.u_max, p.eta / 4, p.capacity, p.slot_s)  # lo = U_max / (4 eta) = U_max, r = 1
    ch = find_alloc(JOBS[1], CAP, np.zeros_like(CAP), full, 0.0)
    assert ch is not None and ch.take == ((0, 0, 2),) and ch.payoff == pytest.approx(0.0, abs=1e-9)
    one = Prices(p.u_max, p.u_max, p.eta / 4, p.capacity, 0.0)
    ch = find_alloc(JOBS[1], CAP, np.zeros_like(CAP), one, 0.0)
    assert ch is not None and ch.payoff == pytest.approx(3.0 - 2 * 0.15)


def test_spread_takes_the_fastest_types_from_the_most_free_servers() -> None:
    # the non-consolidated allocation, spelt out over every server: for each runnable type, fastest first, the
    # servers by free GPUs (most first, ties by index), each giving min(free, still needed); the allocator's
    # early stop (at the first server with none of that type) must give the same picks
    rng = np.random.default_rng(3)
    for _ in range(300):
        fr = rng.integers(0, 5, size=(int(rng.integers(1, 12)), 3)) * (rng.random((1, 3)) < 0.8)
        speed = rng.choice([0.0, 1.0, 2.0, 3.0], size=3)
        ok = speed > 0
        usable = int((fr * ok[None, :]).sum())
        if usable == 0:
            continue
        need = int(rng.integers(1, usable + 1))
        kord = np.argsort(-speed, kind="stable")
        want: list[tuple[int, int, int]] = []
        n = need
        for k in kord.tolist():
            for h in (np.argsort(-fr[:, k], kind="stable").tolist() if ok[k] and n else []):
                c = int(min(fr[h, k], n))
                if c:
                    want.append((h, k, c))
                    n -= c
        got = [tuple(r) for r in spread(free_sets(fr.astype(np.int64)), ok, kord, need).tolist()]
        assert got == want
        assert sum(c for _, _, c in got) == need
