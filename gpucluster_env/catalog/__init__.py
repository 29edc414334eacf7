"""Hardware and workload catalogs, and the interference model the engine treats as ground truth.

A :class:`Catalog` bundles the GPU types, the models and an interference model; scenarios pick one and the
engine reads all its numbers from it. The default catalog's numbers are calibrated on public measurements
(Gavel, Pollux, ElasticFlow, Lucid's RTX 3090 pairs; see :mod:`.gpus`, :mod:`.models`, :mod:`.xi_model`,
:mod:`.lucid_pairs`); its interference model is
:class:`.xi_model.MeasuredInterference`. Castor's XGBoost predictor of xi for agents is in :mod:`.predictor`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..hardware import GPUType
from ..interference import InterferenceModel
from ..workloads import ModelProfile
from .gpus import GPU_TYPES
from .models import MODELS
from .solo import MeasuredSolo
from .xi_model import MeasuredInterference, shipped_demand_exponent, type_demand


@dataclass(frozen=True)
class Catalog:
    """GPU types, models and the true interference model of a simulated world."""

    gpu_types: Mapping[str, GPUType] = field(default_factory=lambda: dict(GPU_TYPES))
    models: Mapping[str, ModelProfile] = field(default_factory=lambda: dict(MODELS))
    interference: InterferenceModel = field(default_factory=MeasuredInterference)
    solo: MeasuredSolo = field(default_factory=MeasuredSolo)
    """Gavel's measured solo throughputs (:mod:`.solo`), used where they exist instead of the fitted model."""

    def gpu_type(self, name: str) -> GPUType:
        """The GPU type called ``name``; ``ValueError`` listing the known ones otherwise."""
        try:
            return self.gpu_types[name]
        except KeyError:
            raise ValueError(
                f"unknown GPU type {name!r}; known types: {', '.join(sorted(self.gpu_types))}"
            ) from None

    def model(self, name: str) -> ModelProfile:
        """The model called ``name``; ``ValueError`` listing the known ones otherwise."""
        try:
            return self.models[name]
        except KeyError:
            known = ", ".join(sorted(self.models))
            raise ValueError(f"unknown model {name!r}; known models: {known}") from None

    def model_speed(self, model: ModelProfile, gpu_type: str) -> float:
        """Throughput of ``model`` on ``gpu_type`` relative to the reference GPU (V100): the model's own entry
        (``ModelProfile.speed``) if it has one, else the speed measured for it on the type (``GPUType.model_speed``),
        else the type's generic speed."""
        if gpu_type in model.speed:
            return float(model.speed[gpu_type])
        g = self.gpu_type(gpu_type)
        return float(g.model_speed.get(model.name, g.speed))

    def speed_measured(self, model: ModelProfile, gpu_type: str) -> bool:
        """Whether :meth:`model_speed` of ``model`` on ``gpu_type`` is a per-model number (not the generic one)."""
        return gpu_type in model.speed or model.name in self.gpu_type(gpu_type).model_speed

    def model_demand(self, p: ModelProfile, gpu_type: str) -> float:
        """Fraction in (0, 1] of a ``gpu_type`` GPU that ``p`` keeps busy running alone
        (:mod:`.demand`: the reference demand ``p.gpu_demand`` scaled by the type's compute and memory
        bandwidth, with the exponent of the interference table in use); the MPS share model's ``d``
        (:func:`gpucluster_env.performance.apply_shares`)."""
        self.gpu_type(gpu_type)
        inter = self.interference
        exponent = inter.demand_exponent if isinstance(inter, MeasuredInterference) else shipped_demand_exponent()
        return type_demand(p, gpu_type, exponent, self.gpu_types)

    def solo_scale(self, p: ModelProfile, batch: int, gpu_type: str, n_gpus: int, consolidated: bool,
                   modelled_s: float) -> float:
        """How much longer a measured configuration runs than the fitted model says: Gavel's measured
        iteration time of ``p`` at per-GPU ``batch`` alone on ``n_gpus`` GPUs of ``gpu_type`` (on the fewest
        nodes when ``consolidated``) over ``modelled_s``, the performance model's time of the same gang at
        accumulation 1; 1.0 where Gavel did not measure it, ``inf`` where it measured zero (the job cannot run
        there). The engine scales the copy's constants by it (:mod:`.solo`)."""
        measured = self.solo.iter_s(p.name, batch, gpu_type, n_gpus, consolidated)
        if measured is None:
            return 1.0
        return measured / modelled_s

    def with_interference(self, interference: InterferenceModel) -> Catalog:
        """A copy of this catalog with another ground-truth interference model."""
        return Catalog(self.gpu_types, self.models, interference, self.solo)

    def with_solo(self, solo: MeasuredSolo) -> Catalog:
        """A copy of this catalog with another table of measured solo throughputs (``MeasuredSolo(enabled=
        False)``: the fitted model everywhere)."""
        return Catalog(self.gpu_types, self.models, self.interference, solo)


    def with_gpu_types(self, *types: GPUType) -> Catalog:
        """A copy of this catalog with ``types`` added (or replacing those of the same name), each a declaration
        as :func:`.gpus.declare` makes: its per-model speeds, measured pairs and interference group come with it.
        The default interference model is rebound to the new set of types (for their demands and groups)."""
        gpu_types = {**self.gpu_types, **{g.name: g for g in types}}
        inter = self.interference
        if isinstance(inter, MeasuredInterference):
            inter = inter.with_gpu_types(gpu_types)
        return Catalog(gpu_types, self.models, inter, self.solo)


def default_catalog() -> Catalog:
    """The catalog scenarios use unless told otherwise: the declared GPU types (:data:`.gpus.GPU_TYPES`), the
    models, the measured interference and solo tables."""
    return Catalog()


__all__ = ["Catalog", "GPU_TYPES", "MODELS", "MeasuredInterference", "MeasuredSolo", "default_catalog"]
