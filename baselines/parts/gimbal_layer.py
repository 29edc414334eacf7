"""Gimbal's coordination as a wrapper around any host policy (gimbal §5.2, §7.1-7.3): :class:`WithGimbal` plays
its host scheduler's decisions and, every ``step_s`` (39 s: one LGRR search iteration, gimbal §7.4 Fig. 14), lets
Gimbal's coordinator (:class:`~gpucluster_env.baselines.parts.gimbal_search.Coordinator`) take one calibration step
on every packing set (squeeze/swell by MPS share, sample stealing, early exit). The registered "+gimbal" policies
wrap a host whose packing is relaxed:

* ``lucid+gimbal`` (:mod:`gpucluster_env.baselines.lucid_gimbal`): Lucid with any pair allowed to pack and unequal
  packing under the topology rule; JCT objective (eq. 1-2).
* ``gandiva+gimbal`` (:mod:`gpucluster_env.baselines.gandiva_gimbal`): Gandiva with unequal packing; deadline
  objective (eq. 3-4); Gandiva's introspection judges a packed set only after Gimbal's search on it has ended.
* ``gavel+gimbal`` (:mod:`gpucluster_env.baselines.gavel_gimbal`): Gavel's makespan rounds, the jobs a round
  leaves waiting packed under the topology rule; ``gavel-packed+gimbal``
  (:mod:`gpucluster_env.baselines.gavel_packed_gimbal`): Gavel's packed LP; makespan objective (eq. 5-6).

Any other policy may be wrapped the same way (``WithGimbal(make_policy("sjf-ffs"), "jct")``): the coordinator
works on whatever packing sets the host forms. A host that must know the coordinator (Gandiva's introspection
reads its searches and shares) defines ``attach_coordinator(coordinator)``, called at every reset.

Options (:class:`GimbalOptions`, the Fig. 12 ablation): ``lgrr`` (MPS share calibration, each switch pays the
scenario's ``calibration_overhead_s``), ``liss`` (per-job sample stealing, free to switch), ``early_exit`` (three
attempts without gain end a search, gimbal §7.4), ``granularity`` (percent of the GPU a share moves per search
attempt, §7.4's study of 5, 10, 20 and 30; default 10; a multiple of the scenario's ``share_step``, so 5 needs the
scenario option ``share_step=0.05``), ``step_s`` (seconds between two search steps, default
:data:`SEARCH_STEP_S`; a step is taken at the first decision point after it is due, so the scenario's calibration
ticks ``tick_s`` should divide it: the gimbal scenarios tick every 39 s). With both mechanisms off only the
relaxed, unequal packing remains.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from gpucluster_env.baselines.parts.gimbal_search import DEFAULT_GRANULARITY, Coordinator, SearchStats
from gpucluster_env.baselines.parts.job_facts import JobFacts
from gpucluster_env.baselines.parts.xi_predictor import PREDICTOR_VERSION, XiPredictor

from gpucluster_env.engine import Action, Preempt, Reallocate, SetStealing
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy
from gpucluster_env.policy_options import OptionSpec

MONITOR_S = 30.0
"""Gimbal's runtime-monitoring period (gimbal §6): Gandiva+Gimbal's introspection period."""
SEARCH_STEP_S = 39.0
"""Seconds per search step: gimbal §7.4 (Fig. 14) measures one search iteration, a mechanism switch plus the runtime
collection it waits for (§5.2: at most 60 s or 5 training steps), at 39 s on average with LGRR and 9 s with LISS.
Every step here moves shares (LGRR) but the one per set that switches LISS on, so steps are 39 s apart."""


Granularity = Annotated[int, OptionSpec(low=1, high=99)]
"""The option of a share move per search attempt, in percent of the GPU (a multiple of the scenario's share grid,
checked at reset)."""
StepSeconds = Annotated[float, OptionSpec(low=0, low_open=True, high=1e7)]
"""The option of the seconds between two search steps."""


@dataclass(frozen=True)
class GimbalOptions:
    """The coordination's switches (the Fig. 12 ablation; see the module docstring)."""

    lgrr: bool = True
    liss: bool = True
    early_exit: bool = True
    predictor: XiPredictor | None = None
    granularity: int = DEFAULT_GRANULARITY
    step_s: float = SEARCH_STEP_S


class WithGimbal(Policy):
    """A host policy with Gimbal's coordinator: a calibration step when one is due, else the host's decision."""

    version = PREDICTOR_VERSION

    stat_names: ClassVar[tuple[str, ...]] = tuple(f"gimbal_{f.name}" for f in dataclasses.fields(SearchStats))

    def __init__(self, host: Policy, objective: str = "jct", gimbal: GimbalOptions | None = None,
                 forget_stopped: bool = False) -> None:
        """``host``: the scheduler that places and packs jobs. ``objective``: the coordination's
        (:data:`~gpucluster_env.baselines.parts.gimbal_search.OBJECTIVES`: eq. 1-2, 3-4 or 5-6).
        ``forget_stopped``: drop the shares of the jobs the host stops or moves as it returns those actions
        (a round-based host may restart such a job at once, before the next step's bookkeeping sees it stop)."""
        self.host = host
        self.gimbal_objective = objective
        self.gimbal = gimbal or GimbalOptions()
        self.forget_stopped = forget_stopped
        self.coordinator: Coordinator | None = None
        self._next_tick = 0.0

    @property
    def step_s(self) -> float:
        """Seconds between two search steps (:data:`SEARCH_STEP_S` by default)."""
        return self.gimbal.step_s

    def view(self, env: Any) -> ClusterView:
        """The host's view of the cluster (one per engine for both)."""
        return self.host.view(env)

    def env_kwargs(self) -> dict[str, Any]:
        """The host's environment."""
        return self.host.env_kwargs()

    def reset(self, env: Any) -> None:
        """The host's reset, then a fresh coordinator (handed to the host when it asks for one)."""
        self.host.reset(env)
        view = self.view(env)
        facts = JobFacts(view)
        g = self.gimbal
        self.coordinator = Coordinator(
            self.gimbal_objective, lambda j, t: facts.demand(view, j, t), facts.deadline, lgrr=g.lgrr, liss=g.liss,
            early_exit=g.early_exit, predictor=g.predictor, stealing=SetStealing, granularity=g.granularity,
            share_units=view.share_units)
        attach = getattr(self.host, "attach_coordinator", None)
        if attach is not None:
            attach(self.coordinator)
        self._next_tick = 0.0

    def act(self, observation: Any, env: Any) -> Action | int | list[Action]:
        """The coordinator's calibration when a search step is due, else the host's decision."""
        acts = self.calibrate(self.view(env))
        if acts:
            return acts
        out = self.host.act(observation, env)
        if self.forget_stopped:
            assert self.coordinator is not None
            self.coordinator.forget(a.job for a in (out if isinstance(out, list) else [out])
                                    if isinstance(a, Preempt | Reallocate))
        return out

    def episode_stats(self) -> dict[str, float]:
        """The coordinator's counts (:class:`~gpucluster_env.baselines.parts.gimbal_search.SearchStats`) as
        ``gimbal_searches``, ``gimbal_attempts``, ``gimbal_early_exits``, ``gimbal_lgrr_steps`` and
        ``gimbal_liss_switches``."""
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
