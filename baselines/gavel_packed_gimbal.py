"""``gavel-packed+gimbal`` (gimbal §7.2, makespan): Gimbal's makespan coordination (eq. 5-6) wrapped around Gavel's
packed LP (``gavel-packed``, :mod:`gpucluster_env.baselines.gavel_packed`), on the pairs that LP forms; the other
reading of Gimbal's Gavel beside ``gavel+gimbal`` (:mod:`gpucluster_env.baselines.gavel_gimbal`)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from gpucluster_env.baselines.gavel_packed import PAIR_LPS, GavelPacked
from gpucluster_env.baselines.parts.gimbal_layer import GimbalOptions, Granularity, WithGimbal
from gpucluster_env.baselines.parts.gimbal_search import DEFAULT_GRANULARITY
from gpucluster_env.baselines.parts.xi_predictor import XiPredictor

from gpucluster_env.policy import register_policy
from gpucluster_env.policy_options import NON_NEGATIVE, OptionSpec


@register_policy
class GavelPackedGimbal(WithGimbal):
    """Gimbal's makespan coordination on the pairs Gavel's own packed LP forms (gimbal §7.2's reading closest to
    "the original Gavel first makes the job packing decision using the optimization problems")."""

    name: ClassVar[str] = "gavel-packed+gimbal"
    description: ClassVar[str] = (
        "Gavel's packed LP (minimize makespan by default; equal GPU counts, measured pair throughputs) in rounds "
        "+ Gimbal's makespan coordination (LISS, LGRR) on every pair it runs"
    )
    paper: ClassVar[str] = "gimbal §5.2 Alg. 1, eq. 5-6, §7.2 (makespan)"

    def __init__(self, objective: Annotated[str, OptionSpec(choices=("max-min", "makespan"))] = "makespan",
                 round_s: float | None = None, min_reset_s: Annotated[float, NON_NEGATIVE] = 1920.0,
                 lgrr: bool = True, liss: bool = True, early_exit: bool = True,
                 predictor: XiPredictor | None = None, granularity: Granularity = DEFAULT_GRANULARITY,
                 pair_lp: Annotated[str, OptionSpec(choices=PAIR_LPS)] = "warm") -> None:
        """``objective``, ``round_s``, ``min_reset_s``, ``pair_lp``: ``gavel-packed``'s (default objective:
        makespan; default ``pair_lp``: ``warm``, the exact partner-class LP from the previous basis, ``partners`` the
        same from scratch, ``groups`` over groups of alike jobs where that reaches its optimum, ``pairs`` Gavel's
        own pair LP for checking,
        :data:`~gpucluster_env.baselines.gavel_packed.PAIR_LPS`); the rest: Gimbal's
        (:class:`~gpucluster_env.baselines.parts.gimbal_layer.GimbalOptions`).
        Gavel's LP decides every pair (no relaxed, unequal packing: its pairs have equal GPU counts), so this
        isolates the coordination; the jobs a round stops or moves start again at full share."""
        super().__init__(GavelPacked(objective, round_s, min_reset_s, pair_lp=pair_lp), "makespan",
                         GimbalOptions(lgrr, liss, early_exit, predictor, granularity), forget_stopped=True)
