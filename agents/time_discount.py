"""Discounting by simulated time for MaskablePPO: the bootstrap of step ``t`` is discounted by
``gamma * exp(-dt_t / tau_s)``, where ``dt_t`` is the simulated time the step ran (``info["dt"]`` of the
job-centric env, :mod:`gpucluster_env.env.jobs_env`).

A per-decision ``gamma`` discounts by decisions: ``gamma = 0.99`` is a horizon of ~100 decisions, a few simulated
hours on castor-philly when busy and days when quiet, shorter than the long jobs that decide the mean JCT.
Discounting the bootstrap by ``exp(-dt / tau)`` is the semi-Markov form (Bradtke and Duff 1995): the horizon is
``tau`` seconds of simulated time wherever the decisions fall. Unlike :class:`gpucluster_env.env.wrappers.
TimeDiscount`, which discounts from the episode's start (late decisions get exponentially less gradient),
this discounts from each decision.

:class:`TimeDiscountBuffer` is the rollout buffer; :class:`NoteStepTimes` (a callback) hands it each step's
``dt`` before the step is added. ``make_model`` wires both when the training config sets ``time_discount_s``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback


class TimeDiscountBuffer(MaskableDictRolloutBuffer):
    """MaskablePPO's Dict rollout buffer with GAE over a per-step discount ``gamma * exp(-dt / tau_s)``."""

    def __init__(self, *args: Any, tau_s: float = 3600.0, **kwargs: Any) -> None:
        if not tau_s > 0:
            raise ValueError(f"tau_s must be positive, got {tau_s!r}")
        self.tau_s = float(tau_s)
        super().__init__(*args, **kwargs)

    def reset(self) -> None:
        super().reset()
        self.dts = np.zeros((self.buffer_size, self.n_envs), dtype=np.float64)

    def note_dt(self, infos: list[dict[str, Any]]) -> None:
        """Record the simulated time of the step about to be added (at the buffer's current position)."""
        if self.pos < self.buffer_size:
            self.dts[self.pos] = [float(i.get("dt", 0.0)) for i in infos]

    def compute_returns_and_advantage(self, last_values: Any, dones: np.ndarray) -> None:
        last = last_values.clone().cpu().numpy().flatten()
        disc = self.gamma * np.exp(-self.dts / self.tau_s)
        gae = np.zeros(self.n_envs, dtype=np.float64)
        for step in reversed(range(self.buffer_size)):
            if step == self.buffer_size - 1:
                nonterminal, next_values = 1.0 - dones.astype(np.float64), last
            else:
                nonterminal, next_values = 1.0 - self.episode_starts[step + 1], self.values[step + 1]
            delta = self.rewards[step] + disc[step] * next_values * nonterminal - self.values[step]
            gae = delta + disc[step] * self.gae_lambda * nonterminal * gae
            self.advantages[step] = gae
        self.returns = self.advantages + self.values


class NoteStepTimes(BaseCallback):
    """Hands each step's ``info["dt"]`` to a :class:`TimeDiscountBuffer` (called after the env step, before
    the step is added to the buffer)."""

    def _on_step(self) -> bool:
        buf = self.model.rollout_buffer
        if isinstance(buf, TimeDiscountBuffer):
            buf.note_dt(self.locals["infos"])
        return True
