"""Parsing of repeated ``--option KEY=VALUE`` and ``--policy-option KEY=VALUE`` arguments, each value by the
option's declared type (:mod:`gpucluster_env.settings`): scenario options by the scenario's declared fields,
policy options by the policy constructor's type hints."""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any

from gpucluster_env.settings import Setting, SettingError, parse_text


def split_items(items: list[str] | None, flag: str) -> list[tuple[str, str]]:
    """``["a=1", "b=x"]`` -> ``[("a", "1"), ("b", "x")]``; a malformed item or a key given twice is an error
    naming ``flag``."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SettingError(f"{flag} {item!r}: expected KEY=VALUE")
        if key in seen:
            raise SettingError(f"{flag} {key}: given twice")
        seen.add(key)
        out.append((key, value))
    return out


def parse_options(items: list[str] | None, flag: str = "--option", scenario: str = "") -> dict[str, Any]:
    """Scenario overrides: ``["num_jobs=480", "load=2.0"]`` -> ``{"num_jobs": 480, "load": 2.0}``, each value
    parsed and checked by the option's declared type and range (``all_at_zero=False`` is false, ``num_jobs=2.5``
    an error)."""
    from gpucluster_env.scenarios import option_setting

    return {k: parse_text(option_setting(k, scenario), v, f"{flag} ") for k, v in split_items(items, flag)}


def _setting_of(name: str, hint: Any) -> Setting:
    """The setting a policy constructor's parameter declares: numbers must be finite and positive (every
    reference policy's numeric option is a scale, a limit or a threshold)."""
    nullable = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(hint))
        hint = args[0] if len(args) == 1 else hint
    origin = typing.get_origin(hint)
    if hint is bool:
        return Setting(name, "bool", nullable)
    if hint is int:
        return Setting(name, "int", nullable, low=0, low_open=True)
    if hint is float:
        return Setting(name, "float", nullable, low=0, low_open=True)
    if hint is str:
        return Setting(name, "str", nullable)
    if origin in (tuple, list) and typing.get_args(hint)[:1] == (float,):
        return Setting(name, "list[float]", nullable, low=0, low_open=True)
    if origin in (tuple, list) and typing.get_args(hint)[:1] == (str,):
        return Setting(name, "list[str]", nullable)
    # An object (e.g. Castor's predictor) cannot be given on the command line; only its default (null).
    return Setting(name, "str", True, check=lambda v: "takes an object; only null (the default) can "
                   "be given on the command line")


def parse_policy_options(items: list[str] | None, policy: str, flag: str = "--policy-option") -> dict[str, Any]:
    """Policy constructor arguments from ``KEY=VALUE`` text, each parsed by the constructor's type hint."""
    from gpucluster_env.baselines import POLICIES, policy_names

    pairs = split_items(items, flag)
    if not pairs:
        return {}
    if policy not in policy_names():
        raise SettingError(f"unknown policy {policy!r}; known: {', '.join(sorted(POLICIES))}")
    init = POLICIES[policy].__init__
    params = {} if init is object.__init__ else {
        n: p for n, p in inspect.signature(init).parameters.items() if n != "self"}
    hints = typing.get_type_hints(init, globalns=vars(inspect.getmodule(init))) if params else {}
    out: dict[str, Any] = {}
    for key, text in pairs:
        if key not in params:
            raise SettingError(f"policy {policy!r}: unknown option(s) {key}; its options: "
                               f"{', '.join(params) or 'none'}")
        out[key] = parse_text(_setting_of(key, hints.get(key, str)), text, f"{flag} ")
    return out
