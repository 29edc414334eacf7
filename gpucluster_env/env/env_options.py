"""The environment's constructor options: the values each may take and their checks, one clear error per bad
value (a ``ValueError`` or, for a scenario that cannot offer an action kind, a ``SettingError``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..scenarios import Scenario
from ..settings import SettingError
from .codec import DEFAULT_N_ACCUM, DEFAULT_N_RUNNING
from .limits import check_env_limit

OBJECTIVES = ("jct", "makespan", "deadlines", "utilization")
ACTION_KINDS = ("place", "colocate", "squeeze", "swell", "preempt", "fork")
LAYOUTS = ("compact", "full")
DEFAULT_MIN_RUN_S = 600.0
"""Minimum run quantum before a job may be preempted where the scenario has no rounds (else one round)."""
PENDING_ORDERS = ("queue", "remaining")
OBSERVATIONS = ("dict", "box", "none", "sets")


@dataclass(frozen=True)
class EnvOptions:
    """The options the checks resolve: defaults filled in from the layout and the scenario."""

    n_running: int
    n_accum: int
    min_run_s: float
    kinds: tuple[str, ...]


def resolve_scenario(scenario: Any, scenario_options: Any, catalog: Any) -> Scenario:
    """The environment's scenario from its ``scenario`` argument (a name, a scenario file's path as a string
    or a path object, or a :class:`Scenario`) and ``scenario_options`` (a mapping or None), after checking
    ``catalog`` is a :class:`~gpucluster_env.catalog.Catalog` or None: a one-line ``TypeError`` naming the
    argument for anything else."""
    import os
    from collections.abc import Mapping

    from ..catalog import Catalog
    from ..scenarios import get_scenario

    if catalog is not None and not isinstance(catalog, Catalog):
        raise TypeError(f"catalog must be a Catalog or None, got {type(catalog).__name__}")
    if isinstance(scenario, os.PathLike):
        scenario = os.fspath(scenario)
    if isinstance(scenario, str):
        scenario = get_scenario(scenario)
    elif not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a scenario name, a scenario file's path or a Scenario, got "
                        f"{type(scenario).__name__}")
    if scenario_options is None:
        return scenario
    if not isinstance(scenario_options, Mapping):
        raise TypeError(f"scenario_options must be a mapping of scenario settings, got "
                        f"{type(scenario_options).__name__}")
    return scenario.with_options(**scenario_options) if scenario_options else scenario


def _one_of(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def check_env_options(sc: Scenario, render_modes: list[str], *, n_pending: int, n_running: int | None,
                      n_accum: int | None, observation: str, objective: str, reward_scale: float | None,
                      invalid_action: str, actions: tuple[str, ...] | None, render_mode: str | None,
                      action_layout: str, min_run_s: float | None, pending_order: str) -> EnvOptions:
    """Check :class:`~gpucluster_env.env.cluster_env.GPUClusterEnv`'s options for scenario ``sc`` (in the
    order the constructor always has) and fill in their defaults."""
    if observation not in OBSERVATIONS:
        raise ValueError(f"observation must be one of {', '.join(map(repr, OBSERVATIONS))}, got {observation!r}")
    _one_of("objective", objective, OBJECTIVES)
    if invalid_action not in ("raise", "wait"):
        raise ValueError(f"invalid_action must be 'raise' or 'wait', got {invalid_action!r}")
    if render_mode is not None and render_mode not in render_modes:
        raise ValueError(f"render_mode must be one of {render_modes}, got {render_mode!r}")
    for name, v in (("n_pending", n_pending), ("n_running", n_running), ("n_accum", n_accum),
                    ("min_run_s", min_run_s), ("reward_scale", reward_scale)):
        check_env_limit(name, v)  # sizes bounded before any array is made
    _one_of("pending_order", pending_order, PENDING_ORDERS)
    _one_of("action_layout", action_layout, LAYOUTS)
    kinds = tuple(actions) if actions is not None else tuple(
        k for k in ACTION_KINDS if k != "fork" or sc.config.round_s is not None
    )
    if not kinds and actions is not None:
        raise ValueError(f"actions must name at least one action kind ({', '.join(ACTION_KINDS)}), got "
                         f"{tuple(actions)!r}: with none, wait would be the only action")
    unknown = set(kinds) - set(ACTION_KINDS)
    if unknown:
        raise ValueError(f"unknown action kind(s) {', '.join(sorted(unknown))}; known: {', '.join(ACTION_KINDS)}")
    if "fork" in kinds and sc.config.round_s is None:  # it would be accepted and never offered
        raise SettingError(f"action kind 'fork' needs a scenario with rounds (round_s); scenario {sc.name!r} "
                           "has none")
    return EnvOptions(
        n_running=DEFAULT_N_RUNNING[action_layout] if n_running is None else n_running,
        n_accum=DEFAULT_N_ACCUM[action_layout] if n_accum is None else n_accum,
        min_run_s=float(sc.config.round_s or DEFAULT_MIN_RUN_S) if min_run_s is None else float(min_run_s),
        kinds=kinds,
    )
