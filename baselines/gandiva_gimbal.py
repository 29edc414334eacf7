"""``gandiva+gimbal`` (gimbal §7.2, deadlines): Gandiva with deadlines (:mod:`gpucluster_env.baselines.gandiva`),
unequal packing under Gimbal's topology rule, wrapped in Gimbal's coordination
(:class:`~gpucluster_env.baselines.parts.gimbal_layer.WithGimbal`) with the deadline objective (eq. 3-4).
Gandiva's introspection judges a packed set only after Gimbal's search on it has ended, at the shares the
search set (:class:`CoordinatedGandiva`)."""

from __future__ import annotations

from typing import ClassVar

from gpucluster_env.baselines.gandiva import Gandiva
from gpucluster_env.baselines.parts.gimbal_layer import (
    MONITOR_S,
    SEARCH_STEP_S,
    GimbalOptions,
    Granularity,
    StepSeconds,
    WithGimbal,
)
from gpucluster_env.baselines.parts.gimbal_search import DEFAULT_GRANULARITY, Coordinator
from gpucluster_env.baselines.parts.xi_predictor import XiPredictor

from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import register_policy


class CoordinatedGandiva(Gandiva):
    """Gandiva whose introspection reads Gimbal's coordinator (given by :class:`WithGimbal` at reset): a set is
    judged once its search has ended, at the shares the coordinator set."""

    coordinator: Coordinator | None = None

    def attach_coordinator(self, coordinator: Coordinator) -> None:
        """The coordinator of this episode (it reads the packing sets and predicted rates this host keeps)."""
        self.coordinator = coordinator
        coordinator.use_sets(self.sets)
        assert self.model is not None
        coordinator.use_model(self.model)

    def settled(self, view: ClusterView, jmax: int) -> bool:
        assert self.coordinator is not None
        st = self.coordinator.searches.get(jmax)
        return st is not None and st.done

    def current_shares(self) -> dict[tuple[int, int], int]:
        assert self.coordinator is not None
        return self.coordinator.shares


@register_policy
class GandivaGimbal(WithGimbal):
    """Gandiva with Gimbal: unequal GPU counts allowed, deadline coordination before introspection."""

    name: ClassVar[str] = "gandiva+gimbal"
    description: ClassVar[str] = (
        "Gandiva with deadlines, unequal packing under Gimbal's topology rule + Gimbal's deadline coordination; "
        "introspection after each set's search"
    )
    paper: ClassVar[str] = "gimbal §5.2 Alg. 1, eq. 3-4, §7.2 (deadlines)"

    def __init__(self, unequal: bool = True, tick_s: float = MONITOR_S, lgrr: bool = True, liss: bool = True,
                 early_exit: bool = True, predictor: XiPredictor | None = None,
                 granularity: Granularity = DEFAULT_GRANULARITY, step_s: StepSeconds = SEARCH_STEP_S) -> None:
        """``unequal``, ``tick_s`` (introspection period), ``predictor``: Gandiva's; the rest: Gimbal's
        (:class:`~gpucluster_env.baselines.parts.gimbal_layer.GimbalOptions`)."""
        super().__init__(CoordinatedGandiva(unequal, tick_s, predictor), "deadline",
                         GimbalOptions(lgrr, liss, early_exit, predictor, granularity, step_s))
