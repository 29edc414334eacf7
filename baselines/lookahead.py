"""A search expert: policy rollouts on copies of the simulator (Bertsekas' rollout algorithm, with a
scheduling heuristic as the base policy).

At each decision point the policy lists a few candidate actions: what the rollout heuristic (SRSF by default)
would do now, ``wait``, starting each of the ``candidates`` pending jobs with the least remaining GPU-service
that fit on free GPUs, and preempting the running job with the most remaining service (when it has run past
the preemption quantum). When there is one candidate it takes it without search. Otherwise, for each
candidate it copies the engine (:meth:`~gpucluster_env.engine.simulator.ClusterEngine.clone`), applies the
candidate, lets the rollout heuristic schedule the copy for ``horizon_s`` simulated seconds, and scores the
candidate by the job-seconds spent in the system over that window (pending plus running jobs times time: the
part of the total JCT that falls in the window) plus, with ``tail`` (default), the remaining solo run time of
each job still in the system at the window's end (the least it will yet add to the total JCT, so that work
done within the window counts). It takes the candidate with the least score; the
heuristic's own action is listed first and wins ties, so a deviation must be strictly better on the copy.

On the copy the search sees what the simulator knows: the true job durations (as SRSF and SJF do) and the
arrivals of the trace within the horizon (a clairvoyant expert, like an offline oracle: a reference to measure
learned policies against and to distil, not a deployable scheduler). With ``arrivals=False`` the copies see only
the jobs already submitted (no arrival reaches a rollout), so the search knows what SRSF knows and nothing of
the future but the durations. The search is deterministic (no random
draws; candidates in a fixed order, ties to the earliest). Compute: about ``(candidates + 3)`` rollouts of
``horizon_s`` per decision point that has a choice (``docs/rl.md`` gives measured times).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpucluster_env.engine import PENDING, RUNNING, Action, ActionError, Place, Preempt, StalledError, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy, make_policy, register_policy

ROLLOUT_POLICIES = ("srsf", "sjf", "ssf", "yarn-cs", "fifo")
"""Heuristics a rollout may use: the stateless ones (a fresh instance acts on any state correctly)."""
MAX_ROLLOUT_STEPS_AT_ONE_INSTANT = 1000
"""A rollout step bound at one instant (the heuristics take far fewer; a guard, not a tuning)."""


class EngineEnv:
    """What a white-box policy reads of an environment (``unwrapped.engine``), over a bare engine: lets a
    reference policy schedule an engine copy directly."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.unwrapped = self


def rollout_cost(engine: Any, first: Action, base: Policy, horizon_s: float, tail: bool = False) -> float:
    """Job-seconds in the system on ``engine`` (changed: pass a copy) from now until ``now + horizon_s``, when
    ``first`` is applied now and ``base`` schedules from then on. A stalled copy counts its jobs until the end
    of the window; an action the engine rejects counts as ``wait``. ``tail``: add, for each job still in the
    system at the end, its remaining solo run time (the least time it will yet spend there)."""
    cost = _window_cost(engine, first, base, horizon_s)
    if tail and not engine.done:
        eng = engine
        inside = np.flatnonzero((eng.status == PENDING) | (eng.status == RUNNING))
        left = eng.remaining_now()[inside] / np.maximum(eng.iterations[inside], 1)
        cost += float((eng.solo_time[inside] * left).sum())
    return cost


def rollout_curve(engine: Any, base: Policy) -> np.ndarray:
    """``(k, 3)`` rows ``(t0, t1, jobs in the system)``: the piecewise-constant count of jobs in the system on
    ``engine`` (changed: pass a copy) while ``base`` schedules it from now to the end (a reference policy's
    cost curve on the same trace, :mod:`gpucluster_env.agents.reference_reward`)."""
    curve: list[tuple[float, float, int]] = []
    _window_cost(engine, base.act(None, EngineEnv(engine)), base, float("inf"), curve)
    return np.array(curve, dtype=np.float64).reshape(-1, 3)


def _window_cost(engine: Any, first: Action, base: Policy, horizon_s: float,
                 curve: list[tuple[float, float, int]] | None = None) -> float:
    """:func:`rollout_cost` over the window alone (each advance of the clock appended to ``curve``)."""
    end = engine.now + horizon_s
    env = EngineEnv(engine)
    cost = 0.0
    act: Any = first
    at_instant = 0
    while not engine.done and engine.now < end:
        if at_instant >= MAX_ROLLOUT_STEPS_AT_ONE_INSTANT:
            act = Wait()
        if not isinstance(act, Wait):
            try:
                engine.apply(act)
                at_instant += 1
            except ActionError:
                act = Wait()
        if isinstance(act, Wait):
            n, t0 = engine.num_pending + engine.num_running, engine.now
            try:
                engine.advance(end)
            except StalledError:
                return cost + n * (end - t0)
            cost += n * (engine.now - t0)
            if curve is not None:
                curve.append((t0, engine.now, n))
            at_instant = 0
        act = base.act(None, env)
    return cost


class CandidateLister:
    """The few actions a one-step search compares at a decision point: the heuristic's ``own`` first, then
    ``wait``, starting each of the ``starts`` pending jobs with the least remaining GPU-service that fit on free
    GPUs, and preempting the running job with the most remaining service once it has run ``min_run_s``; no
    repeats. It remembers the jobs preempted at the current instant (:meth:`chosen`), so a job just preempted is
    not offered as a start at the same instant."""

    def __init__(self, starts: int) -> None:
        self.starts = starts
        self.reset()

    def reset(self) -> None:
        """Forget the preemptions (a new episode)."""
        self._preempted: set[int] = set()
        self._preempted_at = -1.0

    def actions(self, view: ClusterView, own: Action, min_run_s: float,
                left: np.ndarray | None = None) -> list[Action]:
        """The candidate actions at ``view``'s state, ``own`` first. ``left``: the state's
        :meth:`~gpucluster_env.engine.view.ClusterView.remaining_solo_time`, when the caller has it."""
        out: list[Action] = [own]
        service = (view.remaining_solo_time() if left is None else left) * view.req_gpus
        if view.num_pending:
            out.append(Wait())
            recent = self._preempted if self._preempted_at == view.now else set()
            pend = view.pending_jobs()
            found = 0
            for j in pend[np.lexsort((pend, service[pend]))].tolist():  # by service, then index
                if found == self.starts:
                    break
                if j not in recent and view.plan_place(j) is not None:
                    out.append(Place(j))
                    found += 1
            movable = [int(j) for j in view.running_jobs() if view.now - view.last_start(int(j)) >= min_run_s]
            if movable:
                out.append(Preempt(max(movable, key=lambda j: (service[j], j))))
        seen: list[Action] = []
        for a in out:
            if a not in seen:
                seen.append(a)
        return seen

    def chosen(self, view: ClusterView, action: Action) -> None:
        """Note the action taken at ``view``'s instant (a preemption is remembered until time moves)."""
        if isinstance(action, Preempt):
            if self._preempted_at != view.now:
                self._preempted, self._preempted_at = set(), view.now
            self._preempted.add(int(action.job))


@register_policy
class Lookahead(Policy):
    """Rollout search over a few candidate actions with a heuristic base policy (clairvoyant expert)."""

    name: ClassVar[str] = "lookahead"
    kind: ClassVar[str] = "search"
    description: ClassVar[str] = (
        "Search expert: rolls out each candidate action (the heuristic's own, wait, the shortest pending jobs, "
        "a preemption) with SRSF on a copy of the simulator for horizon_s and takes the least job-time in "
        "the system; sees durations and the arrivals in its horizon"
    )
    paper: ClassVar[str] = "Bertsekas' rollout algorithm; base policy SRSF (Tiresias NSDI'19 §5)"

    def __init__(self, horizon_s: float = 3600.0, candidates: int = 3, rollout: str = "srsf",
                 tail: bool = True, arrivals: bool = True) -> None:
        """``horizon_s``: simulated seconds each rollout looks ahead. ``candidates``: how many of the
        shortest pending jobs are tried as starts (besides the heuristic's action, wait and one preemption).
        ``rollout``: the base heuristic, one of :data:`ROLLOUT_POLICIES`. ``tail``: score each rollout also
        by the remaining solo run time of the jobs left in the system at its end (:func:`rollout_cost`).
        ``arrivals``: the rollouts see the trace's arrivals within the horizon (False: only the jobs already
        submitted)."""
        if not horizon_s > 0:
            raise ValueError(f"lookahead: horizon_s must be > 0, got {horizon_s!r}")
        if not (isinstance(candidates, int) and candidates >= 1):
            raise ValueError(f"lookahead: candidates must be an integer >= 1, got {candidates!r}")
        if rollout not in ROLLOUT_POLICIES:
            raise ValueError(f"lookahead: rollout must be one of {', '.join(ROLLOUT_POLICIES)}, got {rollout!r}")
        self.horizon_s = float(horizon_s)
        self.candidates = candidates
        self.rollout = rollout
        self.tail = bool(tail)
        self.arrivals = bool(arrivals)
        self._base = make_policy(rollout)  # the heuristic's own choice on the real env
        self._roll = make_policy(rollout)  # the same heuristic on the copies (its view moves from copy to copy)
        self._searches = 0
        self._rollouts = 0
        self._deviations = 0
        self._lister = CandidateLister(candidates)

    stat_names: ClassVar[tuple[str, ...]] = ("searches", "rollouts", "deviations")

    def reset(self, env: Any) -> None:
        self._searches = self._rollouts = self._deviations = 0
        self._lister.reset()

    def episode_stats(self) -> dict[str, float]:
        """Decision points searched, rollouts played, and how often the search overrode the heuristic."""
        return {"searches": self._searches, "rollouts": self._rollouts, "deviations": self._deviations}

    def candidate_actions(self, view: ClusterView, own: Action, min_run_s: float) -> list[Action]:
        """The actions tried at this decision point, the heuristic's ``own`` first, without repeats."""
        return self._lister.actions(view, own, min_run_s)

    def rollout_costs(self, env: Any, cands: list[Action]) -> list[float]:
        """Each candidate's :func:`rollout_cost` from ``env``'s current state (one engine copy each)."""
        engine = env.unwrapped.engine
        out = []
        for a in cands:
            copy = engine.clone()
            if not self.arrivals:
                copy.close_arrivals()  # no later job is ever submitted to the copy
            out.append(rollout_cost(copy, a, self._roll, self.horizon_s, self.tail))
            self._rollouts += 1
        return out

    def search(self, env: Any) -> tuple[list[Action], list[float] | None]:
        """The candidate actions at ``env``'s state (the heuristic's own first) and each one's
        :func:`rollout_cost`; no costs (None) when there is one candidate and nothing to search."""
        view = self.view(env)
        own = self._base.act(None, env)
        if not isinstance(own, Action):
            raise TypeError(f"lookahead: rollout policy {self.rollout!r} answered {own!r}, not a typed action")
        cands = self.candidate_actions(view, own, float(getattr(env.unwrapped, "min_run_s", 0.0)))
        if len(cands) == 1:
            return cands, None
        self._searches += 1
        return cands, self.rollout_costs(env, cands)

    def note(self, env: Any, action: Action) -> None:
        """Record ``action`` as taken at ``env``'s state (a preempted job is not a start candidate again at
        the same instant); for a caller that chose it from :meth:`search` itself."""
        self._lister.chosen(self.view(env), action)

    def act(self, observation: Any, env: Any) -> Action:
        cands, costs = self.search(env)
        best = cands[0]
        if costs is not None:
            best = cands[int(np.argmin(costs))]  # the first least: the heuristic's own wins ties
            if best != cands[0]:
                self._deviations += 1
        self.note(env, best)
        return best
