"""The environment's sizes and limits: declared bounds on its numeric arguments, checked before any work.

Windows (``n_pending``, ``n_running``) and the accumulation choices (``n_accum``) fix the sizes of the action
space, the mask and the observation, so each has an upper bound: an out-of-range value is a one-line
:class:`~gpucluster_env.settings.SettingError` naming the argument and its range, before an array is made.
``max_sim_time_s`` and ``max_steps`` are the episode's own limits (``truncated`` at them); ``min_run_s`` the
preemption quantum. The board and the command line pass environment options through the same checks
(:func:`check_env_limit`).
"""

from __future__ import annotations

from typing import Any

from ..settings import Setting, SettingError, check_value

MAX_WINDOW = 1024
"""The largest pending or running window: the compact action space then has about a million colocate entries,
and the ``pairs`` observation two million floats."""
MAX_ACCUM = 10
"""The most accumulation choices of the full layout (factors 1, 2, 4, ... 512)."""

ENV_LIMITS: dict[str, Setting] = {
    "n_pending": Setting("n_pending", "int", low=1, high=MAX_WINDOW),
    "n_running": Setting("n_running", "int", nullable=True, low=1, high=MAX_WINDOW),
    "n_accum": Setting("n_accum", "int", nullable=True, low=1, high=MAX_ACCUM),
    "max_sim_time_s": Setting("max_sim_time_s", "float", nullable=True, low=0.0, low_open=True, high=1e11),
    "max_steps": Setting("max_steps", "int", nullable=True, low=1, high=10**12),
    "min_run_s": Setting("min_run_s", "float", nullable=True, low=0.0, high=1e9),
    "reward_scale": Setting("reward_scale", "float", nullable=True, low=0.0, low_open=True, high=1e15),
}
"""The declared type and range of every numeric environment argument (``None``: the default)."""


def check_env_limit(name: str, value: Any) -> Any:
    """``value`` of the environment argument ``name`` checked against :data:`ENV_LIMITS` (a one-line
    :class:`~gpucluster_env.settings.SettingError` naming it and its range when it does not fit)."""
    try:
        setting = ENV_LIMITS[name]
    except KeyError:
        raise SettingError(f"unknown environment limit {name!r}; known: {', '.join(ENV_LIMITS)}") from None
    return check_value(setting, value, "environment argument ")
