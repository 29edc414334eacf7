"""GPU-sharing list schedulers built on SJF: the common skeleton and SJF-FFS (sjf-bsbf §VI-A4, castor §9.1).

Both walk pending jobs shortest-first (L_k = solo iteration time x iterations, Algorithm 1 line 1) and start a
job exclusively when enough free GPUs exist (lines 6-7). When free GPUs do not suffice they differ: SJF-FFS
colocates the job first-fit onto GPUs that hold one job, whatever the interference; Castor (:mod:`.castor`)
ranks candidate partners by the pair JCT Theorem 1 predicts and shares only where sharing beats waiting.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

import numpy as np

from gpucluster_env.engine import Action, Colocate, Place, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy, register_policy


class SJFSharingPolicy(Policy):
    """SJF list scheduling with a colocation fallback that subclasses define in :meth:`share`."""

    def order(self, view: ClusterView) -> list[int]:
        """Pending jobs, shortest expected run time first (ties by queue position)."""
        pend = view.pending_jobs()
        if len(pend) <= 1:
            return pend.tolist()
        key = view.solo_time[pend]
        return pend[np.argsort(key, kind="stable")].tolist()

    def act(self, observation: Any, env: Any) -> Action | int:
        view = self.view(env)
        if view.num_pending == 0:
            return Wait()
        n_free = view.num_free()
        n_single = view.num_single()
        self.begin(view)
        placeable: list[int] = []

        def sharers() -> Iterator[int]:
            """The queue walked in order up to the first job that fits on free GPUs (kept in ``placeable``):
            the jobs that would have to share, as they come."""
            for j in self.order(view):
                need = int(view.req_gpus[j])
                if need <= n_free and view.plan_place(j) is not None:
                    placeable.append(j)
                    return
                if need <= n_free + n_single:
                    yield j

        a = self.first_share(view, sharers())
        if a is not None:
            return a
        return Place(placeable[0]) if placeable else Wait()

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


@register_policy
class SJFFFS(SJFSharingPolicy):
    """SJF with first-fit sharing: when free GPUs do not suffice, take GPUs holding one job in index order
    (first fit) where the job fits in memory beside the tenant at some accumulation, topped up with free GPUs;
    the engine picks the smallest accumulation that fits. It never declines a colocation."""

    name: ClassVar[str] = "sjf-ffs"
    description: ClassVar[str] = (
        "SJF; when free GPUs fall short, colocate first-fit on GPUs holding one job (greedy sharing)"
    )
    paper: ClassVar[str] = "sjf-bsbf §VI-A4; castor §9.1 baseline 7"

    def share(self, view: ClusterView, j: int) -> Action | None:
        need = int(view.req_gpus[j])
        singles = view.single_gpus()
        if len(singles) == 0:
            return None
        ok = singles[view.fits_on(j, singles, view.batch(j))]  # fits at sub-batch 1 (s = batch)
        if len(ok) == 0:
            return None
        chosen = fill_with_free(view, ok[:need].tolist(), need)
        if chosen is None:
            return None
        g = np.array(chosen, dtype=np.int64)
        s = view.accumulation_for(j, g)
        if s is None:
            return None
        partner = int(view.tenants([chosen[0]])[0, 0])
        return Colocate(j, partner, accumulation=s, gpus=tuple(int(x) for x in g))
