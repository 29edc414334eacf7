"""Scenarios: a cluster, a trace recipe and engine settings, by name (DESIGN.md, "Scenarios").

Each scenario reproduces a paper's experimental setting (or is small, for tests and demos). The job table is
built per seed by :func:`gpucluster_env.traces.scenario_jobs.build_jobs`, which uses the real trace when it is
available (user cache or ``$GPUCLUSTER_DATA``) and otherwise a synthetic trace fitted to its statistics, and
says which in the returned note.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from .catalog import Catalog, default_catalog
from .engine import ClusterEngine, EngineConfig
from .hardware import ClusterSpec

POLLUX_MODELS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
GAVEL_MODELS = ("resnet18", "resnet50", "transformer", "lm", "recommendation", "cyclegan", "a3c")
GIMBAL_MODELS = ("resnet18", "mobilenetv2", "efficientnet", "deepspeech2", "resnet50", "mobilenetv3", "vgg11",
                 "vgg16", "pnasnet", "ofa", "bert", "llama")
HADAR_MODELS = ("resnet50", "lm", "transformer", "recommendation", "mima")


@dataclass(frozen=True)
class Scenario:
    """A named experimental setting.

    ``trace``: which trace the jobs come from (``philly``, ``venus``, ``alibaba``, ``alibaba-gpu``, ``mix``
    for HadarE's workload mixes, ``tiny``). ``window``: how jobs are sampled (``busiest``, ``random``,
    ``hours:3-10``). ``annotate``: how models are assigned (``uniform`` over ``models``, or ``hadar-class`` by
    GPU-time class, or ``pollux`` / ``pollux-lucid`` / ``pollux-time``: Pollux's recipe of
    :mod:`gpucluster_env.traces.pollux`). ``load`` scales the arrival rate (castor §9.5 sweeps 0.5x-2x).
    ``deadlines``: Gimbal's
    submit + duration x lambda, lambda ~ U[1.5, 2.5].
    """

    name: str
    description: str
    paper: str
    cluster: ClusterSpec
    models: tuple[str, ...]
    trace: str
    num_jobs: int
    window: str = "busiest"
    all_at_zero: bool = False
    annotate: str = "uniform"
    deadlines: bool = False
    load: float = 1.0
    mix: str | None = None
    config: EngineConfig = field(default_factory=EngineConfig)

    def with_options(self, **overrides: Any) -> Scenario:
        """A copy with fields replaced (``num_jobs=480``, ``load=2.0``, engine settings by their names)."""
        cfg_fields = set(EngineConfig.__dataclass_fields__)
        cfg = {k: overrides.pop(k) for k in list(overrides) if k in cfg_fields}
        unknown = set(overrides) - set(Scenario.__dataclass_fields__)
        if unknown:
            raise ValueError(f"scenario {self.name!r}: unknown option(s) {', '.join(sorted(unknown))}")
        out = replace(self, **overrides)
        if cfg:
            out = replace(out, config=replace(out.config, **cfg))
        return out

    def build_jobs(self, seed: int, catalog: Catalog | None = None) -> tuple[pd.DataFrame, str]:
        """The job table for ``seed`` and a one-line note naming the trace used (real file or synthetic)."""
        from .traces.scenario_jobs import build_jobs

        return build_jobs(self, seed, catalog or default_catalog())

    def make_engine(self, seed: int, catalog: Catalog | None = None) -> ClusterEngine:
        """A fresh engine for one episode of this scenario."""
        cat = catalog or default_catalog()
        jobs, note = self.build_jobs(seed, cat)
        eng = ClusterEngine(self.cluster, jobs, cat, self.config, source=f"scenario {self.name} ({note})")
        eng.trace_note = note  # type: ignore[attr-defined]
        return eng


def _hadar_cluster() -> ClusterSpec:
    groups = [("V100", 5, 4), ("P100", 5, 4), ("K80", 5, 4)]
    return ClusterSpec.from_groups(groups, inter_node_bw_gbps=3.0, name="hadar-15n")


_ALIBABA_GROUPS = [("P100", 40, 2), ("T4", 25, 2), ("V100", 12, 8)]
"""Alibaba PAI 2020 inventory (P100 798x2, T4 497x2, V100/V100M32 239x8 GPUs) scaled by 1/20."""

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "tiny", "4 mixed nodes (V100, P100, K80), 40 jobs: for tests and the README demo", "",
            ClusterSpec.from_groups([("V100", 2, 4), ("P100", 1, 4), ("K80", 1, 4)], name="tiny"),
            ("cifar10", "imagenet", "bert", "ncf"), "tiny", 40, window="all",
        ),
        Scenario(
            "castor-philly", "16 servers x 8 A6000, 240 Philly jobs from the busiest period", "castor",
            ClusterSpec.homogeneous("A6000", 16, 8, inter_node_bw_gbps=25.0, name="castor-16x8"),
            POLLUX_MODELS, "philly", 240, annotate="pollux-lucid",
        ),
        Scenario(
            "castor-venus", "16 servers x 8 A6000, 240 Venus jobs from the busiest period", "castor",
            ClusterSpec.homogeneous("A6000", 16, 8, inter_node_bw_gbps=25.0, name="castor-16x8"),
            POLLUX_MODELS, "venus", 240, annotate="pollux-lucid",
        ),
        Scenario(
            "sjfbsbf-philly", "16 servers x 4 RTX 2080 Ti, 240 Philly jobs from the busiest period", "sjf-bsbf",
            ClusterSpec.homogeneous("RTX2080Ti", 16, 4, inter_node_bw_gbps=12.5, name="sjfbsbf-16x4"),
            POLLUX_MODELS, "philly", 240, annotate="pollux-time",
        ),
        Scenario(
            "gimbal-philly", "16 nodes x 2 A40, 150 Philly jobs, Gimbal's 12 models, deadlines", "gimbal",
            ClusterSpec.homogeneous("A40", 16, 2, inter_node_bw_gbps=12.5, name="gimbal-16x2"),
            GIMBAL_MODELS, "philly", 150, window="random", deadlines=True,
            config=EngineConfig(tick_s=30.0, sample_stealing=True),
        ),
        Scenario(
            "gimbal-alibaba", "16 nodes x 2 A40, 300 Alibaba jobs, Gimbal's 12 models, deadlines", "gimbal",
            ClusterSpec.homogeneous("A40", 16, 2, inter_node_bw_gbps=12.5, name="gimbal-16x2"),
            GIMBAL_MODELS, "alibaba", 300, window="random", deadlines=True,
            config=EngineConfig(tick_s=30.0, sample_stealing=True),
        ),
        Scenario(
            "hadar-philly", "15 nodes: 20 V100 + 20 P100 + 20 K80; 480 Philly jobs (hours 3-10) at t=0",
            "hadar-hadare", _hadar_cluster(), HADAR_MODELS, "philly", 480, window="hours:3-10",
            all_at_zero=True, annotate="hadar-class",
            config=EngineConfig(round_s=360.0, restart_s=10.0, consolidation_s=10.0),
        ),
        Scenario(
            "hadare-testbed", "5 nodes, one GPU each: Titan RTX, T4, T400, RTX 3090, RTX A2000; mix M-5",
            "hadar-hadare",
            ClusterSpec.from_groups([("TitanRTX", 1, 1), ("T4", 1, 1), ("T400", 1, 1), ("RTX3090", 1, 1),
                                     ("RTXA2000", 1, 1)], inter_node_bw_gbps=1.25, name="hadare-testbed"),
            HADAR_MODELS, "mix", 5, window="all", all_at_zero=True, mix="M-5",
            config=EngineConfig(round_s=360.0, restart_s=10.0, consolidation_s=10.0),
        ),
        Scenario(
            "hadare-aws", "5 AWS nodes: 1 V100, 2 K80, 2 T4 (one GPU each); mix M-5", "hadar-hadare",
            ClusterSpec.from_groups([("V100", 1, 1), ("K80", 2, 1), ("T4", 2, 1)], inter_node_bw_gbps=1.25,
                                    name="hadare-aws"),
            HADAR_MODELS, "mix", 5, window="all", all_at_zero=True, mix="M-5",
            config=EngineConfig(round_s=360.0, restart_s=10.0, consolidation_s=10.0),
        ),
        Scenario(
            "philly-scale", "Philly-scale: 552 servers (321 x 2 + 231 x 8 = 2,490 P100 GPUs), the whole Philly "
            "trace (80,000 jobs) as submitted; for benchmarks", "",
            ClusterSpec.from_groups([("P100", 321, 2), ("P100", 231, 8)], inter_node_bw_gbps=12.5,
                                    name="philly-2490"),
            POLLUX_MODELS, "philly", 80_000, window="all",
        ),
        Scenario(
            "alibaba-hetero", "P100, T4 and V100 nodes in Alibaba PAI's inventory proportions (1/20 scale), "
            "300 real Alibaba GPU tasks", "",
            ClusterSpec.from_groups(_ALIBABA_GROUPS, inter_node_bw_gbps=3.0, name="alibaba-1/20"),
            POLLUX_MODELS, "alibaba-gpu", 300, window="random",
        ),
    )
}


def get_scenario(name: str, **options: Any) -> Scenario:
    """A scenario by name, with options applied (see :meth:`Scenario.with_options`)."""
    try:
        sc = SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}") from None
    return sc.with_options(**options) if options else sc
