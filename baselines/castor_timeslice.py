"""Temporal GPU sharing (time-slicing without MPS) as an interference model, for castor §8 / §9.5's ablation.

Castor §8 (Fig. 8) measures that a pair's interference ratio under the default time-sliced sharing is about
1.75x (BERT: MPS lower "by up to 43%") to 1.92x (a second pair) its value under MPS spatial sharing.
:class:`TimeSliceInterference` wraps the true (MPS) model and scales each ratio by ``ratio`` (default 1.75),
so an episode built on :func:`timeslice_catalog` simulates a cluster that shares GPUs by time-slicing. It is a
world setting, not an agent: pass the catalog to the environment (``GPUClusterEnv(..., catalog=...)`` or
``run_episode(..., env_kwargs={"catalog": timeslice_catalog()})``).
"""

from __future__ import annotations

from gpucluster_env.catalog import Catalog, default_catalog
from gpucluster_env.interference import InterferenceModel
from gpucluster_env.workloads import ModelProfile

TIMESLICE_RATIO = 1.75
"""xi(time-slicing) / xi(MPS), castor §8 Fig. 8(a) (MPS lower by up to 43%: 1 / 0.57)."""


class TimeSliceInterference:
    """``xi_ts = ratio * xi_mps`` for both jobs of every pair (always >= 1)."""

    def __init__(self, base: InterferenceModel, ratio: float = TIMESLICE_RATIO) -> None:
        if not (ratio >= 1.0):
            raise ValueError(f"time-slicing ratio must be >= 1, got {ratio}")
        self.base = base
        self.ratio = float(ratio)

    def pair_xi(self, a: ModelProfile, b: ModelProfile, gpu_type: str) -> tuple[float, float]:
        xa, xb = self.base.pair_xi(a, b, gpu_type)
        return max(1.0, self.ratio * xa), max(1.0, self.ratio * xb)


def timeslice_catalog(catalog: Catalog | None = None, ratio: float = TIMESLICE_RATIO) -> Catalog:
    """``catalog`` (default: the shipped one) with its interference model switched to time-slicing."""
    cat = catalog or default_catalog()
    return cat.with_interference(TimeSliceInterference(cat.interference, ratio))
