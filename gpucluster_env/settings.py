"""Typed settings: what a scenario, engine or policy option may hold, and the checks every value passes.

A :class:`Setting` declares one option's type (``bool``, ``int``, ``float``, ``str``, a list of them, or a
cluster spec), whether ``None`` is allowed, its range and its choices. Values come from three places and pass
the same checks: text on the command line (``--option load=2``, parsed by :func:`parse_text`), TOML scenario
files and Python keyword arguments (checked by :func:`check_value`). A value that does not fit is a
:class:`SettingError` naming the option and what it accepts; nothing is coerced silently (``"False"`` is not
true, ``2.5`` is not an integer, ``inf`` is not a number of jobs).
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
_NULL = ("null", "none")
_INT = re.compile(r"[+-]?\d+")
KINDS = ("bool", "int", "float", "str", "list[float]", "list[str]", "cluster")


class SettingError(ValueError):
    """A value an option does not accept; the message names the option and what it accepts."""


@dataclass(frozen=True)
class Setting:
    """One option: its ``kind`` (one of :data:`KINDS`), whether ``None`` is allowed, its range (``low`` and
    ``high``, inclusive unless ``low_open``), its ``choices`` (for strings), and a ``check`` for anything
    more (returns a problem or ``None``)."""

    name: str
    kind: str
    nullable: bool = False
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] | None = None
    check: Callable[[Any], str | None] | None = None

    def accepts(self) -> str:
        """What the option accepts, in words (for error messages)."""
        if self.kind == "bool":
            text = "true or false"
        elif self.kind == "cluster":
            text = "a cluster spec such as V100:9x4,P100:9x4"
        elif self.choices:
            text = "one of " + ", ".join(self.choices)
        else:
            what = {"int": "an integer", "float": "a finite number", "str": "a string",
                    "list[float]": "a list of finite numbers", "list[str]": "a list of strings"}[self.kind]
            text = what + self._range_text()
        return text + (" or null" if self.nullable else "")

    def _range_text(self) -> str:
        lo = None if self.low is None else f"{'>' if self.low_open else '>='} {_num(self.low)}"
        hi = None if self.high is None else f"<= {_num(self.high)}"
        parts = [p for p in (lo, hi) if p]
        return (" " + " and ".join(parts)) if parts else ""


def _num(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() and abs(v) < 1e15 else f"{v:g}"


def _fail(setting: Setting, value: Any, where: str) -> SettingError:
    shown = value if isinstance(value, str) else repr(value)
    if len(shown) > 80:
        shown = f"{shown[:60]}… ({len(shown):,} characters)"
    return SettingError(f"{where}{setting.name!r}: expected {setting.accepts()}, got {shown}")


def _number(setting: Setting, v: Any, where: str, integer: bool) -> float | int:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):  # numpy's numbers too, as actions accept them
        raise _fail(setting, v, where)
    if integer and not isinstance(v, numbers.Integral):
        raise _fail(setting, v, where)
    if not math.isfinite(v):
        raise _fail(setting, v, where)
    if setting.low is not None and (v <= setting.low if setting.low_open else v < setting.low):
        raise _fail(setting, v, where)
    if setting.high is not None and v > setting.high:
        raise _fail(setting, v, where)
    return int(v) if integer else float(v)


def check_value(setting: Setting, value: Any, where: str = "option ") -> Any:
    """``value`` (from Python or TOML) checked against ``setting``, normalized (ints as floats for a float
    option, lists as tuples); ``where`` prefixes the option's name in errors (e.g. ``"scenario 'tiny': option "``)."""
    from .hardware import ClusterSpec

    if value is None:
        if setting.nullable:
            return None
        raise _fail(setting, value, where)
    kind = setting.kind
    if kind == "bool":
        if not isinstance(value, bool):
            raise _fail(setting, value, where)
        out: Any = value
    elif kind in ("int", "float"):
        out = _number(setting, value, where, kind == "int")
    elif kind == "str":
        if not isinstance(value, str):
            raise _fail(setting, value, where)
        if setting.choices is not None and value not in setting.choices:
            raise _fail(setting, value, where)
        out = value
    elif kind in ("list[float]", "list[str]"):
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise _fail(setting, value, where)
        if kind == "list[float]":
            try:
                out = tuple(_number(setting, x, where, False) for x in value)
            except SettingError:
                raise _fail(setting, list(value), where) from None
        else:
            if not all(isinstance(x, str) for x in value):
                raise _fail(setting, list(value), where)
            if setting.choices is not None and any(x not in setting.choices for x in value):
                raise _fail(setting, list(value), where)
            out = tuple(value)
    elif kind == "cluster":
        if isinstance(value, str):
            from .catalog.gpus import GPU_TYPES
            from .hardware import parse_cluster_spec

            try:
                out = parse_cluster_spec(value, GPU_TYPES)
            except ValueError as e:
                raise SettingError(f"{where}{setting.name!r}: {e}") from None
        elif isinstance(value, ClusterSpec):
            out = value
        else:
            raise _fail(setting, value, where)
    else:  # pragma: no cover - a programming error in a declaration
        raise AssertionError(f"unknown setting kind {kind!r}")
    if setting.check is not None:
        problem = setting.check(out)
        if problem:
            raise SettingError(f"{where}{setting.name!r}: {problem}")
    return out


def parse_text(setting: Setting, text: str, where: str = "option ") -> Any:
    """Command-line text for ``setting`` parsed by its declared type and checked (see :func:`check_value`).

    Booleans: true/false, yes/no, on/off, 1/0. Integers: digits only (``2.5``, ``1e3`` are refused). Floats:
    any finite number. Lists: JSON (``[3600, 7200]``) or comma-separated. ``null``/``none`` where allowed.
    """
    t = text.strip()
    if setting.nullable and t.lower() in _NULL:
        return None
    kind = setting.kind
    value: Any
    if kind == "bool":
        low = t.lower()
        if low not in _TRUE + _FALSE:
            raise _fail(setting, text, where)
        value = low in _TRUE
    elif kind == "int":
        if not _INT.fullmatch(t):
            raise _fail(setting, text, where)
        value = int(t)
    elif kind == "float":
        try:
            value = float(t)
        except ValueError:
            raise _fail(setting, text, where) from None
    elif kind in ("list[float]", "list[str]"):
        value = _parse_list(setting, t, text, where)
    else:
        value = t
    return check_value(setting, value, where)


def _parse_list(setting: Setting, t: str, text: str, where: str) -> list[Any]:
    if t.startswith("["):
        try:
            items = json.loads(t)
        except (json.JSONDecodeError, RecursionError):  # not JSON, or nested too deeply for the parser
            raise _fail(setting, text, where) from None
        if not isinstance(items, list):
            raise _fail(setting, text, where)
        return items
    parts = [p.strip() for p in t.split(",")] if t else []
    if setting.kind == "list[str]":
        return parts
    out = []
    for p in parts:
        try:
            out.append(float(p))
        except ValueError:
            raise _fail(setting, text, where) from None
    return out
