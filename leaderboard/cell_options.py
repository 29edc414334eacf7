"""A board cell's options in one canonical form, so that equivalent spellings are one cell: scenario options
checked by their declared settings and reduced to what differs from the scenario
(:func:`canonical_scenario_options`), env options checked by :data:`ENV_OPTION_SETTINGS`, and the canonical
JSON text that options are compared, hashed (:func:`canonical`) and labelled (:func:`options_label`) in."""

from __future__ import annotations

import json
from typing import Any

from gpucluster_env.settings import Setting, SettingError, check_value

ENV_OPTION_KEYS = {"xi", "objective", "max_sim_time_s", "n_pending", "n_running", "n_accum", "reward_scale"}
"""Env options a board may set: ``xi`` injects a constant interference ratio (sjf-bsbf Fig. 6(b)); the others
are :class:`~gpucluster_env.env.GPUClusterEnv` keywords."""
MAX_WINDOW = 4096
"""The largest observation window (``n_pending``, ``n_running``) a board may ask for."""


def _env_option_settings() -> dict[str, Setting]:
    from gpucluster_env.env.cluster_env import OBJECTIVES

    return {
        "xi": Setting("xi", "float", low=1.0, high=100.0),
        "objective": Setting("objective", "str", choices=OBJECTIVES),
        "max_sim_time_s": Setting("max_sim_time_s", "float", nullable=True, low=0.0, low_open=True,
                                  high=1e6 * 86400.0),
        "n_pending": Setting("n_pending", "int", low=1, high=MAX_WINDOW),
        "n_running": Setting("n_running", "int", nullable=True, low=1, high=MAX_WINDOW),
        "n_accum": Setting("n_accum", "int", nullable=True, low=1, high=64),
        "reward_scale": Setting("reward_scale", "float", nullable=True, low=0.0, low_open=True, high=1e15),
    }


ENV_OPTION_SETTINGS = _env_option_settings()
"""The declared type and range of each env option a board may set (``xi``: a constant interference ratio,
at least 1; ``max_sim_time_s``: at most 10^6 days, as ``run --max-sim-days``; windows up to
:data:`MAX_WINDOW`)."""
assert set(ENV_OPTION_SETTINGS) == ENV_OPTION_KEYS


def canonical(obj: Any) -> str:
    """Canonical JSON text (sorted keys, no spaces): the form options are compared and hashed in."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def options_label(opts: dict[str, Any]) -> str:
    """``{"num_jobs": 480}`` -> ``num_jobs=480`` (JSON values, sorted keys); empty for no options."""
    return ",".join(f"{k}={canonical(v)}" for k, v in sorted(opts.items()))


def canonical_scenario_options(scenario: str, options: dict[str, Any], where: str = "") -> dict[str, Any]:
    """``options`` of ``scenario`` checked by their declared settings and written in one canonical form:
    values as the scenario holds them (``load = 1`` is ``1.0``, a cluster as its spec), and options equal to
    the scenario's own value left out (so ``tiny``, ``tiny`` with ``num_jobs = 40`` and ``tiny`` with
    ``load = 1.0`` are one scenario)."""
    from gpucluster_env.hardware import ClusterSpec
    from gpucluster_env.scenarios import CONFIG_SETTINGS

    base = checked_scenario(scenario, {}, where)
    sc = checked_scenario(scenario, options, where)
    out: dict[str, Any] = {}
    for k, v in options.items():
        if k == "trace" and isinstance(v, str) and v != "file" and sc.trace == "file":
            out[k] = v  # trace=PATH: the user's file, kept as given
            continue
        new, old = ((getattr(sc.config, k), getattr(base.config, k)) if k in CONFIG_SETTINGS
                    else (getattr(sc, k), getattr(base, k)))
        if new != old:
            out[k] = new.to_spec() if isinstance(new, ClusterSpec) else list(new) if isinstance(new, tuple) else new
    return out


def check_env_options(options: dict[str, Any], where: str = "") -> dict[str, Any]:
    """Env options checked by :data:`ENV_OPTION_SETTINGS` (ints as ints, numbers as floats); an unknown one
    or a value out of range is a one-line ``SettingError``."""
    bad = set(options) - ENV_OPTION_KEYS
    if bad:
        raise SettingError(f"{where}unknown env option(s) {', '.join(sorted(bad))}; allowed: "
                           f"{', '.join(sorted(ENV_OPTION_KEYS))}")
    return {k: check_value(ENV_OPTION_SETTINGS[k], v, f"{where}env option ") for k, v in options.items()}


def checked_scenario(name: str, options: dict[str, Any], where: str) -> Any:
    """The scenario ``name`` with ``options``; a bad name or option is a one-line ``ValueError`` naming ``where``."""
    from gpucluster_env.scenarios import get_scenario

    try:
        return get_scenario(name, **options)
    except (ValueError, OSError) as e:  # SettingError is a ValueError; a missing scenario file an OSError
        raise ValueError(f"{where}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
