"""The partner-class makespan LP warm-started from the previous allocation's basis (``pair_lp="warm"``,
``baselines/parts/gavel_warm.py``): its first LP is the cold LP bit for bit, every later one reaches the cold LP's
optimum with every row of the LP kept, while jobs come and go between LPs."""

from __future__ import annotations

import numpy as np
import pytest
from gpucluster_env.baselines.parts import gavel_partner_lp as P
from gpucluster_env.baselines.parts import gavel_warm as W
from gpucluster_env.baselines.parts.gavel_highs import _core


def _jobs(rng: np.random.Generator, n: int, nc: int, nk: int, first: int) -> dict[str, np.ndarray]:
    """``n`` new jobs with ids from ``first``: class, throughputs per type, steps left."""
    kind = rng.integers(0, nc, n)
    t = rng.uniform(1, 5, (n, nk)) * (rng.random((n, nk)) > 0.1)
    return {"id": np.arange(first, first + n), "kind": kind, "t": t, "rem": rng.uniform(10, 1000, n)}


def _lp_inputs(jobs: dict[str, np.ndarray], colo: np.ndarray, gpus: np.ndarray) -> tuple[np.ndarray, ...]:
    """One LP's inputs over the jobs, its classes numbered in the order of their keys as the policy does: (t, g,
    steps left, class index, partner throughputs, class keys)."""
    keys = sorted(set(jobs["kind"].tolist()))
    cls = np.searchsorted(keys, jobs["kind"])
    pt = jobs["t"][:, None, :] * colo[jobs["kind"]][:, keys, :]
    return jobs["t"], gpus[jobs["kind"]], jobs["rem"], cls, pt, keys


def _kept_rows(r, t, g, cap, rem, pt, cls) -> None:  # noqa: ANN001 - a test helper
    """Every job's time at most 1, every type's GPUs within capacity, every job that can run at least its rate
    ``z d_j``."""
    busy = r.x.sum(axis=1)
    used = (g[:, None] * r.x).sum(axis=0)
    thr = (t * r.x).sum(axis=1)
    for (a, b), v in zip(r.pairs, r.y, strict=True):
        busy[[a, b]] += v.sum()
        used += g[a] * v
        thr[a] += (pt[a, cls[b]] * v).sum()
        thr[b] += (pt[b, cls[a]] * v).sum()
    assert (busy <= 1 + 1e-7).all() and (used <= cap + 1e-6).all()
    runs = np.maximum(t.max(axis=1), pt.max(axis=(1, 2))) > 0
    assert (thr[runs] >= r.z * rem[runs] * (1 - 1e-6) - 1e-9).all()


@pytest.mark.parametrize("seed", range(6))
def test_warm_start_same_optimum_as_cold_while_jobs_come_and_go(seed: int) -> None:
    rng = np.random.default_rng(seed)
    nc, nk = 4, 2
    colo = rng.uniform(0.3, 0.9, (nc, nc, nk)) * (rng.random((nc, nc, nk)) > 0.2)
    gpus = rng.choice([1.0, 2.0], nc)
    cap = np.array([6.0, 4.0])
    jobs = _jobs(rng, 30, nc, nk, 0)
    warm = W.WarmStart()
    for step in range(8):
        t, g, rem, cls, pt, keys = _lp_inputs(jobs, colo, gpus)
        cold = P.packed_rate(t, g, cap, rem, cls, pt)
        r = P.packed_rate(t, g, cap, rem, cls, pt, warm=warm.label(jobs["id"].tolist(), keys))
        if step == 0:  # no basis yet: the cold LP, the same bits
            assert r.z == cold.z and np.array_equal(r.x, cold.x) and np.array_equal(r.y, cold.y)
        assert r.z == pytest.approx(cold.z, rel=1e-9)
        _kept_rows(r, t, g, cap, rem, pt, cls)
        # some jobs progress, some finish, some arrive
        stay = rng.random(len(rem)) > 0.2
        jobs = {k: v[stay] for k, v in jobs.items()}
        jobs["rem"] = jobs["rem"] * rng.uniform(0.5, 1.0, len(jobs["rem"]))
        new = _jobs(rng, int(rng.integers(0, 8)), nc, nk, int(jobs["id"].max(initial=0)) + 100)
        jobs = {k: np.concatenate([jobs[k], new[k]]) for k in jobs}


def test_basis_statuses_carry_by_name() -> None:
    h = _core()
    s = h.HighsBasisStatus
    warm = W.WarmStart()
    assert warm.start(np.arange(3), np.arange(2), h) is None  # nothing kept yet
    cols = W.code(1, np.array([5, 7, 9]), np.array([0, 1, 0]), 0)
    rows = W.code(0, np.array([5, 9]), 0, 0)
    basis = h.HighsBasis()
    basis.col_status, basis.row_status = [s.kBasic, s.kUpper, s.kLower], [s.kLower, s.kBasic]
    warm.keep(cols, rows, basis)
    # job 7 left, job 11 came: its column starts at its lower bound, its row basic
    start = warm.start(W.code(1, np.array([11, 9, 5]), np.array([0, 0, 0]), 0), W.code(0, np.array([9, 11]), 0, 0), h)
    assert list(start.col_status) == [s.kLower, s.kLower, s.kBasic] and start.alien
    assert list(start.row_status) == [s.kBasic, s.kBasic]


def test_class_keys_stay_across_allocations() -> None:
    warm = W.WarmStart()
    assert warm.label([1, 2], [("a",), ("b",)]).classes.tolist() == [0, 1]
    assert warm.label([3], [("b",), ("c",)]).classes.tolist() == [1, 2]
