"""Castor-oracle: Castor (SJF-BSBF) with the engine's true interference ratios instead of the XGBoost predictor,
castor §9.5's interference-prediction ablation (what a perfect predictor would give)."""

from __future__ import annotations

from typing import ClassVar

from gpucluster_env.baselines.castor import Castor

from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import register_policy


@register_policy
class CastorOracle(Castor):
    """Castor with the engine's true interference ratios instead of the predictor (upper bound on what a
    perfect predictor would give)."""

    name: ClassVar[str] = "castor-oracle"
    description: ClassVar[str] = "Castor (SJF-BSBF) with the true xi instead of the XGBoost predictor"
    paper: ClassVar[str] = "castor §9.5 (IR prediction ablation)"
    version = None
    """Not Castor's: the oracle never consults the predictor, so a refit of the predictor leaves its records
    current (its version is the package's, as for every reference policy without one)."""

    def pair_xi(self, view: ClusterView, a: int, b: int, gpu_type: int) -> tuple[float, float]:
        return view.true_pair_xi(a, b, view.type_names[int(gpu_type)])
