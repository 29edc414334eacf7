"""The Gymnasium environment: a scheduler's view of a GPU cluster running deep-learning training jobs."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded

from ..catalog import Catalog
from ..engine import Action, ClusterEngine
from ..engine.build import make_engine
from ..scenarios import Scenario
from . import action_steps
from .codec import DEFAULT_N_PENDING, WAIT, ActionCodec, ActionLayout
from .decision_point import DecisionPoint
from .env_options import (  # re-exported: users import them from here
    ACTION_KINDS,
    DEFAULT_MIN_RUN_S,
    LAYOUTS,
    OBJECTIVES,
    OBSERVATIONS,
    PENDING_ORDERS,
    check_env_options,
    resolve_scenario,
)
from .hints import check_hint
from .limits import check_env_limit
from .observation import ObservationBuilder
from .rules import MAX_REJECTED_RUN, STEPS_SLACK, DecisionRules
from .sets import SetsView

NONE_OBSERVATION = np.zeros(1, dtype=np.float32)
NONE_OBSERVATION.setflags(write=False)
"""Every observation of ``observation="none"``: one constant, read-only array (not a new one each step)."""

__all__ = ["ACTION_KINDS", "DEFAULT_MIN_RUN_S", "LAYOUTS", "OBJECTIVES", "OBSERVATIONS", "PENDING_ORDERS",
           "GPUClusterEnv"]


class GPUClusterEnv(gym.Env):
    """Schedule deep-learning training jobs on a heterogeneous, multi-tenant GPU cluster.

    ## Description
    Jobs of a trace (Philly, Venus, Alibaba, or a synthetic one fitted to them) arrive at a cluster of GPU
    servers of one or more types. The agent decides, at each decision point (a job arrives, a job finishes, a
    round boundary, a calibration tick), which pending job to start where, whether to share GPUs between two
    jobs through NVIDIA MPS (they slow each other down by an interference ratio xi), how to split a shared GPU
    (squeeze/swell the MPS share), whether to preempt, and whether to fork a job across nodes (HadarE). A
    discrete-event engine computes exact progress between decision points with Castor's iteration-time model.

    ## Action Space
    ``Discrete(n)``: ``wait`` (0), then ``place(i, type|any)``, ``colocate(i, r)``, ``squeeze(r)``, ``swell(r)``,
    ``preempt(r)``, ``fork(r)`` over a window of the first ``n_pending`` queued jobs (``i``) and the first
    ``n_running`` running jobs (``r``); see :mod:`gpucluster_env.env.codec`. The default ``"compact"`` layout
    leaves the accumulation to the engine (161 actions on a one-type cluster with the default
    windows); ``action_layout="full"`` adds explicit accumulations (1,121-1,153 on one to three types).
    Every action but ``wait`` applies at once and returns at the same simulated instant; ``wait`` runs time
    to the next decision point. ``action_masks()`` gives the valid actions (sb3-contrib's MaskablePPO reads it).
    The masks bound the actions between two clock advances by ``(1 + c + f) x jobs in system``
    (:mod:`gpucluster_env.env.rules`), so no agent can stall time. The env also accepts typed actions
    (:mod:`gpucluster_env.engine.actions`) with exact GPU sets, for white-box agents.

    ## Observation Space
    A ``Dict`` of 1-D float32 vectors in [0, 1]: ``pending`` (n_pending x 12), ``running`` (n_running x 16),
    ``pairs`` (n_pending x n_running x 2, *predicted* interference), ``cluster`` (GPU types x 4), ``clock``
    (7);
    documented feature by feature in :mod:`gpucluster_env.env.observation`. ``observation="box"`` gives them as
    one flat ``Box``; ``observation="none"`` a constant 1-element ``Box`` (the same read-only zero array at
    every step) for white-box agents that read ``env.unwrapped.engine``.

    ## Rewards
    ``objective="jct"`` (default): ``-(jobs in system) x dt / reward_scale`` per step, so the return is minus the
    total JCT over ``reward_scale``. ``reward_scale=None`` (default) normalizes per episode by the total solo
    run time of its jobs on their fastest GPU type: the return is minus the mean JCT over the mean solo time,
    O(1)-O(100) on every scenario; for the other objectives ``None`` means an hour. ``"makespan"``:
    ``-dt / reward_scale`` while jobs remain. ``"deadlines"``:
    +1 per job finished by its deadline and -1 per job finished late, over the number of jobs with deadlines.
    ``"utilization"``: busy GPU-seconds over ``num_gpus x reward_scale``. All terms are in ``info["rewards"]``.
    Steps are decisions, not time: see :class:`gpucluster_env.env.wrappers.TimeDiscount` for a discount by
    simulated time.

    ## Starting State
    ``reset(seed=s)`` draws the episode's job table from the scenario's trace recipe with a generator seeded by
    ``s`` and returns the first decision point (the first arrival).

    ## Episode End
    ``terminated`` when every job of the trace has finished (``info["metrics"]`` then holds the episode
    metrics). ``truncated`` at ``max_sim_time_s`` (the clock stops at the limit: a decision point past it
    does not happen, so the metrics count only the jobs finished by then), after ``max_steps`` steps, when
    the episode stalls (the agent keeps waiting with nothing running), or by ``max_episode_steps`` (set per
    registered id) when made through ``gym.make``; ``info["metrics"]`` then holds the metrics so far.

    ## Arguments
    ``scenario`` (name or :class:`~gpucluster_env.scenarios.Scenario`), ``scenario_options`` (dict of
    overrides, e.g. ``{"num_jobs": 480}``), ``catalog``, ``n_pending=16``, ``n_running`` (default
    32 with the compact layout, 16 with the full one),
    ``action_layout="compact"|"full"``, ``n_accum`` (full layout; default 4),
    ``observation="dict"|"box"|"none"|"sets"``, ``hint=None|"srsf"`` (``sets`` only: an entry marking the action
    SRSF takes now, :mod:`gpucluster_env.env.hints`), ``objective``, ``reward_scale=None`` (per-episode
    normalization) or seconds, ``invalid_action="wait"``
    (an out-of-mask action is a counted no-op: it advances the clock as ``wait`` and ``info["invalid_actions"]``
    counts it) or ``"raise"`` (a ``ValueError`` naming it, for debugging), ``actions`` (the action kinds
    exposed, default all the scenario supports), ``min_run_s`` (preemption quantum; default one round, else
    600 s), ``pending_order="queue"`` (the pending window holds the first jobs in queue order) or
    ``"remaining"`` (the jobs with the least estimated remaining work, least first: short jobs deep in a long
    queue become visible), ``max_sim_time_s`` (simulated seconds), ``max_steps`` (env steps),
    ``render_mode="rgb_array"|"ansi"|"human"``.

    ## Registered Configurations
    ``gpucluster_env/GPUCluster-v1`` (generic: ``scenario=`` any scenario, with its own step limit) and one id
    per scenario: ``Tiny-v1``, ``CastorPhilly-v1``, ``CastorVenus-v1``, ``SjfbsbfPhilly-v1``, ``GimbalPhilly-v1``,
    ``GimbalAlibaba-v1``, ``HadarPhilly-v1``, ``HadareTestbed-v1``, ``HadareAws-v1``, ``GavelHetero-v1``,
    ``PhillyScale-v1``, ``PhillyLoaded-v1``, ``AlibabaHetero-v1`` (all under the ``gpucluster_env/``
    namespace).
    """

    metadata = {"render_modes": ["rgb_array", "ansi", "human"], "render_fps": 4}

    def __init__(
        self,
        scenario: str | Scenario = "tiny",
        scenario_options: dict[str, Any] | None = None,
        catalog: Catalog | None = None,
        n_pending: int = DEFAULT_N_PENDING,
        n_running: int | None = None,
        n_accum: int | None = None,
        observation: str = "dict",
        objective: str = "jct",
        reward_scale: float | None = None,
        invalid_action: str = "wait",
        actions: tuple[str, ...] | None = None,
        max_sim_time_s: float | None = None,
        render_mode: str | None = None,
        action_layout: str = "compact",
        min_run_s: float | None = None,
        pending_order: str = "queue",
        max_steps: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__()
        self.scenario = sc = resolve_scenario(scenario, scenario_options, catalog)
        self.catalog = catalog
        opts = check_env_options(sc, self.metadata["render_modes"], n_pending=n_pending, n_running=n_running,
                                 n_accum=n_accum, observation=observation, objective=objective,
                                 reward_scale=reward_scale, invalid_action=invalid_action, actions=actions,
                                 render_mode=render_mode, action_layout=action_layout, min_run_s=min_run_s,
                                 pending_order=pending_order)
        check_hint(hint, observation)
        self.hint = hint
        self.allowed = frozenset(opts.kinds)
        self.observation_mode = observation
        self.objective = objective
        self.reward_scale_arg = reward_scale
        self.reward_scale = float(reward_scale or 1.0)  # set per episode by reset() when normalized
        self.min_run_s = opts.min_run_s
        self.action_layout = action_layout
        self.pending_order = pending_order
        self.calibrates = sc.config.tick_s is not None
        self.invalid_action = invalid_action
        self.max_sim_time_s: float | None = check_env_limit("max_sim_time_s", max_sim_time_s)
        self.max_steps: int | None = check_env_limit("max_steps", max_steps)
        self.render_mode = render_mode
        self._make_spaces(n_pending, opts.n_running, opts.n_accum)
        self.point = DecisionPoint(self)
        """The current decision point: its windows, action mask and observation buffer."""
        self.rules = DecisionRules(self.engine.n_jobs, self.min_run_s, self.calibrates)
        self._new_episode_counters()
        self._needs_reset = True
        self.full_info = True
        """False: a step that does not end the episode returns an empty ``info`` (no forced wait either), for a
        runner that reads only the last one (:func:`gpucluster_env.policy.run_episode` without a wrapper); the
        episode itself is the same."""

    def _new_episode_counters(self) -> None:
        """The episode's counters, at zero."""
        self.invalid_actions = 0
        """Actions of this episode not applied (out of the mask, or turned into a forced wait)."""
        self._steps = 0
        self.deadlines_met = 0
        """Jobs with a deadline finished by it so far this episode (the deadline reward's count)."""
        self.deadlines_missed = 0
        """Jobs with a deadline finished after it so far this episode."""
        self.stalled_by_rejections = False
        """True once rejected actions with nothing running passed the stall bound (``Clock.count_rejected``)."""

    def _make_spaces(self, n_pending: int, n_running: int, n_accum: int) -> None:
        """The action layout and the spaces, from a first engine (its GPU types); reset() builds each episode's
        own engine."""
        self.engine: ClusterEngine = make_engine(self.scenario, 0, self.catalog)
        self.trace_note: str = getattr(self.engine, "trace_note", "")
        self.layout = ActionLayout(n_pending, n_running, len(self.engine.type_names), n_accum,
                                   compact=self.action_layout == "compact")
        self.codec = ActionCodec(self.layout, self.engine.type_names)
        self.action_space = spaces.Discrete(self.layout.size)
        self.n_layout_actions = self.layout.size
        self.obs_builder = ObservationBuilder(self.engine, n_pending, n_running)
        self.sets_view: SetsView | None = None  # the type-count-free view (observation="sets", env.sets)
        if self.observation_mode == "none":
            self.observation_space = spaces.Box(0.0, 1.0, (1,), np.float32)
        elif self.observation_mode == "sets":
            self.sets_view = SetsView(self.layout, len(self.engine.type_names), self.hint)
            self.observation_space = self.sets_view.space()
            self.action_space = spaces.Discrete(self.sets_view.size)
        else:
            self.observation_space = self.obs_builder.space(flat=self.observation_mode == "box")

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        if options:  # nothing is read from them: say so rather than ignore them
            raise ValueError(f"reset(options=...) takes no options here, got {', '.join(map(str, options))}; "
                             "a scenario's settings are constructor arguments (scenario_options=...)")
        super().reset(seed=seed)
        trace_seed = int(self.np_random.integers(0, 2**31 - 1))
        self.engine = make_engine(self.scenario, trace_seed, self.catalog)
        self.trace_note = getattr(self.engine, "trace_note", "")
        if tuple(self.engine.type_names) != tuple(self.codec.type_names):
            # another scenario of as many GPU types (e.g. a curriculum over clusters): same spaces, new names
            if len(self.engine.type_names) != len(self.codec.type_names):
                raise RuntimeError("scenario produced a cluster with a different number of GPU types than the "
                                   "action space")
            self.codec = ActionCodec(self.layout, tuple(self.engine.type_names))
        self.obs_builder.bind(self.engine)
        self.point.new_episode()
        self.rules = DecisionRules(self.engine.n_jobs, self.min_run_s, self.calibrates)
        if self.reward_scale_arg is None:  # normalized: JCT by the episode's total solo time, others by an hour
            self.reward_scale = max(float(self.engine.solo_time.sum()), 1.0) if self.objective == "jct" else 3600.0
        self.has_deadlines = bool((~np.isnan(self.engine.deadline)).any())
        self._new_episode_counters()
        self._needs_reset = False
        self.engine.advance(self.max_sim_time_s)
        self.point.advance()
        obs = self._observe()
        return obs, self._info({})

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        if self._needs_reset:
            raise ResetNeeded("call reset() before step()")
        eng = self.engine
        kind, x, y, s, typed, desc = action_steps.read_action(self, action)
        self._steps += 1
        forced = None
        rules = self.rules
        if kind != WAIT and (rules.steps_now >= STEPS_SLACK or rules.rejected_run >= MAX_REJECTED_RUN):
            # below both, no bound applies (the step cap is at least STEPS_SLACK): the jobs are not counted
            forced = rules.must_wait(eng.num_pending + eng.num_running)
            if forced is not None:  # the bound on steps at one instant (env.rules): time must move
                if self.invalid_action == "raise":
                    raise ValueError(f"action {desc or typed} at t={eng.now:.1f}s: {forced}; send wait")
                self.invalid_actions += 1
                kind = WAIT
                desc = f"{desc or typed} (not applied: forced wait)"
        terms = None  # the reward terms: all 0 for an action at one instant
        if kind == WAIT:
            terms = dict.fromkeys(OBJECTIVES, 0.0)
            stalled = truncated = action_steps.wait_terms(self, terms)
            reward = float(terms[self.objective])
        else:
            desc = action_steps.apply_action(self, kind, x, y, s, typed, desc)
            stalled = truncated = self.stalled_by_rejections
            reward = 0.0
        st = eng.state
        terminated = st.n_done == st.n_jobs  # eng.done
        max_steps = self.max_steps  # the step_limit
        if not terminated and ((self.max_sim_time_s is not None and st.now >= self.max_sim_time_s)
                               or (max_steps is not None and self._steps >= max_steps)):
            truncated = True
        self.point.count += 1  # point.advance(): the action or the clock's advance made a new decision point
        obs = self._observe()
        if not (self.full_info or terminated or truncated or forced is not None):
            return obs, reward, False, False, {}
        info = self._info(dict.fromkeys(OBJECTIVES, 0.0) if terms is None else terms)
        info["action"] = desc or repr(typed)
        if stalled:
            info["stalled"] = True
        if forced is not None:
            info["forced_wait"] = forced
        if terminated or truncated:
            info["metrics"] = eng.metrics()
        if self.render_mode == "human":
            self.render()
        return obs, reward, terminated, truncated, info

    @property
    def step_limit(self) -> float:
        """The step at which the episode is truncated: ``max_steps`` (each registered id sets its scenario's,
        :func:`gpucluster_env.registration.scenario_env`), infinite without it."""
        return float("inf") if self.max_steps is None else self.max_steps

    def action_masks(self) -> np.ndarray:
        """Valid actions at the current decision point (for sb3-contrib's MaskablePPO)."""
        if self.sets_view is not None:
            return self.sets_view.mask(self.point.mask())
        return self.point.mask().copy()

    def decode_action(self, action: int) -> Action:
        """The typed action the int ``action`` stands for now (for logging and white-box agents)."""
        if self.sets_view is not None:
            action = action_steps.from_view(self, action)
        return self.codec.decode(action_steps.as_int(self, action), *self.point.windows(), self.engine,
                                 self.obs_builder.xi_tab)

    def encode_action(self, kind: str, slot: int = 0, gpu_type: str | None = None, partner: int = 0,
                      accumulation: int = 1) -> int:
        """The int named by ``kind`` and its slot, GPU type, partner, accumulation (the inverse of
        :meth:`describe_action`; :meth:`gpucluster_env.env.codec.ActionCodec.encode`): a ``ValueError`` where
        this env has none, so a policy written for one cluster's layout fails loudly on another."""
        v = self.to_view_action(self.codec.encode(kind, slot, gpu_type, partner, accumulation))
        return action_steps.view_int_or_raise(v)

    def describe_action(self, action: int) -> str:
        """A readable name of action ``action`` (state-independent)."""
        if self.sets_view is not None:
            action = action_steps.from_view(self, action)
        return self.codec.describe(action_steps.as_int(self, action))

    def layout_action_masks(self) -> np.ndarray:
        """Valid actions of the compact (or full) layout itself: :meth:`action_masks` unless
        ``observation="sets"``, whose ints map to these by :meth:`to_view_action`."""
        return self.point.mask().copy()

    def to_view_action(self, layout_action: int) -> int | None:
        """The action int of this env's space for an int of the compact layout (the same unless
        ``observation="sets"``; None where the view has no such action)."""
        if self.sets_view is None:
            return layout_action
        v = int(self.sets_view.from_layout[layout_action])
        return v if v >= 0 else None

    def render(self) -> str | np.ndarray | None:
        """``rgb_array``: an image of the GPU grid (:func:`~gpucluster_env.env.render.render_rgb`); ``ansi``:
        the frame as text; ``human``: the text printed."""
        if self.render_mode == "rgb_array":
            from .render import render_rgb

            return render_rgb(self.engine)
        from .render import print_frame, render_text

        if self.render_mode == "human":
            print_frame(self)
            return None
        return render_text(self)

    @property
    def pending_window(self) -> np.ndarray:
        """The pending jobs by slot at the current decision point (the jobs ``place(i)`` and its kin act on)."""
        return self.point.windows()[0]

    @property
    def running_window(self) -> np.ndarray:
        """The running jobs by slot at the current decision point (the jobs ``preempt(r)`` and its kin act on)."""
        return self.point.windows()[1]

    # ------------------------------------------------------------------ internals

    def _observe(self) -> Any:
        """The observation of the current decision point (the mask computed with it). Without observation the
        mask is worked out only where read (white-box agents send typed actions), and so are queue-ordered
        windows (a function of the queue and running set, which ``queue_version`` follows; shortest-first ones
        read the work left, so they are taken here as before)."""
        if self.observation_mode == "none":
            if self.pending_order != "queue":
                self.point.windows()
            return NONE_OBSERVATION
        out = self.point.observe().copy()
        if self.sets_view is not None:
            ob = self.obs_builder
            view = self.sets_view.observe(ob.split(out), self.point.mask_buf, ob.type_speed,
                                      self.engine.job_model[self.pending_window])
            if self.hint is not None:
                view["hint"] = self.sets_view.hint_vector(self)
            return view
        return out if self.observation_mode == "box" else self.obs_builder.split(out)

    def _info(self, terms: dict[str, float]) -> dict[str, Any]:
        eng = self.engine
        return {"time_s": eng.now, "rewards": terms, "invalid_actions": self.invalid_actions,
                "pending": eng.num_pending, "running": eng.num_running, "done": eng.n_done,
                "decision_reasons": eng.last_reasons, "actions_this_instant": self.rules.actions_now,
                "trace": self.trace_note}
