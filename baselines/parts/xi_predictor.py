"""What the sharing schedulers (Castor, Gandiva, the "+gimbal" coordination) know of interference: a predictor of
a pair's interference ratios (castor §6: XGBoost on job features, the catalog's fitted model), never the engine's
ground truth, and the feature-formula stand-in used only while the catalog ships no fitted predictor."""

from __future__ import annotations

import warnings
from typing import Protocol

from gpucluster_env.interference import FeatureInterference
from gpucluster_env.workloads import ModelProfile

PREDICTOR_VERSION = "xi-predictor-2"
"""The ``version`` of every registered policy that decides with the catalog's fitted predictor (the leaderboard
records it): 2 = the predictor learns the residual over the demand regression (``catalog.predictor``), so
records made with the trees-only predictor are stale."""


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
