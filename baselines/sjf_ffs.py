"""SJF-FFS: SJF with first-fit sharing (sjf-bsbf §VI-A4, castor §9.1 baseline 7). Pending jobs shortest-first;
when free GPUs do not suffice, the job is colocated first-fit onto GPUs that hold one job, whatever the
interference (Castor, :mod:`gpucluster_env.baselines.castor`, instead ranks partners by Theorem 1's pair JCT).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from gpucluster_env.baselines.parts.sjf_sharing import SJFSharingPolicy, fill_with_free

from gpucluster_env.engine import Action, Colocate
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import register_policy


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
