"""Gavel's allocation LPs and round mechanics on small cases checked by hand."""

from __future__ import annotations

import numpy as np
import pytest
from gpucluster_env.baselines.parts import gavel_lp as G
from gpucluster_env.baselines.parts import gavel_rounds as R


def _feasible(x: np.ndarray, gpus, cap, y=None, pairs=None, pair_gpus=None) -> None:
    x = np.asarray(x)
    assert (x >= -1e-9).all()
    per_job = x.sum(axis=1)
    used = (np.asarray(gpus, float)[:, None] * x).sum(axis=0)
    if y is not None and len(y):
        for p, (a, b) in enumerate(pairs):
            per_job[a] += y[p].sum()
            per_job[b] += y[p].sum()
        used += (np.asarray(pair_gpus, float)[:, None] * y).sum(axis=0)
    assert (per_job <= 1 + 1e-7).all()
    assert (used <= np.asarray(cap, float) + 1e-7).all()


def test_max_min_one_type_splits_evenly() -> None:
    # two identical jobs on one GPU: equal share p = 1, each gets half: z = 0.5
    r = G.max_min_fairness(np.ones((2, 1)), [1, 1], [1])
    assert r.z == pytest.approx(0.5)
    np.testing.assert_allclose(r.x.ravel(), [0.5, 0.5], atol=1e-9)


def test_max_min_counts_gang_size() -> None:
    # 2 GPUs, jobs asking 1, 1, 2 GPUs, throughput 1: demands d = p w / g = 1, 1, 0.5;
    # x1 >= z, x2 >= z, x3 >= z/2 and x1 + x2 + 2 x3 <= 2  ->  3z <= 2: z = 2/3, x = (2/3, 2/3, 1/3)
    r = G.max_min_fairness(np.ones((3, 1)), [1, 1, 2], [2])
    assert r.z == pytest.approx(2 / 3)
    np.testing.assert_allclose(r.x.ravel(), [2 / 3, 2 / 3, 1 / 3], atol=1e-7)
    _feasible(r.x, [1, 1, 2], [2])


def test_max_min_heterogeneous_optimum() -> None:
    # fast + slow GPU. A: (4, 1), B: (2, 1); equal shares p_A = 2.5, p_B = 1.5.
    # z > 1 would need 4a + b > 2.5 with a + b <= 1, so a > 0.5, leaving B < 0.5 of the fast GPU and
    # 2c + e <= c + 1 < 1.5: impossible; z = 1 (a = 0.5, b = 0.5, c = 0.5, e = 0.5 reaches it)
    t = np.array([[4.0, 1.0], [2.0, 1.0]])
    r = G.max_min_fairness(t, [1, 1], [1, 1])
    assert r.z == pytest.approx(1.0)
    _feasible(r.x, [1, 1], [1, 1])
    thr = (t * r.x).sum(axis=1)
    assert thr[0] >= 2.5 - 1e-7 and thr[1] >= 1.5 - 1e-7


def test_max_min_agnostic_ignores_speed() -> None:
    # heterogeneity-agnostic LAS sees throughput 1 on both types: two jobs, two GPUs -> z = 1 (one GPU each)
    r = G.max_min_fairness([[4.0, 1.0], [2.0, 1.0]], [1, 1], [1, 1], heterogeneity_aware=False)
    assert r.z == pytest.approx(1.0)


def test_min_makespan_one_type() -> None:
    # one GPU; job 1: 100 steps at 2/s (50 s of GPU), job 2: 100 steps at 1/s (100 s): makespan 150 s,
    # fractions 50/150 and 100/150
    m, x = G.min_makespan([[2.0], [1.0]], [1, 1], [1], [100, 100])
    assert m == pytest.approx(150.0)
    np.testing.assert_allclose(x.ravel(), [1 / 3, 2 / 3], atol=1e-7)


def test_min_makespan_two_types() -> None:
    # A: 400 steps at (4, 1)/s, B: 200 steps at (2, 2)/s; A alone on the fast GPU and B on the slow one both
    # take 100 s, and A can never beat 400 / 4 = 100 s: makespan 100
    m, x = G.min_makespan([[4.0, 1.0], [2.0, 2.0]], [1, 1], [1, 1], [400, 200])
    assert m == pytest.approx(100.0)
    np.testing.assert_allclose(x, [[1, 0], [0, 1]], atol=1e-7)


def test_min_makespan_unrunnable_job_is_inf() -> None:
    m, _ = G.min_makespan([[1.0], [0.0]], [1, 1], [1], [10, 10])
    assert m == float("inf")


def test_finish_time_fairness_golden_ratio() -> None:
    # one GPU, two jobs with 10 steps at 1/s; isolated share 1/2 -> reference time 20 s each.
    # Equal start: x = 1/2, rho = (10 / 0.5) / 20 = 1.
    rho, x = G.finish_time_fairness(np.ones((2, 1)), [1, 1], [1], [10, 10], [0, 0], [0, 0])
    assert rho == pytest.approx(1.0, rel=1e-3)
    np.testing.assert_allclose(x.ravel(), [0.5, 0.5], atol=1e-3)
    # job A already waited 10 s: (10 + 10/x) / 20 = (10 / (1 - x)) / 20  ->  1 - x = x^2, x = (sqrt 5 - 1)/2
    rho, x = G.finish_time_fairness(np.ones((2, 1)), [1, 1], [1], [10, 10], [10, 0], [0, 0])
    phi = (np.sqrt(5) - 1) / 2
    assert x[0, 0] == pytest.approx(phi, abs=1e-3)
    assert rho == pytest.approx(10 / (1 - phi) / 20, rel=1e-3)


def test_packed_pair_beats_time_sharing() -> None:
    # one GPU, two jobs at 1/s alone and 0.8/s each when packed: time sharing gives z = 0.5, the pair
    # column run all the time gives each 0.8: z = 0.8
    cp = np.zeros((2, 2, 1))
    cp[0, 1] = cp[1, 0] = 0.8
    r = G.packed_max_min_fairness(np.ones((2, 1)), [1, 1], [1], [0, 1], cp)
    assert r.z == pytest.approx(0.8)
    assert r.pairs.tolist() == [[0, 1]] and r.y[0, 0] == pytest.approx(1.0)
    # the same two jobs as one class (a pair of class 0 with itself): one job pair, the same optimum
    cp = np.full((1, 1, 1), 0.8)
    r = G.packed_max_min_fairness(np.ones((2, 1)), [1, 1], [1], [0, 0], cp)
    assert r.z == pytest.approx(0.8)
    assert r.pairs.tolist() == [[0, 0]] and r.y[0, 0] == pytest.approx(1.0)


def test_packed_pairs_in_a_class_of_four() -> None:
    # four identical 1-GPU jobs, two GPUs, packed at 0.6 each: all time in pairs, 2 GPUs hold 2 pairs at once,
    # so Y (total pair time over the 6 job pairs) <= 2 and each job gets 2Y/4 of its time paired: thr =
    # 0.6 * 2Y/4 <= 0.6 (its time budget 1). Time sharing alone: 2 GPUs / 4 jobs = 0.5. z = 0.6 (p = 1)
    r = G.packed_max_min_fairness(np.ones((4, 1)), [1] * 4, [2], [0] * 4, np.full((1, 1, 1), 0.6))
    assert r.z == pytest.approx(0.6)
    assert r.y[0, 0] == pytest.approx(2.0)


def test_packed_bad_pair_is_not_used() -> None:
    # packed throughputs 0.3 each (worse than sharing time): the optimum stays z = 0.5 from single columns
    r = G.packed_max_min_fairness(np.ones((2, 1)), [1, 1], [1], [0, 0], np.full((1, 1, 1), 0.3))
    assert r.z == pytest.approx(0.5)


def test_packed_never_pairs_different_gang_sizes() -> None:
    r = G.packed_max_min_fairness(np.ones((2, 1)), [1, 2], [2], [0, 0], np.full((1, 1, 1), 0.9))
    assert len(r.pairs) == 0


def test_packed_min_makespan_by_hand() -> None:
    # one GPU; job 0 has 100 steps left, job 1 has 50, both 1 step/s alone, 0.6 step/s each when packed. Time
    # sharing alone finishes both in 150 s; the pair all the time, job 0 in 100 / 0.6 = 166.7 s. The optimum
    # mixes job 0 alone (x0), the pair (y) and job 1 alone (x1), x0 + x1 + y <= 1, maximizing z = 1 / makespan
    # with x0 + 0.6 y >= 100 z and x1 + 0.6 y >= 50 z: x1 = 0, x0 = 1 - y, 1 - 0.4 y = 100 z, 0.6 y = 50 z,
    # so y = 5/8 and z = 0.0075: 133.3 s
    pt = np.zeros((2, 2, 1))
    pt[0, 1] = pt[1, 0] = 0.6
    mk, r = G.packed_min_makespan(np.ones((2, 1)), [1, 1], [1], [100.0, 50.0], pt)
    assert mk == pytest.approx(400.0 / 3.0, rel=1e-6)
    assert sorted(r.pairs[0].tolist()) == [0, 1] and r.y[0, 0] == pytest.approx(5.0 / 8.0, rel=1e-6)
    _feasible(r.x, [1, 1], [1], r.y, r.pairs, [1])
    # without pairs it is the plain policy (150 s); pairs worse than time sharing are not used
    assert G.packed_min_makespan(np.ones((2, 1)), [1, 1], [1], [100.0, 50.0], np.zeros((2, 2, 1)))[0] == (
        pytest.approx(G.min_makespan(np.ones((2, 1)), [1, 1], [1], [100.0, 50.0])[0]))
    assert G.packed_min_makespan(np.ones((2, 1)), [1, 1], [1], [100.0, 50.0], np.full((2, 2, 1), 0.3))[0] == (
        pytest.approx(150.0))
    with pytest.raises(ValueError, match="pair_throughputs"):
        G.packed_min_makespan(np.ones((2, 1)), [1, 1], [1], [100.0, 50.0], np.zeros((1, 1, 1)))


def test_lp_scales_to_2048_jobs_sparse() -> None:
    rng = np.random.default_rng(0)
    n = 2048
    t = rng.uniform(0.5, 4.0, (n, 3))
    g = rng.choice([1, 1, 2, 4], n)
    cap = np.array([n // 4] * 3)
    r = G.max_min_fairness(t, g, cap)
    _feasible(r.x, g, cap)
    assert r.z > 0


def test_bad_input_names_argument() -> None:
    with pytest.raises(ValueError, match="capacity"):
        G.max_min_fairness(np.ones((2, 2)), [1, 1], [1])
    with pytest.raises(ValueError, match="gpus"):
        G.max_min_fairness(np.ones((2, 1)), [1, 0], [1])
    with pytest.raises(ValueError, match="class_pair_throughputs"):
        G.packed_max_min_fairness(np.ones((2, 1)), [1, 1], [2], [0, 1], np.ones((1, 1, 1)))


# ----------------------------------------------------------------------------------------------- rounds
def test_priorities_and_selection() -> None:
    alloc = np.array([[0.5, 0.0], [0.25, 0.5], [0.25, 0.5]])
    # job 0 got 30 s of type 0's 60 s (fraction 0.5): priority 0.5/0.5 = 1; job 1 got 20 s (1/3): 0.75;
    # job 2 got 10 s (1/6): 1.5. Type 1: nobody ran yet -> alloc * 1e9, job 0's allocation 0 -> 0.
    jt = np.array([[30.0, 0.0], [20.0, 0.0], [10.0, 0.0]])
    pr = R.round_priorities(alloc, jt, np.ones((3, 2), bool))
    np.testing.assert_allclose(pr[:, 0], [1.0, 0.75, 1.5])
    np.testing.assert_allclose(pr[:, 1], [0.0, 0.5e9, 0.5e9])
    # one GPU of each type, 1-GPU jobs: type 0 goes to job 2 (1.5), type 1 to job 1 (tie with 2 broken by
    # deficit 0 = 0, allocation equal, lower index first; job 2 is already granted anyway)
    grants = R.select_round(pr, np.zeros((3, 2)), alloc, [1, 1, 1], [1, 1], np.ones((3, 2), bool))
    assert grants == [(2, 0), (1, 1)]


def test_selection_skips_gangs_that_do_not_fit() -> None:
    pr = np.array([[3.0], [2.0], [1.0]])
    grants = R.select_round(pr, np.zeros((3, 1)), np.ones((3, 1)), [1, 4, 2], [3], np.ones((3, 1), bool))
    assert grants == [(0, 0), (2, 0)]  # job 1 needs 4 > 2 left


def test_reset_carries_deficit() -> None:
    # 360 s rounds; since the last reset (720 s) job 0 should have had 0.5 * 720 = 360 s, it got 540 - 180
    # = 360 s: deficit unchanged; job 1 should have had 360 s and got 180 - 180 = 0: deficit +360
    jt, d = R.reset_time_received(np.array([[0.5], [0.5]]), np.array([[540.0], [180.0]]), np.zeros((2, 1)),
                                  720.0, 360.0)
    np.testing.assert_allclose(d.ravel(), [0.0, 360.0])
    np.testing.assert_allclose(jt.ravel(), [180.0, 180.0])


def test_recompute_interval() -> None:
    assert R.needs_recompute(0.0, None, 1920.0, True)
    assert not R.needs_recompute(1000.0, 0.0, 1920.0, True)
    assert R.needs_recompute(1920.0, 0.0, 1920.0, True)
    assert not R.needs_recompute(5000.0, 0.0, 1920.0, False)


def test_place_fewest_nodes() -> None:
    assert R.place_fewest_nodes([4, 2, 3], 2) == [(1, 2)]  # best fit: the fullest node that fits
    assert R.place_fewest_nodes([1, 2, 3], 5) == [(2, 3), (1, 2)]
    assert R.place_fewest_nodes([1, 1], 3) is None


def test_order_moves_frees_targets_first() -> None:
    # job 1 moves onto job 2's GPU 5, job 2 moves to free GPU 7: job 2 first, then job 1
    order, queue = R.order_moves({1: (5,), 2: (7,)}, {1: (3,), 2: (5,)})
    assert order == [2, 1] and queue == []
    # a swap (1 -> 2's GPU, 2 -> 1's GPU) is a cycle: job 1 goes through the queue, then job 2 moves
    order, queue = R.order_moves({1: (5,), 2: (3,)}, {1: (3,), 2: (5,)})
    assert order == [2] and queue == [1]
    # moving onto part of its own GPUs is fine
    order, queue = R.order_moves({1: (3, 4)}, {1: (2, 3)})
    assert order == [1] and queue == []


# ------------------------------------------------------------------------ packed LP by partner class
def _partner_problem(seed: int) -> tuple[np.ndarray, ...]:
    """Jobs of a few classes with their own throughputs (each job distinct), pairs by class: (throughputs, GPUs,
    capacity, steps left, class of each job, partner throughputs n x C x types, the same per job pair n x n x types)."""
    rng = np.random.default_rng(seed)
    n, nk, nc = int(rng.integers(2, 30)), 3, int(rng.integers(1, 5))
    kind = rng.integers(0, nc, n)
    g = rng.choice([1, 2], nc)[kind]
    t = (rng.uniform(1, 5, (nc, nk)) * (rng.random((nc, nk)) > 0.15))[kind] * rng.uniform(0.8, 1.2, (n, nk))
    colo = rng.uniform(0.3, 0.9, (nc, nc, nk)) * (rng.random((nc, nc, nk)) > 0.2)
    partner = t[:, None, :] * colo[kind]
    return t, g, rng.integers(1, 6, nk), rng.uniform(10, 1000, n), kind, partner, partner[:, kind, :]


@pytest.mark.parametrize("seed", range(12))
def test_partner_lp_same_optimum_as_pair_lp_and_its_pairs_are_feasible(seed: int) -> None:
    # the partner-class LP (jobs x classes columns) against Gavel's pair LP (one column per job pair): the same
    # makespan; its job pairs, rebuilt from the class times, respect every job's time, every type's GPUs,
    # equal GPU counts and pairing only where both members gain, and reach the optimum's rates
    t, g, cap, rem, kind, partner, per_pair = _partner_problem(seed)
    mk_pairs, _ = G.packed_min_makespan(t, g, cap, rem, per_pair)
    mk, r = G.packed_min_makespan(t, g, cap, rem, partner, kind)
    assert mk == pytest.approx(mk_pairs, rel=1e-6)
    assert all(a < b and g[a] == g[b] for a, b in r.pairs)
    assert ((r.y <= 1e-9) | ((per_pair[r.pairs[:, 0], r.pairs[:, 1]] > 0)
                             & (per_pair[r.pairs[:, 1], r.pairs[:, 0]] > 0))).all()
    _feasible(r.x, g, cap, r.y, r.pairs, g[r.pairs[:, 0]])
    thr = (t * r.x).sum(axis=1)
    for (a, b), y in zip(r.pairs, r.y, strict=True):
        thr[a] += (per_pair[a, b] * y).sum()
        thr[b] += (per_pair[b, a] * y).sum()
    if np.isfinite(mk):
        assert (thr >= rem / mk * (1 - 1e-5)).all()


def test_partner_lp_pairs_within_one_class() -> None:
    # three alike jobs on one GPU that gain from pairing (0.8 each beside another): every job needs its steps at
    # the same rate, so the optimum is all time in pairs, 2/3 of each job's time (x = 0): z = 1.6 / 3 per step
    # left; the pairs are built within the class, no job paired with itself
    from gpucluster_env.baselines.parts.gavel_partner_lp import packed_rate

    r = packed_rate(np.ones((3, 1)), [1, 1, 1], [1], [1.0, 1.0, 1.0], [0, 0, 0], np.full((3, 1, 1), 0.8))
    assert r.z == pytest.approx(0.8 * 2 / 3, rel=1e-6)
    assert all(a != b for a, b in r.pairs)
    per_job = np.zeros(3)
    for (a, b), y in zip(r.pairs, r.y, strict=True):
        per_job[[a, b]] += y.sum()
    np.testing.assert_allclose(per_job + r.x.sum(axis=1), [2 / 3] * 3, atol=1e-7)
    with pytest.raises(ValueError, match="same GPU count"):
        packed_rate(np.ones((2, 1)), [1, 2], [2], [1.0, 1.0], [0, 0], np.full((2, 1, 1), 0.8))


def test_ftf_settles_bisection_steps_from_solved_lps() -> None:
    # an LP solved at z_s for demands d_s settles demands d when z_s min(d_s / d) clears 1 (feasible) or
    # z_s max(d_s / d) falls short of it (infeasible), with a margin; anything closer is left to a solve
    d_s = np.array([1.0, 2.0])
    assert G._implied_feasible([(2.0, d_s)], np.array([1.5, 3.0])) is True
    assert G._implied_feasible([(0.5, d_s)], np.array([1.0, 2.0])) is False
    assert G._implied_feasible([(1.0, d_s)], np.array([1.0, 2.0])) is None


def test_classes_match_numpy_unique_rows() -> None:
    # the LP's job classes (first job, class of each job, sizes) are np.unique's over the rows, bit for bit,
    # ties and signed zeros included: the class order is the LP's column order
    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        t = rng.choice([0.0, -0.0, 1.5, 2.25, 1e-3], size=(n, 3))
        g, d, jc = rng.choice([1.0, 2.0, 4.0], n), rng.choice([0.5, 1 / 3], n), rng.integers(0, 3, n)
        key = np.column_stack([t, g, d, jc.astype(float)])
        _, first, inv, cnt = np.unique(key, axis=0, return_index=True, return_inverse=True, return_counts=True)
        got = G._classes(t, g, d, jc)
        for want, have in zip((first, inv.reshape(-1), cnt.astype(float)), got, strict=True):
            assert want.dtype == have.dtype and want.tobytes() == have.tobytes()


def test_place_fewest_nodes_matches_array_rule() -> None:
    # the int version against the rule it replaces: best fit (lowest index among the fullest that fit), else
    # the nodes with most free GPUs first (stable)
    rng = np.random.default_rng(6)
    for _ in range(500):
        free = rng.integers(0, 5, size=int(rng.integers(1, 12)))
        need = int(rng.integers(1, 12))
        fits = np.flatnonzero(free >= need)
        if free.sum() < need:
            want = None
        elif len(fits):
            want = [(int(fits[np.argmin(free[fits])]), need)]
        else:
            want, left = [], need
            for h in np.argsort(-free, kind="stable").tolist():
                if left and free[h]:
                    want.append((h, int(min(free[h], left))))
                    left -= int(min(free[h], left))
        assert R.place_fewest_nodes(free, need) == want


def test_single_columns_match_the_general_matrix() -> None:
    # the LP matrix without pairs, built in place, holds the arrays the general (pair) builder gives with none
    rng = np.random.default_rng(7)
    for _ in range(200):
        n, nk = int(rng.integers(1, 30)), int(rng.integers(1, 4))
        t = rng.choice([0.0, 0.5, 1.25, 3.0], size=(n, nk))
        scale = rng.choice([0.0, 0.3, 1.0], size=n)
        m, g = rng.choice([1.0, 2.0, 5.0], n), rng.choice([1.0, 2.0, 4.0], n)
        srv = np.flatnonzero(scale > 0)
        want = G._pair_columns(t, g, m, np.zeros((0, 2), dtype=np.int64), np.zeros((0, 2, nk)), np.zeros((0, 2)),
                               scale, srv)
        got = G._single_columns(t, scale, m * g, srv)
        assert got.shape == want.shape
        for a, b in zip(got[:3], want[:3], strict=True):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
