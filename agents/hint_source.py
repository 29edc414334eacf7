"""Hint sources for the ``sets`` view's ``hint`` entry (:mod:`gpucluster_env.env.hints`): a reference policy's
action at the env's current state, as an int of the compact layout (the environment loads this module by name).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpucluster_env.engine import Wait


class HintSource:
    """Asks reference policy ``policy`` what it would do now and maps the answer to the layout's int action
    (:func:`gpucluster_env.agents.expert.equivalent_action`); None when no allowed int action is equivalent.
    The policy is reset on each new engine (a new episode)."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self._engine: Any = None

    def __call__(self, env: Any) -> int | None:
        from gpucluster_env.agents.expert import equivalent_action

        u = env.unwrapped
        if self._engine is not u.engine:
            self.policy.reset(u)
            self._engine = u.engine
        act = self.policy.act(None, u)
        if isinstance(act, list):
            act = act[0] if act else Wait()
        if isinstance(act, int | np.integer):
            act = u.decode_action(int(act))
        a, _ = equivalent_action(u, act)
        return a


def hint_source(name: str) -> HintSource:
    """The hint source of reference policy ``name`` (with its default options)."""
    from gpucluster_env.policy import make_policy

    return HintSource(make_policy(name))
