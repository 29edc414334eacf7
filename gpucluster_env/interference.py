"""Colocation interference: the interference ratio xi of two jobs sharing a GPU through MPS.

``xi >= 1`` multiplies a colocated worker's iteration time (Castor eq. 4-5; the engine's
``EngineConfig.interference_scope`` may restrict it to the compute term). An :class:`InterferenceModel` gives
the free-competition ratio of a pair on a GPU type (both jobs at 100% MPS active-thread share); the MPS shares
then change it with :func:`gpucluster_env.performance.apply_shares`: shares that overlap less relieve
contention, and a job's speed never falls when its own share rises, and never rises when its partner's share
rises (DESIGN.md).
"""

from __future__ import annotations

from typing import Protocol

from .workloads import ModelProfile


class InterferenceModel(Protocol):
    """Free-competition interference ratios of a job pair on one GPU type."""

    def pair_xi(self, a: ModelProfile, b: ModelProfile, gpu_type: str) -> tuple[float, float]:
        """``(xi_a, xi_b)``: each job's slowdown when the two share a GPU at 100% + 100% MPS share."""
        ...


class FeatureInterference:
    """A simple calibrated default: contention grows with the partner's GPU demand and one's own compute
    intensity. ``xi_a = 1 + k * demand_b * (0.4 + 0.6 * compute_intensity_a)``.

    Used where no measured pair exists and before a fitted model is available.
    """

    def __init__(self, k: float = 0.8) -> None:
        self.k = k

    def pair_xi(self, a: ModelProfile, b: ModelProfile, gpu_type: str) -> tuple[float, float]:
        xa = 1.0 + self.k * b.gpu_demand * (0.4 + 0.6 * a.features[0])
        xb = 1.0 + self.k * a.gpu_demand * (0.4 + 0.6 * b.features[0])
        return xa, xb


class ConstantInterference:
    """Every pair slows both jobs by the same fixed ``xi`` (sjf-bsbf Fig. 6(b)'s xi-injection experiment)."""

    def __init__(self, xi: float) -> None:
        if not (xi >= 1.0):
            raise ValueError(f"constant interference ratio must be >= 1, got {xi}")
        self.xi = float(xi)

    def pair_xi(self, a: ModelProfile, b: ModelProfile, gpu_type: str) -> tuple[float, float]:
        return self.xi, self.xi
