"""Gavel's partner-class makespan LP over groups of alike jobs (``pair_lp="groups"``): the same optimum as the LP
over jobs and as Gavel's pair LP, every row of the LP over jobs kept, and the LP over jobs where groups fall short."""

from __future__ import annotations

import numpy as np
import pytest
from gpucluster_env.baselines.parts import gavel_lp as G
from gpucluster_env.baselines.parts import gavel_partner_lp as P


def _alike_problem(seed: int, cap_scale: float) -> tuple[np.ndarray, ...]:
    """Jobs of a few classes, alike within a class (the same throughputs: they group), steps left drawn per job:
    (throughputs, GPUs, capacity, steps left, class of each job, partner throughputs n x C x types, per job pair)."""
    rng = np.random.default_rng(seed)
    n, nk, nc = int(rng.integers(6, 40)), 2, int(rng.integers(1, 4))
    kind = rng.integers(0, nc, n)
    g = rng.choice([1, 2], nc)[kind]
    t = (rng.uniform(1, 5, (nc, nk)) * (rng.random((nc, nk)) > 0.15))[kind]
    colo = rng.uniform(0.3, 0.9, (nc, nc, nk)) * (rng.random((nc, nc, nk)) > 0.2)
    partner = t[:, None, :] * colo[kind]
    cap = np.maximum(1, np.round(rng.uniform(1, 6, nk) * cap_scale))
    return t, g, cap, rng.uniform(10, 1000, n), kind, partner, partner[:, kind, :]


def _rates(t, x, pairs, y, per_pair) -> np.ndarray:
    thr = (t * x).sum(axis=1)
    for (a, b), v in zip(pairs, y, strict=True):
        thr[a] += (per_pair[a, b] * v).sum()
        thr[b] += (per_pair[b, a] * v).sum()
    return thr


@pytest.mark.parametrize("seed", range(12))
def test_groups_same_optimum_and_rows_of_the_lp_over_jobs(seed: int) -> None:
    # plenty of GPUs: the slowest job's bound is the optimum, and the groups reach it; the job pairs built from
    # the groups' times keep every job's time, every type's GPUs, equal GPU counts and each job's rate
    t, g, cap, rem, kind, partner, per_pair = _alike_problem(seed, 20.0)
    mk_pairs, _ = G.packed_min_makespan(t, g, cap, rem, per_pair)
    mk_jobs, _ = G.packed_min_makespan(t, g, cap, rem, partner, kind)
    mk, r = G.packed_min_makespan(t, g, cap, rem, partner, kind, grouped=True)
    assert mk == pytest.approx(mk_pairs, rel=1e-6) and mk == pytest.approx(mk_jobs, rel=1e-6)
    assert P._grouped(t, np.asarray(g, float), cap, rem, kind, partner) is not None
    assert all(a < b and g[a] == g[b] for a, b in r.pairs)
    assert ((r.y <= 1e-9) | ((per_pair[r.pairs[:, 0], r.pairs[:, 1]] > 0)
                             & (per_pair[r.pairs[:, 1], r.pairs[:, 0]] > 0))).all()
    x_used = np.asarray(g, float)[:, None] * r.x
    assert (r.x >= -1e-9).all() and (x_used.sum(axis=0) <= cap + 1e-7).all()
    busy = r.x.sum(axis=1)
    for (a, b), v in zip(r.pairs, r.y, strict=True):
        busy[[a, b]] += v.sum()
    assert (busy <= 1 + 1e-7).all()
    assert (_rates(t, r.x, r.pairs, r.y, per_pair) >= rem / mk * (1 - 1e-6)).all()


@pytest.mark.parametrize("seed", range(6))
def test_groups_fall_back_to_the_lp_over_jobs_bit_for_bit(seed: int) -> None:
    # one GPU of each type for many jobs: the bound is out of reach, so the LP over jobs decides, the same bits
    t, g, cap, rem, kind, partner, _ = _alike_problem(seed, 0.0)
    g = np.ones(len(t))
    assert P._grouped(t, g, cap, rem, kind, partner) is None
    a = P.packed_rate(t, g, cap, rem, kind, partner, grouped=True)
    b = P.packed_rate(t, g, cap, rem, kind, partner)
    assert a.z == b.z and np.array_equal(a.x, b.x) and np.array_equal(a.pairs, b.pairs) and np.array_equal(a.y, b.y)


def test_groups_split_within_class_pairs_without_self_pairs() -> None:
    # four alike jobs that only gain in pairs within their class, on plenty of GPUs: each reaches its rate, and no
    # job is paired with itself
    rem = np.array([4.0, 3.0, 2.0, 1.0])
    pt = np.full((4, 1, 1), 0.8)
    r = P.packed_rate(np.ones((4, 1)), np.ones(4), [8], rem, np.zeros(4, dtype=int), pt, grouped=True)
    assert r.z == pytest.approx(1.0 / 4.0, rel=1e-6)
    assert all(a != b for a, b in r.pairs)
    thr = r.x.sum(axis=1)
    for (a, b), v in zip(r.pairs, r.y, strict=True):
        thr[[a, b]] += 0.8 * v.sum()
    assert (thr >= r.z * rem * (1 - 1e-6)).all()
