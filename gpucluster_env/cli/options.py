"""Parsing of repeated ``--option KEY=VALUE`` arguments into scenario overrides."""

from __future__ import annotations

import json
from typing import Any


def parse_options(items: list[str] | None, flag: str = "--option") -> dict[str, Any]:
    """``["num_jobs=480", "load=2.0"]`` -> ``{"num_jobs": 480, "load": 2.0}`` (values parsed as JSON, else
    kept as strings); ``flag`` names the command-line option in errors."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{flag} {item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out
