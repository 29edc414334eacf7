"""SSF: shortest GPU-service first (duration x GPUs asked), exclusive GPUs, non-preemptive (castor §9.1 baseline
3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from gpucluster_env.baselines.parts.queue_policy import QueuePolicy

from gpucluster_env.policy import register_policy


@register_policy
class SSF(QueuePolicy):
    """Shortest (GPU-)service first: SJF weighted by the GPUs a job asks for (castor §9.1 baseline 3)."""

    name: ClassVar[str] = "ssf"
    description: ClassVar[str] = "Shortest GPU-service first (duration x GPUs), exclusive, non-preemptive"
    paper: ClassVar[str] = "castor §9.1 baseline"

    def priority(self, env: Any) -> Callable[[int], Any]:
        view = self.view(env)
        solo, req = view.solo_time, view.req_gpus
        return lambda j: (solo[j] * req[j], j)
