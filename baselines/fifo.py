"""FIFO: first in, first out on exclusive GPUs, the head of the queue blocking the jobs behind it (castor §9.1
baseline)."""

from __future__ import annotations

from typing import ClassVar

from gpucluster_env.baselines.parts.queue_policy import QueuePolicy

from gpucluster_env.policy import register_policy


@register_policy
class FIFO(QueuePolicy):
    """First in, first out; the head of the queue blocks the jobs behind it."""

    name: ClassVar[str] = "fifo"
    description: ClassVar[str] = "First-in-first-out, exclusive GPUs, no backfilling (head-of-line blocking)"
    paper: ClassVar[str] = "castor §9.1 baseline"
    strict: ClassVar[bool] = True
