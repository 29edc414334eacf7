"""What a policy's options may hold, declared where the options are: each constructor argument's type hint gives
its setting (:class:`gpucluster_env.settings.Setting`), and ``Annotated[float, OptionSpec(low=0)]`` narrows its
range or choices. One check every policy option passes, from the command line (``--policy-option``), a board
file or Python (:func:`gpucluster_env.policy.make_policy`), with the same one-line errors naming the policy and
the option as scenario options get (:mod:`gpucluster_env.scenarios`).

    class Lucid(Policy):
        def __init__(self, threshold: Annotated[int, OptionSpec(low=0, high=4)] = 2, ...)

A number without a spec must be finite and positive (every reference policy's numeric option is a scale, a limit
or a threshold); an object (Castor's predictor) can be given from Python only (as data, only its default, null).
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpucluster_env.settings import Setting, SettingError, check_value


@dataclass(frozen=True)
class OptionSpec:
    """A policy option's range or choices beyond its type (the fields of :class:`Setting` of those names)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] | None = None
    check: Callable[[Any], str | None] | None = None


def _object_only(value: Any) -> str:
    return "takes an object; only null (the default) can be given"


POSITIVE = OptionSpec(low=0, low_open=True)
"""The range of a number declared without a spec."""
NON_NEGATIVE = OptionSpec(low=0)
"""A number that may be 0 (a period or weight that 0 turns off)."""


def setting_of(name: str, hint: Any) -> Setting:
    """The setting a policy constructor's parameter declares by its type hint (and ``Annotated`` spec)."""
    spec: OptionSpec | None = None
    if typing.get_origin(hint) is typing.Annotated:
        spec = next((m for m in hint.__metadata__ if isinstance(m, OptionSpec)), None)
        hint = typing.get_args(hint)[0]
    nullable = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(hint))
        hint = args[0] if len(args) == 1 else hint
    origin, first = typing.get_origin(hint), typing.get_args(hint)[:1]
    kind = {bool: "bool", int: "int", float: "float", str: "str"}.get(hint)
    if kind is None and origin in (tuple, list) and first in ((float,), (str,)):
        kind = f"list[{first[0].__name__}]"
    if kind is None:
        return Setting(name, "str", True, check=_object_only)
    if spec is None:
        spec = POSITIVE if kind in ("int", "float", "list[float]") else OptionSpec()
    return Setting(name, kind, nullable, low=spec.low, high=spec.high, low_open=spec.low_open,
                   choices=spec.choices, check=spec.check)


@functools.cache
def declared_options(cls: type) -> dict[str, tuple[Setting, Any]]:
    """Each option of policy class ``cls`` (its constructor's arguments): its setting and its default
    (``inspect.Parameter.empty`` when it has none). Do not change the dict returned (it is kept per class)."""
    init = cls.__init__  # type: ignore[misc]
    if init is object.__init__:
        return {}
    params = {n: p for n, p in inspect.signature(init).parameters.items() if n != "self"}
    hints = typing.get_type_hints(init, globalns=vars(inspect.getmodule(init)), include_extras=True) if params else {}
    return {n: (setting_of(n, hints.get(n, str)), p.default) for n, p in params.items()}


def plain(v: Any) -> Any:
    """JSON data of a checked value (tuples as lists)."""
    return [plain(x) for x in v] if isinstance(v, list | tuple) else v


def _same(value: Any, default: Any) -> bool:
    """Whether ``value`` is the default itself (by type and value: ``True`` is not ``1``)."""
    return type(value) is type(default) and plain(value) == plain(default)


def check_names(cls: type, name: str, options: dict[str, Any], where: str = "") -> dict[str, tuple[Setting, Any]]:
    """The declared options of policy ``name`` (class ``cls``), after a one-line :class:`SettingError` for any
    of ``options`` it does not take."""
    settings = declared_options(cls)
    unknown = sorted(set(options) - set(settings))
    if unknown:
        raise SettingError(f"{where}policy {name!r}: unknown option(s) {', '.join(unknown)}; its options: "
                           f"{', '.join(settings) or 'none'}")
    return settings


def check_options(cls: type, name: str, options: dict[str, Any], where: str = "", python: bool = False
                  ) -> dict[str, Any]:
    """``options`` of policy ``name`` (class ``cls``) checked by each option's setting; a one-line
    :class:`SettingError` naming the policy and the option, prefixed with ``where``. Returns the options in one
    canonical form (numbers by their declared type, lists as lists) less those equal to their default, so
    ``tiresias`` and ``tiresias`` with its default thresholds are one policy. ``python``: the values come from
    Python, where an object option (a predictor) may be given."""
    settings = check_names(cls, name, options, where)
    out: dict[str, Any] = {}
    for key, value in options.items():
        setting, default = settings[key]
        if python and setting.check is _object_only and value is not None:
            out[key] = value
            continue
        if default is not inspect.Parameter.empty and _same(value, default):
            continue  # the declared default is valid by definition (pollux's seed 0 under the positive rule)
        checked = plain(check_value(setting, value, f"{where}policy {name!r}: option "))
        if default is inspect.Parameter.empty or checked != plain(default):
            out[key] = checked
    return out
