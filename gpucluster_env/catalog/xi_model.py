"""The engine's default (ground-truth) interference: measured colocation slowdowns, else a fitted regression.

``MeasuredInterference.pair_xi(a, b, gpu)`` gives the free-competition ratios (100% + 100% MPS share):

1. **measured**: both models map to Gavel job types (:data:`.fit.GAVEL_JOB`) and Gavel measured that pair on
   ``gpu`` (K80, P100, V100): ``xi = solo steps/s / colocated steps/s`` (Gavel, OSDI'20);
2. **transferred**: both models are Gavel-mapped, the GPU type is not measured (or the pair is missing there):
   the geometric mean of the pair's measured ratios on the types where it was measured;
3. **regression**: otherwise ``log xi_a = w . [1, ci_a, demand_b, ci_a demand_b, mem_a, mem_b, comm_a]`` with
   the model features of :mod:`.models`, fitted by least squares to every measured 1-GPU Gavel pair on that
   GPU type (pooled coefficients over K80/P100/V100 for other types).

All values are clipped to ``>= 1`` (measurement noise gives a few ratios a hair below 1). The table is the
project's own fitted numbers, written to ``gpucluster_env/data/xi_table.json`` by ``gpucluster catalog
fit-interference``; the MPS shares are then applied by :func:`gpucluster_env.interference.apply_shares`.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..interference import FeatureInterference
from ..workloads import ModelProfile

XI_TABLE_FILE = "xi_table.json"
REGRESSION_TERMS = ("1", "ci_a", "demand_b", "ci_a*demand_b", "mem_a", "mem_b", "comm_a")


def regression_row(a: ModelProfile, b: ModelProfile, batch_a: float | None = None,
                   batch_b: float | None = None) -> np.ndarray:
    """The regression's inputs for ``xi_a`` of the pair (a, b) (see :data:`REGRESSION_TERMS`)."""
    def mem(p: ModelProfile, batch: float | None) -> float:
        bs = p.batch_size if batch is None else batch
        return float(p.mem_per_sample_gb * bs / (p.mem_base_gb + p.mem_per_sample_gb * bs))

    ci_a, demand_b = a.features[0], b.gpu_demand
    return np.array([1.0, ci_a, demand_b, ci_a * demand_b, mem(a, batch_a), mem(b, batch_b), a.features[2]])


def _package_table() -> dict[str, Any] | None:
    try:
        text = resources.files("gpucluster_env").joinpath("data", XI_TABLE_FILE).read_text()
    except (FileNotFoundError, OSError):
        return None
    return json.loads(text)


@lru_cache(maxsize=1)
def _cached_package_table() -> dict[str, Any] | None:
    return _package_table()


class MeasuredInterference:
    """Gavel-measured pair slowdowns where they exist, else a regression fitted to them (see module doc)."""

    def __init__(self, table: dict[str, Any] | None = None, path: Path | str | None = None) -> None:
        if path is not None:
            try:
                table = json.loads(Path(path).read_text())
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not valid JSON ({e.msg})") from None
        elif table is None:
            table = _cached_package_table()
        self._fallback = FeatureInterference() if table is None else None
        table = table or {}
        for key in ("measured", "transfer", "regression", "pooled"):
            if table and key not in table:
                raise ValueError(f"{path or XI_TABLE_FILE}: missing field {key!r}")
        self.measured: dict[str, dict[str, float]] = table.get("measured", {})
        self.transfer: dict[str, float] = table.get("transfer", {})
        self.regression = {g: np.asarray(w, float) for g, w in table.get("regression", {}).items()}
        self.pooled = np.asarray(table.get("pooled", [0.0] * len(REGRESSION_TERMS)), float)

    def source_of(self, a: str, b: str, gpu_type: str) -> str:
        """Which rule gives ``xi_a`` for the pair: ``measured``, ``transferred`` or ``regression``."""
        key = f"{a}|{b}"
        if key in self.measured.get(gpu_type, {}):
            return "measured"
        if key in self.transfer:
            return "transferred"
        return "regression"

    def xi_one(self, a: ModelProfile, b: ModelProfile, gpu_type: str) -> float:
        """``xi_a`` of ``a`` colocated with ``b`` on ``gpu_type`` at free competition (>= 1)."""
        if self._fallback is not None:
            return self._fallback.pair_xi(a, b, gpu_type)[0]
        key = f"{a.name}|{b.name}"
        x = self.measured.get(gpu_type, {}).get(key)
        if x is None:
            x = self.transfer.get(key)
        if x is None:
            w = self.regression.get(gpu_type, self.pooled)
            x = math.exp(float(w @ regression_row(a, b)))
        return max(1.0, float(x)) if math.isfinite(x) else 1.0

    def pair_xi(self, a: ModelProfile, b: ModelProfile, gpu_type: str) -> tuple[float, float]:
        return self.xi_one(a, b, gpu_type), self.xi_one(b, a, gpu_type)
