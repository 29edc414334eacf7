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

Cost: a decision evaluates every (pending, partner) pair of the queue in one array pass
(:meth:`Castor.pair_plans`), and a pair's iteration times, which depend only on the new job's model and
batch, the partner's run and the GPUs the pair would use, are kept while the partner runs.

The interference ratios come from a predictor (castor §6, XGBoost on job features; the catalog's
``load_predictor``), never from the engine's ground truth; :class:`CastorOracle` uses the truth to show what
prediction costs.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
from gpucluster_env.baselines.castor_pairs import PairPlan, PairPlans, best_plans, best_sub_batch
from gpucluster_env.baselines.sharing import SJFSharingPolicy, fill_with_free
from gpucluster_env.baselines.timeslice import TIMESLICE_RATIO

from gpucluster_env.engine import Action, Colocate
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.interference import FeatureInterference
from gpucluster_env.policy import register_policy
from gpucluster_env.workloads import ModelProfile


class XiPredictor(Protocol):
    """What Castor needs from an interference predictor (castor §6)."""

    def predict_pair(
        self, model_a: ModelProfile, model_b: ModelProfile, gpu_type: str
    ) -> tuple[float, float]:
        """Predicted ``(xi_a, xi_b)`` of the two models sharing a ``gpu_type`` GPU under MPS."""
        ...


class FeaturePredictor:
    """Stand-in used only while the catalog ships no fitted predictor: the feature formula of
    :class:`~gpucluster_env.interference.FeatureInterference` (same inputs the XGBoost model sees)."""

    source = "feature formula (no fitted predictor in the catalog)"

    def __init__(self, k: float = 0.8) -> None:
        self._f = FeatureInterference(k)

    def predict_pair(
        self, model_a: ModelProfile, model_b: ModelProfile, gpu_type: str
    ) -> tuple[float, float]:
        return self._f.pair_xi(model_a, model_b, gpu_type)


def default_predictor() -> XiPredictor:
    """The catalog's fitted XGBoost predictor (``gpucluster_env.catalog.predictor.load_predictor``), or the
    feature-formula stand-in when that module is not available."""
    try:
        from gpucluster_env.catalog.predictor import load_predictor

        return load_predictor()
    except (ImportError, ValueError, OSError) as e:
        warnings.warn(f"Castor: no fitted xi predictor ({e}); using the feature-formula stand-in",
                      stacklevel=2)
        return FeaturePredictor()


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
        self._terms: dict[int, tuple[float, dict[tuple[Any, ...], tuple[Any, ...] | None]]] = {}
        self._now = -1.0
        self._remaining = np.zeros(0)

    # ------------------------------------------------------------------ interference
    def reset(self, env: Any) -> None:
        super().reset(env)
        if self.predictor is None:
            self.predictor = default_predictor()
        self.decisions = []
        self._xi_cache = {}
        self._terms = {}
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
        if view.now != self._now:
            self._now = view.now
            self._remaining = view.remaining_now()
            for p in [p for p in self._terms if not view.is_running(p)]:
                del self._terms[p]

    def colocation_gpus(self, view: ClusterView, j: int, p: int, singles: np.ndarray) -> np.ndarray:
        """The GPUs pending job ``j`` would get beside running job ``p`` (the engine's colocation rule, else
        the first of ``p``'s singly-held GPUs ``singles``)."""
        gb = view.plan_colocate(j, p)
        return singles[: int(view.req_gpus[j])] if gb is None else gb

    def _pair_terms(self, view: ClusterView, j: int, p: int, gb: np.ndarray) -> tuple[Any, ...] | None:
        """Per-iteration times of the pair: ``(t_a, t_a_hat, t_b, [(s, t_b_hat(s)), ...])`` for pending job
        ``j`` on ``gb`` beside running job ``p``, or None when ``j`` cannot share there. A pure function of
        ``j``'s model and batch, ``p``'s run (its GPUs, accumulation and footprint, fixed from its start) and
        ``gb`` (``p``'s GPUs, or free ones), so it is kept while ``p`` runs."""
        start = view.last_start(p)
        entry = self._terms.get(p)
        if entry is None or entry[0] != start:
            entry = self._terms[p] = (start, {})
        key = (view.model_index(j), view.batch(j), gb.tobytes())
        if key in entry[1]:
            return entry[1][key]
        out: tuple[Any, ...] | None = None
        shared_b = view.tenants(gb)[:, 0] == p
        opts_s = view.accumulations_for(j, gb)
        s_solo = view.solo_accumulation(j, gb)
        if opts_s and s_solo is not None and shared_b.any():
            gtype = int(view.gpu_type[gb[shared_b][0]])
            xi_a, xi_b = self.pair_xi(view, p, j, gtype)
            gp = view.gpus_of(p)
            sp = view.accumulation(p)
            t_a = view.iter_time(p, gp, sp, 1.0)
            t_a_hat = view.iter_time(p, gp, sp, np.where(np.isin(gp, gb), xi_a, 1.0))
            t_b = view.iter_time(j, gb, s_solo, 1.0)
            xb = np.where(shared_b, xi_b, 1.0)
            out = (t_a, t_a_hat, t_b, [(s, view.iter_time(j, gb, s, xb)) for s in opts_s])
        entry[1][key] = out
        return out

    def _i_a(self, view: ClusterView, p: int) -> float:
        """Iterations running job ``p`` had left at the start of this instant."""
        return float(self._remaining[p]) if len(self._remaining) > p else float(view.remaining_now()[p])

    def plan_pair(self, view: ClusterView, j: int, p: int) -> PairPlan | None:
        """Algorithm 2 for pending job ``j`` beside running job ``p`` (None: ``p`` has no GPU for ``j``)."""
        singles = view.single_gpus_of(p)
        if len(singles) == 0:
            return None
        terms = self._pair_terms(view, j, p, self.colocation_gpus(view, j, p, singles))
        if terms is None:
            return None
        t_a, t_a_hat, t_b, options = terms
        i_a = self._i_a(view, p)
        if not (i_a > 0 and math.isfinite(t_a)):
            return None
        return best_sub_batch(t_a, t_a_hat, i_a, t_b, options, view.remaining(j))

    def pair_plans(self, view: ClusterView, jobs: list[int]) -> tuple[list[int], PairPlans]:
        """Algorithm 2 for every pending job of ``jobs`` beside every running job holding a GPU alone, in one
        array pass: the partners (by index) and the ``(len(jobs), partners)`` plans, the same to the bit as
        :meth:`plan_pair` on each pair (``found`` False where it says None)."""
        holders = np.unique(view.tenants(view.single_gpus())[:, 0]).tolist()
        singles = {p: view.single_gpus_of(p) for p in holders}
        holders = [p for p in holders if len(singles[p])]
        shape_of: dict[tuple[int, int, int], int] = {}
        rep: list[int] = []  # one job of each (model, batch, GPUs) shape: the pair terms depend on no more
        u = np.empty(len(jobs), dtype=np.int64)
        for r, j in enumerate(jobs):
            u[r] = shape_of.setdefault((view.model_index(j), view.batch(j), int(view.req_gpus[j])), len(rep))
            if u[r] == len(rep):
                rep.append(j)
        gbs: dict[tuple[int, int], np.ndarray] = {}
        rows = []
        for j in rep:
            need = int(view.req_gpus[j])
            for p in holders:
                if (need, p) not in gbs:
                    gbs[need, p] = self.colocation_gpus(view, j, p, singles[p])
                rows.append(self._pair_terms(view, j, p, gbs[need, p]))
        i_a = np.array([self._i_a(view, p) for p in holders], dtype=float)
        t_a, t_a_hat, t_b, s_opts, t_hat, n_opts = _term_arrays(rows, len(rep), len(holders), i_a)
        i_b = np.array([view.remaining(j) for j in jobs], dtype=float)
        return holders, best_plans(t_a[u], t_a_hat[u], i_a, t_b[u], i_b[:, None], s_opts[u], t_hat[u], n_opts[u])

    # ------------------------------------------------------------------ Algorithm 1
    def first_share(self, view: ClusterView, jobs: Iterable[int]) -> Action | None:
        """The first of ``jobs`` that shares, its candidate partners evaluated for all ``jobs`` at once."""
        js = list(jobs)
        if not js:
            return None
        holders, plans = self.pair_plans(view, js)
        cand = plans.found & plans.share
        for r in np.flatnonzero(cand.any(axis=1)).tolist():
            cands = [(float(plans.t[r, c]), holders[c], plans.plan((r, c))) for c in np.flatnonzero(cand[r]).tolist()]
            a = self._colocate(view, js[r], cands)
            if a is not None:
                return a
        return None

    def share(self, view: ClusterView, j: int) -> Action | None:
        return self.first_share(view, [j])

    def _colocate(self, view: ClusterView, j: int, cands: list[tuple[float, int, PairPlan]]) -> Action | None:
        """Algorithm 1's colocation of pending job ``j`` with the partners sharing benefits (``(pair JCT,
        partner, plan)``): best pair JCT first, their GPUs taken until ``j`` has enough, topped up with free
        GPUs; None when that cannot be done."""
        need = int(view.req_gpus[j])
        cands.sort(key=lambda c: (c[0], c[1]))
        chosen: list[int] = []
        partners: list[int] = []
        s = 1
        best = cands[0][2]
        for _, p, plan in cands:
            if len(chosen) >= need:
                break
            take = view.single_gpus_of(p)[: need - len(chosen)].tolist()
            chosen += take
            partners.append(p)
            s = max(s, plan.accumulation)
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
        self.decisions.append(CastorDecision(view.now, j, tuple(partners), s, best.t_shared, best.t_seq))
        return Colocate(j, partners[0], accumulation=s, gpus=tuple(int(x) for x in g))


def _term_arrays(rows: list[tuple[Any, ...] | None], n_shapes: int, n_holders: int,
                 i_a: np.ndarray) -> tuple[np.ndarray, ...]:
    """The pair terms of ``rows`` (shape-major, one per (shape, partner)) as ``(shapes, partners)`` arrays
    ``t_a, t_a_hat, t_b, n_opts`` and ``(shapes, partners, options)`` arrays ``s_opts, t_b_hat``; a pair with
    no terms, a partner with no iterations left or an unknown solo time gets ``n_opts`` 0."""
    width = max((len(r[3]) for r in rows if r is not None), default=0)
    t = np.full((3, n_shapes * n_holders), np.nan)
    s_opts = np.zeros((n_shapes * n_holders, width), dtype=np.int64)
    t_hat = np.full((n_shapes * n_holders, width), np.nan)
    n_opts = np.zeros(n_shapes * n_holders, dtype=np.int64)
    for k, r in enumerate(rows):
        if r is not None:
            t[0, k], t[1, k], t[2, k] = r[0], r[1], r[2]
            n_opts[k] = len(r[3])
            for i, (s, x) in enumerate(r[3]):
                s_opts[k, i], t_hat[k, i] = s, x
    shape = (n_shapes, n_holders)
    n_opts = n_opts.reshape(shape)
    n_opts[~((i_a > 0) & np.isfinite(t[0].reshape(shape)))] = 0
    return (t[0].reshape(shape), t[1].reshape(shape), t[2].reshape(shape), s_opts.reshape(shape + (width,)),
            t_hat.reshape(shape + (width,)), n_opts)


@register_policy
class CastorOracle(Castor):
    """Castor with the engine's true interference ratios instead of the predictor (upper bound on what a
    perfect predictor would give)."""

    name: ClassVar[str] = "castor-oracle"
    description: ClassVar[str] = "Castor (SJF-BSBF) with the true xi instead of the XGBoost predictor"
    paper: ClassVar[str] = "castor §9.5 (IR prediction ablation)"

    def pair_xi(self, view: ClusterView, a: int, b: int, gpu_type: int) -> tuple[float, float]:
        return view.true_pair_xi(a, b, view.type_names[int(gpu_type)])


@register_policy
class CastorTimeSlice(Castor):
    """Castor for a cluster that shares GPUs by time-slicing instead of MPS (castor §8): its predicted ratios
    are scaled by the time-slicing ratio, and it runs on ``baselines.timeslice.timeslice_catalog()`` (declared
    by :meth:`env_kwargs`, so ``gpucluster run --policy castor-timeslice`` needs no extra wiring)."""

    name: ClassVar[str] = "castor-timeslice"
    description: ClassVar[str] = (
        "Castor assuming time-sliced sharing (xi x1.75); pair with timeslice_catalog() for the §9.5 ablation"
    )
    paper: ClassVar[str] = "castor §8, §9.5 (sharing-technique ablation)"

    def __init__(self, predictor: XiPredictor | None = None, xi_scale: float = TIMESLICE_RATIO) -> None:
        super().__init__(predictor, xi_scale)

    def env_kwargs(self) -> dict[str, Any]:
        """The time-slicing world (castor §8 Fig. 8: xi x1.75 over MPS)."""
        from gpucluster_env.baselines.timeslice import timeslice_catalog

        return {"catalog": timeslice_catalog()}
