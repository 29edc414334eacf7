"""What Castor and the list schedulers keep or skip from one decision to the next (baselines/parts/castor_pairs.py
rejected windows, castor.py's kept holders, sjf_sharing.py's SJF order, the FailedShapes walks of sjf_sharing.py
and queue_policy.py) gives, at every decision of real runs, the answers of the plain computations they
replace."""

from __future__ import annotations

from typing import Any

import numpy as np
from gpucluster_env.baselines.castor import Castor
from gpucluster_env.baselines.castor_timeslice import CastorTimeSlice
from gpucluster_env.baselines.parts import castor_pairs
from gpucluster_env.baselines.parts.castor_pairs import best_plans, may_share
from gpucluster_env.baselines.parts.sjf_sharing import SJFOrder
from gpucluster_env.baselines.sjf import SJF
from gpucluster_env.baselines.ssf import SSF
from gpucluster_env.baselines.yarn_cs import YarnCS

from gpucluster_env.engine import Action, ActionError, Place, Preempt, Wait
from gpucluster_env.engine.build import make_engine
from gpucluster_env.engine.simulator import PENDING, RUNNING
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import run_episode
from gpucluster_env.scenarios import SCENARIOS


def plain_plans(pol: Castor, view: ClusterView, jobs: list[int]) -> dict[tuple[int, int], castor_pairs.PairPlan]:
    """Every (pending, partner) pair through the prefilter and Algorithm 2, nothing kept: the sharing pairs'
    plans by (job, partner), with the partners found afresh from the view."""
    js = np.array(jobs, dtype=np.int64)
    holders, u, ix = pol._term_rows(view, js)
    ix = ix[u]  # by job
    assert holders == sorted({int(x) for x in view.tenants(view.single_gpus())[:, 0]})
    for p in holders:
        assert pol._singles[p][1].tolist() == view.single_gpus_of(p).tolist()
    st = pol._store
    i_a = np.array([pol._i_a(view, p) for p in holders], dtype=float)
    t_a = st.t[ix, 0]
    n_opts = np.where((i_a > 0) & np.isfinite(t_a), st.n_opts[ix], 0)
    i_b = view.remaining_of(js)
    may = (n_opts > 0) & may_share(t_a, st.t[ix, 1], i_a, st.t[ix, 2], i_b[:, None], st.t_min[ix])
    r, c = np.nonzero(may)
    x = ix[r, c]
    plans = best_plans(st.t[x, 0], st.t[x, 1], i_a[c], st.t[x, 2], i_b[r], st.s_opts[x], st.t_hat[x], n_opts[r, c])
    return {(jobs[r[i]], holders[c[i]]): plans.plan(i) for i in np.flatnonzero(plans.share).tolist()}


class _Checked:
    """A Castor whose every pair pass is compared with :func:`plain_plans`."""

    def reset(self, env: Any) -> None:
        super().reset(env)  # type: ignore[misc]
        self.compared = self.pairs = self.shared = self.kept = 0

    def pair_plans(self, view: ClusterView, jobs: list[int]) -> Any:
        want = plain_plans(self, view, jobs)  # type: ignore[arg-type]
        holders, rows, cols, plans = super().pair_plans(view, jobs)  # type: ignore[misc]
        got = {(jobs[r], holders[c]): plans.plan(i) for i, (r, c) in enumerate(zip(rows, cols, strict=True))
               if plans.share[i]}
        assert got == want
        assert list(got) == list(want)  # the same order: the pass's rows, then partners
        self.compared += 1
        self.pairs += len(jobs) * len(holders)
        self.shared += len(got)
        self.kept += len(jobs) * len(holders) - len(rows)
        return holders, rows, cols, plans

    def first_share(self, view: ClusterView, jobs: Any) -> Any:
        js = list(jobs)
        if js:  # the full pass checked, then the decision's own (it plans the first jobs first)
            self.pair_plans(view, js)
        return super().first_share(view, js)  # type: ignore[misc]


class _CheckedCastor(_Checked, Castor):
    pass


class _CheckedTimeSlice(_Checked, CastorTimeSlice):
    pass


def test_castor_kept_rejections_give_the_plain_pair_pass() -> None:
    # A busy run in the time-slicing world (ratios x1.75: most pairs rejected, a long queue) and one under MPS.
    for pol, jobs in ((_CheckedTimeSlice(), 500), (_CheckedCastor(), 300)):
        run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": jobs})
        assert pol.compared > 300 and pol.shared > 20
        assert pol.kept > 0.5 * pol.pairs  # most pairs were answered from what was kept


def test_rejected_window_is_rejected_by_the_prefilter() -> None:
    # Random terms, slowdowns and work left (near the windows' ends too): every pair inside its window, with
    # the ends scaled by the partner's work left as a decision does, is rejected by may_share.
    rng = np.random.default_rng(0)
    n = 200_000
    t_a = rng.lognormal(-2, 1, n)
    t_a_hat = t_a * rng.choice([1.0, 1.0 + 1e-12, 1.1, 1.75, 3.0, 50.0, 2e4], n)
    t_b = rng.lognormal(-2, 1, n)
    t_min = t_b * rng.uniform(0.5, 4.0, n)
    lo, hi = castor_pairs.rejected_window(t_a, t_a_hat, t_b, t_min)
    assert (lo <= hi).mean() > 0.3  # most terms have a window
    i_a = rng.lognormal(8, 2, n)
    has = lo <= hi
    edge = np.where(has, np.where(rng.random(n) < 0.5, lo, hi), 1.0)
    within = rng.uniform(np.where(has, lo, 0.0), np.where(has, np.minimum(hi, 1e9), 1.0))
    for i_b in (edge * i_a, np.nextafter(edge * i_a, np.inf), np.nextafter(edge * i_a, -np.inf),
                within * i_a, rng.lognormal(8, 3, n)):
        inside = (lo * i_a <= i_b) & (i_b <= hi * i_a)
        assert inside.any()
        assert not may_share(t_a, t_a_hat, i_a, t_b, i_b, t_min)[inside].any()


def test_outside_windows_is_every_pair_compared() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        shapes, cols, jobs = rng.integers(1, 5), rng.integers(0, 6), rng.integers(0, 30)
        lo = rng.choice([-np.inf, 0.0, 1.0, 2.0, 3.0, np.inf], (shapes, cols))
        hi = rng.choice([-np.inf, 0.0, 1.0, 2.0, 3.0, np.inf], (shapes, cols))
        shape = rng.integers(0, shapes, jobs)
        i_b = rng.choice([0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 9.0, np.nan], jobs)
        want = np.nonzero(~((lo[shape] <= i_b[:, None]) & (i_b[:, None] <= hi[shape])))
        got = castor_pairs.outside_windows(shape, i_b, lo, hi)
        assert [g.tolist() for g in got] == [w.tolist() for w in want]


def plain_sharing_walk(view: ClusterView, order: list[int]) -> tuple[list[int], int | None]:
    """The SJF walk one job at a time: up to the first job the placement starts, the jobs that would share."""
    n_free, n_single = view.num_free(), view.num_single()
    out = []
    for j in order:
        need = int(view.req_gpus[j])
        if need <= n_free and view.plan_place(j) is not None:
            return out, j
        if need <= n_free + n_single:
            out.append(j)
    return out, None


class _CheckedWalk(CastorTimeSlice):
    def reset(self, env: Any) -> None:
        super().reset(env)
        self.walks = self.placeable = 0

    def walk(self, view: ClusterView) -> tuple[np.ndarray, int | None]:
        got = super().walk(view)
        assert (got[0].tolist(), got[1]) == plain_sharing_walk(view, view.pending_jobs()[np.argsort(
            view.solo_time[view.pending_jobs()], kind="stable")].tolist())
        self.walks += 1
        self.placeable += got[1] is not None
        return got


def test_sjf_sharing_walk_is_the_plain_walk() -> None:
    pol = _CheckedWalk()
    run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": 200})
    assert pol.walks > 200 and pol.placeable > 50


def plain_queue_walk(view: ClusterView, order: list[int]) -> Action:
    """Each pending job in order asked for a placement until one starts."""
    for j in order:
        g = view.plan_place(j)
        if g is not None:
            return Place(j, gpus=tuple(g.tolist()))
    return Wait()


def _checked(cls: type, key: Any) -> Any:
    class Checked(cls):  # type: ignore[valid-type, misc]
        def reset(self, env: Any) -> None:
            super().reset(env)
            self.compared = self.placed = 0

        def act(self, observation: Any, env: Any) -> Any:
            view = self.view(env)
            got = super().act(observation, env)
            if view.num_pending:
                order = sorted(view.pending_jobs().tolist(), key=lambda j: key(view, j))
                assert got == plain_queue_walk(view, order)
                self.compared += 1
                self.placed += isinstance(got, Place)
            return got

    return Checked()


def test_queue_policies_walk_like_the_plain_sorted_walk() -> None:
    # The priorities over arrays and the placement asked once per shape give the plain walk's action: the
    # queue sorted by the keys the policies had as Python callables (duration; duration x GPUs; queue order).
    for pol in (_checked(SJF, lambda v, j: (v.solo_time[j], j)),
                _checked(SSF, lambda v, j: (v.solo_time[j] * v.req_gpus[j], j)),
                _checked(YarnCS, lambda v, j: 0)):
        run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": 300})
        assert pol.compared > 300 and pol.placed > 250


def test_sjf_order_kept_is_the_sorted_queue() -> None:
    # SJFOrder merges the jobs that joined into its last order; after any mix of arrivals, starts and
    # preemptions (a preempted job rejoins at the back), read at every action or now and then, it is the queue
    # sorted by solo time, ties by queue position.
    for read_every in (1.0, 0.3):
        eng = make_engine(SCENARIOS["castor-philly"], 0)
        eng.advance()
        view = ClusterView(eng)
        kept = SJFOrder(view)
        rng = np.random.default_rng(5)
        reads = preempted = 0
        for _ in range(1500):
            if eng.done:
                break
            pend, run = np.flatnonzero(eng.status == PENDING), np.flatnonzero(eng.status == RUNNING)
            kind = int(rng.integers(5))
            try:
                if kind <= 1 or not len(pend):
                    eng.advance()
                elif kind <= 3 or not len(run):
                    eng.apply(Place(int(rng.choice(pend))))
                else:
                    eng.apply(Preempt(int(rng.choice(run))))
                    preempted += 1
            except ActionError:
                pass
            if rng.random() < read_every:
                q = view.pending_jobs()
                assert kept.order().tolist() == q[np.argsort(view.solo_time[q], kind="stable")].tolist()
                reads += 1
        assert reads > 200 and preempted > 50, (reads, preempted)
