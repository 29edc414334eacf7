"""Rollouts on engine copies, as the search expert ``lookahead`` plays them (Bertsekas' rollout algorithm): apply a
first action, let a heuristic schedule the copy to the end of a window, and count the job-seconds spent in the
system over it (:func:`rollout`), optionally plus the remaining solo run time of the jobs left at its end
(:func:`tail_cost`, the least they will yet add to the total JCT).

A rollout may be truncated: ``max_events`` advances of the copy's clock end it where the clock then stands (a
truncated rollout, the tail its terminal cost). Its record (:class:`Rollout`) keeps what a later decision point at
the same instant needs to take its cost over without playing it again (:meth:`Rollout.stands_for`): the actions
the copy took at the starting instant and the engine's change marks after each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpucluster_env.engine import PENDING, RUNNING, Action, ActionError, StalledError, Wait
from gpucluster_env.policy import Policy

MAX_ROLLOUT_STEPS_AT_ONE_INSTANT = 1000
"""A rollout step bound at one instant (the heuristics take far fewer; a guard, not a tuning)."""


class EngineEnv:
    """What a white-box policy reads of an environment (``unwrapped.engine``), over a bare engine: lets a
    reference policy schedule an engine copy directly."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    @property
    def unwrapped(self) -> EngineEnv:
        """The environment itself (a property, not an attribute: a reference to itself would make each copy a
        cycle that only the garbage collector frees, and a long trace's copies then pile up between its runs)."""
        return self


def change_mark(engine: Any) -> tuple[int, int, int, int]:
    """What moves with every action an engine applies: its episode, action count and queue and GPU versions."""
    return engine.epoch, engine.counts["actions"], engine.queue_version, engine.gpu_version


@dataclass
class Rollout:
    """One rollout's outcome and what it took at its starting instant."""

    cost: float
    """Job-seconds in the system over the window, plus the tail when asked."""
    end: float
    """The end of the window it was given."""
    cap: int | None
    """The ``max_events`` it was given."""
    events: int = 0
    """Advances of the copy's clock it played."""
    work: int = 0
    """Its job-events: the jobs in the copy's system at each advance of its clock, summed (what the heuristic and
    the engine do grows with both)."""
    cut: bool = False
    """``max_events`` stopped it short of ``end`` (the copy's clock then stood at :attr:`stop`)."""
    stop: float = 0.0
    """Where the copy's clock stood at its end."""
    chain: list[Action] = field(default_factory=list)
    """The actions the copy applied at the starting instant, the first one first, before its clock first moved."""
    marks: list[tuple[int, int, int, int]] = field(default_factory=list)
    """:func:`change_mark` of the copy after each action of :attr:`chain`."""

    def stands_for(self, offset: int, engine: Any, own: Action, end: float, cap: int | None) -> bool:
        """Whether this rollout, past the first ``offset`` actions of its chain, is the rollout of ``own`` on
        ``engine`` now to ``end`` with ``cap``: ``engine`` has taken exactly those actions since (its change mark
        is the copy's after them), ``own`` is the copy's next one at that instant, and the window ends alike. The
        copy then went on from the same state under the same rule, so the cost is the same, bit for bit."""
        if not 0 < offset < len(self.chain) < MAX_ROLLOUT_STEPS_AT_ONE_INSTANT or self.end != end:
            return False  # (a chain at the step bound: the copy's next step there was a forced wait)
        if self.chain[offset] != own or self.marks[offset - 1] != change_mark(engine):
            return False
        return self.cap == cap or (not self.cut and (cap is None or self.events < cap))


def rollout(engine: Any, first: Action, base: Policy, end: float, tail: bool,
            max_events: int | None = None) -> Rollout:
    """Apply ``first`` on ``engine`` (changed: pass a copy) and let ``base`` schedule it until the time ``end``, or
    until ``max_events`` advances of its clock when given (a truncated rollout: the window then ends where the
    clock stopped). The cost: the job-seconds in the system over the window (a stalled copy counts its jobs until
    ``end``; an action the engine rejects counts as ``wait``), plus with ``tail`` the remaining solo run time of
    each job still in the system at its end (:func:`tail_cost`)."""
    out = Rollout(0.0, end, max_events)
    out.cost = _window_cost(engine, first, base, out)
    out.stop = engine.now
    if tail and not engine.done:
        out.cost += tail_cost(engine)
    return out


def rollout_cost(engine: Any, first: Action, base: Policy, horizon_s: float, tail: bool = False) -> float:
    """:func:`rollout`'s cost over the window from now to ``now + horizon_s`` (no truncation)."""
    return rollout(engine, first, base, engine.now + horizon_s, tail).cost


def tail_cost(engine: Any) -> float:
    """The remaining solo run time of each job in the system on ``engine`` now, summed (the least time they will
    yet spend there)."""
    eng = engine
    inside = np.flatnonzero((eng.status == PENDING) | (eng.status == RUNNING))
    left = eng.remaining_now()[inside] / np.maximum(eng.iterations[inside], 1)
    return float((eng.solo_time[inside] * left).sum())


def rollout_curve(engine: Any, base: Policy) -> np.ndarray:
    """``(k, 3)`` rows ``(t0, t1, jobs in the system)``: the piecewise-constant count of jobs in the system on
    ``engine`` (changed: pass a copy) while ``base`` schedules it from now to the end (a reference policy's
    cost curve on the same trace, :mod:`gpucluster_env.agents.reference_reward`)."""
    curve: list[tuple[float, float, int]] = []
    _window_cost(engine, base.act(None, EngineEnv(engine)), base, Rollout(0.0, float("inf"), None), curve)
    return np.array(curve, dtype=np.float64).reshape(-1, 3)


def _window_cost(engine: Any, first: Action, base: Policy, rec: Rollout,
                 curve: list[tuple[float, float, int]] | None = None) -> float:
    """The job-seconds part of :func:`rollout` to ``rec.end`` (each advance of the clock appended to ``curve``);
    fills ``rec``'s events, cut, chain and marks."""
    end, cap = rec.end, rec.cap
    env = EngineEnv(engine)
    cost = 0.0
    act: Any = first
    at_instant = 0
    started = True  # the clock has not moved yet: the chain is still being recorded
    while not engine.done and engine.now < end:
        if at_instant >= MAX_ROLLOUT_STEPS_AT_ONE_INSTANT:
            act = Wait()
        if not isinstance(act, Wait):
            try:
                engine.apply(act)
                at_instant += 1
                if started:
                    rec.chain.append(act)
                    rec.marks.append(change_mark(engine))
            except ActionError:
                act = Wait()
        if isinstance(act, Wait):
            started = False
            n, t0 = engine.num_pending + engine.num_running, engine.now
            try:
                engine.advance(end)
            except StalledError:
                return cost + n * (end - t0)
            cost += n * (engine.now - t0)
            if curve is not None:
                curve.append((t0, engine.now, n))
            at_instant = 0
            rec.events += 1
            rec.work += n
            if rec.events == cap:
                rec.cut = not engine.done and engine.now < end
                return cost
        act = base.act(None, env)
    return cost
