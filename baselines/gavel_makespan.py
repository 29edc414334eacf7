"""``gavel-makespan``: Gavel's minimize-makespan LP in rounds (Narayanan et al., OSDI'20)."""

from __future__ import annotations

from typing import ClassVar

from gpucluster_env.baselines.parts.gavel_scheduler import Gavel

from gpucluster_env.policy import register_policy


@register_policy
class GavelMakespan(Gavel):
    """``gavel-makespan``: Gavel's minimize-makespan (total duration) policy."""

    name: ClassVar[str] = "gavel-makespan"
    description: ClassVar[str] = "Gavel: minimize-makespan LP (HiGHS) in rounds; exclusive GPUs, one type per job"
    default_objective: ClassVar[str] = "makespan"
