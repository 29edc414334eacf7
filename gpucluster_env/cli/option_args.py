"""Parsing of repeated ``--option KEY=VALUE`` and ``--policy-option KEY=VALUE`` arguments, each value by the
option's declared type (:mod:`gpucluster_env.settings`): scenario options by the scenario's declared fields,
policy options by the policy constructor's type hints (:mod:`gpucluster_env.policy_options`, which boards
use too)."""

from __future__ import annotations

from typing import Any

from gpucluster_env.settings import SettingError, parse_text


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


def parse_policy_options(items: list[str] | None, policy: str, flag: str = "--policy-option") -> dict[str, Any]:
    """Policy constructor arguments from ``KEY=VALUE`` text, each parsed by the constructor's type hint."""
    from gpucluster_env.policy import option_settings

    pairs = split_items(items, flag)
    if not pairs:
        return {}
    settings = option_settings(policy)
    out: dict[str, Any] = {}
    for key, text in pairs:
        if key not in settings:
            raise SettingError(f"policy {policy!r}: unknown option(s) {key}; its options: "
                               f"{', '.join(settings) or 'none'}")
        out[key] = parse_text(settings[key][0], text, f"{flag}: policy {policy!r}: option ")
    return out


def split_names(v: str | None, what: str) -> list[str] | None:
    """Comma-separated names; a comma inside a label's parentheses or brackets (``gavel+gimbal
    (lgrr=false,liss=false)``, ``[3600.0, 7200.0]``) does not split."""
    if v is None:
        return None
    items, depth, cur = [], 0, []
    for ch in v:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth <= 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur))
    items = [x.strip() for x in items if x.strip()]
    if not items:
        raise ValueError(f"--{what} is empty")
    return items


def add_backend_options(p: Any, what: str) -> None:
    """``--backend local|ray`` and ``--address`` on a command whose ``what`` run as independent tasks
    (:mod:`gpucluster_env.task_pool`); the command checks them with ``task_pool.check_backend``."""
    from gpucluster_env.task_pool import BACKENDS

    p.add_argument("--backend", default="local", choices=BACKENDS,
                   help=f"where {what} run: local processes (--workers) or Ray tasks")
    p.add_argument("--address", help="Ray cluster address for --backend ray (default: start a local instance on "
                                     "the loopback address)")
