"""Castor-timeslice: Castor for a cluster that shares GPUs by time-slicing instead of MPS, and that world as an
interference model (castor §8, §9.5's sharing-technique ablation).

Castor §8 (Fig. 8) measures that a pair's interference ratio under the default time-sliced sharing is about
1.75x (BERT: MPS lower "by up to 43%") to 1.92x (a second pair) its value under MPS spatial sharing.
:class:`TimeSliceInterference` wraps the true (MPS) model and scales each ratio by ``ratio`` (default 1.75),
so an episode built on :func:`timeslice_catalog` simulates a cluster that shares GPUs by time-slicing. It is a
world setting, not an agent: pass the catalog to the environment (``GPUClusterEnv(..., catalog=...)`` or
``run_episode(..., env_kwargs={"catalog": timeslice_catalog()})``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from gpucluster_env.baselines.castor import Castor
from gpucluster_env.baselines.parts.xi_predictor import XiPredictor

from gpucluster_env.catalog import Catalog, default_catalog
from gpucluster_env.interference import InterferenceModel
from gpucluster_env.policy import register_policy
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


@register_policy
class CastorTimeSlice(Castor):
    """Castor for a cluster that shares GPUs by time-slicing instead of MPS (castor §8): its predicted ratios
    are scaled by the time-slicing ratio, and it runs on :func:`timeslice_catalog` (declared
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
        return {"catalog": timeslice_catalog()}
