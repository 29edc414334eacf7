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

    _sjf_kept: SJFOrder | None = None

    def order(self, view: ClusterView) -> np.ndarray:
        """Pending jobs, shortest expected run time first (ties by queue position): :class:`SJFOrder`."""
        kept = self._sjf_kept
        if kept is None or kept.view is not view:
            kept = self._sjf_kept = SJFOrder(view)
        return kept.order()

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

    def walk(self, view: ClusterView) -> tuple[np.ndarray, int | None]:
        """The queue walked in order up to the first job that fits on free GPUs (the engine's placement, asked
        once per job shape in this state, :func:`.job_shape.start_shape`): the jobs before it that would have
        to share (asking no more GPUs than are free or held alone; an array, in order), and that job (None:
        none fits)."""
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
        return before[need[:stop] <= n_free + view.num_single()], placeable

    def begin(self, view: ClusterView) -> None:
        """Hook called once per ``act`` before the queue is walked."""

    def first_share(self, view: ClusterView, jobs: Iterable[int] | np.ndarray) -> Action | None:
        """The first of ``jobs`` (pending, in queue order) that :meth:`share` colocates, as its action; None
        when none does. Subclasses may evaluate the jobs together; the answer must be the same."""
        for j in jobs.tolist() if isinstance(jobs, np.ndarray) else jobs:
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


class SJFOrder:
    """The queue of one view shortest expected run time first (ties by queue position: a stable sort of the
    queue by solo time), worked out from the last answer when the queue starts with the last queue's jobs still
    waiting, in their order (it only lost jobs and gained jobs at its back: no preempted job rejoined): the last
    order less the jobs that left, with the new jobs, sorted, merged in after the jobs of equal or shorter time
    (they stand behind those in the queue). Otherwise, or when a solo time is NaN (which sorts last, unlike any
    merge), the queue is sorted again."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self._solo = view.solo_time
        self._merge = not bool(np.isnan(self._solo).any())
        self._mark = np.zeros(view.n_jobs, dtype=bool)
        self._queue = self._order = np.zeros(0, dtype=np.int64)

    def order(self) -> np.ndarray:
        """The pending jobs in SJF order (a fresh array)."""
        pend = self.view.pending_jobs()
        solo, queue = self._solo, self._queue
        order = None
        n = len(queue)
        # none left (the last queued job still at its place first: a job that left would have moved it up)
        if len(pend) >= n and (not n or pend[n - 1] == queue[-1]) and (pend[:n] == queue).all():
            if len(pend) == n:
                order = self._order
            elif self._merge and n:
                order = self._merged(self._order, pend[n:])
        elif self._merge and n:
            mark = self._mark
            mark[pend] = True
            stay = queue[mark[queue]]
            if (pend[:len(stay)] == stay).all():  # the same jobs ahead, in the same order (stay is within pend)
                order = self._merged(self._order[mark[self._order]], pend[len(stay):])
            mark[pend] = False
        if order is None:
            order = pend[np.argsort(solo[pend], kind="stable")] if len(pend) > 1 else pend
        self._queue, self._order = pend, order
        return order.copy()

    def _merged(self, order: np.ndarray, new: np.ndarray) -> np.ndarray:
        """``order`` with the jobs ``new`` (arrived behind every job of it), sorted, merged in after the jobs of
        equal or shorter time."""
        if len(new) == 0:
            return order
        solo = self._solo
        new = new[np.argsort(solo[new], kind="stable")]
        return np.insert(order, np.searchsorted(solo[order], solo[new], side="right"), new)
