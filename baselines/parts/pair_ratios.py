"""Predicted free-competition interference ratios of the model pairs of one run, as Gimbal's coordinator and
Gandiva's introspection read them (:class:`~.gimbal_search.ThroughputModel`): the predictor's ratio (Castor's
XGBoost, :func:`~gpucluster_env.baselines.castor.default_predictor`), at least 1, never the engine's truth.
"""

from __future__ import annotations

import weakref

import numpy as np
from gpucluster_env.baselines.parts.xi_predictor import XiPredictor, default_predictor

from gpucluster_env.engine.view import ClusterView


class PairRatios:
    """Predicted free-competition ratios of every model pair on every GPU type of one run (the predictor's,
    at least 1), predicted in one batch at the first question. With the catalog's predictor it is made once per
    run (:func:`run_ratios`), so Gandiva's introspection and Gimbal's coordinator share one loaded predictor and
    one table."""

    def __init__(self, view: ClusterView, predictor: XiPredictor | None = None) -> None:
        self._view = weakref.ref(view)  # weak: _RUN_RATIOS is keyed by the view, which must die with its run
        self._predictor = predictor
        self._xi: dict[tuple[int, int, int], tuple[float, float]] = {}
        self._warmed = False

    @property
    def view(self) -> ClusterView:
        """The run's view (held weakly, so that a finished run's view, engine and state can be freed)."""
        v = self._view()
        if v is None:
            raise RuntimeError("PairRatios: the run's view no longer exists")
        return v

    @property
    def predictor(self) -> XiPredictor:
        """The predictor (the catalog's, loaded at the first question, unless one was given)."""
        if self._predictor is None:
            self._predictor = default_predictor()
        return self._predictor

    def _warm(self) -> None:
        """Predict every pair of the episode's models on every GPU type in one batch when the predictor can
        (the XGBoost predictor's ``predict_many``: one call instead of one per pair)."""
        v = self.view
        many = getattr(self.predictor, "predict_many", None)
        if many is None:
            return
        first: dict[int, int] = {}
        for j in range(v.n_jobs):
            first.setdefault(v.model_index(j), j)
        ms = sorted(first)
        pairs = [(a, b) for i, a in enumerate(ms) for b in ms[i:]]
        for t in np.unique(v.gpu_type).tolist():
            pred = many([(v.model(first[a]), v.model(first[b])) for a, b in pairs], v.type_names[t])
            for (a, b), (xa, xb) in zip(pairs, np.asarray(pred).tolist(), strict=True):
                self._xi[(a, b, t)] = (max(1.0, float(xa)), max(1.0, float(xb)))
                self._xi[(b, a, t)] = (max(1.0, float(xb)), max(1.0, float(xa)))

    def free_xi(self, a: int, b: int, gpu_type: int) -> float:
        """Predicted free-competition ratio of job ``a`` beside job ``b`` on a GPU of type index ``gpu_type``."""
        v = self.view
        if not self._warmed:
            self._warmed = True
            self._warm()
        key = (v.model_index(a), v.model_index(b), int(gpu_type))
        if key not in self._xi:
            xa, xb = self.predictor.predict_pair(v.model(a), v.model(b), v.type_names[key[2]])
            self._xi[key] = (max(1.0, float(xa)), max(1.0, float(xb)))
        return self._xi[key][0]


_RUN_RATIOS: weakref.WeakKeyDictionary[ClusterView, PairRatios] = weakref.WeakKeyDictionary()


def run_ratios(view: ClusterView) -> PairRatios:
    """The catalog predictor's :class:`PairRatios` of the run ``view`` watches (one per view, so per run)."""
    r = _RUN_RATIOS.get(view)
    if r is None:
        r = _RUN_RATIOS[view] = PairRatios(view)
    return r
