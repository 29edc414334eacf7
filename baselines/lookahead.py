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
``horizon_s`` per decision point that has a choice (``docs/rl.md`` gives measured times); where the real episode
follows a rollout's actions at one instant, that rollout stands for the next decision point's own rollout (the
same cost, bit for bit: :mod:`~gpucluster_env.baselines.parts.rollouts`).

Bounded forms. ``budget``: the search's compute budget, in rollout job-events (the jobs in a copy's system at each
advance of its clock, summed) earned per simulated hour up to a ``bank`` held from the start; a decision point is
searched while the bank holds any, and where it is empty the heuristic's own action is taken unsearched. The
default bank is 3x what the unbounded search spends on the most costly 240-job paper episode measured, so it
binds only on long, loaded traces (a month of Philly: ``docs/performance.md``); ``budget=None`` is the unbounded
search. ``max_events``: the heuristic's own rollout stops after that many advances of its copy's clock and every
candidate is scored to where it stopped (Bertsekas' truncated rollout, the tail its terminal cost); off by default.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import numpy as np
from gpucluster_env.baselines.parts.rollouts import (
    MAX_ROLLOUT_STEPS_AT_ONE_INSTANT,
    EngineEnv,
    Rollout,
    rollout_cost,
    rollout_curve,
)
from gpucluster_env.baselines.parts.rollouts import rollout as play_rollout

from gpucluster_env.engine import Action, Place, Preempt, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy, make_policy, register_policy
from gpucluster_env.policy_options import NON_NEGATIVE

__all__ = ["MAX_ROLLOUT_STEPS_AT_ONE_INSTANT", "ROLLOUT_POLICIES", "CandidateLister", "EngineEnv", "Lookahead",
           "rollout_cost", "rollout_curve"]

ROLLOUT_POLICIES = ("srsf", "sjf", "ssf", "yarn-cs", "fifo")
"""Heuristics a rollout may use: the stateless ones (a fresh instance acts on any state correctly)."""
BUDGET_PER_HOUR = 40_000.0
"""The search's default compute budget: rollout job-events earned per simulated hour (:class:`Lookahead`)."""
BUDGET_BANK = 12_000_000.0
"""The most rollout job-events the search holds, and holds at the start: 3x what an unbounded search spent on the
most costly 240-job episode measured (castor-venus seed 1, 3.7 million), so it never binds there."""


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
            found, free, req = 0, view.num_free(), view.req_gpus
            for j in pend[np.lexsort((pend, service[pend]))].tolist():  # by service, then index
                if found == self.starts:
                    break
                # (a gang larger than the free GPUs has no place: no need to ask the planner)
                if req[j] <= free and j not in recent and view.plan_place(j) is not None:
                    out.append(Place(j))
                    found += 1
            run = view.running_jobs()
            movable = run[view.now - view.last_start_of(run) >= min_run_s]
            if movable.size:  # the most remaining service, ties to the highest index
                out.append(Preempt(int(movable[np.lexsort((movable, service[movable]))[-1]])))
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
                 tail: bool = True, arrivals: bool = True, max_events: int | None = None,
                 budget: Annotated[float | None, NON_NEGATIVE] = BUDGET_PER_HOUR,
                 bank: float = BUDGET_BANK) -> None:
        """``horizon_s``: simulated seconds each rollout looks ahead. ``candidates``: how many of the
        shortest pending jobs are tried as starts (besides the heuristic's action, wait and one preemption).
        ``rollout``: the base heuristic, one of :data:`ROLLOUT_POLICIES`. ``tail``: score each rollout also
        by the remaining solo run time of the jobs left in the system at its end (:func:`rollout_cost`).
        ``arrivals``: the rollouts see the trace's arrivals within the horizon (False: only the jobs already
        submitted). ``max_events``: the heuristic's own rollout stops after that many advances of its copy's
        clock, and every candidate is scored to where it stopped (a truncated rollout; None: ``horizon_s``
        alone bounds it). ``budget``: the search's compute budget, in rollout job-events (the jobs in a copy's
        system at each advance of its clock, summed) earned per simulated hour, up to ``bank`` held (and held
        at the start); a decision point is searched while the bank holds any, and its rollouts' job-events are
        taken from it; where it is empty the heuristic's own action is taken unsearched. None: no budget (every
        decision point with a choice is searched)."""
        if not horizon_s > 0:
            raise ValueError(f"lookahead: horizon_s must be > 0, got {horizon_s!r}")
        if not (isinstance(candidates, int) and candidates >= 1):
            raise ValueError(f"lookahead: candidates must be an integer >= 1, got {candidates!r}")
        if rollout not in ROLLOUT_POLICIES:
            raise ValueError(f"lookahead: rollout must be one of {', '.join(ROLLOUT_POLICIES)}, got {rollout!r}")
        if max_events is not None and not (isinstance(max_events, int) and max_events >= 1):
            raise ValueError(f"lookahead: max_events must be an integer >= 1 or None, got {max_events!r}")
        if not ((budget is None or budget >= 0) and bank > 0):
            raise ValueError(f"lookahead: budget must be >= 0 or None and bank > 0, got {budget!r}, {bank!r}")
        self.horizon_s = float(horizon_s)
        self.candidates = candidates
        self.rollout = rollout
        self.tail = bool(tail)
        self.arrivals = bool(arrivals)
        self.max_events = max_events
        self.budget = None if budget is None else float(budget)
        self.bank = float(bank)
        self._held, self._held_at = self.bank, 0.0  # the budget's bank now, and when it last earned
        self._base = make_policy(rollout)  # the heuristic's own choice on the real env
        self._roll = make_policy(rollout)  # the same heuristic on the copies (its view moves from copy to copy)
        self._searches = 0
        self._rollouts = 0
        self._deviations = 0
        self._unsearched = 0
        self._lister = CandidateLister(candidates)
        self._played: list[tuple[Rollout, int]] = []  # the last search's rollouts, each past its offset
        self._kept: tuple[int, Rollout, int] | None = None  # (engine, rollout, offset) the real episode follows

    stat_names: ClassVar[tuple[str, ...]] = ("searches", "rollouts", "deviations", "unsearched")

    def reset(self, env: Any) -> None:
        self._searches = self._rollouts = self._deviations = self._unsearched = 0
        self._lister.reset()
        self._played, self._kept = [], None
        self._held, self._held_at = self.bank, float(env.unwrapped.engine.now)

    def episode_stats(self) -> dict[str, float]:
        """Decision points searched, rollouts played, how often the search overrode the heuristic, and the
        decision points the budget left unsearched (the heuristic's own action taken, no candidates listed)."""
        return {"searches": self._searches, "rollouts": self._rollouts, "deviations": self._deviations,
                "unsearched": self._unsearched}

    def may_search(self, now: float) -> bool:
        """Whether the budget lets a decision point at time ``now`` be searched: the bank, having earned
        ``budget`` job-events per simulated hour since it last did (up to ``bank``), holds any."""
        if self.budget is None:
            return True
        if now > self._held_at:
            self._held = min(self.bank, self._held + self.budget * (now - self._held_at) / 3600.0)
            self._held_at = now
        return self._held > 0

    def candidate_actions(self, view: ClusterView, own: Action, min_run_s: float) -> list[Action]:
        """The actions tried at this decision point, the heuristic's ``own`` first, without repeats."""
        return self._lister.actions(view, own, min_run_s)

    def rollout_costs(self, env: Any, cands: list[Action]) -> list[float]:
        """Each candidate's rollout cost from ``env``'s current state (one engine copy each; the heuristic's own
        first, whose end, when ``max_events`` cuts it, ends every candidate's window). The own one is not played
        again where the real episode has followed an earlier rollout's actions at this instant so far
        (:meth:`~gpucluster_env.baselines.parts.rollouts.Rollout.stands_for`): the same cost, bit for bit."""
        engine = env.unwrapped.engine
        end = engine.now + self.horizon_s
        self._played = []
        for i, a in enumerate(cands):
            if i == 0 and self._kept is not None and self._kept[0] == id(engine):
                _, rec, off = self._kept
                if rec.stands_for(off, engine, a, end, self.max_events):
                    self._played.append((rec, off))
                    end = rec.stop if rec.cut else end
                    continue
            copy = engine.clone()
            if not self.arrivals:
                copy.close_arrivals()  # no later job is ever submitted to the copy
            rec = play_rollout(copy, a, self._roll, end, self.tail, self.max_events if i == 0 else None)
            if rec.cut:
                end = rec.stop  # the heuristic's own rollout was truncated: every candidate is scored to there
            self._played.append((rec, 0))
            self._rollouts += 1
            self._held -= rec.work
        return [rec.cost for rec, _ in self._played]

    def search(self, env: Any) -> tuple[list[Action], list[float] | None]:
        """The candidate actions at ``env``'s state (the heuristic's own first) and each one's
        :func:`rollout_cost`; no costs (None) when there is one candidate and nothing to search (the heuristic's
        own alone where the budget leaves this decision point unsearched, :meth:`may_search`)."""
        view = self.view(env)
        own = self._base.act(None, env)
        if not isinstance(own, Action):
            raise TypeError(f"lookahead: rollout policy {self.rollout!r} answered {own!r}, not a typed action")
        if self.may_search(float(env.unwrapped.engine.now)):
            cands = self.candidate_actions(view, own, float(getattr(env.unwrapped, "min_run_s", 0.0)))
        else:
            self._unsearched += 1
            cands = [own]  # the budget is spent: the heuristic's own action, with no candidates listed
        if len(cands) == 1:
            self._played = [] if self._kept is None else [(self._kept[1], self._kept[2])]
            return cands, None
        self._searches += 1
        return cands, self.rollout_costs(env, cands)

    def note(self, env: Any, action: Action) -> None:
        """Record ``action`` as taken at ``env``'s state (a preempted job is not a start candidate again at
        the same instant); for a caller that chose it from :meth:`search` itself. The rollout that began with
        it is kept while the real episode takes that rollout's next actions at this instant."""
        self._lister.chosen(self.view(env), action)
        self._kept = None
        for rec, off in self._played:
            if off < len(rec.chain) and rec.chain[off] == action:
                self._kept = (id(env.unwrapped.engine), rec, off + 1)
                break
        self._played = []

    def act(self, observation: Any, env: Any) -> Action:
        cands, costs = self.search(env)
        best = cands[0]
        if costs is not None:
            best = cands[int(np.argmin(costs))]  # the first least: the heuristic's own wins ties
            if best != cands[0]:
                self._deviations += 1
        self.note(env, best)
        return best
