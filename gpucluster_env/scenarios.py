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
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .config import INTERFERENCE_SCOPES, EngineConfig, share_grid_problem
from .hardware import ClusterSpec
from .settings import Setting, SettingError, check_value

POLLUX_MODELS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
GAVEL_MODELS = ("resnet18", "resnet50", "transformer", "lm", "recommendation", "cyclegan", "a3c")
GIMBAL_MODELS = ("resnet18", "mobilenetv2", "efficientnet", "deepspeech2", "resnet50", "mobilenetv3", "vgg11",
                 "vgg16", "pnasnet", "ofa", "bert", "llama")
HADAR_MODELS = ("resnet50", "lm", "transformer", "recommendation", "mima")


@dataclass(frozen=True)
class Scenario:
    """A named experimental setting.

    ``trace``: which trace the jobs come from (``philly``, ``venus``, ``alibaba``, ``alibaba-gpu``, ``mix``
    for HadarE's workload mixes, ``tiny``, or ``file``: ``trace_file`` read as ``trace_format``, sniffed when
    None). ``window``: how jobs are sampled (``busiest``, ``random``, ``all``, ``hours:3-10``). ``annotate``:
    the recipe that turns the raw trace into jobs (registered by name in
    :data:`gpucluster_env.traces.scenario_jobs.RECIPES`: ``uniform`` models over ``models``, ``hadar-class``
    by GPU-time class, ``trace`` the file's own models and iterations, or ``pollux`` / ``pollux-lucid`` /
    ``pollux-time``: Pollux's recipe of :mod:`gpucluster_env.traces.pollux`). ``load`` scales the arrival rate
    (castor §9.5 sweeps 0.5x-2x). ``deadlines``: Gimbal's submit + duration x lambda, lambda ~ U[1.5, 2.5].
    ``max_gpu_hours``: sample only jobs of at most this many GPU-hours (GPUs x traced duration); Hadar's
    workload (hadar-hadare §IV-A) draws from its four GPU-time classes, which end at 100 GPU-hours.
    ``max_duration_h``: sample only jobs whose traced duration is at most this many hours; Gimbal's testbed
    runs (gimbal §7.2) finished every job of their trace within Gavel's makespan, 4.5 h (Philly) and 17.6 h
    (Alibaba).
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
    trace_file: str | None = None
    trace_format: str | None = None
    max_gpu_hours: float | None = None
    max_duration_h: float | None = None

    def __post_init__(self) -> None:
        where = f"scenario {self.name!r}: option " if isinstance(self.name, str) else "scenario: option "
        for f in fields(self):
            if f.name == "config":
                continue
            object.__setattr__(self, f.name, check_value(SCENARIO_SETTINGS[f.name], getattr(self, f.name), where))
        if not isinstance(self.config, EngineConfig):
            raise SettingError(f"{where}'config': expected engine settings, got {self.config!r}; set them "
                               f"by their names ({', '.join(CONFIG_SETTINGS)})")
        for name, setting in CONFIG_SETTINGS.items():
            value = check_value(setting, getattr(self.config, name), where)
            if value != getattr(self.config, name) or type(value) is not type(getattr(self.config, name)):
                object.__setattr__(self, "config", replace(self.config, **{name: value}))
        if (self.trace == "file") != (self.trace_file is not None):
            raise SettingError(f"scenario {self.name!r}: trace 'file' and trace_file go together "
                               f"(trace={self.trace!r}, trace_file={self.trace_file!r})")

    def with_options(self, **overrides: Any) -> Scenario:
        """A copy with fields replaced (``num_jobs=480``, ``load=2.0``, engine settings by their names), each
        value checked against its declared type and range (:class:`~gpucluster_env.settings.SettingError`).
        ``trace=PATH`` of an existing file is the user's trace file (``trace="file"``, window ``all``)."""
        if "config" in overrides:
            raise SettingError(f"scenario {self.name!r}: option 'config' cannot be set as a whole; set the engine "
                               f"settings by their names ({', '.join(CONFIG_SETTINGS)})")
        cfg = {k: overrides.pop(k) for k in list(overrides) if k in CONFIG_SETTINGS}
        unknown = set(overrides) - set(SCENARIO_SETTINGS)
        if unknown:
            raise SettingError(f"scenario {self.name!r}: unknown option(s) {', '.join(sorted(unknown))}; known: "
                               f"{', '.join(option_names())}")
        trace = overrides.get("trace")
        if isinstance(trace, str) and trace != "file" and os.path.exists(trace):  # trace=PATH: the user's file
            overrides.update(trace="file", trace_file=trace)
            overrides.setdefault("window", "all")
        where = f"scenario {self.name!r}: option "
        cfg = {k: check_value(CONFIG_SETTINGS[k], v, where) for k, v in cfg.items()}
        config = replace(self.config, **cfg) if cfg else self.config
        return replace(self, **overrides, config=config)

    def build_jobs(self, seed: int, catalog: Any = None) -> tuple[Any, str]:
        """The job table for ``seed`` (a pandas DataFrame) and a one-line note naming the trace used (real file
        or synthetic); ``catalog`` defaults to the shipped one."""
        from .catalog import default_catalog
        from .traces.scenario_jobs import build_jobs

        return build_jobs(self, seed, catalog or default_catalog())


def _setting(name: str, kind: str, **kw: Any) -> tuple[str, Setting]:
    return name, Setting(name, kind, **kw)


SCENARIO_SETTINGS: dict[str, Setting] = dict((
    _setting("name", "str"),
    _setting("description", "str"),
    _setting("paper", "str"),
    _setting("cluster", "cluster"),
    _setting("models", "list[str]", check=lambda v: None if v else "needs at least one model"),
    _setting("trace", "str"),
    _setting("num_jobs", "int", low=1, high=10_000_000),
    _setting("window", "str"),
    _setting("all_at_zero", "bool"),
    _setting("annotate", "str"),
    _setting("deadlines", "bool"),
    _setting("load", "float", low=0.01, high=100.0),
    _setting("mix", "str", nullable=True),
    _setting("trace_file", "str", nullable=True),
    _setting("trace_format", "str", nullable=True),
    _setting("max_gpu_hours", "float", nullable=True, low=0.0, low_open=True, high=1e9),
    _setting("max_duration_h", "float", nullable=True, low=0.0, low_open=True, high=1e9),
))
"""The declared type and range of every scenario field but ``config`` (an arrival-rate factor ``load`` of 0.01
to 100: beyond that an episode is a single job or an instant; at most 10 million jobs)."""

CONFIG_SETTINGS: dict[str, Setting] = dict((
    _setting("round_s", "float", nullable=True, low=1.0, high=1e7),
    _setting("restart_s", "float", low=0.0, high=1e6),
    _setting("consolidation_s", "float", low=0.0, high=1e6),
    _setting("tick_s", "float", nullable=True, low=1.0, high=1e7),
    _setting("idle_tick_s", "float", low=1.0, high=1e7),
    _setting("sample_stealing", "bool"),
    _setting("calibration_overhead_s", "float", low=0.0, high=1e6),
    _setting("max_idle_ticks", "int", low=1, high=1_000_000_000),
    _setting("interference_scope", "str", choices=INTERFERENCE_SCOPES),
    _setting("topology_rule", "bool"),
    _setting("restart_on_allocation", "bool"),
    _setting("copy_startup_s", "float", low=0.0, high=1e6),
    _setting("share_step", "float", low=0.0, low_open=True, high=0.5, check=share_grid_problem),
))
"""The declared type and range of every engine setting a scenario may override (periods of 1 s to 116 days)."""

assert set(SCENARIO_SETTINGS) | {"config"} == {f.name for f in fields(Scenario)}
assert set(CONFIG_SETTINGS) == set(EngineConfig.__dataclass_fields__)


def option_names() -> list[str]:
    """Every option ``with_options`` takes: scenario fields and engine settings."""
    return [n for n in SCENARIO_SETTINGS] + list(CONFIG_SETTINGS)


def option_setting(name: str, scenario: str = "") -> Setting:
    """The declared setting of option ``name`` (a scenario field or an engine setting)."""
    if name in SCENARIO_SETTINGS:
        return SCENARIO_SETTINGS[name]
    if name in CONFIG_SETTINGS:
        return CONFIG_SETTINGS[name]
    if name == "config":
        raise SettingError(f"option 'config' cannot be set as a whole; set the engine settings by their names "
                           f"({', '.join(CONFIG_SETTINGS)})")
    where = f"scenario {scenario!r}: " if scenario else ""
    raise SettingError(f"{where}unknown option {name!r}; known: {', '.join(option_names())}")


def _hadar_cluster() -> ClusterSpec:
    groups = [("V100", 5, 4), ("P100", 5, 4), ("K80", 5, 4)]
    return ClusterSpec.from_groups(groups, inter_node_bw_gbps=3.0, name="hadar-15n")


_ALIBABA_GROUPS = [("P100", 40, 2), ("T4", 25, 2), ("V100", 12, 8)]
"""Alibaba PAI 2020 inventory (P100 798x2, T4 497x2, V100/V100M32 239x8 GPUs) scaled by 1/20."""

_GIMBAL_CONFIG = EngineConfig(tick_s=30.0, sample_stealing=False, calibration_overhead_s=3.6)
"""Gimbal's testbed (gimbal §5.2, §6, §7.4): runtime monitoring every 30 s, an MPS share switch (LGRR) pauses
the job 3.6 s, sample stealing (LISS) off until a policy turns it on per job (``SetStealing``), so the
baselines run without it."""

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
            GIMBAL_MODELS, "philly", 150, window="random", annotate="gimbal", deadlines=True, max_duration_h=4.5,
            config=_GIMBAL_CONFIG,
        ),
        Scenario(
            "gimbal-alibaba", "16 nodes x 2 A40, 300 Alibaba jobs, Gimbal's 12 models, deadlines", "gimbal",
            ClusterSpec.homogeneous("A40", 16, 2, inter_node_bw_gbps=12.5, name="gimbal-16x2"),
            GIMBAL_MODELS, "alibaba", 300, window="random", annotate="gimbal", deadlines=True, max_duration_h=17.6,
            config=_GIMBAL_CONFIG,
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
