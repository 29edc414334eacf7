"""``gavel-ftf``: Gavel's finish-time fairness (Themis' metric, bisection over LPs) in rounds (Narayanan et al.,
OSDI'20)."""

from __future__ import annotations

from typing import ClassVar

from gpucluster_env.baselines.parts.gavel_scheduler import Gavel

from gpucluster_env.policy import register_policy


@register_policy
class GavelFTF(Gavel):
    """``gavel-ftf``: Gavel's finish-time fairness policy."""

    name: ClassVar[str] = "gavel-ftf"
    description: ClassVar[str] = "Gavel: finish-time fairness (bisection over LPs) in rounds; exclusive GPUs"
    default_objective: ClassVar[str] = "ftf"
