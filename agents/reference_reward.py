"""A reward relative to a reference policy on the same trace (RLScheduler's reward; an input-dependent baseline in
the sense of Mao et al., ICLR 2019): the variance of the return that comes from the job table, not the policy,
is taken out.

About two thirds of the return's variance on castor-philly is the job table (docs/rl.md), and nothing in a plain
return says whether an episode was good *for its trace*. At ``reset`` :class:`ReferenceRelative` plays the
reference heuristic (SRSF by default: ~0.1 s an episode) to the end on a copy of the episode's engine, which
gives its count of jobs in the system ``n_ref(t)``. Each step's JCT reward ``-n(t) dt / scale`` then gets
``+ integral of n_ref over the step / scale``, and the last step of a finished episode the reference's remainder.
So the return is ``(total JCT of the reference - total JCT of the agent) / scale``: zero for play as good as
the reference, positive when better, on every trace. The optimal policy is unchanged (the added term does not
depend on the agent's actions, and is summed undiscounted over the episode).

Rollouts on the engine copy read the trace's future arrivals: this shapes the *training* reward only (as
Decima's baseline does); the policy's observation never sees them.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

REFERENCES = ("srsf", "sjf", "ssf", "fifo")
"""Reference heuristics a run may subtract (stateless, so one instance plays any engine copy)."""


class ReferenceRelative(gym.Wrapper):
    """The JCT reward of a :class:`~gpucluster_env.env.jobs_env.JobsEnv` relative to ``reference`` on the same
    trace. ``info["reference_jct_s"]`` (at reset) is the reference's total JCT; ``info["absolute_reward"]`` each
    step's reward before the change."""

    def __init__(self, env: gym.Env, reference: str = "srsf") -> None:
        super().__init__(env)
        if reference not in REFERENCES:
            raise ValueError(f"unknown reference {reference!r}; known: {', '.join(REFERENCES)}")
        if getattr(env.unwrapped.wrapped, "objective", "jct") != "jct":
            raise ValueError("a reference-relative reward needs objective='jct'")
        self.reference = reference
        self._t = np.zeros(1)
        self._cum = np.zeros(1)

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        from gpucluster_env.baselines.lookahead import rollout_curve

        from gpucluster_env.policy import make_policy

        obs, info = self.env.reset(**kwargs)
        eng = self.env.unwrapped.engine
        curve = rollout_curve(eng.clone(), make_policy(self.reference))
        t0 = eng.now
        if len(curve):
            self._t = np.concatenate([[t0], curve[:, 1]])
            self._cum = np.concatenate([[0.0], np.cumsum(curve[:, 2] * (curve[:, 1] - curve[:, 0]))])
        else:
            self._t, self._cum = np.array([t0]), np.zeros(1)
        self._now = t0
        info["reference_jct_s"] = float(self._cum[-1])
        return obs, info

    def _integral(self, t: float) -> float:
        return float(np.interp(t, self._t, self._cum))

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        now = float(info["time_s"])
        scale = self.env.unwrapped.wrapped.reward_scale
        bonus = self._integral(now) - self._integral(self._now)
        if terminated:
            bonus += float(self._cum[-1]) - self._integral(now)
        self._now = now
        info["absolute_reward"] = reward
        return obs, reward + bonus / scale, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()
