"""Shared fixtures: a small catalog with its own numbers (independent of the shipped catalog, which is being
recalibrated), job-table and engine builders."""

from __future__ import annotations

import os
from collections.abc import Callable

import pandas as pd
import pytest

from gpucluster_env.catalog import Catalog
from gpucluster_env.engine import ClusterEngine, EngineConfig
from gpucluster_env.hardware import ClusterSpec, GPUType
from gpucluster_env.interference import ConstantInterference, InterferenceModel
from gpucluster_env.workloads import ModelProfile

# One OpenMP thread per test worker: the suite runs two workers on two cores, and XGBoost's and torch's thread
# pools would oversubscribe them (measured: the MaskablePPO test took 181 s instead of 9 s with another process
# busy). ``import gpucluster_env`` loads neither library, so this is set before any test module imports them.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

TEST_GPUS = {
    # intra-node bandwidth above the inter-node 12.5 GB/s, so more nodes never communicate faster
    "fast": GPUType("fast", memory_gb=16.0, fp32_tflops=20.0, mem_bw_gbps=900.0, pcie_gen=4,
                    intra_node_bw_gbps=100.0, speed=2.0),
    "slow": GPUType("slow", memory_gb=8.0, fp32_tflops=10.0, mem_bw_gbps=450.0, pcie_gen=3,
                    intra_node_bw_gbps=50.0, speed=1.0),
}

TEST_MODELS = {
    # t_comp(32) = 0.32 s on the reference: 0.16 s on fast, 0.32 s on slow; 4.2 GB at batch 32
    "a": ModelProfile("a", batch_size=32, batch_sizes=(32,), alpha_s=0.0, beta_s=0.01, grad_mb=100.0,
                      alpha_comm_s=0.002, delta=2.0, mem_base_gb=1.0, mem_per_sample_gb=0.1, gpu_demand=0.9,
                      speed={"fast": 2.0, "slow": 1.0}),
    # alpha > 0 (LISS differs from pacing); 2.6 GB at batch 16
    "b": ModelProfile("b", batch_size=16, batch_sizes=(16,), alpha_s=0.04, beta_s=0.02, grad_mb=200.0,
                      alpha_comm_s=0.003, delta=1.5, mem_base_gb=1.0, mem_per_sample_gb=0.1, gpu_demand=0.6,
                      speed={"fast": 3.0, "slow": 1.0}),
    # memory hungry: 2 + 0.5 * b GB; batch 32 needs s = 2 on fast (10 GB), s = 4 on slow (6 GB)
    "big": ModelProfile("big", batch_size=32, batch_sizes=(32,), alpha_s=0.01, beta_s=0.005, grad_mb=400.0,
                        alpha_comm_s=0.002, delta=2.0, mem_base_gb=2.0, mem_per_sample_gb=0.5, gpu_demand=1.0,
                        speed={"fast": 2.0, "slow": 1.0}),
}


class PairXi:
    """Interference given per (model, partner model) pair, the same on every GPU type."""

    def __init__(self, table: dict[tuple[str, str], float], default: float = 1.0) -> None:
        self.table, self.default = table, default

    def pair_xi(self, a: ModelProfile, b: ModelProfile, gpu_type: str) -> tuple[float, float]:
        get = self.table.get
        return get((a.name, b.name), self.default), get((b.name, a.name), self.default)


def make_catalog(interference: InterferenceModel | float = 1.5) -> Catalog:
    if not hasattr(interference, "pair_xi"):
        interference = ConstantInterference(float(interference))  # type: ignore[arg-type]
    return Catalog(gpu_types=dict(TEST_GPUS), models=dict(TEST_MODELS), interference=interference)


def make_jobs(rows: list[dict]) -> pd.DataFrame:
    """Job table from dicts; defaults: submit 0, 1 GPU, model 'a' at its batch size, 100 iterations."""
    out = []
    for i, r in enumerate(rows):
        d = {"job_id": f"j{i}", "submit_s": 0.0, "num_gpus": 1, "model": "a", "iterations": 100.0}
        d.update(r)
        d.setdefault("batch_size", TEST_MODELS[d["model"]].batch_size if d["model"] in TEST_MODELS else 32)
        out.append(d)
    return pd.DataFrame(out)


@pytest.fixture(scope="session")
def build() -> Callable[..., ClusterEngine]:
    """``build(groups, rows, xi=1.5, **config)``: an engine on ``ClusterSpec.from_groups(groups)``."""

    def _build(groups, rows, xi: InterferenceModel | float = 1.5, **config) -> ClusterEngine:
        cluster = ClusterSpec.from_groups(groups)
        return ClusterEngine(cluster, make_jobs(rows), make_catalog(xi), EngineConfig(**config))

    return _build
