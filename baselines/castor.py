"""Castor / SJF-BSBF: shortest job first with best sharing benefit first (castor §5, sjf-bsbf §V).

* **Theorem 1** (:func:`theorem1`): for a running job A and a new job B on A's GPUs, the pair's average JCT is
  minimised either by starting B now (kappa = 0) or after A finishes (kappa = t_A i_A); compare the two.
* **Algorithm 2** (:func:`best_sub_batch`): search B's sub-batch b = B, B/2, ..., 1 (gradient accumulation
  s = B/b), among those that fit in memory beside A, applying Theorem 1 to each; keep the best (ties to the
  later, smaller sub-batch, as the paper's ``<=``).
* **Algorithm 1** (:class:`Castor`): pending jobs in SJF order; a job starts on free GPUs when enough are
  free; otherwise every running job holding GPUs alone is a candidate partner, kept when Algorithm 2 says
  sharing wins, ranked by the pair JCT, and its GPUs are taken until the job has enough (topped up with free
  GPUs). A job no candidate benefits stays pending.

The interference ratios come from a predictor (castor §6, XGBoost on job features; the catalog's
``load_predictor``), never from the engine's ground truth; :class:`CastorOracle` uses the truth to show what
prediction costs.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
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


def theorem1(
    t_a: float, t_a_hat: float, i_a: float, t_b: float, t_b_hat: float, i_b: float
) -> tuple[bool, float, float]:
    """Castor Theorem 1 for running job A (``i_a`` iterations left, ``t_a`` s/iteration alone, ``t_a_hat``
    shared) and new job B (``i_b``, ``t_b``, ``t_b_hat``). Returns ``(share, avg_jct_shared, avg_jct_seq)``,
    JCTs counted from now; ``share`` is True when starting B now (kappa = 0) beats running B after A
    (eq. 16-23).
    """
    seq = (t_a * i_a + (t_a * i_a + t_b * i_b)) / 2.0
    if t_a_hat * i_a >= t_b_hat * i_b:  # B finishes first, A continues alone (eq. 16-17)
        tb = t_b_hat * i_b
        ta = tb + t_a * (i_a - tb / t_a_hat)
    else:  # A finishes first, B continues alone (eq. 20-21 at kappa = 0)
        ta = t_a_hat * i_a
        tb = ta + t_b * (i_b - ta / t_b_hat)
    shared = (ta + tb) / 2.0
    return shared < seq, shared, seq


@dataclass(frozen=True)
class PairPlan:
    """Algorithm 2's answer for one (running, new) pair: share flag, accumulation s = B/b, pair JCT."""

    share: bool
    accumulation: int
    t: float
    t_shared: float
    t_seq: float


def best_sub_batch(
    t_a: float, t_a_hat: float, i_a: float, t_b: float, options: list[tuple[int, float]], i_b: float
) -> PairPlan | None:
    """Castor Algorithm 2: ``options`` are ``(s, t_b_hat(s))`` for the memory-feasible accumulations in
    increasing ``s`` (sub-batch B, B/2, ..., 1). Keeps the configuration with the smallest Theorem-1 JCT
    (``<=``: ties go to the later, smaller sub-batch). None when no sub-batch fits."""
    best: PairPlan | None = None
    for s, t_b_hat in options:
        share, shared, seq = theorem1(t_a, t_a_hat, i_a, t_b, t_b_hat, i_b)
        t = shared if share else seq
        if best is None or t <= best.t * (1.0 + 1e-12):
            best = PairPlan(share, s, t, shared, seq)
    return best


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
        self._pair_cache: dict[tuple[Any, ...], tuple[Any, ...] | None] = {}
        self._now = -1.0
        self._remaining = np.zeros(0)

    # ------------------------------------------------------------------ interference
    def reset(self, env: Any) -> None:
        super().reset(env)
        if self.predictor is None:
            self.predictor = default_predictor()
        self.decisions = []
        self._xi_cache = {}
        self._pair_cache = {}
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

    # ------------------------------------------------------------------ Algorithm 1
    def begin(self, view: ClusterView) -> None:
        if view.now != self._now:
            self._now = view.now
            self._pair_cache = {}
            self._remaining = view.remaining_now()

    def _pair_terms(self, view: ClusterView, j: int, p: int, singles: np.ndarray) -> tuple[Any, ...] | None:
        """Per-iteration times of the pair (cached per instant by the new job's shape and the partner)."""
        need = int(view.req_gpus[j])
        key = (view.model_index(j), view.batch(j), need, p, tuple(singles.tolist()), view.busy_gpus)
        if key in self._pair_cache:
            return self._pair_cache[key]
        out: tuple[Any, ...] | None = None
        gb = view.plan_colocate(j, p)
        if gb is None:
            gb = singles[:need]
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
            options = [(s, view.iter_time(j, gb, s, xb)) for s in opts_s]
            out = (t_a, t_a_hat, t_b, options)
        self._pair_cache[key] = out
        return out

    def plan_pair(self, view: ClusterView, j: int, p: int) -> PairPlan | None:
        """Algorithm 2 for pending job ``j`` beside running job ``p`` (None: ``p`` has no GPU for ``j``)."""
        singles = view.single_gpus_of(p)
        if len(singles) == 0:
            return None
        terms = self._pair_terms(view, j, p, singles)
        if terms is None:
            return None
        t_a, t_a_hat, t_b, options = terms
        i_a = float(self._remaining[p]) if len(self._remaining) > p else float(view.remaining_now()[p])
        i_b = view.remaining(j)
        if not (i_a > 0 and math.isfinite(t_a)):
            return None
        return best_sub_batch(t_a, t_a_hat, i_a, t_b, options, i_b)

    def share(self, view: ClusterView, j: int) -> Action | None:
        need = int(view.req_gpus[j])
        holders = np.unique(view.tenants(view.single_gpus())[:, 0])
        cands: list[tuple[float, int, PairPlan]] = []
        for p in holders.tolist():
            plan = self.plan_pair(view, j, p)
            if plan is not None and plan.share:
                cands.append((plan.t, p, plan))
        if not cands:
            return None
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
