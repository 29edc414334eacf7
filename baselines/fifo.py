"""Classic exclusive-GPU baselines: FIFO and SJF (castor §9.1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from gpucluster_env.baselines.base import QueuePolicy

from gpucluster_env.policy import register_policy


@register_policy
class FIFO(QueuePolicy):
    """First in, first out; the head of the queue blocks the jobs behind it."""

    name: ClassVar[str] = "fifo"
    description: ClassVar[str] = "First-in-first-out, exclusive GPUs, no backfilling (head-of-line blocking)"
    paper: ClassVar[str] = "castor §9.1 baseline"
    strict: ClassVar[bool] = True


@register_policy
class SJF(QueuePolicy):
    """Shortest job first with perfect knowledge of job duration; non-preemptive, exclusive GPUs."""

    name: ClassVar[str] = "sjf"
    description: ClassVar[str] = "Shortest job first (oracle durations), exclusive GPUs, non-preemptive"
    paper: ClassVar[str] = "castor §9.1 baseline"

    def priority(self, env: Any) -> Callable[[int], Any]:
        solo = self.view(env).solo_time
        return lambda j: (solo[j], j)


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


@register_policy
class YarnCS(QueuePolicy):
    """Apache YARN's capacity scheduler as the Philly cluster ran it (Tiresias/Lucid baseline): jobs start in
    arrival order, exclusive and non-preemptive; unlike strict :class:`FIFO` a job that does not fit leaves
    the capacity to later jobs that do (one queue: the traces carry no virtual-cluster quotas)."""

    name: ClassVar[str] = "yarn-cs"
    description: ClassVar[str] = "YARN capacity scheduler: FIFO with backfilling, exclusive, non-preemptive"
    paper: ClassVar[str] = "Tiresias (NSDI'19) / Lucid baseline, used by castor §9.1's FIFO discussion"

    def __init__(self, backfill: bool = True) -> None:
        """``backfill=False``: the FIFO of Tiresias' own simulator, which stops at the first job that does not
        fit (head-of-line blocking) instead of letting later jobs take the capacity."""
        if not isinstance(backfill, bool):
            raise ValueError(f"backfill: expected true or false, got {backfill!r}")
        self.strict = not backfill
