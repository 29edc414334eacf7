"""What a policy's options may hold: each constructor argument's declared setting (from its type hint) and
default, and the one check every policy option passes, whether it comes from the command line
(``--policy-option``), a board file or Python."""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any

from gpucluster_env.policy import POLICIES, policy_names
from gpucluster_env.settings import Setting, SettingError, check_value


def setting_of(name: str, hint: Any) -> Setting:
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
    # An object (e.g. Castor's predictor) cannot be given as data; only its default (null).
    return Setting(name, "str", True, check=lambda v: "takes an object; only null (the default) can be given")


def option_settings(policy: str) -> dict[str, tuple[Setting, Any]]:
    """Each option of registered ``policy``: its setting and its default (``inspect.Parameter.empty`` when
    it has none); a one-line ``SettingError`` for an unknown policy."""
    if policy not in policy_names():
        raise SettingError(f"unknown policy {policy!r}; known: {', '.join(sorted(POLICIES))}")
    init = POLICIES[policy].__init__
    if init is object.__init__:
        return {}
    params = {n: p for n, p in inspect.signature(init).parameters.items() if n != "self"}
    hints = typing.get_type_hints(init, globalns=vars(inspect.getmodule(init))) if params else {}
    return {n: (setting_of(n, hints.get(n, str)), p.default) for n, p in params.items()}


def _plain(v: Any) -> Any:
    """JSON data of a checked value (tuples as lists)."""
    return [_plain(x) for x in v] if isinstance(v, list | tuple) else v


def check_policy_options(policy: str, options: dict[str, Any], where: str = "") -> dict[str, Any]:
    """``options`` of ``policy`` (from TOML, JSON or Python) checked by each option's setting and written in
    one canonical form: numbers by their declared type, lists as lists, and options equal to their default
    left out (so ``tiresias`` and ``tiresias`` with its default thresholds are one policy). ``rl:DIR``
    policies take no options. Errors are one line, prefixed with ``where``."""
    if policy.startswith("rl:"):
        if options:
            raise SettingError(f"{where}policy {policy!r} takes no options, got {', '.join(sorted(options))}")
        return {}
    settings = option_settings(policy)
    unknown = sorted(set(options) - set(settings))
    if unknown:
        raise SettingError(f"{where}policy {policy!r}: unknown option(s) {', '.join(unknown)}; its options: "
                           f"{', '.join(settings) or 'none'}")
    out: dict[str, Any] = {}
    for key, value in options.items():
        setting, default = settings[key]
        checked = _plain(check_value(setting, value, f"{where}policy {policy!r}: option "))
        if default is inspect.Parameter.empty or checked != _plain(default):
            out[key] = checked
    return out
