"""YARN-CS: Apache YARN's capacity scheduler as the Philly cluster ran it, the FIFO-with-backfilling baseline of
Tiresias and Lucid (castor §9.1 discusses it beside FIFO)."""

from __future__ import annotations

from typing import ClassVar

from gpucluster_env.baselines.parts.queue_policy import QueuePolicy

from gpucluster_env.policy import register_policy


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
        self.strict = not backfill
