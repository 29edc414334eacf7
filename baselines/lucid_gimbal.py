"""``lucid+gimbal`` (gimbal §7.2, JCT): Lucid (:mod:`gpucluster_env.baselines.lucid`) with its packing relaxed --
any two sharing scores may pack, and a job may pack beside a larger one under Gimbal's topology rule -- wrapped in
Gimbal's coordination (:class:`~gpucluster_env.baselines.parts.gimbal_layer.WithGimbal`) with the JCT objective
(eq. 1-2)."""

from __future__ import annotations

from typing import ClassVar

from gpucluster_env.baselines.lucid import Lucid, ScoreSum
from gpucluster_env.baselines.parts.gimbal_layer import (
    SEARCH_STEP_S,
    GimbalOptions,
    Granularity,
    StepSeconds,
    WithGimbal,
)
from gpucluster_env.baselines.parts.gimbal_search import DEFAULT_GRANULARITY
from gpucluster_env.baselines.parts.xi_predictor import XiPredictor

from gpucluster_env.policy import register_policy


@register_policy
class LucidGimbal(WithGimbal):
    """Lucid with Gimbal: any pair may pack, unequal GPU counts allowed, JCT coordination."""

    name: ClassVar[str] = "lucid+gimbal"
    description: ClassVar[str] = (
        "Lucid relaxed (any sharing scores, unequal GPU counts under Gimbal's topology rule) + Gimbal's JCT "
        "coordination (squeeze/swell, sample stealing, early exit)"
    )
    paper: ClassVar[str] = "gimbal §5.2 Alg. 1, eq. 1-2, §7.2 (JCT)"

    def __init__(self, threshold: ScoreSum = 4, unequal: bool = True, time_ratio: float = 2.0, lgrr: bool = True,
                 liss: bool = True, early_exit: bool = True, predictor: XiPredictor | None = None,
                 granularity: Granularity = DEFAULT_GRANULARITY, step_s: StepSeconds = SEARCH_STEP_S) -> None:
        """``threshold``, ``unequal``, ``time_ratio``: Lucid's (relaxed by default); the rest: Gimbal's
        (:class:`~gpucluster_env.baselines.parts.gimbal_layer.GimbalOptions`)."""
        super().__init__(Lucid(threshold, unequal, time_ratio), "jct",
                         GimbalOptions(lgrr, liss, early_exit, predictor, granularity, step_s))
