"""Hardware description: GPU types, nodes and clusters.

Plain frozen data. A :class:`ClusterSpec` lists nodes, each holding GPUs of one named type; the engine turns it
into flat numpy arrays (one entry per GPU) when an episode starts. The catalog of GPU types with their numbers
lives in :mod:`gpucluster_env.catalog.gpus`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

MAX_NODES = 100_000
"""The most nodes a cluster spec may hold (Philly had 552 servers, Alibaba PAI about 1,800)."""
MAX_GPUS_PER_NODE = 64
MIN_BANDWIDTH_GBPS = 0.01
"""The slowest inter-node network a cluster may have, in GB/s (10 MB/s; 1 Gbit/s Ethernet is 0.125): below it
an all-reduce takes longer than any job and iteration times overflow."""
MAX_BANDWIDTH_GBPS = 10_000.0


def bandwidth_problem(bw: object) -> str | None:
    """Why ``bw`` is not an inter-node bandwidth (a number of GB/s from :data:`MIN_BANDWIDTH_GBPS` to
    :data:`MAX_BANDWIDTH_GBPS`), or None when it is."""
    ok = isinstance(bw, int | float) and not isinstance(bw, bool) and MIN_BANDWIDTH_GBPS <= bw <= MAX_BANDWIDTH_GBPS
    return None if ok else (f"the inter-node bandwidth must be a number of GB/s from {MIN_BANDWIDTH_GBPS:g} to "
                            f"{MAX_BANDWIDTH_GBPS:g}")
_GROUP = re.compile(r"(?P<type>[A-Za-z][A-Za-z0-9_.-]*):(?P<nodes>\d+)x(?P<per>\d+)")


@dataclass(frozen=True)
class GPUType:
    """One kind of GPU, with the published specs the performance model needs.

    ``speed`` is a generic throughput relative to a V100 (1.0) for a compute-bound model; ``model_speed`` holds
    the speeds of the models measured on the type, which override it. ``estimated`` marks a type whose speed
    comes from specs (HadarE's initial estimate) rather than from a training measurement. ``xi_pairs`` are
    interference ratios measured on the type (``"a|b"`` -> ``xi_a`` of model ``a`` sharing one GPU with ``b``
    at free competition) and ``xi_group`` the architecture group whose fitted pair offsets apply to it
    (:mod:`gpucluster_env.catalog.xi_model`). ``dual_issue_fp32`` marks a data-sheet FP32 figure that counts
    dual-issue FP32 (GA10x, Ada), which training rarely reaches. The catalog declares each type once
    (:mod:`gpucluster_env.catalog.gpus`).
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
    model_speed: Mapping[str, float] = field(default_factory=dict, hash=False)
    xi_pairs: Mapping[str, float] = field(default_factory=dict, hash=False)
    xi_group: str = ""
    dual_issue_fp32: bool = False

    def __post_init__(self) -> None:
        for attr in ("memory_gb", "fp32_tflops", "mem_bw_gbps", "intra_node_bw_gbps", "speed"):
            value = getattr(self, attr)
            if not (value > 0):
                raise ValueError(f"GPU type {self.name!r}: {attr} must be positive, got {value!r}")
        for table in ("model_speed", "xi_pairs"):
            for key, value in getattr(self, table).items():
                if not (value > 0):
                    raise ValueError(f"GPU type {self.name!r}: {table}[{key!r}] must be positive, got {value!r}")


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
        problem = bandwidth_problem(self.inter_node_bw_gbps)
        if problem:
            raise ValueError(f"cluster {self.name!r}: {problem}, got {self.inter_node_bw_gbps!r}")

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

    def groups(self) -> list[tuple[str, int, int]]:
        """Consecutive nodes of one type and size as ``(gpu_type, node_count, gpus_per_node)``, in order (what
        :meth:`from_groups` builds from)."""
        groups: list[list] = []
        for n in self.nodes:
            if groups and groups[-1][0] == n.gpu_type and groups[-1][2] == n.count:
                groups[-1][1] += 1
            else:
                groups.append([n.gpu_type, 1, n.count])
        return [(t, k, per) for t, k, per in groups]

    def to_spec(self) -> str:
        """The compact spec :func:`parse_cluster_spec` reads back to this cluster: consecutive nodes of one
        type and size as ``TYPE:NODESxGPUS``, then ``net=GBPS`` (the inter-node bandwidth)."""
        return ",".join(f"{t}:{k}x{per}" for t, k, per in self.groups()) + f",net={self.inter_node_bw_gbps!r}"

    def scaled(self, factor: float) -> ClusterSpec:
        """This cluster with each group's node count times ``factor``, rounded, at least one node a group (the
        same node shapes and network; for runs that keep jobs per GPU as the jobs grow)."""
        return ClusterSpec.from_groups([(t, max(1, round(k * factor)), per) for t, k, per in self.groups()],
                                       self.inter_node_bw_gbps, f"{self.name} x{factor:g}")

    def gpus_by_type(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.gpu_type] = out.get(n.gpu_type, 0) + n.count
        return out


def parse_cluster_spec(text: str, known_types: Iterable[str] | None = None, name: str = "") -> ClusterSpec:
    """A cluster from its compact spec: comma-separated groups ``TYPE:NODESxGPUS`` (``V100:9x4`` is 9 nodes
    of 4 V100s), in order, and optionally ``net=GBPS``, the inter-node bandwidth in GB/s (default 12.5).

    ``known_types``: the GPU type names allowed (matched case-insensitively and returned as spelled there).
    A malformed group, a count of zero or beyond :data:`MAX_NODES` / :data:`MAX_GPUS_PER_NODE`, a bandwidth
    that is not a positive finite number, or an unknown type is a ``ValueError`` naming the group.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"cluster spec {text!r}: expected groups TYPE:NODESxGPUS such as V100:9x4,P100:9x4")
    canon = {t.lower(): t for t in known_types} if known_types is not None else None
    groups: list[tuple[str, int, int]] = []
    bw = 12.5
    net_given = False
    for raw in text.split(","):
        item = raw.strip()
        if item.lower().startswith("net="):
            if net_given:
                raise ValueError(f"cluster spec {text!r}: net= given twice (one inter-node bandwidth a cluster)")
            net_given = True
            try:
                bw = float(item[4:])
            except ValueError:
                bw = float("nan")
            problem = bandwidth_problem(bw)
            if problem:
                raise ValueError(f"cluster spec {text!r}: {item!r}: {problem}")
            continue
        m = _GROUP.fullmatch(item)
        if not m:
            raise ValueError(f"cluster spec {text!r}: group {item!r} is not TYPE:NODESxGPUS (e.g. V100:9x4) "
                             "or net=GBPS")
        gtype, nodes, per = m.group("type"), int(m.group("nodes")), int(m.group("per"))
        if not (1 <= nodes <= MAX_NODES):
            raise ValueError(f"cluster spec {text!r}: group {item!r}: nodes must be 1 to {MAX_NODES}")
        if not (1 <= per <= MAX_GPUS_PER_NODE):
            raise ValueError(f"cluster spec {text!r}: group {item!r}: GPUs per node must be 1 to {MAX_GPUS_PER_NODE}")
        if canon is not None:
            if gtype.lower() not in canon:
                raise ValueError(f"cluster spec {text!r}: unknown GPU type {gtype!r}; known: "
                                 f"{', '.join(sorted(canon.values()))}")
            gtype = canon[gtype.lower()]
        groups.append((gtype, nodes, per))
    if not groups:
        raise ValueError(f"cluster spec {text!r}: no TYPE:NODESxGPUS group")
    if sum(n for _, n, _ in groups) > MAX_NODES:
        raise ValueError(f"cluster spec {text!r}: more than {MAX_NODES} nodes")
    return ClusterSpec.from_groups(groups, inter_node_bw_gbps=bw, name=name)
