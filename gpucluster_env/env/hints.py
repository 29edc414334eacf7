"""The ``hint`` of the ``sets`` view (``GPUClusterEnv(observation="sets", hint="srsf")``): which action a base
heuristic would take now, as one more observation entry, so a network can copy the heuristic by default and
learn only where to depart from it (residual policy learning, Silver et al. 2018: the search expert that the
network imitates is that heuristic plus rollouts, and departs from it at a few decisions).

The heuristics are reference policies, which sit above the environment; the environment names them by string
and loads the source of hints from the agents' layer by module name at run time, as plugins are loaded
(:data:`HINT_SOURCE`, the same pattern as :func:`gpucluster_env.policy.make_policy` uses for the policy
packages), so no import points up. The source returns the heuristic's action as an int of the compact layout,
or None when it has none the layout can express (then the hint is all zeros).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

HINT_SOURCE = "gpucluster_env.agents.hint_source:hint_source"
"""``module:function`` that makes a hint source from its name (e.g. ``srsf``)."""
HINTS = ("srsf",)
"""Hints the environment offers (a reference policy's name)."""


def check_hint(hint: str | None, observation: str) -> None:
    """A one-line ``ValueError`` for a hint the environment does not offer, or one without the ``sets`` view."""
    if hint is None:
        return
    if hint not in HINTS:
        raise ValueError(f"hint must be one of {', '.join(HINTS)} or None, got {hint!r}")
    if observation != "sets":
        raise ValueError(f"hint={hint!r} needs observation='sets' (the hint is an entry of that view), got "
                         f"observation={observation!r}")


def make_hint_source(hint: str) -> Callable[[Any], int | None]:
    """The function ``env -> layout int or None`` giving heuristic ``hint``'s action at the current state."""
    module, _, func = HINT_SOURCE.partition(":")
    return getattr(importlib.import_module(module), func)(hint)
