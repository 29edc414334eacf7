"""Schedulers "with Gimbal" (gimbal §7.1-7.3): a base scheduler whose packing is relaxed, with Gimbal's
coordinator (:class:`~gpucluster_env.baselines.gimbal_search.Coordinator`) taking one calibration step on every
packing set every ``step_s`` (39 s: one LGRR search iteration, gimbal §7.4 Fig. 14).

* ``lucid+gimbal``: Lucid with a relaxed score threshold (any pair may pack) and unequal packing under the
  topology rule; JCT objective (eq. 1-2).
* ``gandiva+gimbal``: Gandiva with unequal packing; deadline objective (eq. 3-4); Gandiva's introspection
  judges a packed set only after Gimbal's search on it has ended.
* ``gavel+gimbal`` (:mod:`.gavel_gimbal`): Gavel's makespan rounds, the jobs a round leaves waiting packed under
  the topology rule; makespan objective (eq. 5-6).

Options (the Fig. 12 ablation): ``lgrr`` (MPS share calibration, each switch pays the scenario's
``calibration_overhead_s``), ``liss`` (per-job sample stealing, free to switch), ``early_exit`` (three attempts
without gain end a search, gimbal §7.4), ``granularity`` (percent of the GPU a share moves per search attempt,
§7.4's study of 5, 10, 20 and 30; default 10; a multiple of the scenario's ``share_step``, so 5 needs the
scenario option ``share_step=0.05``), ``step_s`` (seconds between two search steps, default
:data:`SEARCH_STEP_S`; a step is taken at the first decision point after it is due, so the scenario's calibration
ticks ``tick_s`` should divide it: the gimbal scenarios tick every 39 s). With both mechanisms off only the
relaxed, unequal packing remains.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from gpucluster_env.baselines.castor import XiPredictor
from gpucluster_env.baselines.gandiva import Gandiva
from gpucluster_env.baselines.gimbal_search import DEFAULT_GRANULARITY, Coordinator, SearchStats, attempt_steps
from gpucluster_env.baselines.lucid import Lucid
from gpucluster_env.baselines.profiled import JobFacts

from gpucluster_env.engine import Action, SetStealing
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import register_policy

MONITOR_S = 30.0
"""Gimbal's runtime-monitoring period (gimbal §6): Gandiva+Gimbal's introspection period."""
SEARCH_STEP_S = 39.0
"""Seconds per search step: gimbal §7.4 (Fig. 14) measures one search iteration, a mechanism switch plus the runtime
collection it waits for (§5.2: at most 60 s or 5 training steps), at 39 s on average with LGRR and 9 s with LISS.
Every step here moves shares (LGRR) but the one per set that switches LISS on, so steps are 39 s apart."""


class GimbalLayer:
    """The coordination layer a "+gimbal" policy mixes into its base scheduler."""

    gimbal_objective: ClassVar[str] = "jct"
    """The coordination objective (:data:`~.gimbal_search.OBJECTIVES`): eq. 1-2, 3-4 or 5-6."""
    coordinator: Coordinator | None = None
    step_s: float = SEARCH_STEP_S
    """Seconds between two search steps (:data:`SEARCH_STEP_S`)."""
    _next_tick: float = 0.0
    stat_names: ClassVar[tuple[str, ...]] = tuple(f"gimbal_{f.name}" for f in dataclasses.fields(SearchStats))

    def _init_layer(self, lgrr: bool, liss: bool, early_exit: bool, predictor: XiPredictor | None,
                    granularity: int, step_s: float | None = None) -> None:
        self.lgrr, self.liss, self.early_exit = bool(lgrr), bool(liss), bool(early_exit)
        if step_s is not None:
            if not (isinstance(step_s, int | float) and not isinstance(step_s, bool) and 0 < step_s < 1e7):
                raise ValueError(f"{type(self).__name__}: step_s must be seconds between search steps (> 0), got "
                                 f"{step_s!r}")
            self.step_s = float(step_s)
        attempt_steps(granularity, 100)  # a percentage (the scenario's grid is checked at reset)
        self.granularity = granularity
        self.layer_predictor = predictor

    def reset(self, env: Any) -> None:
        """The base scheduler's reset, then a fresh coordinator."""
        super().reset(env)  # type: ignore[misc]
        view: ClusterView = self.view(env)  # type: ignore[attr-defined]
        facts: JobFacts = self.facts  # type: ignore[attr-defined]
        self.coordinator = Coordinator(
            self.gimbal_objective, lambda j, t: facts.demand(view, j, t), facts.deadline, lgrr=self.lgrr,
            liss=self.liss, early_exit=self.early_exit, predictor=self.layer_predictor, stealing=SetStealing,
            granularity=self.granularity, share_units=view.share_units)
        self._next_tick = 0.0

    def act(self, observation: Any, env: Any) -> Action | int | list[Action]:
        """The coordinator's calibration when a monitoring tick is due, else the base scheduler's decision."""
        acts = self.calibrate(self.view(env))  # type: ignore[attr-defined]
        return acts if acts else super().act(observation, env)  # type: ignore[misc]

    def episode_stats(self) -> dict[str, float]:
        """The coordinator's counts (:class:`~.gimbal_search.SearchStats`) as ``gimbal_searches``,
        ``gimbal_attempts``, ``gimbal_early_exits``, ``gimbal_lgrr_steps`` and ``gimbal_liss_switches``."""
        if self.coordinator is None:
            return {}
        return {f"gimbal_{k}": float(v) for k, v in dataclasses.asdict(self.coordinator.stats).items()}

    def calibrate(self, view: ClusterView) -> list[Action]:
        """The coordinator's actions when a search step is due (at most one per ``step_s``)."""
        assert self.coordinator is not None
        if view.now < self._next_tick:
            return []
        self._next_tick = view.now + self.step_s
        return self.coordinator.tick(view)


@register_policy
class LucidGimbal(GimbalLayer, Lucid):
    """Lucid with Gimbal: any pair may pack, unequal GPU counts allowed, JCT coordination."""

    name: ClassVar[str] = "lucid+gimbal"
    description: ClassVar[str] = (
        "Lucid relaxed (any sharing scores, unequal GPU counts under Gimbal's topology rule) + Gimbal's JCT "
        "coordination (squeeze/swell, sample stealing, early exit)"
    )
    paper: ClassVar[str] = "gimbal §5.2 Alg. 1, eq. 1-2, §7.2 (JCT)"
    gimbal_objective: ClassVar[str] = "jct"

    def __init__(self, threshold: int = 4, unequal: bool = True, time_ratio: float = 2.0, lgrr: bool = True,
                 liss: bool = True, early_exit: bool = True, predictor: XiPredictor | None = None,
                 granularity: int = DEFAULT_GRANULARITY, step_s: float = SEARCH_STEP_S) -> None:
        super().__init__(threshold, unequal, time_ratio)
        self._init_layer(lgrr, liss, early_exit, predictor, granularity, step_s)


@register_policy
class GandivaGimbal(GimbalLayer, Gandiva):
    """Gandiva with Gimbal: unequal GPU counts allowed, deadline coordination before introspection."""

    name: ClassVar[str] = "gandiva+gimbal"
    description: ClassVar[str] = (
        "Gandiva with deadlines, unequal packing under Gimbal's topology rule + Gimbal's deadline coordination; "
        "introspection after each set's search"
    )
    paper: ClassVar[str] = "gimbal §5.2 Alg. 1, eq. 3-4, §7.2 (deadlines)"
    gimbal_objective: ClassVar[str] = "deadline"

    def __init__(self, unequal: bool = True, tick_s: float = MONITOR_S, lgrr: bool = True, liss: bool = True,
                 early_exit: bool = True, predictor: XiPredictor | None = None,
                 granularity: int = DEFAULT_GRANULARITY, step_s: float = SEARCH_STEP_S) -> None:
        super().__init__(unequal, tick_s, predictor)
        self._init_layer(lgrr, liss, early_exit, predictor, granularity, step_s)

    def settled(self, view: ClusterView, jmax: int) -> bool:
        assert self.coordinator is not None
        st = self.coordinator.searches.get(jmax)
        return st is not None and st.done

    def current_shares(self) -> dict[tuple[int, int], int]:
        assert self.coordinator is not None
        return self.coordinator.shares
