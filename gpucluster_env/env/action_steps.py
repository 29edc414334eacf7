"""What one :meth:`~gpucluster_env.env.cluster_env.GPUClusterEnv.step` does after the action is read: a
``wait`` runs the clock and gives the reward terms; any other action goes to the engine (an int through its fast
entry points, a typed one through ``apply``) and is booked for the decision rules and the observation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine import Action, ActionError, StalledError, Wait
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
from .codec import COLOCATE, FORK, PLACE, PREEMPT, SHARE, SQUEEZE, SWELL, WAIT

if TYPE_CHECKING:  # the environment calls these functions with itself
    from .cluster_env import GPUClusterEnv

TYPED = (Wait, Place, Colocate, Squeeze, Swell, Preempt, Fork, SetStealing, Reallocate, DropCopy, MoveCopy)
"""The typed actions the environment accepts beside ints."""
TYPED_CLASSES = frozenset(TYPED)
KIND_ACTION = {PLACE: Place, COLOCATE: Colocate, SQUEEZE: Squeeze, SWELL: Swell, PREEMPT: Preempt, FORK: Fork}


def wait_terms(env: GPUClusterEnv, terms: dict[str, float]) -> bool:
    """Run the clock to the next decision point and fill the reward ``terms`` of the time that passed; True when
    the episode stalled (nothing can ever run)."""
    eng = env.engine
    t0 = eng.now
    in_system = eng.num_pending + eng.num_running
    busy = eng.busy_gpus
    done0 = eng.n_done
    stalled = False
    try:
        eng.advance(env.max_sim_time_s)
    except StalledError:
        stalled = True
    env.rules.advanced()
    dt = eng.now - t0
    terms["jct"] = -in_system * dt / env.reward_scale
    terms["makespan"] = -dt / env.reward_scale if in_system or not eng.done else 0.0
    terms["utilization"] = busy * dt / (eng.num_gpus * env.reward_scale)
    if eng.n_done > done0 and env.has_deadlines:
        terms["deadlines"] = deadline_term(env)
    return stalled


def apply_action(env: GPUClusterEnv, kind: int, x: int, y: int, s: int, typed: Action | None,
                 desc: str | None) -> str | None:
    """Apply a non-wait action (``typed``, else the int's ``kind`` and slots) and book it; a refused one is
    counted (or raised with ``invalid_action="raise"``). Returns the action's description for ``info``."""
    eng = env.engine
    try:
        if typed is not None:
            eng.apply(typed)
            record_action(env, type(typed), typed.job)
        else:
            kind, job = _apply_int(env, kind, x, y, s, desc)
            record_action(env, KIND_ACTION[kind], job)
        env.rules.step_taken(rejected=False)
    except ActionError as e:
        if env.invalid_action == "raise":
            raise
        env.invalid_actions += 1
        env.rules.step_taken(rejected=True)
        desc = f"{desc or typed} (rejected: {e})"
        if eng.clock.count_rejected():  # rejected actions count toward the stall bound (Clock.count_rejected)
            env.stalled_by_rejections = True
    return desc


def _apply_int(env: GPUClusterEnv, kind: int, x: int, y: int, s: int, desc: str | None) -> tuple[int, int]:
    """An int action through the engine's fast entry points; returns its kind as applied (``share`` is a
    colocation) and its job."""
    eng = env.engine
    job = env.pending_window.item(x) if kind in (PLACE, COLOCATE, SHARE) else env.running_window.item(y)
    if kind == SQUEEZE:
        eng.calibrate_job(job, -1)
    elif kind == SWELL:
        eng.calibrate_job(job, 1)
    elif kind == COLOCATE:
        eng.colocate_job(job, env.running_window.item(y), s)
    elif kind == SHARE:
        plan = env.codec.share_plan(eng, job, env.obs_builder.xi_tab)
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
    return kind, job


def record_action(env: GPUClusterEnv, cls: type, job: int) -> None:
    """Book an applied non-wait action for the decision rules and the running jobs' GPU features (only read by
    an observation: without one, ``observation="none"``, they are not kept)."""
    rules = env.rules
    rules.actions_now += 1
    j = int(job)
    if cls is Preempt:
        rules.record_preempt(j)
        return
    if cls is Place or cls is Colocate or cls is Reallocate:  # a Reallocate restarts on new GPUs: a start now
        rules.record_start(j, env.engine.state.now)
    elif cls is Squeeze or cls is Swell:
        rules.record_share(j)
        return
    elif cls is Fork or cls is DropCopy or cls is MoveCopy:  # a copy's drop or move counts with the job's fork
        rules.record_fork(j)
    else:
        return
    if env.observation_mode != "none":
        env.obs_builder.record_gpus(j)


def deadline_term(env: GPUClusterEnv) -> float:
    """The ``deadlines`` reward of the jobs finished since the last call: +1 per job on time, -1 per late one,
    over the jobs with deadlines."""
    eng = env.engine
    has = ~np.isnan(eng.deadline)
    n = int(has.sum())
    if n == 0:
        return 0.0
    fin = ~np.isnan(eng.finish_t) & has
    met = int((eng.finish_t[fin] <= eng.deadline[fin] + 1e-9).sum())
    late = int(fin.sum()) - met
    term = ((met - env.deadlines_met) - (late - env.deadlines_missed)) / n
    env.deadlines_met, env.deadlines_missed = met, late
    return float(term)


def is_int_action(action: Any) -> bool:
    """Whether ``action`` is an int or a 0-d numpy integer (no floats, strings, lists, bools): what every int
    action space of the environment accepts."""
    return type(action) is int or (isinstance(action, np.ndarray | np.integer) and np.ndim(action) == 0
                                   and np.asarray(action).dtype.kind in "iu")


def as_int(env: GPUClusterEnv, action: Any) -> int:
    """``action`` as an int of the layout's space, or a ``ValueError`` naming what it is."""
    if type(action) is int and 0 <= action < env.layout.size:
        return action
    if not is_int_action(action):
        raise ValueError(f"action must be an int of the action space or a typed action, got {action!r}")
    a = int(action)
    if not (0 <= a < env.layout.size):
        raise ValueError(f"action {a} is outside the action space [0, {env.layout.size})")
    return a


def from_view(env: GPUClusterEnv, action: Any) -> int:
    """The compact layout's int for an int of the ``sets`` view; a column of an absent GPU type maps to a masked
    action (``invalid_action`` decides: a counted no-op, or a ``ValueError``)."""
    sets = env.sets_view
    assert sets is not None
    if not is_int_action(action) or not 0 <= int(action) < sets.size:
        raise ValueError(f"action must be an int in [0, {sets.size}) of the 'sets' view, got {action!r}")
    a = int(sets.to_layout[int(action)])
    if a < 0:
        if env.invalid_action == "raise":
            raise ValueError(f"invalid action {int(action)} of the 'sets' view: a place column of a GPU type "
                             f"this cluster does not have ({len(env.engine.type_names)} type(s))")
        off = np.flatnonzero(~env.point.mask())  # an absent column of the view is an out-of-mask action
        return int(off[0]) if len(off) else 0
    return a


def view_int_or_raise(view_action: int | None) -> int:
    """An int of the env's space for a named action, or a ``ValueError`` where its view has none."""
    if view_action is None:
        raise ValueError("that action has no int in this env's 'sets' view")
    return view_action


def read_action(env: GPUClusterEnv, action: Any) -> tuple[int, int, int, int, Action | None, str | None]:
    """A step's action as ``(kind, x, y, s, typed, description)``: a typed action as itself, an int (of the
    layout or of the ``sets`` view) by the codec's table, ``wait`` (counted) when the mask forbids it."""
    cls = type(action)
    if cls in TYPED_CLASSES or (cls is not int and isinstance(action, TYPED)):  # by the exact class first
        return (WAIT if isinstance(action, Wait) else -1), 0, 0, 0, action, None
    if env.sets_view is not None:
        action = from_view(env, action)
    a = action if type(action) is int and 0 <= action < env.n_layout_actions else as_int(env, action)
    desc = env.codec.describe(a)
    kind, x, y, s = env.codec.table[a]
    if not env.point.mask()[a]:
        if env.invalid_action == "raise":
            raise ValueError(f"invalid action {a} ({desc}) at t={env.engine.now:.1f}s: masked out")
        env.invalid_actions += 1
        kind = WAIT
    return kind, x, y, s, None, desc
