"""Wrappers for training: discounting by simulated time instead of by decision.

A step of :class:`~gpucluster_env.env.GPUClusterEnv` is a decision, not a unit of time: ``wait`` may move the
clock by hours, while placing three jobs takes three steps at the same instant. An agent's per-step discount
``gamma`` therefore discounts by *decisions*: a reward ``k`` decisions ahead weighs ``gamma**k`` whatever time
lies between. With the default ``gamma = 0.99`` and an episode of a few thousand decisions, the horizon is
about 100 decisions (a fraction of the episode's simulated time, uneven across busy and quiet periods).

:class:`TimeDiscount` makes the discount a function of simulated time: the reward of a step that runs the clock
from ``t0`` to ``t1`` at a constant rate (the JCT reward is ``-jobs x dt / scale``) is replaced by its integral
under ``exp(-t / tau)``, i.e. multiplied by ``(tau / dt) x (exp(-t0 / tau) - exp(-t1 / tau))`` (by
``exp(-t0 / tau)`` when ``dt = 0``). Train with ``gamma = 1`` on the wrapped env and the return is the
time-discounted objective with time constant ``tau``.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym


class TimeDiscount(gym.Wrapper):
    """Discount rewards by simulated time with time constant ``tau_s`` seconds (use with ``gamma = 1``)."""

    def __init__(self, env: gym.Env, tau_s: float) -> None:
        super().__init__(env)
        if not (tau_s > 0):
            raise ValueError(f"tau_s must be positive, got {tau_s!r}")
        self.tau_s = float(tau_s)
        self._t0 = 0.0

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        self._origin = float(info["time_s"])
        self._t0 = self._origin
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        t1 = float(info["time_s"])
        a, b = (self._t0 - self._origin) / self.tau_s, (t1 - self._origin) / self.tau_s
        factor = math.exp(-a) if t1 <= self._t0 else (math.exp(-a) - math.exp(-b)) / (b - a)
        self._t0 = t1
        info["undiscounted_reward"] = reward
        return obs, reward * factor, terminated, truncated, info
