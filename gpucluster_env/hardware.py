"""Hardware description: GPU types, nodes and clusters.

Plain frozen data. A :class:`ClusterSpec` lists nodes, each holding GPUs of one named type; the engine turns it
into flat numpy arrays (one entry per GPU) when an episode starts. The catalog of GPU types with their numbers
lives in :mod:`gpucluster_env.catalog.gpus`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GPUType:
    """One kind of GPU, with the published specs the performance model needs.

    ``speed`` is a generic throughput relative to a V100 (1.0) for a compute-bound model; per-model speeds in
    the workload catalog override it where measured. ``estimated`` marks a type whose speed comes from specs
    (HadarE's initial estimate) rather than from a training measurement.
    """

    name: str
    memory_gb: float
    fp32_tflops: float
    mem_bw_gbps: float
    pcie_gen: int
    intra_node_bw_gbps: float
    speed: float
    estimated: bool = False
    source: str = ""

    def __post_init__(self) -> None:
        for attr in ("memory_gb", "fp32_tflops", "mem_bw_gbps", "intra_node_bw_gbps", "speed"):
            value = getattr(self, attr)
            if not (value > 0):
                raise ValueError(f"GPU type {self.name!r}: {attr} must be positive, got {value!r}")


@dataclass(frozen=True)
class NodeSpec:
    """A server: ``count`` GPUs of type ``gpu_type``."""

    gpu_type: str
    count: int

    def __post_init__(self) -> None:
        if self.count <= 0:
            raise ValueError(f"node of {self.gpu_type!r}: GPU count must be positive, got {self.count}")


@dataclass(frozen=True)
class ClusterSpec:
    """A cluster: a list of nodes and the inter-node network bandwidth (GB/s)."""

    nodes: tuple[NodeSpec, ...]
    inter_node_bw_gbps: float = 12.5
    name: str = ""
    extra: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ValueError(f"cluster {self.name!r} has no nodes")
        if not (self.inter_node_bw_gbps > 0):
            raise ValueError(f"cluster {self.name!r}: inter_node_bw_gbps must be positive")

    @classmethod
    def homogeneous(
        cls, gpu_type: str, nodes: int, gpus_per_node: int, inter_node_bw_gbps: float = 12.5, name: str = ""
    ) -> ClusterSpec:
        """``nodes`` servers of ``gpus_per_node`` GPUs of one type."""
        return cls(tuple(NodeSpec(gpu_type, gpus_per_node) for _ in range(nodes)), inter_node_bw_gbps, name)

    @classmethod
    def from_groups(
        cls, groups: Sequence[tuple[str, int, int]], inter_node_bw_gbps: float = 12.5, name: str = ""
    ) -> ClusterSpec:
        """Nodes from ``(gpu_type, node_count, gpus_per_node)`` groups, in that order."""
        nodes = [NodeSpec(t, per) for t, n, per in groups for _ in range(n)]
        return cls(tuple(nodes), inter_node_bw_gbps, name)

    @property
    def num_gpus(self) -> int:
        return sum(n.count for n in self.nodes)

    @property
    def gpu_types(self) -> tuple[str, ...]:
        """Distinct GPU types in order of first appearance."""
        seen: dict[str, None] = {}
        for n in self.nodes:
            seen.setdefault(n.gpu_type, None)
        return tuple(seen)

    def gpus_by_type(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.gpu_type] = out.get(n.gpu_type, 0) + n.count
        return out
