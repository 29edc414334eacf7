"""Colocation interference: the interference ratio xi of two jobs sharing a GPU through MPS.

``xi >= 1`` multiplies a colocated worker's compute time (Castor eq. 4-5). An :class:`InterferenceModel` gives
the free-competition ratio of a pair on a GPU type (both jobs at 100% MPS active-thread share); the MPS shares
then scale it with :func:`apply_shares`, which keeps the monotonicity DESIGN.md asks for: a job's speed never
falls when its own share rises, and never rises when its partner's share rises.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .workloads import ModelProfile

SHARE_STEP = 0.1
"""Granularity of squeeze/swell: 10% of the GPU, as Gimbal §4 found best."""
MIN_SHARE = 0.1
MAX_SHARE = 1.0


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


def apply_shares(
    xi_free: np.ndarray | float,
    demand_self: np.ndarray | float,
    share_self: np.ndarray | float,
    share_partner: np.ndarray | float,
    has_partner: np.ndarray | bool = True,
    share_unit: float | None = None,
) -> np.ndarray | float:
    """Interference ratio under MPS shares.

    The partner's pressure scales the extra slowdown linearly with its share, and one's own share caps the
    fraction of SMs one may use (a job needing ``demand`` of the GPU is not slowed by a cap above it):

        xi = (1 + (xi_free - 1) * share_partner * has_partner) / min(1, share_self / demand_self)

    At 100% + 100% this is ``xi_free``; alone at 100% it is 1. ``share_unit``: when given, both shares are
    counted in that unit (tenths with 0.1) and the pressure is rounded as ``((xi_free - 1) * share_partner) *
    share_unit`` -- the order the engine's single-GPU copies have always used, kept so that their results stay
    the same bit for bit (multi-GPU copies use the order above).
    """
    xi_extra = np.asarray(xi_free) - 1.0
    if share_unit is None:
        pressure = 1.0 + xi_extra * np.asarray(share_partner) * np.asarray(has_partner)
    else:
        pressure = 1.0 + xi_extra * np.asarray(share_partner) * share_unit * np.asarray(has_partner)
        share_self = np.asarray(share_self) * share_unit
    cap = np.minimum(1.0, np.asarray(share_self) / np.asarray(demand_self))
    out = pressure / cap
    return out if isinstance(out, np.ndarray) and out.ndim else float(out)
