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
import re
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
    ``pollux-time``: Pollux's recipe of :mod:`gpucluster_env.traces.pollux_workloads`). ``load`` scales the arrival rate
    (castor §9.5 sweeps 0.5x-2x). ``deadlines``: Gimbal's submit + duration x lambda, lambda ~ U[1.5, 2.5].
    ``max_gpu_hours``: sample only jobs of at most this many GPU-hours (GPUs x traced duration); Hadar's
    workload (hadar-hadare §IV-A) draws from its four GPU-time classes, which end at 100 GPU-hours.
    ``max_duration_h``: sample only jobs whose traced duration is at most this many hours; Gimbal's testbed
    runs (gimbal §7.2) finished every job of their trace within Gavel's makespan, 4.5 h (Philly) and 17.6 h
    (Alibaba). ``max_span_h``: with window ``random``, draw only windows whose arrivals span at most this many
    hours (the first to the last submission of the ``num_jobs`` consecutive arrivals); Gimbal's 150 Philly jobs
    all arrived before Gavel had finished them, 4.5 h (gimbal §7.2). ``window``, ``max_gpu_hours``,
    ``max_duration_h`` and ``max_span_h`` apply to traces sampled from a file (:data:`SAMPLED_TRACES`); ``mix``
    only to trace ``mix``, ``trace_format`` only to trace ``file``: an option the scenario's trace or recipe
    cannot honour is refused by name (:func:`scenario_problem`), not ignored.
    ``window=None`` is the recipe's own: ``busiest`` for a sampled trace, every job of a generated one.
    """

    name: str
    description: str
    paper: str
    cluster: ClusterSpec
    models: tuple[str, ...]
    trace: str
    num_jobs: int
    window: str | None = None
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
    max_span_h: float | None = None

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
        problem = scenario_problem(self)
        if problem:
            raise SettingError(f"scenario {self.name!r}: {problem}")

    def with_options(self, **overrides: Any) -> Scenario:
        """A copy with fields replaced (``num_jobs=480``, ``load=2.0``, engine settings by their names), each
        value checked against its declared type and range (:class:`~gpucluster_env.settings.SettingError`).
        ``trace=PATH`` of an existing file is the user's trace file (``trace="file"``, window ``all``);
        ``mix=M-12`` alone also sets ``num_jobs`` to the mix's jobs (a mix is run whole)."""
        if "config" in overrides:
            raise SettingError(f"scenario {self.name!r}: option 'config' cannot be set as a whole; set the engine "
                               f"settings by their names ({', '.join(CONFIG_SETTINGS)})")
        cfg = {k: overrides.pop(k) for k in list(overrides) if k in CONFIG_SETTINGS}
        unknown = set(overrides) - set(SCENARIO_SETTINGS)
        if unknown:
            raise SettingError(f"scenario {self.name!r}: unknown option(s) {', '.join(sorted(unknown))}; known: "
                               f"{', '.join(option_names())}")
        mix = overrides.get("mix")
        if isinstance(mix, str) and mix in MIXES and "num_jobs" not in overrides:  # a mix is run whole
            overrides["num_jobs"] = len(MIXES[mix])
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


SAMPLED_TRACES = ("philly", "venus", "venus-2vc", "alibaba", "alibaba-gpu", "file")
"""Traces whose jobs are sampled from a trace file (the real one or its synthetic stand-in, or the user's):
``window``, ``max_gpu_hours``, ``max_duration_h`` and ``max_span_h`` apply to them."""
GENERATED_TRACES = ("tiny", "mix", "gavel")
"""Traces generated whole (the tiny generator, HadarE's mixes, Gavel's generator): every job is used."""
TRACE_NAMES: list[str] = [*SAMPLED_TRACES, *GENERATED_TRACES]
"""Every scenario ``trace`` (:mod:`gpucluster_env.traces.scenario_jobs` adds the sources it registers)."""
POLLUX_RECIPES = ("pollux", "pollux-lucid", "pollux-time")
RECIPE_NAMES: list[str] = ["uniform", "hadar-class", "trace", "gimbal", "gavel", *POLLUX_RECIPES]
"""Every scenario ``annotate`` (:mod:`gpucluster_env.traces.scenario_jobs` adds the recipes it registers)."""
TRACE_FILE_FORMATS = ("philly-csv", "philly-json", "gavel", "gavel-dir", "helios", "helios-slice", "pai", "openb",
                      "table")
"""The formats a trace file may be read as (``trace_format``; None sniffs it)."""
MIXES: dict[str, tuple[str, ...]] = {
    "M-1": ("MM",),
    "M-3": ("LT", "MM", "MM"),
    "M-4": ("IC", "LM", "LT", "MM"),
    "M-5": ("IC", "LM", "LT", "RS", "MM"),
    "M-8": ("IC", "LM", "LT", "RS") + ("MM",) * 4,
    "M-10": ("IC", "LM", "LT", "RS") + ("MM",) * 6,
    "M-12": ("IC", "LM", "LT", "RS") + ("MM",) * 8,
}
"""HadarE's workload mixes (hadar-hadare §VI-B), by model abbreviation (``mix``)."""
WINDOWS = ("busiest", "random", "all", "hours:A-B")
"""How jobs are sampled from a trace (``window``; ``hours:A-B`` with 0 <= A < B <= 24)."""
_HOURS = re.compile(r"hours:(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)")


def parse_window(window: str) -> tuple[str, float, float]:
    """``window`` as ``(kind, start_h, end_h)``: ``("hours", A, B)`` for ``hours:A-B``, else the kind with the
    whole day (0, 24); a window that is none of :data:`WINDOWS` is a :class:`SettingError` naming them."""
    problem = window_problem(window)
    if problem:
        raise SettingError(problem)
    m = _HOURS.fullmatch(window)
    return ("hours", float(m.group(1)), float(m.group(2))) if m else (window, 0.0, 24.0)


def window_problem(window: str) -> str | None:
    """Why ``window`` is not a window (one of :data:`WINDOWS`), or None."""
    if window in ("busiest", "random", "all"):
        return None
    m = _HOURS.fullmatch(window)
    if m is None:
        return f"unknown window {window!r}; known: {', '.join(WINDOWS)}"
    a, b = float(m.group(1)), float(m.group(2))
    if not (0.0 <= a < b <= 24.0):
        return f"window {window!r}: hours:A-B needs 0 <= A < B <= 24 (hours of the day)"
    return None


def _named(value: str, names: list[str], what: str) -> str | None:
    if value in names:
        return None
    path = " (or the path of a trace file)" if what == "trace" else ""
    return f"unknown {what} {value!r}; known: {', '.join(names)}{path}"


def scenario_problem(sc: Scenario) -> str | None:
    """Why the scenario's options do not go together, or None: an option its trace or recipe cannot honour is
    refused by name, never silently ignored. This is the one check of option combinations; a scenario runs it
    whenever it is made or changed (names, files, ``--option``, boards)."""
    generated = not samples_trace(sc)
    if sc.mix is not None and sc.trace != "mix":
        return (f"option 'mix' applies only to trace 'mix' (HadarE's workload mixes); this scenario's trace is "
                f"{sc.trace!r}")
    if sc.trace == "mix" and sc.num_jobs != len(MIXES[sc.mix or "M-5"]):
        mix = sc.mix or "M-5"
        return (f"option 'num_jobs' = {sc.num_jobs}: workload mix {mix!r} has {len(MIXES[mix])} jobs (a mix is run "
                f"whole; set num_jobs={len(MIXES[mix])} or another mix)")
    if sc.trace_format is not None and sc.trace != "file":
        return f"option 'trace_format' applies only to trace 'file'; this scenario's trace is {sc.trace!r}"
    if sc.annotate == "gavel" and sc.trace != "gavel":
        return f"annotation 'gavel' is Gavel's job generator and goes with trace 'gavel', not {sc.trace!r}"
    if sc.annotate == "trace" and sc.trace != "file":
        return (f"annotation 'trace' reads a trace file's own models (trace 'file', a Gavel .trace file), not "
                f"trace {sc.trace!r}")
    own = own_models(sc.trace, sc.annotate)
    if own is not None and set(sc.models) != set(own):
        by = f"trace {sc.trace!r}" if sc.trace == "mix" else f"annotation {sc.annotate!r}"
        return (f"option 'models': {by} uses its own models ({', '.join(own)}); models apply to the annotations "
                f"uniform and hadar-class")
    if generated:
        what = f"trace {sc.trace!r} is generated whole, not sampled from a trace file"
        for name in ("max_gpu_hours", "max_duration_h", "max_span_h"):
            if getattr(sc, name) is not None:
                return f"option {name!r}: {what}; it applies to traces {', '.join(SAMPLED_TRACES)}"
        if sc.window not in (None, "all"):
            return (f"option 'window' = {sc.window!r}: {what} (every job is used: window 'all' or none); it "
                    f"applies to traces {', '.join(SAMPLED_TRACES)}")
    if sc.max_span_h is not None and (sc.window != "random" or sc.annotate in POLLUX_RECIPES):
        return (f"option 'max_span_h' bounds the arrival span of a 'random' window of consecutive arrivals; this "
                f"scenario samples by window {sc.window!r}" + (f" with recipe {sc.annotate!r}"
                                                                if sc.annotate in POLLUX_RECIPES else ""))
    return None


def samples_trace(sc: Scenario) -> bool:
    """Whether the scenario's jobs are sampled from a trace (so ``window``, ``max_gpu_hours`` and
    ``max_duration_h``, ``max_span_h`` apply), not generated whole (``tiny``, ``mix``, Gavel's generator)."""
    return sc.trace not in GENERATED_TRACES and sc.annotate != "gavel"


def own_models(trace: str, annotate: str) -> tuple[str, ...] | None:
    """The models a scenario's trace or recipe fixes itself (so its ``models`` must be these), or None where
    the recipe draws from the scenario's ``models`` (``uniform``, ``hadar-class``) or reads the trace file's
    own (``trace``)."""
    if trace == "mix":
        return HADAR_MODELS  # HadarE's mixes: resnet50, lm, transformer, recommendation, mima
    if annotate in POLLUX_RECIPES:
        return POLLUX_MODELS
    return {"gavel": GAVEL_MODELS, "gimbal": GIMBAL_MODELS}.get(annotate)


def _setting(name: str, kind: str, **kw: Any) -> tuple[str, Setting]:
    return name, Setting(name, kind, **kw)


SCENARIO_SETTINGS: dict[str, Setting] = dict((
    _setting("name", "str"),
    _setting("description", "str"),
    _setting("paper", "str"),
    _setting("cluster", "cluster"),
    _setting("models", "list[str]", check=lambda v: None if v else "needs at least one model"),
    _setting("trace", "str", check=lambda v: None if os.path.exists(v) else _named(v, TRACE_NAMES, "trace")),
    _setting("num_jobs", "int", low=1, high=10_000_000),
    _setting("window", "str", nullable=True, check=window_problem),
    _setting("all_at_zero", "bool"),
    _setting("annotate", "str", check=lambda v: _named(v, RECIPE_NAMES, "annotation")),
    _setting("deadlines", "bool"),
    _setting("load", "float", low=0.01, high=100.0),
    _setting("mix", "str", nullable=True, choices=tuple(MIXES)),
    _setting("trace_file", "str", nullable=True),
    _setting("trace_format", "str", nullable=True, choices=TRACE_FILE_FORMATS),
    _setting("max_gpu_hours", "float", nullable=True, low=0.0, low_open=True, high=1e9),
    _setting("max_duration_h", "float", nullable=True, low=0.0, low_open=True, high=1e9),
    _setting("max_span_h", "float", nullable=True, low=0.0, low_open=True, high=1e9),
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
