"""Colocation interference: the interference ratio xi of two jobs sharing a GPU through MPS.

``xi >= 1`` multiplies a colocated worker's iteration time (Castor eq. 4-5; the engine's
``EngineConfig.interference_scope`` may restrict it to the compute term). An :class:`InterferenceModel` gives
the free-competition ratio of a pair on a GPU type (both jobs at 100% MPS active-thread share); the MPS shares
then change it with :func:`apply_shares`: shares that overlap less relieve contention, and a job's speed never
falls when its own share rises, and never rises when its partner's share rises (DESIGN.md).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

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


MEM_CONTENTION = 0.1
"""Fraction of a pair's free-competition slowdown ``xi_free - 1`` that MPS shares cannot remove: the
memory-contention term (memory bandwidth, L2 and the copy engines are shared whatever the SM limits). No data
set at hand measures pairs under split shares, so the size is a modelling assumption, chosen small as DESIGN.md
asks: with shares summing to at most 100% a pair that slows its partner 2x at free competition still costs it
10%. Gimbal Fig. 2a (four of five harmful pairs beat running in series at a 60% limit) is the qualitative
target."""


def apply_shares(
    xi_free: np.ndarray | float,
    demand_self: np.ndarray | float,
    share_self: np.ndarray | float,
    share_partner: np.ndarray | float,
    has_partner: np.ndarray | bool = True,
) -> np.ndarray | float:
    """Interference ratio of a worker under MPS active-thread shares (the one implementation; the engine
    tabulates it with :func:`gpucluster_env.engine.perf.xi_table`).

    A worker of demand ``d`` (the fraction of the GPU's SMs it keeps busy alone) at own share ``p`` uses
    ``u = min(p, d)`` of the GPU; its partner may use up to its share ``q``. The fraction of the worker's
    demand that the partner may contend for is the overlap ``o = max(0, u + q - 1) / d`` (1 at 100% + 100%,
    0 when ``p + q <= 1``). With ``m`` = :data:`MEM_CONTENTION`::

        pressure(p) = 1 + (xi_free - 1) * (m + (1 - m) * o(p)) * has_partner
        xi_raw(p)   = pressure(p) / min(1, p / d)
        xi          = max(xi_raw(p), xi_raw(1))

    ``min(1, p/d)`` is the own cap: alone (no partner) at share ``p`` a job runs at ``min(1, p/d)`` of its
    speed. At 100% + 100% ``xi = xi_free`` (the measured pair). The overlap shrinks as either share falls,
    down to the memory term ``1 + m (xi_free - 1)`` when the shares sum to at most 100%, so squeezing the
    partner speeds a worker beyond free competition (Gimbal §2.2, §4.1). The last line keeps a worker from
    ever running faster by giving up share: lowering ``p`` below ``d`` lowers the cap in proportion but can
    remove contention faster, and then the worker keeps its speed at full own share against the same
    partner share. So, by construction, a worker's speed never falls when its own share rises (``xi_raw``
    restricted to own shares ``<= d`` rises then falls at most once, and ``max`` with its value at ``p = 1``
    is its running maximum from above) and never rises when its partner's share rises (both terms grow
    with ``q``). The price: where ``max`` picks ``xi_raw(1)``, shares summing to at most 100% leave that
    worker more than its cap and the memory term.
    """
    xi_extra = np.asarray(xi_free, dtype=float) - 1.0
    d = np.asarray(demand_self, dtype=float)
    p = np.asarray(share_self, dtype=float)
    q = np.asarray(share_partner, dtype=float)
    has = np.asarray(has_partner)

    def pressure(u: np.ndarray) -> np.ndarray:
        o = np.maximum(0.0, u + q - 1.0) / d
        return 1.0 + xi_extra * (MEM_CONTENTION + (1.0 - MEM_CONTENTION) * o) * has

    out = np.maximum(pressure(np.minimum(p, d)) / np.minimum(1.0, p / d), pressure(d))
    return out if isinstance(out, np.ndarray) and out.ndim else float(out)
