"""Castor / SJF-BSBF: shortest job first with best sharing benefit first (castor §5, sjf-bsbf §V).

* **Theorem 1** (:func:`.castor_pairs.theorem1`): for a running job A and a new job B on A's GPUs, the pair's
  average JCT is minimised either by starting B now (kappa = 0) or after A finishes (kappa = t_A i_A); compare
  the two.
* **Algorithm 2** (:func:`.castor_pairs.best_plans`): search B's sub-batch b = B, B/2, ..., 1 (gradient
  accumulation s = B/b), among those that fit in memory beside A, applying Theorem 1 to each; keep the best
  (ties to the later, smaller sub-batch, as the paper's ``<=``).
* **Algorithm 1** (:class:`Castor`): pending jobs in SJF order; a job starts on free GPUs when enough are
  free; otherwise every running job holding GPUs alone is a candidate partner, kept when Algorithm 2 says
  sharing wins, ranked by the pair JCT, and its GPUs are taken until the job has enough (topped up with free
  GPUs). A job no candidate benefits stays pending.

Cost: a decision evaluates the (pending, partner) pairs of the queue in array passes, the first few jobs
first (:meth:`Castor.first_share`). A pair's iteration times depend only on the new job's shape, the
partner's run and what the pair's GPUs are (types, nodes, holders): its pair class
(:meth:`.castor_terms.PairTermCache.class_of`), so pairs alike share them, and the (shape x partner) grid of
term rows and rejected windows is kept from one decision to the next (:class:`.castor_grid.PairGrid`): each
partner's class by the GPUs a job asks, kept while its GPUs alone (and the free GPUs) stay the same, and the
whole grid while no GPU's tenants changed. Pairs alike in all but the waiting job's work left are rejected by
the prefilter on a whole interval of that work, found once for them (:func:`.castor_pairs.rejected_window`),
so a decision asks the prefilter only about the jobs outside it (:func:`.castor_pairs.outside_windows`), not
every (pending, partner) pair; the partners holding GPUs alone are kept from one decision to the next, only
those on GPUs whose lone tenant changed (or whose run did) looked at again.

The interference ratios come from a predictor (castor §6, XGBoost on job features; the catalog's
``load_predictor``), never from the engine's ground truth; ``castor-oracle``
(:mod:`gpucluster_env.baselines.castor_oracle`) uses the truth to show what prediction costs;
``castor-timeslice`` (:mod:`gpucluster_env.baselines.castor_timeslice`) is the time-slicing ablation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from gpucluster_env.baselines.parts.castor_grid import PairGrid
from gpucluster_env.baselines.parts.castor_pairs import (
    PairPlan,
    PairPlans,
    best_sub_batch,
    no_plans,
    outside_jobs,
    outside_pairs,
    plans_may_share,
)
from gpucluster_env.baselines.parts.castor_terms import ClassParts, ended
from gpucluster_env.baselines.parts.sjf_sharing import SJFSharingPolicy, fill_with_free
from gpucluster_env.baselines.parts.xi_predictor import PREDICTOR_VERSION, XiPredictor, default_predictor

from gpucluster_env.engine import Action, Colocate
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import register_policy

HEAD = 8
"""How many pending jobs, from the first with a live pair, :meth:`Castor.first_share` plans before the rest."""


@dataclass
class CastorDecision:
    """One colocation Castor chose (for the per-decision sharing-benefit report)."""

    time: float
    job: int
    partners: tuple[int, ...]
    accumulation: int
    predicted_pair_jct: float
    predicted_seq_jct: float


@register_policy
class Castor(SJFSharingPolicy):
    """SJF-BSBF with the XGBoost interference predictor and MPS sharing (castor Algorithms 1-2, Theorem 1)."""

    version = PREDICTOR_VERSION

    name: ClassVar[str] = "castor"
    description: ClassVar[str] = (
        "SJF-BSBF: SJF; free GPUs first, else share with partners ranked by Theorem-1 pair JCT, sub-batch "
        "search (Alg. 2), predicted xi"
    )
    paper: ClassVar[str] = "castor §5 Alg. 1-2, Thm. 1 (= sjf-bsbf §V)"

    def __init__(self, predictor: XiPredictor | None = None, xi_scale: float = 1.0) -> None:
        """``predictor``: interference predictor (default: the catalog's XGBoost model). ``xi_scale``
        multiplies predicted ratios (e.g. the time-slicing ratio when the cluster shares without MPS)."""
        self._predictor_arg = predictor
        self.predictor: XiPredictor | None = predictor
        self.xi_scale = float(xi_scale)
        self.decisions: list[CastorDecision] = []
        self._xi_cache: dict[tuple[int, int, int], tuple[float, float]] = {}
        self._fresh_grid()
        self._now = -1.0

    def _fresh_grid(self) -> None:
        """Nothing kept of pairs: a new :class:`.castor_grid.PairGrid` (and its parts, named for short)."""
        self._grid = PairGrid()
        self._terms, self._store, self._partners = self._grid.terms, self._grid.store, self._grid.partners
        self._singles = self._partners.singles

    # ------------------------------------------------------------------ interference
    def reset(self, env: Any) -> None:
        super().reset(env)  # the predictor is loaded when a pair is first predicted (pair_xi)
        self.decisions = []
        self._xi_cache = {}
        self._fresh_grid()
        self._now = -1.0

    def pair_xi(self, view: ClusterView, a: int, b: int, gpu_type: int) -> tuple[float, float]:
        """Predicted ``(xi_a, xi_b)`` for jobs ``a`` and ``b`` sharing a GPU of type index ``gpu_type``."""
        key = (view.model_index(a), view.model_index(b), int(gpu_type))
        if key not in self._xi_cache:
            if self.predictor is None:
                self.predictor = default_predictor()
            xa, xb = self.predictor.predict_pair(view.model(a), view.model(b), view.type_names[key[2]])
            self._xi_cache[key] = (max(1.0, float(xa) * self.xi_scale), max(1.0, float(xb) * self.xi_scale))
        return self._xi_cache[key]

    # ------------------------------------------------------------------ Algorithm 2's inputs
    def begin(self, view: ClusterView) -> None:
        """Forget the runs that ended, once what is kept by partner outnumbers twice the running jobs: only
        memory, as every entry is checked against its job's current run (its start) where it is read."""
        if view.now != self._now:
            self._now = view.now
            limit = 2 * view.num_running + 64
            memo = self._grid.memo
            if len(self._singles) <= limit and self._terms.n_runs() <= limit and len(memo.slots) <= limit:
                return
            self._terms.forget_ended(view)
            for p in ended(view, self._singles):  # runs that ended: forget them
                del self._singles[p]
            for p in ended(view, memo.slots):
                memo.release(p)

    def colocation_gpus(self, view: ClusterView, j: int, p: int, singles: np.ndarray) -> np.ndarray:
        """The GPUs pending job ``j`` would get beside running job ``p`` (the engine's colocation rule, else
        the first of ``p``'s singly-held GPUs ``singles``). The rule takes ``p``'s singly-held GPUs in the
        order of :meth:`ClusterView.single_gpus_of`, and tops them up only from free GPUs, so it is not asked
        when those are enough alone or too few with every free GPU (it would find no set). It reads nothing of
        ``j`` but the number of GPUs it asks."""
        need = int(view.req_gpus[j])
        if need <= len(singles) or need > len(singles) + view.num_free():
            return singles[:need]
        gb = view.plan_colocate(j, p)
        return singles[:need] if gb is None else gb

    def _pair_terms(self, view: ClusterView, j: int, p: int, gb: np.ndarray, shape: int | None = None) -> int:
        """The term-store row of the pair's per-iteration times ``(t_a, t_a_hat, t_b, (s, ...), (t_b_hat(s),
        ...))`` for pending job ``j`` on ``gb`` beside running job ``p`` (row 0: ``j`` cannot share there), kept
        by pair class and job shape (:meth:`.castor_terms.PairTermCache.class_of`). ``shape``: ``j``'s shape
        id, when known."""
        k = int(self._grid.shapes(view, np.array([j]))[0]) if shape is None else shape
        a = self._terms.class_of(view, p, gb, len(self._grid.shape_need))
        rows = self._terms.rows
        if rows[a, k] < 0:
            rows[a, k] = self._store.add(self._compute_terms(view, j, p, gb, a))
        return int(rows[a, k])

    def _compute_terms(self, view: ClusterView, j: int, p: int, gb: np.ndarray, cls: int) -> tuple[Any, ...] | None:
        """The terms (:meth:`_pair_terms`) of pending job ``j`` on ``gb`` beside running job ``p``, of pair class
        ``cls`` (:meth:`.castor_terms.PairTermCache.class_of`): ``p``'s own times kept by its run, ``j``'s side
        (:meth:`_job_side`) by its shape and what the class's GPUs hold."""
        parts, terms = self._terms.parts[cls], self._terms
        if parts is None:  # p holds none of gb
            return None
        key = (int(self._grid.shape_id[j]), parts.job)
        side = terms.job_sides.get(key, False)
        if side is False:
            side = self._job_side(view, j, p, gb, key[0], parts)
            if not parts.foreign:  # else the other job's memory is read too
                terms.job_sides[key] = side
        if side is None:
            return None
        xi_a = self.pair_xi(view, p, j, parts.gtype)[0]
        own, run = terms.own, parts.own[0]
        if run not in own:
            own[run] = view.iter_time(p, view.gpus_of(p), view.accumulation(p), 1.0)
        if (parts.own, xi_a) not in own:
            shared_a = np.frombuffer(parts.own[1], dtype=bool)
            own[parts.own, xi_a] = view.iter_time(p, view.gpus_of(p), view.accumulation(p),
                                                  np.where(shared_a, xi_a, 1.0))
        return own[run], own[parts.own, xi_a], *side

    def _job_side(self, view: ClusterView, j: int, p: int, gb: np.ndarray, shape: int, parts: ClassParts
                  ) -> tuple[float, tuple[int, ...], tuple[float, ...]] | None:
        """Pending job ``j``'s (of shape ``shape``) side of its pair with ``p`` on ``gb`` (what it reads:
        ``parts``): ``(t_b, (s, ...), (t_b_hat(s), ...))``, None when no sub-batch fits. It reads of ``p`` only
        its model (the ratio) and its footprint (the memory left, which gives the options), of ``gb`` its
        types, nodes and which ``p`` holds; its time alone, which reads ``gb``'s types and nodes and the
        accumulation, is kept by those."""
        opts_s = view.accumulations_for(j, gb)
        s_solo = view.solo_accumulation(j, gb)
        if not (opts_s and s_solo is not None):
            return None
        xi_b = self.pair_xi(view, p, j, parts.gtype)[1]
        key = (shape, parts.job[2], parts.job[4], s_solo)
        alone = self._terms.alone
        if key not in alone:
            alone[key] = view.iter_time(j, gb, s_solo, 1.0)
        xb = np.where(np.frombuffer(parts.job[3], dtype=bool), xi_b, 1.0)
        return alone[key], tuple(opts_s), tuple(view.iter_time(j, gb, s, xb) for s in opts_s)

    def _i_a(self, view: ClusterView, p: int) -> float:
        """Iterations running job ``p`` has left now (the same at every decision of an instant)."""
        return float(view.remaining_now(np.array([p], dtype=np.int64))[0])

    def plan_pair(self, view: ClusterView, j: int, p: int) -> PairPlan | None:
        """Algorithm 2 for pending job ``j`` beside running job ``p`` (None: ``p`` has no GPU for ``j``)."""
        singles = view.single_gpus_of(p)
        if len(singles) == 0:
            return None
        terms = self._store.terms(self._pair_terms(view, j, p, self.colocation_gpus(view, j, p, singles)))
        if terms is None:
            return None
        t_a, t_a_hat, t_b, s_opts, t_hat = terms
        i_a = self._i_a(view, p)
        if not (i_a > 0 and math.isfinite(t_a)):
            return None
        return best_sub_batch(t_a, t_a_hat, i_a, t_b, list(zip(s_opts, t_hat, strict=True)), view.remaining(j))

    def _term_rows(self, view: ClusterView, js: np.ndarray) -> tuple[list[int], np.ndarray, np.ndarray]:
        """The partners holding a GPU alone, the shape id of each of ``js`` and the term-store rows ``(shapes,
        partners)`` of every (shape, partner) cell (:meth:`.castor_grid.PairGrid.cells`; read only for the
        shapes of ``js``)."""
        holders, _, sh, (rows, _, _) = self._grid.cells(view, js, self.colocation_gpus, self._compute_terms)
        return holders, sh, rows

    def _live_pairs(self, view: ClusterView, js: np.ndarray) -> tuple[list[int], tuple[np.ndarray, ...]]:
        """The partners holding a GPU alone and the pairs of pending jobs ``js`` and partners that may share:
        those outside their (shape, partner) cell's :func:`.castor_pairs.rejected_window` (scaled by the
        partner's iterations left), and with a plan (term rows, a partner with work left). Returns ``(shape id
        of js, term rows by (shape, partner), i_a, i_b, r, c)``, ``r`` rows into ``js`` in increasing order,
        ``c`` columns into the partners."""
        holders, (sh, ix, i_a, i_b, lo, hi, some) = self._candidates(view, js)
        return holders, (sh, ix, i_a, i_b, *outside_pairs(sh, i_b, lo, hi, some))

    def _candidates(self, view: ClusterView, js: np.ndarray) -> tuple[list[int], tuple[np.ndarray, ...]]:
        """:meth:`_live_pairs` up to the jobs that have live pairs: ``(shape id of js, term rows, i_a, i_b, lo,
        hi, jobs)``, the windows scaled by ``i_a`` (by shape and partner) and those jobs' rows into ``js``
        (increasing), whose pairs :func:`.castor_pairs.outside_pairs` finds, all or a part at a time."""
        holders, hold, sh, (ix, w_lo, w_hi) = self._grid.cells(view, js, self.colocation_gpus, self._compute_terms)
        i_a = view.remaining_now(hold)  # floats
        i_b = view.remaining_of(js)
        if not holders:
            return holders, (sh, ix, i_a, i_b, w_lo, w_hi, np.zeros(0, dtype=np.int64))
        lo, hi = w_lo * i_a, w_hi * i_a
        if not np.minimum.reduce(i_a) > 0:  # a partner without work left (or NaN) has no plan with any job
            dead = ~(i_a > 0)
            lo[:, dead], hi[:, dead] = -math.inf, math.inf
        return holders, (sh, ix, i_a, i_b, lo, hi, outside_jobs(sh, i_b, lo, hi))

    def _plans_of(self, u: np.ndarray, ix: np.ndarray, i_a: np.ndarray, i_b: np.ndarray, r: np.ndarray,
                  c: np.ndarray) -> tuple[np.ndarray, np.ndarray, PairPlans]:
        """Algorithm 2 for the live pairs ``(r, c)`` of :meth:`_live_pairs` (any subset of them, element by
        element) that pass the prefilter (:func:`.castor_pairs.may_share`); the pairs kept and their plans."""
        if len(r) == 0:
            return no_plans()
        st = self._store
        x = ix[u[r], c]
        t_a = st.t[x, 0]
        n_opts = np.where((i_a[c] > 0) & np.isfinite(t_a), st.n_opts[x], 0)
        may, plans = plans_may_share(t_a, st.t[x, 1], i_a[c], st.t[x, 2], i_b[r], st.s_opts[x], st.t_hat[x], n_opts,
                                     st.k_min[x])
        if not may.all():
            r, c, plans = r[may], c[may], plans.subset(may)
        return r, c, plans

    def pair_plans(self, view: ClusterView, jobs: list[int]) -> tuple[list[int], np.ndarray, np.ndarray, PairPlans]:
        """Algorithm 2 for every pending job of ``jobs`` beside every running job holding a GPU alone, in one
        array pass. Returns the partners (by index) and, for the pairs that may share (rows into ``jobs``,
        columns into the partners), their plans: the same to the bit as :meth:`plan_pair` on each pair; a pair
        left out cannot share (:func:`.castor_pairs.may_share`, asked or proven for its window:
        :func:`.castor_pairs.rejected_window`) or has no plan."""
        holders, live = self._live_pairs(view, np.array(jobs, dtype=np.int64))
        return holders, *self._plans_of(*live)

    # ------------------------------------------------------------------ Algorithm 1
    def first_share(self, view: ClusterView, jobs: Iterable[int] | np.ndarray) -> Action | None:
        """The first of ``jobs`` that shares: pairs planned for the :data:`HEAD` jobs from the first with a
        live pair, then, if none of them shares, for the rest (each pair's plan is its own: the answer of one
        pass). A job whose sharing partners hold too few GPUs alone, with the free ones, is passed over; one
        whose live partners (its pairs outside their windows) already do is passed over unplanned, as its
        sharing partners are among them. The live pairs of the rest are found only when the first jobs' plans
        share with none (most colocations are among them): the jobs with live pairs are taken in blocks."""
        ja = jobs if isinstance(jobs, np.ndarray) else np.array(list(jobs), dtype=np.int64)
        if len(ja) == 0:
            return None
        holders, cand = self._candidates(view, ja)
        some = cand[6]
        if len(some) == 0:
            return None
        n_single = self._partners.n_by_job[np.array(holders, dtype=np.int64)]
        got: list[tuple[np.ndarray, np.ndarray]] = []
        at, step = 0, HEAD
        while at < len(some) and not got:  # up to the first job with enough GPUs
            end, step = min(at + step, len(some)), 2 * step
            r, c = self._enough_pairs(view, ja, n_single, cand, some[at:end])
            at, got = end, [(r, c)] if len(r) else []
        if not got:
            return None
        head = int(got[0][0][0]) + HEAD
        end = int(np.searchsorted(some, head))
        if end > at:  # the rest of the HEAD jobs from it
            got.append(self._enough_pairs(view, ja, n_single, cand, some[at:end]))
            at = end
        r, c = np.concatenate([g[0] for g in got]), np.concatenate([g[1] for g in got])
        cut = int(np.searchsorted(r, head))
        act = self._first_colocation(view, ja, holders, n_single, *self._plans_of(*cand[:4], r[:cut], c[:cut]))
        if act is not None or (cut == len(r) and at == len(some)):
            return act
        rest = self._enough_pairs(view, ja, n_single, cand, some[at:])
        r, c = np.concatenate([r[cut:], rest[0]]), np.concatenate([c[cut:], rest[1]])
        return self._first_colocation(view, ja, holders, n_single, *self._plans_of(*cand[:4], r, c)) if len(r) \
            else None

    def _enough_pairs(self, view: ClusterView, ja: np.ndarray, n_single: np.ndarray, cand: tuple[np.ndarray, ...],
                      jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The live pairs ``(rows into ja, partners)`` of ``jobs`` (a part of :meth:`_candidates`' ``cand``) whose
        job's live partners hold enough GPUs alone, with the free ones (:meth:`_enough`)."""
        sh, _, _, i_b, lo, hi, _ = cand
        r, c = outside_pairs(sh, i_b, lo, hi, jobs)
        if len(r):
            starts, ends, enough = self._enough(view, ja, n_single, r, c)
            if not enough.all():
                keep = np.repeat(enough, ends - starts)
                r, c = r[keep], c[keep]
        return r, c

    @staticmethod
    def _enough(view: ClusterView, ja: np.ndarray, n_single: np.ndarray, rows: np.ndarray, cols: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For pairs of jobs ``ja[rows]`` (``rows`` increasing) and partners ``cols`` (holding ``n_single``
        GPUs alone): where each job's pairs start and end, and whether those partners' GPUs, with the free
        ones, are as many as the job asks."""
        cut = (rows[1:] != rows[:-1]).nonzero()[0] + 1
        starts, ends = np.concatenate(([0], cut)), np.concatenate((cut, [len(rows)]))
        held = np.add.reduceat(n_single[cols], starts)
        return starts, ends, held + view.num_free() >= view.req_gpus[ja[rows[starts]]]

    def _first_colocation(self, view: ClusterView, ja: np.ndarray, holders: list[int], n_single: np.ndarray,
                          rows: np.ndarray, cols: np.ndarray, plans: PairPlans) -> Action | None:
        """The colocation of the first job of ``ja`` (rows ``rows``, in increasing order)
        that shares with the partners of its plans (``holders``, holding ``n_single`` GPUs alone) and gets
        enough GPUs (:meth:`_colocate`); None when none does."""
        sharing = plans.share.nonzero()[0]
        if len(sharing) == 0:
            return None
        rs = rows[sharing]  # grouped by job, in pass order
        starts, ends, enough = self._enough(view, ja, n_single, rs, cols[sharing])
        for a, b in zip(starts[enough].tolist(), ends[enough].tolist(), strict=True):
            these = sharing[a:b].tolist()
            act = self._colocate(view, int(ja[rs[a]]), [(float(plans.t[i]), holders[cols[i]], i) for i in these],
                                 plans)
            if act is not None:
                return act
        return None

    def share(self, view: ClusterView, j: int) -> Action | None:
        return self.first_share(view, [j])

    def _colocate(self, view: ClusterView, j: int, cands: list[tuple[float, int, int]], plans: PairPlans
                  ) -> Action | None:
        """Algorithm 1's colocation of pending job ``j`` with the partners sharing benefits (``(pair JCT,
        partner, index of its plan in plans)``): best pair JCT first, their GPUs taken until ``j`` has enough,
        topped up with free GPUs; None when that cannot be done."""
        need = int(view.req_gpus[j])
        cands.sort(key=lambda c: (c[0], c[1]))
        chosen: list[int] = []
        partners: list[int] = []
        s = 1
        for _, p, i in cands:
            if len(chosen) >= need:
                break
            chosen += self._singles[p][1][: need - len(chosen)].tolist()  # as of this instant (pair_plans)
            partners.append(p)
            s = max(s, int(plans.accumulation[i]))
        full = fill_with_free(view, chosen, need)
        if full is None:
            return None
        g = np.array(full, dtype=np.int64)
        s_mem = view.accumulation_for(j, g)
        if s_mem is None:
            return None
        s = max(s, s_mem)
        if s > view.batch(j):
            return None
        best = plans.plan(cands[0][2])
        self.decisions.append(CastorDecision(view.now, j, tuple(partners), s, best.t_shared, best.t_seq))
        return Colocate(j, partners[0], accumulation=s, gpus=tuple(int(x) for x in g))
