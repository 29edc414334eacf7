"""The Gymnasium environment: a scheduler's view of a GPU cluster running deep-learning training jobs."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..catalog import Catalog
from ..engine import Action, ActionError, ClusterEngine, StalledError, Wait
from ..engine.actions import (
    Colocate,
    DropCopy,
    Fork,
    MoveCopy,
    Place,
    Preempt,
    Reallocate,
    SetStealing,
    Squeeze,
    Swell,
)
from ..engine.build import make_engine
from ..scenarios import Scenario, get_scenario
from ..settings import SettingError
from .codec import (
    COLOCATE,
    DEFAULT_N_ACCUM,
    DEFAULT_N_PENDING,
    DEFAULT_N_RUNNING,
    FORK,
    PLACE,
    PREEMPT,
    SHARE,
    SQUEEZE,
    SWELL,
    WAIT,
    ActionCodec,
    ActionLayout,
)
from .doc_numbers import doc_numbers
from .limits import check_env_limit
from .observation import ObservationBuilder
from .rules import DecisionRules
from .sets import SetsView

OBJECTIVES = ("jct", "makespan", "deadlines", "utilization")
ACTION_KINDS = ("place", "colocate", "squeeze", "swell", "preempt", "fork")
LAYOUTS = ("compact", "full")
DEFAULT_MIN_RUN_S = 600.0
"""Minimum run quantum before a job may be preempted where the scenario has no rounds (else one round)."""
PENDING_ORDERS = ("queue", "remaining")
OBSERVATIONS = ("dict", "box", "none", "sets")
_TYPED = (Wait, Place, Colocate, Squeeze, Swell, Preempt, Fork, SetStealing, Reallocate, DropCopy, MoveCopy)
_KIND_ACTION = {PLACE: Place, COLOCATE: Colocate, SQUEEZE: Squeeze, SWELL: Swell, PREEMPT: Preempt, FORK: Fork}


_NO_XI_TAB = np.zeros((1, 1, 1, 2))
"""The kernel's slowdown-table argument without observation: only the observation's pairs block reads it."""


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
    leaves the accumulation to the engine ({compact_actions} actions on a one-type cluster with the default
    windows); ``action_layout="full"`` adds explicit accumulations ({full_actions}).
    Every action but ``wait`` applies at once and returns at the same simulated instant; ``wait`` runs time
    to the next decision point. ``action_masks()`` gives the valid actions (sb3-contrib's MaskablePPO reads it).
    The masks bound the actions between two clock advances by ``(1 + c + f) x jobs in system``
    (:mod:`gpucluster_env.env.rules`), so no agent can stall time. The env also accepts typed actions
    (:mod:`gpucluster_env.engine.actions`) with exact GPU sets, for white-box agents.

    ## Observation Space
    A ``Dict`` of 1-D float32 vectors in [0, 1]: ``pending`` (n_pending x {pf}), ``running`` (n_running x {rf}),
    ``pairs`` (n_pending x n_running x {pairf}, *predicted* interference), ``cluster`` (GPU types x {cf}), ``clock``
    ({clockf});
    documented feature by feature in :mod:`gpucluster_env.env.observation`. ``observation="box"`` gives them as
    one flat ``Box``; ``observation="none"`` a constant 1-element ``Box`` for white-box agents that read
    ``env.unwrapped.engine``.

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
    overrides, e.g. ``{"num_jobs": 480}``), ``catalog``, ``n_pending={n_pending}``, ``n_running`` (default
    {n_running_compact} with the compact layout, {n_running_full} with the full one),
    ``action_layout="compact"|"full"``, ``n_accum`` (full layout; default {n_accum_full}),
    ``observation="dict"|"box"|"none"``,
    ``objective``, ``reward_scale=None`` (per-episode normalization) or seconds, ``invalid_action="wait"``
    (an out-of-mask action is a counted no-op: it advances the clock as ``wait`` and ``info["invalid_actions"]``
    counts it) or ``"raise"`` (a ``ValueError`` naming it, for debugging), ``actions`` (the action kinds
    exposed, default all the scenario supports), ``min_run_s`` (preemption quantum; default one round, else
    600 s), ``pending_order="queue"`` (the pending window holds the first jobs in queue order) or
    ``"remaining"`` (the jobs with the least estimated remaining work, least first: short jobs deep in a long
    queue become visible), ``max_sim_time_s`` (simulated seconds), ``max_steps`` (env steps),
    ``render_mode="rgb_array"|"ansi"|"human"``.

    ## Registered Configurations
    ``gpucluster_env/GPUCluster-v1`` (generic, ``scenario=`` keyword) and one id per scenario:
    {registered_ids} (all under the ``gpucluster_env/`` namespace).
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
    ) -> None:
        super().__init__()
        sc = get_scenario(scenario) if isinstance(scenario, str) else scenario
        if scenario_options:
            sc = sc.with_options(**scenario_options)
        self.scenario = sc
        self.catalog = catalog
        if observation not in OBSERVATIONS:
            raise ValueError(f"observation must be one of {', '.join(map(repr, OBSERVATIONS))}, got {observation!r}")
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        if invalid_action not in ("raise", "wait"):
            raise ValueError(f"invalid_action must be 'raise' or 'wait', got {invalid_action!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        for name, v in (("n_pending", n_pending), ("n_running", n_running), ("n_accum", n_accum),
                        ("min_run_s", min_run_s), ("reward_scale", reward_scale)):
            check_env_limit(name, v)  # sizes bounded before any array is made
        if pending_order not in PENDING_ORDERS:
            raise ValueError(f"pending_order must be one of {', '.join(PENDING_ORDERS)}, got {pending_order!r}")
        if action_layout not in LAYOUTS:
            raise ValueError(f"action_layout must be one of {', '.join(LAYOUTS)}, got {action_layout!r}")
        if n_accum is None:
            n_accum = DEFAULT_N_ACCUM[action_layout]
        if n_running is None:
            n_running = DEFAULT_N_RUNNING[action_layout]
        if min_run_s is None:
            min_run_s = sc.config.round_s or DEFAULT_MIN_RUN_S
        kinds = tuple(actions) if actions is not None else tuple(
            k for k in ACTION_KINDS if k != "fork" or sc.config.round_s is not None
        )
        unknown = set(kinds) - set(ACTION_KINDS)
        if unknown:
            raise ValueError(f"unknown action kind(s) {', '.join(sorted(unknown))}; known: {', '.join(ACTION_KINDS)}")
        if "fork" in kinds and sc.config.round_s is None:  # it would be accepted and never offered
            raise SettingError(f"action kind 'fork' needs a scenario with rounds (round_s); scenario {sc.name!r} "
                               "has none")
        self.allowed = frozenset(kinds)
        self.observation_mode = observation
        self.objective = objective
        self.reward_scale_arg = reward_scale
        self.reward_scale = float(reward_scale or 1.0)  # set per episode by reset() when normalized
        self.min_run_s = float(min_run_s)
        self.action_layout = action_layout
        self.pending_order = pending_order
        self.calibrates = sc.config.tick_s is not None
        self.invalid_action = invalid_action
        self.max_sim_time_s: float | None = check_env_limit("max_sim_time_s", max_sim_time_s)
        self.max_steps: int | None = check_env_limit("max_steps", max_steps)
        self.render_mode = render_mode

        # A first engine fixes the spaces (GPU types of the cluster); reset() builds each episode's own.
        self.engine: ClusterEngine = make_engine(sc, 0, catalog)
        self.trace_note: str = getattr(self.engine, "trace_note", "")
        self.layout = ActionLayout(n_pending, n_running, len(self.engine.type_names), n_accum,
                                   compact=action_layout == "compact")
        self.codec = ActionCodec(self.layout, self.engine.type_names)
        self.action_space = spaces.Discrete(self.layout.size)
        self._n_actions = self.layout.size
        self.obs_builder = ObservationBuilder(self.engine, n_pending, n_running)
        self._sets: SetsView | None = None  # the type-count-free view (observation="sets", env.sets)
        if observation == "none":
            self.observation_space = spaces.Box(0.0, 1.0, (1,), np.float32)
        elif observation == "sets":
            self._sets = SetsView(self.layout, len(self.engine.type_names))
            self.observation_space = self._sets.space()
            self.action_space = spaces.Discrete(self._sets.size)
        else:
            self.observation_space = self.obs_builder.space(flat=observation == "box")
        self._pending = np.empty(0, dtype=np.int64)
        self._running = np.empty(0, dtype=np.int64)
        self._windows_at: tuple[int, int] | None = None  # (engine epoch, queue_version) of the windows
        # The compiled kernel (see .kernel) writes the observation buffer and the mask; it (and numba) is
        # loaded on first use: a white-box agent's run without observation sends typed actions and needs no mask.
        self._kernel: Any = None  # the compiled kernel (.kernel.observe)
        self._inputs: Any = None  # the kernel's bundles (Tables, State, Out), built per engine state
        self._inputs_of: tuple[ClusterEngine | None, int] = (None, -1)  # the engine and epoch they were read from
        self._point = 0  # decision points so far: reset and every step (an action, or the clock's advance) move it
        self._mask_at: tuple[int, int] | None = None  # (engine epoch, decision point) the mask buffer holds
        L = self.layout
        self._buf = np.zeros(self.obs_builder.ends[-1], dtype=np.float32)
        self._mask_arr = np.zeros(L.size, dtype=bool)
        self._mask_arr[0] = True
        self._placeable = np.zeros(n_pending, dtype=bool)
        self._fork_on = "fork" in self.allowed and sc.config.round_s is not None
        self._fork_key: tuple[int, int, int] | None = None  # (epoch, queue_version, gpu_version) of the fork block
        self._fork_cache = np.zeros(L.size - L.fork_off, dtype=bool)  # the fork block before the rules
        self.rules = DecisionRules(self.engine.n_jobs, self.min_run_s, self.calibrates)
        self._invalid = 0
        self._steps = 0
        self._met = 0
        self._late = 0

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
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
        self._fork_key = None
        self.rules = DecisionRules(self.engine.n_jobs, self.min_run_s, self.calibrates)
        if self.reward_scale_arg is None:  # normalized: JCT by the episode's total solo time, others by an hour
            self.reward_scale = max(float(self.engine.solo_time.sum()), 1.0) if self.objective == "jct" else 3600.0
        self._has_deadlines = bool((~np.isnan(self.engine.deadline)).any())
        self._invalid = 0
        self._steps = 0
        self._met = 0
        self._late = 0
        self.engine.advance(self.max_sim_time_s)
        self._point += 1
        obs = self._observe()
        return obs, self._info({})

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        eng = self.engine
        if type(action) is not int and isinstance(action, _TYPED):
            typed: Action | None = action
            kind = WAIT if isinstance(action, Wait) else -1
            desc = None
        else:
            if self._sets is not None:
                action = self._from_view(action)
            a = action if type(action) is int and 0 <= action < self._n_actions else self._as_int(action)
            desc = self.codec.describe(a)
            typed = None
            kind, x, y, s = self.codec.table[a]
            if not self._mask[a]:
                if self.invalid_action == "raise":
                    raise ValueError(f"invalid action {a} ({desc}) at t={eng.now:.1f}s: masked out")
                self._invalid += 1
                kind = WAIT
        self._steps += 1
        forced = None
        if kind != WAIT:
            forced = self.rules.must_wait(eng.num_pending + eng.num_running)
            if forced is not None:  # the bound on steps at one instant (env.rules): time must move
                if self.invalid_action == "raise":
                    raise ValueError(f"action {desc or typed} at t={eng.now:.1f}s: {forced}; send wait")
                self._invalid += 1
                kind = WAIT
                desc = f"{desc or typed} (not applied: forced wait)"
        terms = dict.fromkeys(OBJECTIVES, 0.0)
        truncated = False
        stalled = False
        if kind == WAIT:
            t0 = eng.now
            in_system = eng.num_pending + eng.num_running
            busy = eng.busy_gpus
            done0 = eng.n_done
            try:
                eng.advance(self.max_sim_time_s)
            except StalledError:
                stalled = truncated = True
            self.rules.advanced()
            dt = eng.now - t0
            terms["jct"] = -in_system * dt / self.reward_scale
            terms["makespan"] = -dt / self.reward_scale if in_system or not eng.done else 0.0
            terms["utilization"] = busy * dt / (eng.num_gpus * self.reward_scale)
            if eng.n_done > done0 and self._has_deadlines:
                terms["deadlines"] = self._deadline_term()
        else:
            try:
                if typed is not None:
                    eng.apply(typed)
                    self._record(type(typed), typed.job)
                else:
                    job = self._pending.item(x) if kind in (PLACE, COLOCATE, SHARE) else self._running.item(y)
                    if kind == SQUEEZE:
                        eng.calibrate_job(job, -1)
                    elif kind == SWELL:
                        eng.calibrate_job(job, 1)
                    elif kind == COLOCATE:
                        eng.colocate_job(job, self._running.item(y), s)
                    elif kind == SHARE:
                        plan = self.codec.share_plan(eng, job, self.obs_builder.xi_tab)
                        if plan is None:
                            raise ActionError(f"{desc}: no GPUs to share for job {job}")
                        eng.apply(Colocate(job, plan[0], None, plan[1]))
                        kind = COLOCATE
                    elif kind == PREEMPT:
                        eng.preempt_job(job)
                    elif kind == PLACE:
                        eng.place_job(job, y)
                    else:
                        eng.fork_job(job)
                    self._record(_KIND_ACTION[kind], job)
                self.rules.step_taken(rejected=False)
            except ActionError as e:
                if self.invalid_action == "raise":
                    raise
                self._invalid += 1
                self.rules.step_taken(rejected=True)
                desc = f"{desc or typed} (rejected: {e})"
        terminated = eng.done
        if not terminated and ((self.max_sim_time_s is not None and eng.now >= self.max_sim_time_s)
                               or (self.max_steps is not None and self._steps >= self.max_steps)):
            truncated = True
        self._point += 1  # the action or the clock's advance made a new decision point
        obs = self._observe()
        info = self._info(terms)
        info["action"] = desc or repr(typed)
        if stalled:
            info["stalled"] = True
        if forced is not None:
            info["forced_wait"] = forced
        if terminated or truncated:
            info["metrics"] = eng.metrics()
        if self.render_mode == "human":
            self.render()
        return obs, float(terms[self.objective]), terminated, truncated, info

    def _record(self, cls: type, job: int) -> None:
        """Book an applied non-wait action for the decision rules and the running jobs' GPU features."""
        rules = self.rules
        rules.actions_now += 1
        j = int(job)
        if cls is Place or cls is Colocate:
            rules.record_start(j, self.engine.now)
            self.obs_builder.record_gpus(j)
        elif cls is Preempt:
            rules.record_preempt(j)
        elif cls is Squeeze or cls is Swell:
            rules.record_share(j)
        elif cls is Fork:
            rules.record_fork(j)
            self.obs_builder.record_gpus(j)
        elif cls is Reallocate:  # a restart on new GPUs: counts as the job's start at this instant
            rules.record_start(j, self.engine.now)
            self.obs_builder.record_gpus(j)
        elif cls is DropCopy or cls is MoveCopy:  # counts with the job's fork at this instant
            rules.record_fork(j)
            self.obs_builder.record_gpus(j)

    @property
    def _mask(self) -> np.ndarray:
        """The action mask of the current decision point, computed at most once there (with the observation by
        :meth:`_observe`, or alone on demand when there is none)."""
        if self._mask_at != (self.engine.epoch, self._point):
            self._refresh_windows()
            self._run_kernel(False)
        return self._mask_arr

    def action_masks(self) -> np.ndarray:
        """Valid actions at the current decision point (for sb3-contrib's MaskablePPO)."""
        if self._sets is not None:
            return self._sets.mask(self._mask)
        return self._mask.copy()

    def decode_action(self, action: int) -> Action:
        """The typed action the int ``action`` stands for now (for logging and white-box agents)."""
        if self._sets is not None:
            action = self._from_view(action)
        return self.codec.decode(self._as_int(action), self._pending, self._running, self.engine,
                                 self.obs_builder.xi_tab)

    def describe_action(self, action: int) -> str:
        """A readable name of action ``action`` (state-independent)."""
        if self._sets is not None:
            action = self._from_view(action)
        return self.codec.describe(self._as_int(action))

    def layout_action_masks(self) -> np.ndarray:
        """Valid actions of the compact (or full) layout itself: :meth:`action_masks` unless
        ``observation="sets"``, whose ints map to these by :meth:`to_view_action`."""
        return self._mask.copy()

    def to_view_action(self, layout_action: int) -> int | None:
        """The action int of this env's space for an int of the compact layout (the same unless
        ``observation="sets"``; None where the view has no such action)."""
        if self._sets is None:
            return layout_action
        v = int(self._sets.from_layout[layout_action])
        return v if v >= 0 else None

    def _from_view(self, action: Any) -> int:
        """The compact layout's int for an int of the ``sets`` view; a column of an absent GPU type maps to a
        masked action (``invalid_action`` decides: a counted no-op, or a ``ValueError``)."""
        sets = self._sets
        assert sets is not None
        ok = type(action) is int or (isinstance(action, np.ndarray | np.integer) and np.ndim(action) == 0
                                     and np.asarray(action).dtype.kind in "iu")
        if not ok or not 0 <= int(action) < sets.size:
            raise ValueError(f"action must be an int in [0, {sets.size}) of the 'sets' view, got {action!r}")
        a = int(sets.to_layout[int(action)])
        if a < 0:
            if self.invalid_action == "raise":
                raise ValueError(f"invalid action {int(action)} of the 'sets' view: a place column of a GPU type "
                                 f"this cluster does not have ({len(self.engine.type_names)} type(s))")
            return self._masked_action()
        return a

    def _masked_action(self) -> int:
        """A layout action the mask forbids now (an absent column of the view is an out-of-mask action)."""
        off = np.flatnonzero(~self._mask)
        return int(off[0]) if len(off) else 0

    def render(self) -> str | np.ndarray | None:
        """``rgb_array``: an image of the GPU grid (:func:`~gpucluster_env.env.render.render_rgb`); ``ansi``:
        the frame as text; ``human``: the text printed."""
        if self.render_mode == "rgb_array":
            from .render import render_rgb

            return render_rgb(self.engine)
        from .render import render_text

        text = render_text(self)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    # ------------------------------------------------------------------ internals
    def _as_int(self, action: Any) -> int:
        if type(action) is int and 0 <= action < self.layout.size:
            return action
        arr = action if isinstance(action, np.ndarray | np.integer) else None  # no floats, strings, lists, bools
        if not ((type(action) is int) or (arr is not None and arr.ndim == 0 and arr.dtype.kind in "iu")):
            raise ValueError(f"action must be an int of the action space or a typed action, got {action!r}")
        a = int(action)
        if not (0 <= a < self.layout.size):
            raise ValueError(f"action {a} is outside the action space [0, {self.layout.size})")
        return a

    def _deadline_term(self) -> float:
        eng = self.engine
        has = ~np.isnan(eng.deadline)
        n = int(has.sum())
        if n == 0:
            return 0.0
        fin = ~np.isnan(eng.finish_t) & has
        met = int((eng.finish_t[fin] <= eng.deadline[fin] + 1e-9).sum())
        late = int(fin.sum()) - met
        term = ((met - self._met) - (late - self._late)) / n
        self._met, self._late = met, late
        return float(term)

    def _shortest_pending(self, n: int) -> np.ndarray:
        """The ``n`` pending jobs with the least estimated remaining work (solo time on the fastest type left),
        least first; ties in queue order."""
        eng = self.engine
        pend = eng.pending_head(eng.num_pending)
        if len(pend) == 0:
            return pend
        left = eng.solo_time[pend] * (eng.remaining[pend] / np.maximum(eng.iterations[pend], 1))
        return pend[np.argsort(left, kind="stable")[:n]]

    def _refresh_windows(self) -> None:
        """The pending and running windows of the engine's current state."""
        eng = self.engine
        if self._windows_at != (eng.epoch, eng.queue_version):  # else the same jobs, in the same order
            self._pending = (eng.pending_head(self.layout.n_pending) if self.pending_order == "queue"
                             else self._shortest_pending(self.layout.n_pending))
            self._running = eng.running_head(self.layout.n_running)
            self._windows_at = (eng.epoch, eng.queue_version)

    def _observe(self) -> Any:
        """The observation of the current decision point (the mask computed with it)."""
        self._refresh_windows()
        if self.observation_mode == "none":  # the mask is computed on demand: white-box agents send typed actions
            return np.zeros(1, dtype=np.float32)
        self._run_kernel(True)
        out = self._buf.copy()
        if self._sets is not None:
            ob = self.obs_builder
            return self._sets.observe(ob.split(out), self._mask_arr, ob.type_speed,
                                      self.engine.job_model[self._pending])
        return out if self.observation_mode == "box" else self.obs_builder.split(out)

    def _run_kernel(self, obs: bool) -> None:
        """Mask and (if ``obs``) observation buffer of the current decision point, from the engine: the compiled
        kernel (:mod:`.kernel`, loaded on first use), then the fork block and the decision rules."""
        eng = self.engine
        if self._inputs_of[0] is not eng or self._inputs_of[1] != eng.epoch:  # new arrays (a new engine or reset)
            from gpucluster_env.env import kernel, kernel_inputs  # numba: loaded on first use

            self._kernel = kernel.observe
            xi_tab = self.obs_builder.xi_tab if self.observation_mode != "none" else _NO_XI_TAB
            self._inputs = kernel_inputs.kernel_inputs(eng, self.obs_builder, self.layout, self.allowed,
                                                       self.codec._footprints(eng), xi_tab, self._buf,
                                                       self._mask_arr, self._placeable)
            self._inputs_of = (eng, eng.epoch)
        tables, state, out = self._inputs
        self._kernel(tables, state, out, self._pending, self._running, eng.now, eng.num_pending,
                             eng.num_running, eng.n_done, eng.next_arrival, obs)
        L = self.layout
        if self._fork_on:
            key = (eng.epoch, eng.queue_version, eng.gpu_version)
            if key != self._fork_key:  # the fork block depends on the running window and the free GPUs
                self._mask_arr[L.fork_off:] = False
                self.codec._fork_block(self._mask_arr, eng, self._running, self.allowed)
                self._fork_cache[:] = self._mask_arr[L.fork_off:]
                self._fork_key = key
            else:
                self._mask_arr[L.fork_off:] = self._fork_cache
        self.rules.restrict(self._mask_arr, L, self._pending, self._running, eng.now)
        if eng.config.topology_rule:
            self.codec.restrict_topology(self._mask_arr, eng, self._pending, self._running, self.obs_builder.xi_tab)
        self._mask_at = (eng.epoch, self._point)

    def __getstate__(self) -> dict[str, Any]:
        """For pickle and deepcopy: the kernel's bundles are numba structs, rebuilt from the engine on first use."""
        state = self.__dict__.copy()
        state["_inputs"], state["_inputs_of"] = None, (None, -1)
        return state

    def _info(self, terms: dict[str, float]) -> dict[str, Any]:
        eng = self.engine
        return {
            "time_s": eng.now,
            "rewards": terms,
            "invalid_actions": self._invalid,
            "pending": eng.num_pending,
            "running": eng.num_running,
            "done": eng.n_done,
            "decision_reasons": eng.last_reasons,
            "actions_this_instant": self.rules.actions_now,
            "trace": self.trace_note,
        }


_doc = GPUClusterEnv.__doc__ or ""
for _key, _value in doc_numbers().items():
    _doc = _doc.replace("{" + _key + "}", _value)
GPUClusterEnv.__doc__ = _doc
