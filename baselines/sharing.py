"""GPU-sharing list schedulers built on SJF: the common skeleton and SJF-FFS (sjf-bsbf §VI-A4, castor §9.1).

Both walk pending jobs shortest-first (L_k = solo iteration time x iterations, Algorithm 1 line 1) and start a
job exclusively when enough free GPUs exist (lines 6-7). When free GPUs do not suffice they differ: SJF-FFS
colocates the job first-fit onto GPUs that hold one job, whatever the interference; Castor (:mod:`.castor`)
ranks candidate partners by the pair JCT Theorem 1 predicts and shares only where sharing beats waiting.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..engine import Action, Colocate, Place, Wait
from .base import Policy, register_policy


class SJFSharingPolicy(Policy):
    """SJF list scheduling with a colocation fallback that subclasses define in :meth:`share`."""

    engine: Any = None
    """The engine of the current episode (kept after it ends so a harness can read per-decision results)."""

    def reset(self, env: Any) -> None:
        self.engine = env.unwrapped.engine

    def order(self, eng: Any) -> list[int]:
        """Pending jobs, shortest expected run time first (ties by queue position)."""
        pend = eng.pending_jobs()
        if len(pend) <= 1:
            return pend.tolist()
        key = eng.solo_time[pend]
        return pend[np.argsort(key, kind="stable")].tolist()

    def act(self, observation: Any, env: Any) -> Action | int:
        eng = env.unwrapped.engine
        if eng.num_pending == 0:
            return Wait()
        n_free = int(eng.free_mask().sum())
        n_single = int(eng.single_mask().sum())
        self.begin(eng)
        for j in self.order(eng):
            need = int(eng.req_gpus[j])
            if need <= n_free and eng.plan_place(j) is not None:
                return Place(j)
            if need <= n_free + n_single:
                a = self.share(eng, j)
                if a is not None:
                    return a
        return Wait()

    def begin(self, eng: Any) -> None:
        """Hook called once per ``act`` before the queue is walked."""

    def share(self, eng: Any, j: int) -> Action | None:
        """A colocation action for pending job ``j`` when free GPUs are too few, or None to skip it."""
        raise NotImplementedError


def fill_with_free(eng: Any, chosen: list[int], need: int) -> list[int] | None:
    """Top ``chosen`` up to ``need`` GPUs with free GPUs, nodes already used first, then the fullest nodes."""
    if len(chosen) >= need:
        return chosen[:need]
    free = np.flatnonzero(eng.free_mask())
    if len(chosen) + len(free) < need:
        return None
    used_nodes = set(eng.gpu_node[chosen].tolist()) if chosen else set()
    per_node = np.bincount(eng.gpu_node[free], minlength=eng.num_nodes)
    nodes = eng.gpu_node[free]
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

    def share(self, eng: Any, j: int) -> Action | None:
        need = int(eng.req_gpus[j])
        singles = np.flatnonzero(eng.single_mask())
        if len(singles) == 0:
            return None
        p = eng.profiles[int(eng.job_model[j])]
        tenant = eng.slot_job[singles, 0]
        room = eng.type_mem[eng.gpu_type[singles]] - eng.footprint[tenant]
        ok = singles[room + 1e-9 >= p.memory_gb(1.0)]  # fits at the largest accumulation (sub-batch 1)
        if len(ok) == 0:
            return None
        chosen = fill_with_free(eng, ok[:need].tolist(), need)
        if chosen is None:
            return None
        g = np.array(chosen, dtype=np.int64)
        s = eng.accumulation_for(j, g)
        if s is None:
            return None
        partner = int(eng.slot_job[chosen[0], 0])
        return Colocate(j, partner, accumulation=s, gpus=tuple(int(x) for x in g))
