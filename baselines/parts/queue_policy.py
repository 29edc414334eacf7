"""Shared base classes of the reference policies (the interface itself is :class:`gpucluster_env.policy.Policy`)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gpucluster_env.baselines.parts.job_shape import first_start

from gpucluster_env.engine import Action, Place, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy


class QueuePolicy(Policy):
    """Exclusive-GPU list scheduling: walk the queue in priority order and start the first job that fits on
    free GPUs; with ``strict`` only the head may start (no backfilling, head-of-line blocking as in FIFO).

    The walk passes over jobs asking more GPUs than are free (no placement can start them) and asks the engine's
    placement (:meth:`ClusterView.plan_place`) once per job shape (GPUs asked, model, batch: all it reads of a
    job, :func:`.job_shape.first_start`), so a decision over a long queue that cannot start anything costs one
    pass over the queue, not a placement per job."""

    strict: ClassVar[bool] = False

    def priority_keys(self, view: ClusterView, jobs: np.ndarray) -> np.ndarray | None:
        """Each of pending ``jobs``' priority (lower runs first; ties by job index), or None for queue order."""
        return None

    def act(self, observation: Any, env: Any) -> Action | int:
        view = self.view(env)
        if view.num_pending == 0:
            return Wait()
        if self.strict:  # only the head may start
            head = self._ordered(view)[:1] if self.prioritized else view.pending_head(1)
            return self._place(view, int(head[0])) or Wait()
        order = self._ordered(view)
        n_free = view.num_free()  # a job asking more GPUs than are free cannot be placed
        fit = [j for j, need in zip(order.tolist(), view.req_gpus[order].tolist(), strict=True) if need <= n_free]
        hit = first_start(view, fit, lambda j: self._place(view, j))
        return Wait() if hit is None else hit[1]  # type: ignore[return-value]

    @property
    def prioritized(self) -> bool:
        """Whether this policy orders the queue by :meth:`priority_keys` (else queue order)."""
        return type(self).priority_keys is not QueuePolicy.priority_keys

    @staticmethod
    def _place(view: ClusterView, j: int) -> Place | None:
        """Job ``j`` started on the free GPUs the engine's placement gives it, or None when there are none."""
        g = view.plan_place(j)
        return None if g is None else Place(j, gpus=tuple(g.tolist()))

    def _ordered(self, view: ClusterView) -> np.ndarray:
        """Pending jobs in priority order (queue order without priorities)."""
        order = view.pending_jobs()
        if len(order) <= 1:
            return order
        keys = self.priority_keys(view, order)
        return order if keys is None else order[np.lexsort((order, keys))]  # by key, ties by job index
