"""The SJF list-scheduling skeleton with a sharing fallback that SJF-FFS (:mod:`gpucluster_env.baselines.sjf_ffs`)
and Castor (:mod:`gpucluster_env.baselines.castor`) share (sjf-bsbf §VI-A4, castor §5 Algorithm 1): pending jobs
walked shortest-first (L_k = solo iteration time x iterations, line 1), a job started exclusively when enough
free GPUs exist (lines 6-7), and otherwise a colocation that each policy chooses in :meth:`SJFSharingPolicy.share`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from gpucluster_env.baselines.parts.job_shape import start_shape

from gpucluster_env.engine import Action, Place, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy


class SJFSharingPolicy(Policy):
    """SJF list scheduling with a colocation fallback that subclasses define in :meth:`share`."""

    def order(self, view: ClusterView) -> np.ndarray:
        """Pending jobs, shortest expected run time first (ties by queue position)."""
        pend = view.pending_jobs()
        if len(pend) <= 1:
            return pend
        return pend[np.argsort(view.solo_time[pend], kind="stable")]

    def act(self, observation: Any, env: Any) -> Action | int:
        view = self.view(env)
        if view.num_pending == 0:
            return Wait()
        self.begin(view)
        sharers, placeable = self.walk(view)
        a = self.first_share(view, sharers)
        if a is not None:
            return a
        return Place(placeable) if placeable is not None else Wait()

    def walk(self, view: ClusterView) -> tuple[list[int], int | None]:
        """The queue walked in order up to the first job that fits on free GPUs (the engine's placement, asked
        once per job shape in this state, :func:`.job_shape.start_shape`): the jobs before it that would have
        to share (asking no more GPUs than are free or held alone), and that job (None: none fits)."""
        order = self.order(view)
        n_free = view.num_free()
        need = view.req_gpus[order]
        failed: set[tuple[int, int, int]] = set()
        stop, placeable = len(order), None
        for k in np.flatnonzero(need <= n_free).tolist():  # only these can start on free GPUs
            j = int(order[k])
            if failed and start_shape(view, j) in failed:
                continue
            if view.plan_place(j) is not None:
                stop, placeable = k, j
                break
            failed.add(start_shape(view, j))
        before = order[:stop]
        return before[need[:stop] <= n_free + view.num_single()].tolist(), placeable

    def begin(self, view: ClusterView) -> None:
        """Hook called once per ``act`` before the queue is walked."""

    def first_share(self, view: ClusterView, jobs: Iterable[int]) -> Action | None:
        """The first of ``jobs`` (pending, in queue order) that :meth:`share` colocates, as its action; None
        when none does. Subclasses may evaluate the jobs together; the answer must be the same."""
        for j in jobs:
            a = self.share(view, j)
            if a is not None:
                return a
        return None

    def share(self, view: ClusterView, j: int) -> Action | None:
        """A colocation action for pending job ``j`` when free GPUs are too few, or None to skip it."""
        raise NotImplementedError


def fill_with_free(view: ClusterView, chosen: list[int], need: int) -> list[int] | None:
    """Top ``chosen`` up to ``need`` GPUs with free GPUs, nodes already used first, then the fullest nodes."""
    if len(chosen) >= need:
        return chosen[:need]
    free = view.free_gpus()
    if len(chosen) + len(free) < need:
        return None
    used_nodes = set(view.gpu_node[chosen].tolist()) if chosen else set()
    per_node = np.bincount(view.gpu_node[free], minlength=view.num_nodes)
    nodes = view.gpu_node[free]
    near = np.array([0 if n in used_nodes else 1 for n in nodes.tolist()])
    order = free[np.lexsort((free, -per_node[nodes], near))]
    return chosen + order[: need - len(chosen)].tolist()
