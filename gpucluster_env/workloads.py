"""Workload description: the constants of one training model (:class:`ModelProfile`).

The formulas that turn these constants into memory footprints, iteration times (Castor eq. 1-3) and
interference under MPS shares live in one module, :mod:`gpucluster_env.performance`;
:mod:`gpucluster_env.interference` gives the free-competition interference ratio of a pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


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
