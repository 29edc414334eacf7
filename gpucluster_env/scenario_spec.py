"""What a scenario is: the :class:`Scenario` record (a cluster, a trace recipe and engine settings) and the
declared type and range of each of its fields (:data:`SCENARIO_SETTINGS`, :data:`CONFIG_SETTINGS`), with the one
check of how options go together (:func:`scenario_problem`). The named scenarios are in
:mod:`gpucluster_env.scenarios`; the values of the trace options in :mod:`gpucluster_env.traces.trace_options`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from typing import Any

from gpucluster_env.config import INTERFERENCE_SCOPES, EngineConfig, share_grid_problem
from gpucluster_env.hardware import ClusterSpec
from gpucluster_env.settings import Setting, SettingError, check_value
from gpucluster_env.traces.trace_options import (
    GENERATED_TRACES,
    MIXES,
    POLLUX_RECIPES,
    RECIPE_NAMES,
    SAMPLED_TRACES,
    TRACE_FILE_FORMATS,
    TRACE_NAMES,
    window_problem,
)

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
    only to trace ``mix``, ``trace_format`` and ``trace_columns`` (any CSV through a column map,
    :mod:`gpucluster_env.traces.column_map`) only to trace ``file``: an option the scenario's trace or recipe
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
    trace_columns: str | None = None
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
        from gpucluster_env.catalog import default_catalog
        from gpucluster_env.traces.scenario_jobs import build_jobs

        return build_jobs(self, seed, catalog or default_catalog())


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
    if sc.trace_columns is not None and (sc.trace != "file" or sc.trace_format is not None):
        return "option 'trace_columns' reads a trace file (trace 'file') through a column map, without a trace_format"
    if sc.annotate == "gavel" and sc.trace != "gavel":
        return f"annotation 'gavel' is Gavel's job generator and goes with trace 'gavel', not {sc.trace!r}"
    if sc.annotate == "file-models" and sc.trace != "file":
        return f"annotation 'file-models' reads a trace file's model column (trace 'file'), not trace {sc.trace!r}"
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


def _columns_problem(spec: str) -> str | None:
    from gpucluster_env.traces.column_map import parse_columns

    try:
        parse_columns(spec)
    except ValueError as e:
        return str(e)
    return None


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
    _setting("trace_columns", "str", nullable=True, check=_columns_problem),
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
