"""Workload description: training models and their iteration-time model (Castor eq. 1-3).

A :class:`ModelProfile` holds the constants of one model; the functions below evaluate the performance model
for it. They are pure and numpy-friendly: the engine calls them on arrays of workers.

    t_comp(b)   = (alpha + beta * b) / speed_k                                   (Castor eq. 1)
    t_comm(n,m) = 0 if n == 1, else alpha_comm * (1 + log2 n) * m_factor + 2 (n-1)/n * M / bw  (eq. 2)
    t_iter      = (s-1) * t_comp(B/s) + (t_comp(B/s)^delta + t_comm^delta)^(1/delta)      (eq. 3)

``bw`` is the intra-node GPU bandwidth of the slowest type involved when the job sits on one node, else the
cluster's inter-node bandwidth; every extra node adds one ``alpha_comm`` of latency (``m_factor = m``).
Colocation slows a worker by its interference ratio xi, over the whole iteration (Castor eq. 4-5) or the
compute term only: :mod:`gpucluster_env.engine.perf` applies it, :mod:`gpucluster_env.interference` gives xi.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ModelProfile:
    """One training workload (a model with its dataset and optimizer).

    Times are seconds on the reference GPU (V100, speed 1.0). ``speed`` maps GPU type names to this model's
    throughput relative to the reference where known; other types fall back to the type's generic speed scaled
    by how compute-bound the model is. ``features`` are hardware indicators (compute intensity, memory
    intensity, communication share), each in [0, 1], used by interference predictors. ``gpu_demand`` is the
    fraction of a GPU's SMs the model keeps busy alone, used by the MPS-share model through
    :meth:`gpucluster_env.catalog.Catalog.model_demand` (which may make it depend on the GPU type).
    """

    name: str
    batch_size: int
    batch_sizes: tuple[int, ...]
    alpha_s: float
    beta_s: float
    grad_mb: float
    alpha_comm_s: float = 0.002
    delta: float = 2.0
    mem_base_gb: float = 1.0
    mem_per_sample_gb: float = 0.05
    features: tuple[float, float, float] = (0.5, 0.5, 0.3)
    gpu_demand: float = 0.9
    speed: Mapping[str, float] = field(default_factory=dict)
    family: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if self.batch_size <= 0:
            raise ValueError(f"model {self.name!r}: batch_size must be positive")
        if not (self.alpha_s >= 0 and self.beta_s > 0):
            raise ValueError(f"model {self.name!r}: need alpha_s >= 0 and beta_s > 0")
        if not (0 < self.gpu_demand <= 1):
            raise ValueError(f"model {self.name!r}: gpu_demand must lie in (0, 1]")
        if not (self.delta >= 1):
            raise ValueError(f"model {self.name!r}: delta must be >= 1")

    def memory_gb(self, per_gpu_batch: float | np.ndarray) -> float | np.ndarray:
        """GPU memory footprint of one worker processing ``per_gpu_batch`` samples per micro-step."""
        return self.mem_base_gb + self.mem_per_sample_gb * per_gpu_batch

    def t_comp(self, per_gpu_batch: float | np.ndarray, speed: float | np.ndarray) -> float | np.ndarray:
        """Compute time of one micro-step (Castor eq. 1) on a GPU of relative ``speed``."""
        return (self.alpha_s + self.beta_s * per_gpu_batch) / speed


def comm_time(
    model: ModelProfile, n_gpus: int, n_nodes: int, intra_bw_gbps: float, inter_bw_gbps: float
) -> float:
    """All-reduce time of one iteration (Castor eq. 2) for ``n_gpus`` workers over ``n_nodes`` nodes."""
    if n_gpus <= 1:
        return 0.0
    bw = intra_bw_gbps if n_nodes <= 1 else min(intra_bw_gbps, inter_bw_gbps)
    ring = 2.0 * (n_gpus - 1) / n_gpus * (model.grad_mb / 1000.0) / bw
    return model.alpha_comm_s * (1.0 + math.log2(n_gpus)) * max(1, n_nodes) + ring


def iteration_time(t_comp_micro: float, accumulation: int, t_comm: float, delta: float) -> float:
    """Castor eq. 3: ``s-1`` micro-steps of compute, then the last one overlapped with the all-reduce."""
    if t_comm <= 0.0:
        return accumulation * t_comp_micro
    overlap = (t_comp_micro**delta + t_comm**delta) ** (1.0 / delta)
    return (accumulation - 1) * t_comp_micro + overlap
