"""The values a scenario's trace options may take: the traces (sampled from a file or generated whole), the
annotation recipes, the trace file formats, HadarE's workload mixes and the sampling windows. The trace code
reads them here; :mod:`gpucluster_env.scenarios` declares and checks a scenario's fields with them (and
re-exports them: ``from gpucluster_env.scenarios import TRACE_NAMES`` works)."""

from __future__ import annotations

import re
from typing import Any

from gpucluster_env.settings import SettingError

SAMPLED_TRACES = ("philly", "venus", "venus-2vc", "alibaba", "alibaba-gpu", "file")
"""Traces whose jobs are sampled from a trace file (the real one or its synthetic stand-in, or the user's):
``window``, ``max_gpu_hours``, ``max_duration_h`` and ``max_span_h`` apply to them."""
GENERATED_TRACES = ("tiny", "mix", "gavel")
"""Traces generated whole (the tiny generator, HadarE's mixes, Gavel's generator): every job is used."""
TRACE_NAMES: list[str] = [*SAMPLED_TRACES, *GENERATED_TRACES]
"""Every scenario ``trace`` (:mod:`gpucluster_env.traces.scenario_jobs` adds the sources it registers)."""
POLLUX_RECIPES = ("pollux", "pollux-lucid", "pollux-time")
RECIPE_NAMES: list[str] = ["uniform", "hadar-class", "trace", "file-models", "gimbal", "gavel", *POLLUX_RECIPES]
"""Every scenario ``annotate`` (:mod:`gpucluster_env.traces.scenario_jobs` adds the recipes it registers)."""
TRACE_FILE_FORMATS = ("philly-csv", "philly-json", "gavel", "gavel-dir", "helios", "helios-slice", "helios-jobs",
                      "pai", "pai-jobs", "openb", "pollux-workload", "table")
"""The formats a trace file may be read as (``trace_format``; None sniffs it): the one list every option and
message names (``run --trace-format``, ``traces ... --format``, the error for a file of no known format)."""
TRACE_FORMAT_ALIASES = {"philly": "philly-csv", "philly-joblog": "philly-json"}
"""Other spellings the command line takes for a format (the names the Philly release gives its files)."""


def format_option(what: str) -> dict[str, Any]:
    """The argparse keywords of a command's trace-format option: the one list of formats, an alias read as
    its format before the choice is checked."""
    aliases = ", ".join(f"{a} = {f}" for a, f in TRACE_FORMAT_ALIASES.items())
    return {"choices": TRACE_FILE_FORMATS, "type": lambda v: TRACE_FORMAT_ALIASES.get(v, v),
            "help": f"format of {what} (default: sniffed; also {aliases})"}
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
