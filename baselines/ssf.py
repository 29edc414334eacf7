"""SSF: shortest GPU-service first (duration x GPUs asked), exclusive GPUs, non-preemptive (castor §9.1 baseline
3)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from gpucluster_env.baselines.parts.queue_policy import QueuePolicy

from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import register_policy


@register_policy
class SSF(QueuePolicy):
    """Shortest (GPU-)service first: SJF weighted by the GPUs a job asks for (castor §9.1 baseline 3)."""

    name: ClassVar[str] = "ssf"
    description: ClassVar[str] = "Shortest GPU-service first (duration x GPUs), exclusive, non-preemptive"
    paper: ClassVar[str] = "castor §9.1 baseline"

    def priority_keys(self, view: ClusterView, jobs: np.ndarray) -> np.ndarray:
        return view.solo_time[jobs] * view.req_gpus[jobs]
