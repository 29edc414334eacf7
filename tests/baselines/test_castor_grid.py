"""Castor's (shape x partner) grid kept from one decision to the next (baselines/parts/castor_grid.py, with
castor_partners.py's partners and columns and castor_terms.py's pair classes) is, at every decision of real
runs, what a policy that keeps nothing builds in the same state (the GPUs beside a partner whose GPUs alone
answer are the first of them, as the grid takes them), and a decision that passes over the jobs
its live partners cannot give enough GPUs colocates as one that plans every pair; and the one-pass plans
(castor_pairs' plans_may_share) are the prefilter and Algorithm 2 asked apart, and Algorithm 2's scan pair by
pair."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gpucluster_env.baselines.castor import Castor
from gpucluster_env.baselines.castor_timeslice import CastorTimeSlice
from gpucluster_env.baselines.parts.castor_pairs import (
    TIE,
    best_plans,
    may_share,
    outside_jobs,
    outside_pairs,
    outside_windows,
    plans_may_share,
)

from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import run_episode


class Mixed:
    """Ratios from 1.05 to 2.4 by model pair, so some pairs share and some do not (no XGBoost to load)."""

    def predict_pair(self, a: Any, b: Any, gpu_type: str) -> tuple[float, float]:
        k = (len(a.name) + 3 * len(b.name)) % 7
        return 1.05 + 0.225 * k, 1.05 + 0.225 * ((k + 3) % 7)


class _Checked:
    """A Castor whose every pair pass is compared, cell by cell, with the one of a policy like it (class,
    predictor, scale) made at that decision: its partners, columns, pair classes and term rows found afresh."""

    def reset(self, env: Any) -> None:
        super().reset(env)  # type: ignore[misc]
        self.checked = self.cells = self.live = self.shares = 0

    def _live_pairs(self, view: ClusterView, js: np.ndarray) -> Any:
        holders, (sh, ix, i_a, i_b, r, c) = super()._live_pairs(view, js)  # type: ignore[misc]
        fresh = type(self)(self.predictor, self.xi_scale)  # type: ignore[attr-defined, call-arg]
        w_holders, (w_sh, w_ix, w_ia, w_ib, w_r, w_c) = Castor._live_pairs(fresh, view, js)
        assert holders == w_holders
        assert sh.tolist() == w_sh.tolist() and i_b.tolist() == w_ib.tolist() and i_a.tolist() == w_ia.tolist()
        assert r.tolist() == w_r.tolist() and c.tolist() == w_c.tolist()
        for p in holders:  # the GPUs held alone kept by partner are the engine's now
            assert self._singles[p][1].tolist() == view.single_gpus_of(p).tolist()  # type: ignore[attr-defined]
        st, w_st = self._store, fresh._store  # type: ignore[attr-defined]
        (lo, hi), (w_lo, w_hi) = st.windows(), w_st.windows()
        for k in np.unique(sh).tolist():  # every cell of a waiting shape: the terms and window found afresh
            for col in range(len(holders)):
                a, b = int(ix[k, col]), int(w_ix[k, col])
                assert a >= 0 and b >= 0
                assert st.terms(a) == w_st.terms(b)
                assert (lo[a], hi[a]) == (w_lo[b], w_hi[b])
                self.cells += 1
        self.checked += 1
        self.live += len(r)
        return holders, (sh, ix, i_a, i_b, r, c)


    def first_share(self, view: ClusterView, jobs: Any) -> Any:
        js = list(jobs)
        got = super().first_share(view, js)  # type: ignore[misc]
        if js:  # every pair that may share planned at once, no job passed over unplanned: the same colocation
            holders, rows, cols, plans = self.pair_plans(view, js)  # type: ignore[attr-defined]
            n_single = self._partners.n_by_job[np.array(holders, dtype=np.int64)]  # type: ignore[attr-defined]
            kept = len(self.decisions)  # type: ignore[attr-defined]
            want = self._first_colocation(view, np.array(js, dtype=np.int64), holders, n_single, rows, cols, plans)  # type: ignore
            del self.decisions[kept:]  # type: ignore[attr-defined]
            assert got == want
            self.shares += got is not None
        return got


    def colocation_gpus(self, view: ClusterView, j: int, p: int, singles: np.ndarray) -> np.ndarray:
        gb = super().colocation_gpus(view, j, p, singles)  # type: ignore[misc]
        need, n = int(view.req_gpus[j]), len(singles)
        if need <= n or need > n + view.num_free():  # its GPUs alone answer: their first (castor_grid.GpusFor)
            assert gb.tolist() == singles[:need].tolist()
        return gb


class _CheckedTimeSlice(_Checked, CastorTimeSlice):
    pass


class _CheckedCastor(_Checked, Castor):
    pass


def test_castor_grid_kept_is_the_grid_made_afresh() -> None:
    # the time-slicing world (most pairs rejected, a long queue) and MPS with mixed ratios (many share)
    for pol, jobs in ((_CheckedTimeSlice(), 260), (_CheckedCastor(predictor=Mixed()), 200)):
        out = run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": jobs})
        assert out["jobs_done"] == jobs
        assert pol.checked > 200 and pol.cells > 2000 and pol.live > 50 and pol.shares > 20, \
            (pol.checked, pol.cells, pol.live, pol.shares)
        assert pol._partners.version < pol.checked  # some decisions kept the partners (and the grid)


def _scan(t_k: list[float], n: int) -> int:
    """Algorithm 2's choice for one pair, one option at a time (the paper's ``<=``, within TIE)."""
    best = 0
    for k in range(1, n):
        if t_k[k] <= t_k[best] * TIE:
            best = k
    return best


def test_plans_may_share_is_the_prefilter_and_algorithm_2_apart() -> None:
    rng = np.random.default_rng(3)
    for _ in range(300):
        m, width = int(rng.integers(1, 40)), int(rng.integers(1, 12))
        t_a = rng.lognormal(-2, 1, m)
        t_a_hat = t_a * rng.choice([0.9, 1.0, 1.75, 3.0], m)
        i_a, i_b = rng.lognormal(6, 2, m), rng.lognormal(6, 2, m)
        t_b = rng.lognormal(-2, 1, m)
        n_opts = rng.integers(0, width + 1, m)
        t_hat = np.full((m, width), math.nan)
        s_opts = np.zeros((m, width), dtype=np.int64)
        for i in range(m):
            k = int(n_opts[i])
            base = t_b[i] * rng.uniform(0.8, 3.0)
            t_hat[i, :k] = base * rng.choice([1.0, 1.0 + 1e-13, 1.1, 0.95], k)  # ties and near-ties
            s_opts[i, :k] = 2 ** np.arange(k)
        t_min = np.array([np.fmin.reduce(t_hat[i, :max(1, int(n_opts[i]))]) for i in range(m)])
        k_min = np.array([int(np.flatnonzero(t_hat[i] == t_min[i])[0]) if n_opts[i] else 0 for i in range(m)])
        may, plans = plans_may_share(t_a, t_a_hat, i_a, t_b, i_b, s_opts, t_hat, n_opts, k_min)
        want_may = (n_opts > 0) & may_share(t_a, t_a_hat, i_a, t_b, i_b, t_min)
        assert may.tolist() == want_may.tolist()
        ok = n_opts > 0
        alone = best_plans(t_a[ok], t_a_hat[ok], i_a[ok], t_b[ok], i_b[ok], s_opts[ok], t_hat[ok], n_opts[ok])
        for name in ("share", "accumulation", "t", "t_shared", "t_seq"):
            assert np.array_equal(getattr(plans.subset(ok), name), getattr(alone, name), equal_nan=name != "share")
        for i, n in zip(np.flatnonzero(ok).tolist(), n_opts[ok].tolist(), strict=True):  # the scan, pair by pair
            one = best_plans(t_a[i:i + 1], t_a_hat[i:i + 1], i_a[i:i + 1], t_b[i:i + 1], i_b[i:i + 1],
                             s_opts[i:i + 1], t_hat[i:i + 1], n_opts[i:i + 1])
            share_k = [best_plans(t_a[i:i + 1], t_a_hat[i:i + 1], i_a[i:i + 1], t_b[i:i + 1], i_b[i:i + 1],
                                  s_opts[i:i + 1, k:k + 1], t_hat[i:i + 1, k:k + 1], np.array([1])) for k in range(n)]
            assert int(one.accumulation[0]) == int(s_opts[i, _scan([float(p.t[0]) for p in share_k], n)])


def test_outside_pairs_in_blocks_are_the_pairs_of_all() -> None:
    # Castor.first_share finds the live pairs of the jobs outside their windows a block at a time
    rng = np.random.default_rng(5)
    for _ in range(200):
        n_jobs, n_shapes, n_cols = int(rng.integers(0, 60)), int(rng.integers(1, 6)), int(rng.integers(0, 9))
        lo = rng.uniform(0.0, 2.0, (n_shapes, n_cols))
        hi = lo + rng.choice([-1.0, 0.5, 3.0], (n_shapes, n_cols))
        lo[rng.random(lo.shape) < 0.1] = -math.inf
        shape, i_b = rng.integers(0, n_shapes, n_jobs), rng.uniform(0.0, 4.0, n_jobs)
        i_b[rng.random(n_jobs) < 0.05] = math.nan
        r, c = outside_windows(shape, i_b, lo, hi)
        some = outside_jobs(shape, i_b, lo, hi)
        assert sorted(set(r.tolist())) == some.tolist()
        cuts = np.sort(rng.integers(0, len(some) + 1, 3))
        parts = [outside_pairs(shape, i_b, lo, hi, b) for b in np.split(some, cuts)]
        assert np.concatenate([p[0] for p in parts]).tolist() == r.tolist()
        assert np.concatenate([p[1] for p in parts]).tolist() == c.tolist()
