"""The engine's default (ground-truth) interference: measured colocation slowdowns, else a fitted regression on
the pair's demands.

``MeasuredInterference.pair_xi(a, b, gpu)`` gives the free-competition ratios (100% + 100% MPS share):

1. **measured**: both models map to Gavel job types (:data:`.fit.GAVEL_JOB`) and Gavel measured that pair on
   ``gpu`` (K80, P100, V100): ``xi = solo steps/s / colocated steps/s`` (Gavel, OSDI'20), exactly; or the type's
   declaration (``GPUType.xi_pairs``, :data:`.gpus.DECLARED`) lists the pair;
2. **regression** otherwise, on the two models' demands on ``gpu`` (:mod:`.demand`):
   ``log xi_a = w . [e, e ci_a, e d_b, m_a m_b] + o_ab`` with ``e = max(0, d_a + d_b - 1)`` the pair's excess
   demand (a pair whose combined demand is under 1 keeps only the memory-contention term ``m_a m_b``, the
   activation shares of the footprints), ``ci_a`` the compute intensity; ``w`` is fitted by least squares to
   every measured 1-GPU Gavel pair on K80/P100/V100 (demands taken on the pair's type) and every Lucid pair
   on the RTX 3090 (demands its measured solo ``gpu_util``; :mod:`.lucid_pairs`, S-Lab License 1.0: only fitted
   numbers are shipped). ``o_ab`` (**anchored**) is the pair's mean residual within one architecture group:
   Gavel's on K80/P100/V100, Lucid's on the GA102 types (RTX 3090, A40, A6000; each with its own demands): the
   types the table lists for the group and every type whose declaration names it (``GPUType.xi_group``).
   It is 0 on every other type: offsets measured on one generation do not carry to another
   (:func:`.xi_fit.offset_transfer`, docs/catalog.md), while the demand regression does.

All values are clipped to ``>= 1`` (measurement noise gives a few ratios a hair below 1). The table is the
project's own fitted numbers, written to ``gpucluster_env/data/xi_table.json`` by ``gpucluster catalog
fit-interference`` (with the demand exponent of :func:`.demand.fit_exponent` and the held-out-by-pair error of
the regression); the MPS shares are then applied by :func:`gpucluster_env.performance.apply_shares`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..hardware import GPUType
from ..interference import FeatureInterference
from ..performance import memory_intensity
from ..workloads import ModelProfile
from .demand import REFERENCE_TYPE, demand_on
from .gpus import GPU_TYPES

XI_TABLE_FILE = "xi_table.json"
REGRESSION_TERMS = ("excess", "excess*ci_a", "excess*demand_b", "mem_a*mem_b")


def regression_terms(ci_a: float, mem_a: float, mem_b: float, demand_a: float, demand_b: float) -> list[float]:
    """The regression's inputs (:data:`REGRESSION_TERMS`) for ``xi_a`` of a pair from job ``a``'s compute
    intensity, both jobs' memory intensities and both demands on the pair's GPU type. Castor's predictor
    (:mod:`.predictor`) takes its baseline from the same terms."""
    excess = max(0.0, demand_a + demand_b - 1.0)
    return [excess, excess * ci_a, excess * demand_b, mem_a * mem_b]


def regression_row(a: ModelProfile, b: ModelProfile, demand_a: float, demand_b: float,
                   batch_a: float | None = None, batch_b: float | None = None) -> np.ndarray:
    """The regression's inputs for ``xi_a`` of the pair (a, b) at the given demands on the pair's GPU type
    (see :data:`REGRESSION_TERMS`)."""
    def mem(p: ModelProfile, batch: float | None) -> float:
        bs = p.batch_size if batch is None else batch
        return float(memory_intensity(p.mem_base_gb, p.mem_per_sample_gb, bs))

    return np.array(regression_terms(a.features[0], mem(a, batch_a), mem(b, batch_b), demand_a, demand_b))


def regression_log_xi(weights: np.ndarray | list[float], row: np.ndarray | list[float]) -> float:
    """The regression's ``log xi`` (before the pair's offset): ``w . row`` summed term by term in a fixed order
    with Python floats, never through a BLAS product, whose kernel (chosen per CPU) may round differently."""
    total = 0.0
    for w, r in zip(np.asarray(weights, float).tolist(), np.asarray(row, float).tolist(), strict=True):
        total += w * r
    return total


def type_demand(p: ModelProfile, gpu_type: str, exponent: float,
                gpu_types: Mapping[str, GPUType] | None = None) -> float:
    """``p``'s demand on ``gpu_type`` (:func:`.demand.demand_on`) when ``gpu_types`` (the declared types,
    :data:`.gpus.GPU_TYPES`, by default) holds it and the reference type; its reference demand otherwise."""
    types = GPU_TYPES if gpu_types is None else gpu_types
    if gpu_type not in types or REFERENCE_TYPE not in types:
        return float(p.gpu_demand)
    return demand_on(p, types[gpu_type], types[REFERENCE_TYPE], exponent)


@lru_cache(maxsize=8)
def package_json(name: str) -> dict[str, Any] | None:
    """The package's data file ``gpucluster_env/data/NAME`` as JSON (read once per process; the same object is
    returned to every caller, who must not change it), or None when a build lacks it."""
    try:
        text = resources.files("gpucluster_env").joinpath("data", name).read_text()
    except (FileNotFoundError, OSError):
        return None
    return json.loads(text)


def _cached_package_table() -> dict[str, Any] | None:
    return package_json(XI_TABLE_FILE)


def shipped_demand_exponent() -> float:
    """The demand exponent ``k`` of the shipped table (0, demand the same on every type, if it is absent)."""
    table = _cached_package_table()
    return float(table.get("demand_exponent", 0.0)) if table else 0.0


class MeasuredInterference:
    """Gavel-measured pair slowdowns where they exist, else a regression on demands fitted to them (module doc)."""

    def __init__(self, table: dict[str, Any] | None = None, path: Path | str | None = None,
                 gpu_types: Mapping[str, GPUType] | None = None) -> None:
        if path is not None:
            try:
                table = json.loads(Path(path).read_text())
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not valid JSON ({e.msg})") from None
        elif table is None:
            table = _cached_package_table()
        self._fallback = FeatureInterference() if table is None else None
        table = table or {}
        for key in ("measured", "offsets", "pooled", "demand_exponent"):
            if table and key not in table:
                raise ValueError(f"{path or XI_TABLE_FILE}: missing field {key!r}")
        self.measured: dict[str, dict[str, float]] = table.get("measured", {})
        self.gpu_types = gpu_types
        """The GPU types whose specs, measured pairs (``GPUType.xi_pairs``) and group (``GPUType.xi_group``) this
        model reads; None: the declared ones (:data:`.gpus.GPU_TYPES`), read at each lookup."""
        self.offsets: dict[str, dict[str, float]] = {}
        """GPU type -> ``"a|b"`` -> the pair's offset on that type (its architecture group's mean residual), for
        the types the table lists; a type whose declaration names the group (``xi_group``) gets it too."""
        self.group_offsets: dict[str, dict[str, float]] = {}
        """Group name -> ``"a|b"`` -> the group's pair offset."""
        for name, group in table.get("offsets", {}).items():
            if not isinstance(group, dict) or "types" not in group or "pairs" not in group:
                raise ValueError(f"{path or XI_TABLE_FILE}: offsets/{name}: needs fields 'types' and 'pairs'")
            self.group_offsets[name] = {k: float(v) for k, v in group["pairs"].items()}
            for t in group["types"]:
                self.offsets[t] = self.group_offsets[name]
        self._table = table
        self.pooled = np.asarray(table.get("pooled", [0.0] * len(REGRESSION_TERMS)), float)
        self.demand_exponent = float(table.get("demand_exponent", 0.0))

    def with_gpu_types(self, gpu_types: Mapping[str, GPUType]) -> MeasuredInterference:
        """The same table read against another set of GPU types (a catalog with types added)."""
        return MeasuredInterference(table=self._table or None, gpu_types=gpu_types)

    def _types(self) -> Mapping[str, GPUType]:
        return GPU_TYPES if self.gpu_types is None else self.gpu_types

    def measured_xi(self, a: str, b: str, gpu_type: str) -> float | None:
        """``xi_a`` measured for the pair on ``gpu_type``: the table's (Gavel's pairs), else the type's declared
        ``xi_pairs``; None when neither has it."""
        key = f"{a}|{b}"
        x = self.measured.get(gpu_type, {}).get(key)
        if x is None:
            g = self._types().get(gpu_type)
            x = g.xi_pairs.get(key) if g is not None else None
        return x

    def pair_offsets(self, gpu_type: str) -> Mapping[str, float]:
        """The pair offsets applied on ``gpu_type``: the table's for the types it lists, else those of the group
        the type's declaration names (``xi_group``), else none."""
        if gpu_type in self.offsets:
            return self.offsets[gpu_type]
        g = self._types().get(gpu_type)
        return self.group_offsets.get(g.xi_group, {}) if g is not None and g.xi_group else {}

    def source_of(self, a: str, b: str, gpu_type: str) -> str:
        """Which rule gives ``xi_a`` for the pair: ``measured``, ``anchored`` or ``regression``."""
        if self.measured_xi(a, b, gpu_type) is not None:
            return "measured"
        if f"{a}|{b}" in self.pair_offsets(gpu_type):
            return "anchored"
        return "regression"

    def demand(self, p: ModelProfile, gpu_type: str) -> float:
        """``p``'s demand on ``gpu_type`` under this table's exponent (:func:`type_demand`)."""
        return type_demand(p, gpu_type, self.demand_exponent, self.gpu_types)

    def xi_one(self, a: ModelProfile, b: ModelProfile, gpu_type: str) -> float:
        """``xi_a`` of ``a`` colocated with ``b`` on ``gpu_type`` at free competition (>= 1)."""
        if self._fallback is not None:
            return self._fallback.pair_xi(a, b, gpu_type)[0]
        x = self.measured_xi(a.name, b.name, gpu_type)
        if x is None:
            row = regression_row(a, b, self.demand(a, gpu_type), self.demand(b, gpu_type))
            offset = self.pair_offsets(gpu_type).get(f"{a.name}|{b.name}", 0.0)
            x = math.exp(regression_log_xi(self.pooled, row) + offset)
        return max(1.0, float(x)) if math.isfinite(x) else 1.0

    def pair_xi(self, a: ModelProfile, b: ModelProfile, gpu_type: str) -> tuple[float, float]:
        return self.xi_one(a, b, gpu_type), self.xi_one(b, a, gpu_type)
