"""Classic exclusive-GPU baselines: FIFO and SJF (castor §9.1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from .base import QueuePolicy, register_policy


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
        eng = env.unwrapped.engine
        return lambda j: (eng.solo_time[j], j)
