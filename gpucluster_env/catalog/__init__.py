"""Hardware and workload catalogs, and the interference model the engine treats as ground truth.

A :class:`Catalog` bundles the GPU types, the models and an interference model; scenarios pick one and the
engine reads all its numbers from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..hardware import GPUType
from ..interference import FeatureInterference, InterferenceModel
from ..workloads import ModelProfile
from .gpus import GPU_TYPES
from .models import MODELS


@dataclass(frozen=True)
class Catalog:
    """GPU types, models and the true interference model of a simulated world."""

    gpu_types: Mapping[str, GPUType] = field(default_factory=lambda: dict(GPU_TYPES))
    models: Mapping[str, ModelProfile] = field(default_factory=lambda: dict(MODELS))
    interference: InterferenceModel = field(default_factory=FeatureInterference)

    def gpu_type(self, name: str) -> GPUType:
        try:
            return self.gpu_types[name]
        except KeyError:
            raise ValueError(
                f"unknown GPU type {name!r}; known types: {', '.join(sorted(self.gpu_types))}"
            ) from None

    def model(self, name: str) -> ModelProfile:
        try:
            return self.models[name]
        except KeyError:
            raise ValueError(f"unknown model {name!r}; known models: {', '.join(sorted(self.models))}") from None

    def model_speed(self, model: ModelProfile, gpu_type: str) -> float:
        """Throughput of ``model`` on ``gpu_type`` relative to the reference GPU (V100)."""
        if gpu_type in model.speed:
            return float(model.speed[gpu_type])
        return float(self.gpu_type(gpu_type).speed)

    def with_interference(self, interference: InterferenceModel) -> Catalog:
        return Catalog(self.gpu_types, self.models, interference)


def default_catalog() -> Catalog:
    """The catalog scenarios use unless told otherwise."""
    return Catalog()


__all__ = ["Catalog", "GPU_TYPES", "MODELS", "default_catalog"]
