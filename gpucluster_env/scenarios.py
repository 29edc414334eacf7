"""Scenarios: a cluster, a trace recipe and engine settings, by name (DESIGN.md, "Scenarios").

Each scenario reproduces a paper's experimental setting (or is small, for tests and demos). The job table is
built per seed by :func:`gpucluster_env.traces.scenario_jobs.build_jobs`, which uses the real trace when it is
available (user cache or ``$GPUCLUSTER_DATA``) and otherwise a synthetic trace fitted to its statistics, and
says which in the returned note; an engine for an episode is made by
:func:`gpucluster_env.engine.build.make_engine`. Every field is declared in :data:`SCENARIO_SETTINGS` and
:data:`CONFIG_SETTINGS` (type, range) and checked whenever a scenario is made or changed, so a scenario file,
a command-line option or a Python keyword gets the same one-line error for a value that does not fit.
A scenario file (TOML, :mod:`gpucluster_env.scenario_files`) is accepted wherever a name is.
"""

from __future__ import annotations

import os
from typing import Any

from .config import EngineConfig
from .hardware import ClusterSpec
from .scenario_spec import (  # re-exported: the public names of a scenario
    CONFIG_SETTINGS,
    GAVEL_MODELS,
    GIMBAL_MODELS,
    HADAR_MODELS,
    POLLUX_MODELS,
    SCENARIO_SETTINGS,
    Scenario,
    option_names,
    option_setting,
    own_models,
    samples_trace,
    scenario_problem,
)
from .settings import SettingError
from .traces.trace_options import (  # re-exported: the values of the trace options
    GENERATED_TRACES,
    MIXES,
    POLLUX_RECIPES,
    RECIPE_NAMES,
    SAMPLED_TRACES,
    TRACE_FILE_FORMATS,
    TRACE_NAMES,
    WINDOWS,
    parse_window,
    window_problem,
)

__all__ = ["CONFIG_SETTINGS", "GAVEL_MODELS", "GENERATED_TRACES", "GIMBAL_MODELS", "HADAR_MODELS", "MIXES",
           "POLLUX_MODELS", "POLLUX_RECIPES", "RECIPE_NAMES", "SAMPLED_TRACES", "SCENARIOS", "SCENARIO_SETTINGS",
           "TRACE_FILE_FORMATS", "TRACE_NAMES", "WINDOWS", "Scenario", "get_scenario", "option_names",
           "option_setting", "own_models", "parse_window", "samples_trace", "scenario_problem", "window_problem"]


def _hadar_cluster() -> ClusterSpec:
    groups = [("V100", 5, 4), ("P100", 5, 4), ("K80", 5, 4)]
    return ClusterSpec.from_groups(groups, inter_node_bw_gbps=3.0, name="hadar-15n")


_ALIBABA_GROUPS = [("P100", 40, 2), ("T4", 25, 2), ("V100", 12, 8)]
"""Alibaba PAI 2020 inventory (P100 798x2, T4 497x2, V100/V100M32 239x8 GPUs) scaled by 1/20."""

_SJFBSBF_CLUSTER = ClusterSpec.homogeneous("RTX2080Ti", 16, 4, inter_node_bw_gbps=1.25, name="sjfbsbf-16x4")
"""SJF-BSBF's simulated cluster (sjf-bsbf §VI-A), where Tables III-IV come from (§VI-C): 16 servers of 4 RTX 2080
Ti, built to resemble the physical testbed, whose servers link at 10 Gbps (1.25 GB/s) to a 100-Gbps switch."""

_GIMBAL_CONFIG = EngineConfig(tick_s=39.0, sample_stealing=False, calibration_overhead_s=3.6)
"""Gimbal's testbed (gimbal §5.2, §6, §7.4): a calibration tick every 39 s, the measured length of one LGRR search
iteration (§7.4, Fig. 14: a share switch plus the runtime collection after it; the "+gimbal" policies step their
search at these ticks, :data:`gpucluster_env.baselines.parts.gimbal_layer.SEARCH_STEP_S`; §6's 30 s status
monitoring is not a separate tick), an MPS share switch (LGRR) pauses the job 3.6 s (§7.4), sample stealing
(LISS) off until a policy turns it on per job (``SetStealing``), so the baselines run without it."""

_HADARE_TESTBED_CONFIG = EngineConfig(round_s=360.0, restart_s=10.0, consolidation_s=10.0)
"""HadarE's lab testbed with its default mix M-5: 360 s rounds, the slot at which HadarE (Fig. 11b) and Hadar
(Fig. 12b) did best on this cluster for M-5 to M-12 (hadar-hadare §VI-D; M-1 to M-4 did best at 90 s:
``--option round_s=90`` with those mixes); 10 s checkpoint-restart (§IV) and round-end consolidation."""
_HADARE_AWS_CONFIG = EngineConfig(round_s=90.0, restart_s=10.0, consolidation_s=10.0)
"""HadarE's AWS cluster with its default mix M-5: 90 s rounds, the slot at which HadarE did best on this cluster
for M-1 to M-5 (hadar-hadare §VI-D, Fig. 11a; Hadar too did best at 90 or 180 s there, Fig. 12a; M-8 to M-12
did best at 360 s: ``--option round_s=360`` with those mixes)."""

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
            _SJFBSBF_CLUSTER,
            POLLUX_MODELS, "philly", 240, annotate="pollux-time",
        ),
        Scenario(
            "gimbal-philly", "16 nodes x 2 A40, 150 Philly jobs, Gimbal's 12 models, deadlines", "gimbal",
            ClusterSpec.homogeneous("A40", 16, 2, inter_node_bw_gbps=12.5, name="gimbal-16x2"),
            GIMBAL_MODELS, "philly", 150, window="random", annotate="gimbal", deadlines=True, max_duration_h=4.5,
            max_span_h=4.5, config=_GIMBAL_CONFIG,
        ),
        Scenario(
            # Gimbal's Alibaba trace is its reference [49], the 2023 GPU-sharing trace (openb, ATC'23), not PAI 2020;
            # its 300 arrivals within Gavel's published makespan, as gimbal-philly's (docs/causes/gimbal-alibaba.md)
            "gimbal-alibaba", "16 nodes x 2 A40, 300 Alibaba 2023 (openb) jobs, Gimbal's 12 models, deadlines",
            "gimbal", ClusterSpec.homogeneous("A40", 16, 2, inter_node_bw_gbps=12.5, name="gimbal-16x2"),
            GIMBAL_MODELS, "alibaba-gpu", 300, window="random", annotate="gimbal", deadlines=True,
            max_duration_h=17.6, max_span_h=17.6, config=_GIMBAL_CONFIG,
        ),
        Scenario(
            "hadar-philly", "15 nodes: 20 V100 + 20 P100 + 20 K80; 480 Philly jobs (hours 3-10) at t=0",
            "hadar-hadare", _hadar_cluster(), HADAR_MODELS, "philly", 480, window="hours:3-10",
            all_at_zero=True, annotate="hadar-class", max_gpu_hours=100.0,
            config=EngineConfig(round_s=360.0, restart_s=10.0, consolidation_s=10.0, restart_on_allocation=True),
        ),
        Scenario(
            "hadare-testbed", "5 nodes, one GPU each: Titan RTX, T4, T400, RTX 3090, RTX A2000; mix M-5",
            "hadar-hadare",
            ClusterSpec.from_groups([("TitanRTX", 1, 1), ("T4", 1, 1), ("T400", 1, 1), ("RTX3090", 1, 1),
                                     ("RTXA2000", 1, 1)], inter_node_bw_gbps=1.25, name="hadare-testbed"),
            HADAR_MODELS, "mix", 5, window="all", all_at_zero=True, mix="M-5",
            config=_HADARE_TESTBED_CONFIG,
        ),
        Scenario(
            "hadare-aws", "5 AWS nodes: 1 V100, 2 K80, 2 T4 (one GPU each); mix M-5", "hadar-hadare",
            ClusterSpec.from_groups([("V100", 1, 1), ("K80", 2, 1), ("T4", 2, 1)], inter_node_bw_gbps=1.25,
                                    name="hadare-aws"),
            HADAR_MODELS, "mix", 5, window="all", all_at_zero=True, mix="M-5",
            config=_HADARE_AWS_CONFIG,
        ),
        Scenario(
            "gavel-hetero", "Gavel's simulated cluster: 36 V100 + 36 P100 + 36 K80 (4-GPU servers), 500 jobs from "
            "Gavel's generator arriving at 1.5 jobs/h", "gavel",
            ClusterSpec.from_groups([("V100", 9, 4), ("P100", 9, 4), ("K80", 9, 4)], inter_node_bw_gbps=3.0,
                                    name="gavel-108"),
            GAVEL_MODELS, "gavel", 500, window="all", annotate="gavel",
            config=EngineConfig(round_s=360.0, restart_s=10.0),
        ),
        Scenario(
            "philly-scale", "Philly-scale: 552 servers (321 x 2 + 231 x 8 = 2,490 P100 GPUs), the whole Philly "
            "trace (80,000 jobs) as submitted; for benchmarks", "",
            ClusterSpec.from_groups([("P100", 321, 2), ("P100", 231, 8)], inter_node_bw_gbps=12.5,
                                    name="philly-2490"),
            POLLUX_MODELS, "philly", 80_000, window="all",
        ),
        Scenario(
            # a loaded month at scale (issue #44): the same P100 servers as philly-scale, an eighth as many, so that
            # queues form (FIFO waits 5.2 days on average, SJF 6.0 h, SRSF 1.6 h; seed 0); for benchmarks
            "philly-loaded", "Philly-loaded: 40 servers x 8 P100 (320 GPUs), the 16,000 Philly jobs of the busiest "
            "period as submitted; queues form; for benchmarks", "",
            ClusterSpec.homogeneous("P100", 40, 8, inter_node_bw_gbps=12.5, name="philly-320"),
            POLLUX_MODELS, "philly", 16_000, window="busiest",
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
    """A scenario by name, or from a scenario file (a path ending in ``.toml``, or any existing path that is
    not a scenario's name, such as a pipe ``<(...)``), with options applied (see :meth:`Scenario.with_options`)."""
    if not isinstance(name, str):
        raise SettingError(f"a scenario is a name or a .toml file, got {name!r}")
    if name.lower().endswith(".toml") or (name not in SCENARIOS and os.path.exists(name)):
        from .scenario_files import load_scenario_file

        sc = load_scenario_file(name)
    else:
        try:
            sc = SCENARIOS[name]
        except KeyError:
            raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)} (or a .toml file)") from None
    return sc.with_options(**options) if options else sc

