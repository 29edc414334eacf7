"""Shared base classes of the reference policies (the interface itself is :class:`gpucluster_env.policy.Policy`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from gpucluster_env.engine import Action, Place, Wait
from gpucluster_env.policy import Policy


class QueuePolicy(Policy):
    """Exclusive-GPU list scheduling: walk the queue in priority order and start the first job that fits on
    free GPUs; with ``strict`` only the head may start (no backfilling, head-of-line blocking as in FIFO)."""

    strict: ClassVar[bool] = False

    def priority(self, env: Any) -> Callable[[Any], Any] | None:
        """A key over job indices (lower runs first), or None for queue order."""
        return None

    def act(self, observation: Any, env: Any) -> Action | int:
        view = self.view(env)
        if view.num_pending == 0:
            return Wait()
        key = self.priority(env)
        if self.strict and key is None:
            order = view.pending_head(1)
        else:
            order = view.pending_jobs()
            if key is not None:
                order = sorted(order.tolist(), key=key)
            if self.strict:
                order = order[:1]
        for j in order:
            g = view.plan_place(int(j))
            if g is not None:
                return Place(int(j), gpus=tuple(g.tolist()))
        return Wait()
