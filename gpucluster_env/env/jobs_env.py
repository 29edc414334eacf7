"""The job-centric decision process RL trains on: each step picks one job, or "nothing more now".

The full action vocabulary of :class:`~gpucluster_env.env.cluster_env.GPUClusterEnv` serves white-box agents.
This view of the same engine is built for learning (docs/rl.md says why):

* **the job is the unit of action**: action ``1 + k`` acts on row ``k`` of the observation: a pending row
  starts that job on GPUs the engine's placement rule picks (``place(i, any)``), a running row preempts it;
  action ``0`` is "nothing more now". By default the process is *work-conserving*: "nothing more now" is legal
  only where no pending row can start, so the agent decides which jobs start in which order and which to
  preempt, never whether to leave free GPUs idle (a preemption frees GPUs at once; a big job is made room for
  by preempting until it fits). Measured: a greedy policy that may idle learned to leave GPUs free at 150-220
  decision points an episode and its curve flipped (docs/rl.md). ``work_conserving=False`` lets it idle,
  except on an idle cluster with no arrival ahead where a job could start: there no time would pass, and an
  episode cut as stalled would leave its jobs' time uncounted, a reward an agent learns to take;
* **time is out of the agent's hands**: after "nothing more now", or after an action that leaves no job
  action legal, the environment runs the clock to the next decision point where some job action is legal (or
  to the episode's end). Forced waits are not steps: an episode's steps are its starts, preemptions and the
  decision points where the agent had a choice;
* **the observation is a set of jobs**: ``jobs`` (rows x features, row-major and flat as SB3's checker asks;
  padded rows all zero), ``job_mask`` (1 for a real row), ``context`` (cluster and clock); every feature declared
  once by name with its unit in
  :mod:`.job_features`, and only those that vary on the scenario by default.

The reward is the wrapped env's (``objective``, ``reward_scale``): with the default JCT objective, minus the jobs
in the system times the time elapsed over the episode's total solo time, so the return is minus the mean JCT
over the mean solo time. ``info["dt"]`` is the simulated time a step ran (for discounting by time,
:mod:`gpucluster_env.agents.time_discount`); ``info["metrics"]`` comes with the last step.

Both views drive one engine: :class:`JobsView` maps this observation and these actions onto a
``GPUClusterEnv`` built with :meth:`JobsView.env_kwargs`, which is how a trained model plays through the
common runner (:func:`gpucluster_env.policy.run_episode`) and how ``wrapped`` is stepped here.

Registered as ``gpucluster_env/<Scenario>Jobs-v1`` (``TinyJobs-v1``, ``CastorPhillyJobs-v1``, ...).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..scenarios import Scenario
from .action_steps import is_int_action
from .cluster_env import GPUClusterEnv
from .job_features import (
    CONTEXT_NAMES,
    JOB_NAMES,
    check_names,
    context_vector,
    default_features,
    job_rows,
    running_pace,
)

DEFAULT_PENDING = 32
"""Pending jobs the agent sees and may start (the ``pending_order`` decides which)."""
DEFAULT_RUNNING = 32
"""Running jobs the agent sees and may preempt (the earliest started)."""
JOB_ACTIONS = ("start", "preempt", "fork")
PREEMPT_WHEN = ("always", "queued", "blocked")
"""When a running job at full pace may be preempted (:meth:`JobsView.mask`): always; only while a job is pending;
only while a pending job cannot start now."""


class JobsView:
    """The job-centric observation and actions over a :class:`GPUClusterEnv` made with :meth:`env_kwargs`."""

    def __init__(self, n_pending: int, n_running: int, job_features: tuple[str, ...],
                 context_features: tuple[str, ...], preempt: bool = True, work_conserving: bool = True,
                 fork: bool = False, preempt_when: str = "always") -> None:
        if preempt_when not in PREEMPT_WHEN:
            raise ValueError(f"preempt_when must be one of {', '.join(PREEMPT_WHEN)}, got {preempt_when!r}")
        if n_pending < 1 or n_running < 0:
            raise ValueError(f"n_pending must be >= 1 and n_running >= 0, got {n_pending} and {n_running}")
        if fork and n_running < 1:
            raise ValueError("fork rows need running rows (n_running >= 1)")
        self.n_pending, self.n_running = int(n_pending), int(n_running)
        self.fork = bool(fork)
        self.n_fork = self.n_running if self.fork else 0
        self.rows = self.n_pending + self.n_running + self.n_fork
        self.job_features = check_names(job_features, JOB_NAMES, "job")
        if self.job_features[0] != "pending":
            raise ValueError("the first job feature must be 'pending' (the policy reads each row's kind from it)")
        self.context_features = check_names(context_features, CONTEXT_NAMES, "context")
        self.preempt = preempt
        self.work_conserving = work_conserving
        self.preempt_when = preempt_when
        self.n_actions = 1 + self.rows

    def env_kwargs(self, pending_order: str = "remaining") -> dict[str, Any]:
        """The :class:`GPUClusterEnv` arguments whose windows and masks this view reads."""
        kinds = ("place", "preempt") if self.preempt else ("place",)
        kinds += ("fork",) if self.fork else ()
        return {"n_pending": self.n_pending, "n_running": max(self.n_running, 1), "observation": "none",
                "pending_order": pending_order, "actions": kinds}

    def space(self) -> spaces.Dict:
        """The observation space."""
        return spaces.Dict({
            "jobs": spaces.Box(0.0, 1.0, (self.rows * len(self.job_features),), np.float32),
            "job_mask": spaces.Box(0.0, 1.0, (self.rows,), np.float32),
            "context": spaces.Box(0.0, 1.0, (len(self.context_features),), np.float32),
        })

    def layout_ints(self, env: GPUClusterEnv) -> np.ndarray:
        """The compact layout's int for each action of this view (``-1``: none), over ``env``'s current windows."""
        L = env.layout
        out = np.full(self.n_actions, -1, dtype=np.int64)
        out[0] = 0
        n_p = len(env.pending_window)
        out[1:1 + n_p] = L.place_off + np.arange(n_p) * L.place_width + L.place_width - 1
        if self.preempt and self.n_running:
            n_r = min(len(env.running_window), self.n_running)
            out[1 + self.n_pending:1 + self.n_pending + n_r] = L.preempt_off + np.arange(n_r)
        if self.fork:
            n_r = min(len(env.running_window), self.n_running)
            f0 = 1 + self.n_pending + self.n_running
            out[f0:f0 + n_r] = L.fork_off + np.arange(n_r)
        return out

    def mask(self, env: GPUClusterEnv, ints: np.ndarray | None = None) -> np.ndarray:
        """The view's action mask. Action 0, "nothing more now", is allowed where no pending row can start
        (``work_conserving``, the default); without it, everywhere except on an idle cluster with no arrival
        ahead where a job could start: there time would never bring a choice (the episode would end as
        stalled, its jobs left unfinished). ``preempt_when`` other than ``"always"``: a running row's preemption
        is legal only where the job runs below its solo rate on its fastest type (``pace`` < 1), or while a job
        is pending (``"queued"``), or while a pending row cannot start now (``"blocked"``). Where every waiting
        job can start anyway, a preemption frees GPUs nobody needs: the job restarts at once, and the restart
        can pay off only by a move to faster GPUs."""
        ints = self.layout_ints(env) if ints is None else ints
        lm = env.layout_action_masks()
        ok = ints >= 0
        out = np.zeros(self.n_actions, dtype=bool)
        out[ok] = lm[ints[ok]]
        eng = env.engine
        if self.preempt_when != "always":
            n_p = len(env.pending_window)
            needed = bool(n_p) if self.preempt_when == "queued" else not out[1:1 + n_p].all()
            if not needed:
                run = env.running_window[:self.n_running]
                r0 = 1 + self.n_pending
                out[r0:r0 + len(run)] &= running_pace(eng, run) < 1.0 - 1e-9
        if self.work_conserving:
            out[0] = not out[1:1 + self.n_pending].any()
        else:
            out[0] = not (eng.num_running == 0 and eng.next_arrival >= eng.n_jobs and out[1:].any())
        return out

    @staticmethod
    def fallback(mask: np.ndarray) -> int:
        """What an out-of-mask action counts as: "nothing more now" where it is legal, else the first legal row
        (the pending rows come first, so a work-conserving process still starts a job)."""
        return 0 if mask[0] else int(np.flatnonzero(mask)[0])

    def observe(self, env: GPUClusterEnv, mask: np.ndarray) -> dict[str, np.ndarray]:
        """The observation of ``env``'s current decision point (``mask``: this view's mask there)."""
        eng = env.engine
        pend = env.pending_window
        run = env.running_window[:self.n_running] if self.preempt else env.running_window[:0]
        run = run if self.n_running else run[:0]
        r0 = 1 + self.n_pending
        act = np.concatenate([mask[1:1 + len(pend)], mask[r0:r0 + len(run)]])
        fork = run if self.fork else run[:0]  # fork rows: the running rows again (fork needs n_running >= 1)
        if len(fork):
            f0 = r0 + self.n_running
            act = np.concatenate([act, mask[f0:f0 + len(fork)]])
        rows = job_rows(eng, pend, np.concatenate([run, fork]), act, self.job_features, n_fork=len(fork))
        jobs = np.zeros((self.rows, len(self.job_features)), dtype=np.float32)
        valid = np.zeros(self.rows, dtype=np.float32)
        n_p, n_r = len(pend), len(run)
        for start, lo, hi in ((0, 0, n_p), (self.n_pending, n_p, n_p + n_r),
                              (self.n_pending + self.n_running, n_p + n_r, len(rows))):
            jobs[start:start + hi - lo] = rows[lo:hi]
            valid[start:start + hi - lo] = 1.0
        return {"jobs": jobs.ravel(), "job_mask": valid, "context": context_vector(eng, self.context_features)}


class JobsEnv(gym.Env):
    """Schedule training jobs one job at a time: start a pending job, preempt a running one, or let time run.

    ## Action Space
    ``Discrete(1 + n_pending + n_running)`` (``+ n_running`` with ``fork``): 0 is "nothing more now"; ``1 + k``
    acts on observation row ``k`` (pending rows first: start; then running rows: preempt; then, with ``fork``,
    the running rows again: fork). ``action_masks()`` gives the legal ones
    (sb3-contrib's MaskablePPO reads it); an out-of-mask action counts as "nothing more now" where that is
    legal, else as the first legal row (:meth:`JobsView.fallback`; counted in ``info["invalid_actions"]``), or
    raises with ``invalid_action="raise"``.

    ## Observation Space
    A ``Dict``: ``jobs`` ``(rows x F,)`` float32 in [0, 1], one row of ``F`` features per job, row-major
    (:mod:`.job_features`),
    ``job_mask`` ``(rows,)`` (1 for a real row), ``context`` ``(C,)``. ``features=(job_names, context_names)``
    pins the feature lists (a model trained elsewhere asks for its own).

    ## Rewards, Starting State, Episode End
    As :class:`GPUClusterEnv` (``objective``, ``reward_scale``, ``reset(seed=)``, ``terminated`` when every job is
    done, ``truncated`` by ``max_sim_time_s``, ``max_steps`` or a stall); a step's reward is the sum over the
    clock's advance it caused. ``info["dt"]``: simulated seconds the step ran.

    ## Arguments
    ``scenario``, ``scenario_options``, ``catalog``, ``n_pending``, ``n_running`` (0: no preemption),
    ``pending_order="remaining"`` (the pending rows are the jobs with the least estimated remaining work) or
    ``"queue"``, ``features``, ``objective``, ``reward_scale``, ``invalid_action``, ``max_sim_time_s``,
    ``max_steps`` (this view's steps), ``min_run_s``, ``render_mode`` (``ansi``, ``rgb_array``, ``human``: the
    wrapped env's frames), ``work_conserving=True`` ("nothing more now" only where no pending row can start),
    ``fork=False`` (``True``, on a round-based scenario: ``n_running`` more rows, the running jobs again, whose
    action forks the job as HadarE does: one more copy on free GPUs of other nodes; features ``fork`` and
    ``copies`` join the defaults), ``preempt_when="always"`` (``"queued"``: while no job is pending, a running row
    may be preempted only where its job runs below its solo rate on its fastest type; ``"blocked"``: the same
    while every pending row can start now; such a preemption restarts the job at once, so it can pay off only
    by a move to faster GPUs).
    """

    metadata = {"render_modes": ["rgb_array", "ansi", "human"], "render_fps": 4}

    def __init__(self, scenario: str | Scenario = "tiny", scenario_options: dict[str, Any] | None = None,
                 catalog: Any = None, n_pending: int = DEFAULT_PENDING, n_running: int = DEFAULT_RUNNING,
                 pending_order: str = "remaining",
                 features: tuple[tuple[str, ...], tuple[str, ...]] | None = None, objective: str = "jct",
                 reward_scale: float | None = None, invalid_action: str = "wait",
                 max_sim_time_s: float | None = None, max_steps: int | None = None,
                 min_run_s: float | None = None, render_mode: str | None = None,
                 work_conserving: bool = True, fork: bool = False, preempt_when: str = "always") -> None:
        super().__init__()
        if invalid_action not in ("wait", "raise"):
            raise ValueError(f"invalid_action must be 'wait' or 'raise', got {invalid_action!r}")
        if max_steps is not None and (type(max_steps) is not int or max_steps < 1):
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        if not isinstance(fork, bool):
            raise ValueError(f"fork must be True or False, got {fork!r}")
        probe = JobsView(n_pending, n_running, JOB_NAMES[:1], CONTEXT_NAMES[:1], preempt=n_running > 0, fork=fork)
        self._catalog = catalog
        self._wrapped_kwargs = {"objective": objective, "reward_scale": reward_scale,
                                "max_sim_time_s": max_sim_time_s, "min_run_s": min_run_s,
                                "render_mode": render_mode, **probe.env_kwargs(pending_order)}
        self.wrapped = self._new_wrapped(scenario, scenario_options)
        self._by_types = {len(self.wrapped.codec.type_names): self.wrapped}
        eng = self.wrapped.engine
        if features is None:
            features = default_features(len(eng.type_names), bool((~np.isnan(eng.deadline)).any()), fork)
        self.view = JobsView(n_pending, n_running, tuple(features[0]), tuple(features[1]), preempt=n_running > 0,
                             work_conserving=work_conserving, fork=fork, preempt_when=preempt_when)
        self.features = (self.view.job_features, self.view.context_features)
        self.observation_space = self.view.space()
        self.action_space = spaces.Discrete(self.view.n_actions)
        self.invalid_action = invalid_action
        self.max_steps = max_steps
        self.render_mode = render_mode
        self._steps = 0
        self._invalid = 0
        self._mask_now = np.zeros(self.view.n_actions, dtype=bool)
        self._ints = np.zeros(self.view.n_actions, dtype=np.int64)
        self._refreshed_at: tuple[int, int] | None = None

    @property
    def engine(self) -> Any:
        """The engine of the current episode (the wrapped env's)."""
        return self.wrapped.engine

    @property
    def scenario(self) -> Scenario:
        return self.wrapped.scenario

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self._match_types()
        # the wrapped env draws the trace from a generator seeded by this env's own
        self.wrapped.reset(seed=int(self.np_random.integers(0, 2**31 - 1)), options=options)  # refuses options
        self._steps = 0
        self._invalid = 0
        reward, terminated, truncated, dt = self._run_to_choice()
        return self._observe(), {"time_s": self.engine.now, "dt": dt, "skipped_reward": reward,
                                 "trace": self.wrapped.trace_note}

    def _match_types(self) -> None:
        """Where the scenario set for the next episode (``env.wrapped.scenario = ...``, e.g. a curriculum over
        clusters) has another number of GPU types than the wrapped env's action layout, play it on a wrapped env
        of that many types (one kept per count): this view's spaces do not depend on the types, the wrapped
        env's do."""
        sc = self.wrapped.scenario
        n = len(sc.cluster.gpu_types)
        if n == len(self.wrapped.codec.type_names):
            return
        if n not in self._by_types:
            self._by_types[n] = self._new_wrapped(sc, None)
        self.wrapped = self._by_types[n]
        self.wrapped.scenario = sc

    def _new_wrapped(self, scenario: str | Scenario, options: dict[str, Any] | None) -> GPUClusterEnv:
        """A full-vocabulary env whose windows and masks this view reads (lean info: the view builds its own)."""
        env = GPUClusterEnv(scenario, options, self._catalog, **self._wrapped_kwargs)
        env.full_info = False
        return env

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        a = self._read(action)
        self._steps += 1
        t0 = self.engine.now
        reward, terminated, truncated = 0.0, False, False
        if a != 0:
            _, reward, terminated, truncated, _ = self.wrapped.step(int(self._ints[a]))
        if not (terminated or truncated):  # "nothing more now" runs the clock; so does an action leaving no choice
            r2, terminated, truncated, _ = self._run_to_choice(force=a == 0)
            reward += r2
        if not (terminated or truncated) and self.max_steps is not None and self._steps >= self.max_steps:
            truncated = True
        obs = self._observe()
        info: dict[str, Any] = {"time_s": self.engine.now, "dt": self.engine.now - t0,
                                "invalid_actions": self._invalid}
        if terminated or truncated:
            info["metrics"] = self.engine.metrics()
        return obs, float(reward), bool(terminated), bool(truncated), info

    def _read(self, action: Any) -> int:
        if not is_int_action(action) or not 0 <= int(action) < self.view.n_actions:
            raise ValueError(f"action must be an int in [0, {self.view.n_actions}), got {action!r}")
        a = int(action)
        if not self._mask_now[a]:
            if self.invalid_action == "raise":
                raise ValueError(f"invalid action {a} at t={self.engine.now:.1f}s: masked out")
            self._invalid += 1
            return self.view.fallback(self._mask_now)
        return a

    def _refresh(self) -> None:
        """The layout ints and the mask of the current decision point (once per point: the wrapped env's
        decision-point counter moves with every step and reset)."""
        w = self.wrapped
        key = (w.engine.epoch, w.point.count)
        if key != self._refreshed_at:
            self._ints = self.view.layout_ints(w)
            self._mask_now = self.view.mask(w, self._ints)
            self._refreshed_at = key

    def _run_to_choice(self, force: bool = False) -> tuple[float, bool, bool, float]:
        """Run the clock (at least once with ``force``) until some job action is legal or the episode ends;
        returns the reward, terminated, truncated and the time that passed."""
        t0, total = self.engine.now, 0.0
        terminated = truncated = False
        if not force:
            self._refresh()
        while force or not self._mask_now[1:].any():
            force = False
            _, r, terminated, truncated, _ = self.wrapped.step(0)
            total += r
            if terminated or truncated:
                break
            self._refresh()
        return total, terminated, truncated, self.engine.now - t0

    def _observe(self) -> dict[str, np.ndarray]:
        self._refresh()
        return self.view.observe(self.wrapped, self._mask_now)

    def action_masks(self) -> np.ndarray:
        """Legal actions now (for sb3-contrib's MaskablePPO)."""
        return self._mask_now.copy()

    def describe_action(self, action: int) -> str:
        """A readable name of ``action`` at the current decision point."""
        a = int(action)
        if a == 0:
            return "nothing more now"
        if a <= self.view.n_pending:
            return f"start pending row {a - 1}"
        r = a - 1 - self.view.n_pending
        if r < self.view.n_running:
            return f"preempt running row {r}"
        return f"fork running row {r - self.view.n_running}"

    def render(self) -> Any:
        return self.wrapped.render()

    def close(self) -> None:
        for env in self._by_types.values():
            env.close()
