"""SJF: shortest job first with oracle durations, exclusive GPUs, non-preemptive (castor §9.1 baseline)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from gpucluster_env.baselines.parts.queue_policy import QueuePolicy

from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import register_policy


@register_policy
class SJF(QueuePolicy):
    """Shortest job first with perfect knowledge of job duration; non-preemptive, exclusive GPUs."""

    name: ClassVar[str] = "sjf"
    description: ClassVar[str] = "Shortest job first (oracle durations), exclusive GPUs, non-preemptive"
    paper: ClassVar[str] = "castor §9.1 baseline"

    def priority_keys(self, view: ClusterView, jobs: np.ndarray) -> np.ndarray:
        return view.solo_time[jobs]
