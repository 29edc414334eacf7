"""Scenario files: a scenario as a small TOML file, read with :mod:`tomllib`, accepted wherever a scenario name
is (``--scenario my.toml``, ``gym.make(..., scenario="my.toml")``), and written by
``gpucluster scenarios show NAME --toml`` to start from.

The top-level keys are the fields of :class:`~gpucluster_env.scenarios.Scenario`; ``cluster`` is a compact
spec string (``"V100:9x4,P100:9x4,net=12.5"``, see :func:`~gpucluster_env.hardware.parse_cluster_spec`) and the
``[engine]`` table holds the engine settings. A relative ``trace_file`` is read from the TOML file's folder.
Unknown keys, wrong types and values out of range are one-line errors naming the file and the key::

    name = "my-lab"
    description = "our 3 servers and last week's jobs"
    cluster = "V100:1x8,T4:2x4,net=12.5"
    trace = "file"
    trace_file = "jobs.csv"
    num_jobs = 100
    window = "all"
    annotate = "uniform"
    models = ["resnet50", "bert"]

    [engine]
    round_s = 360.0
"""

from __future__ import annotations

import json
import math
from dataclasses import fields
from pathlib import Path
from typing import Any

from .hardware import ClusterSpec
from .input_files import InputFileError, parse_toml, read_text
from .scenario_spec import CONFIG_SETTINGS, SCENARIO_SETTINGS, Scenario
from .settings import SettingError

REQUIRED_KEYS = ("name", "cluster", "trace", "num_jobs")


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {v!r}")


def scenario_to_toml(sc: Scenario) -> str:
    """``sc`` as a TOML scenario file that :func:`scenario_from_toml` reads back to an equal scenario (fields
    that are None are left out)."""
    lines = [f"# gpucluster scenario file (load with --scenario FILE.toml); built-in scenario {sc.name!r}"]
    for f in fields(sc):
        if f.name == "config":
            continue
        v = getattr(sc, f.name)
        if v is None:
            continue
        if isinstance(v, ClusterSpec):
            lines.append(f"cluster_name = {_toml_value(v.name)}")
            v = v.to_spec()
        lines.append(f"{f.name} = {_toml_value(v)}")
    lines += ["", "[engine]"]
    for name in CONFIG_SETTINGS:
        v = getattr(sc.config, name)
        if v is not None:
            lines.append(f"{name} = {_toml_value(v)}")
    return "\n".join(lines) + "\n"


def scenario_from_toml(text: str, source: str = "scenario file", base_dir: Path | None = None) -> Scenario:
    """A scenario from TOML text; ``source`` names it in errors, ``base_dir`` resolves a relative
    ``trace_file``."""
    from .config import EngineConfig

    try:
        data = parse_toml(text, source)
    except InputFileError as e:
        raise SettingError(str(e)) from None
    engine = data.pop("engine", {})
    if not isinstance(engine, dict):
        raise SettingError(f"{source}: 'engine' must be a table [engine] of engine settings")
    known = set(SCENARIO_SETTINGS) | {"cluster_name"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise SettingError(f"{source}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}, "
                           "[engine]")
    bad_engine = sorted(set(engine) - set(CONFIG_SETTINGS))
    if bad_engine:
        raise SettingError(f"{source}: [engine]: unknown key(s) {', '.join(bad_engine)}; known: "
                           f"{', '.join(CONFIG_SETTINGS)}")
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise SettingError(f"{source}: missing key(s) {', '.join(missing)}")
    data.setdefault("description", f"from {source}")
    data.setdefault("paper", "")
    data.setdefault("models", ("resnet50",))
    cluster_name = data.pop("cluster_name", "")
    where = f"{source}: "
    try:
        if isinstance(data["cluster"], str):
            from .catalog.gpus import GPU_TYPES
            from .hardware import parse_cluster_spec

            data["cluster"] = parse_cluster_spec(data["cluster"], GPU_TYPES, name=str(cluster_name))
        tf = data.get("trace_file")
        if isinstance(tf, str) and base_dir is not None and not Path(tf).is_absolute():
            data["trace_file"] = str(base_dir / tf)
        for name, setting in CONFIG_SETTINGS.items():
            if name in engine:
                from .settings import check_value

                engine[name] = check_value(setting, engine[name], "[engine] ")
        sc = Scenario(config=EngineConfig(**engine), **data)
    except (SettingError, ValueError) as e:
        raise SettingError(f"{where}{e}") from None
    return sc


def load_scenario_file(path: str | Path) -> Scenario:
    """The scenario in TOML file ``path`` (see the module docstring), read with
    :func:`~gpucluster_env.input_files.read_text` (strict UTF-8, bounded, a pipe works)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such scenario file")
    try:
        text = read_text(p)
    except InputFileError as e:
        raise SettingError(str(e)) from None
    return scenario_from_toml(text, str(p), p.resolve().parent)
