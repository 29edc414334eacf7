"""SJF: shortest job first with oracle durations, exclusive GPUs, non-preemptive (castor §9.1 baseline)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from gpucluster_env.baselines.parts.queue_policy import QueuePolicy

from gpucluster_env.policy import register_policy


@register_policy
class SJF(QueuePolicy):
    """Shortest job first with perfect knowledge of job duration; non-preemptive, exclusive GPUs."""

    name: ClassVar[str] = "sjf"
    description: ClassVar[str] = "Shortest job first (oracle durations), exclusive GPUs, non-preemptive"
    paper: ClassVar[str] = "castor §9.1 baseline"

    def priority(self, env: Any) -> Callable[[int], Any]:
        solo = self.view(env).solo_time
        return lambda j: (solo[j], j)
