"""Gimbal's coordination search (gimbal §5.2, Algorithm 1) over the read-only view.

* **Local objectives and priorities** (:func:`~.gimbal_objectives.local_objective`,
  :func:`~.gimbal_objectives.priority`, in :mod:`.gimbal_objectives`) for JCT (eq. 1-2), deadlines (eq. 3-4) and
  makespan (eq. 5-6), from each job's remaining steps and *predicted* throughput.
* **Predicted throughput** (:class:`~.gimbal_throughput.ThroughputModel`): a job's iteration time on its GPUs
  (:meth:`~gpucluster_env.engine.view.ClusterView.iter_time`) with each worker's interference ratio taken from
  a predictor's free-competition ratio (Castor's, :func:`~gpucluster_env.baselines.castor.default_predictor`)
  under the MPS shares by the one share model (:func:`gpucluster_env.performance.apply_shares`). Never the
  engine's true ratios.
* **Algorithm 1** (:class:`SetSearch`, driven by :class:`Coordinator` at every search step, 39 s apart in the
  "+gimbal" policies, gimbal §7.4 Fig. 14): split a packing set into ``{J_max}`` and the rest, the lower-priority
  subset is squeezed one ``granularity`` (10% of the GPU by default) per step (LGRR, paying the engine's switch
  overhead), or, when ``J_max`` is the low-priority one and has stragglers, its slow workers are relieved by
  sample stealing (LISS, free) and its fast ones squeezed; each step's gain is the change of the local
  objective; three consecutive steps without gain end the search (early exit) and the shares go back to the
  best point seen.

How the paper's priority signs are read: Algorithm 1 swells the subset of *higher* priority. Eq. 2
(``-Utilization``) is used as printed (low-utilization jobs are swelled, big ones squeezed, §5.2's text); for
eq. 4 and 6 the text says jobs closer to their deadline and longer jobs are favoured, so the subset with the
*smaller* slack and the *longer* duration is swelled. Eq. 3 is read as the largest predicted lateness
``max(0, RemainingSteps/Throughput - (Deadline - now))`` (the text: "minimize the maximum duration of jobs that
exceed their deadlines").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from gpucluster_env.baselines.parts.gimbal_objectives import OBJECTIVES, local_objective, priority
from gpucluster_env.baselines.parts.gimbal_rules import JobSet, KeptSets, TenantWatch
from gpucluster_env.baselines.parts.gimbal_throughput import ThroughputModel  # re-exported for gandiva
from gpucluster_env.baselines.parts.xi_predictor import XiPredictor

from gpucluster_env.config import DEFAULT_SHARE_STEP
from gpucluster_env.engine import Action, Squeeze, Swell
from gpucluster_env.engine.view import ClusterView

DEFAULT_GRANULARITY = 10
"""Percent of the GPU a search attempt moves a share by: Gimbal's 10% (§7.4 found it best)."""
MAX_FAILS = 3
"""Early exit: consecutive attempts without gain that end a search (gimbal §5.2, Algorithm 1 line 9)."""


@dataclass
class SetSearch:
    """Algorithm 1's state for one packing set: the members it was started for, the subsets, the shares of the
    best point so far, consecutive failures, attempts, and whether it has ended; the members' predicted rates at
    the best point (:meth:`ThroughputModel.finish_times`' memo) with the :meth:`ThroughputModel.inputs` they
    were worked out for."""

    members: tuple[int, ...]
    low: tuple[int, ...]
    high: tuple[int, ...]
    best_shares: dict[tuple[int, int], int]
    fails: int = 0
    done: bool = False
    attempts: int = 0
    best_rates: tuple[tuple | None, dict] = (None, {})


@dataclass
class SearchStats:
    """What the coordinator did over an episode (the early-exit study reads it)."""

    searches: int = 0
    attempts: int = 0
    early_exits: int = 0
    lgrr_steps: int = 0
    liss_switches: int = 0


def attempt_steps(granularity: int, share_units: int) -> int:
    """Steps of the engine's share grid (``share_units`` of them a whole GPU) in one search attempt of
    ``granularity`` percent of the GPU; a ValueError naming ``granularity`` when it is not a whole number of
    steps (5% on the 10% grid) or not a percentage below 100."""
    if isinstance(granularity, bool) or not isinstance(granularity, int) or not 0 < granularity < 100:
        raise ValueError(f"Coordinator: granularity must be a percentage of the GPU from 1 to 99 (5, 10, 20, 30), "
                         f"got {granularity!r}")
    if granularity * share_units % 100:
        raise ValueError(f"Coordinator: granularity={granularity}% is not a multiple of the engine's MPS share step "
                         f"({100 / share_units:g}%); run the scenario with a finer share_step (e.g. --option "
                         f"share_step=0.05 for 5%) or pick a multiple of {100 / share_units:g}")
    return granularity * share_units // 100


class Coordinator:
    """Gimbal's aggressive packing coordinator for one objective: at each monitoring tick, one Algorithm-1
    step per packing set. ``lgrr``: share calibration allowed; ``liss``: sample stealing allowed (needs a
    ``stealing(job, on)`` action factory); ``early_exit``: stop after :data:`MAX_FAILS` attempts without gain
    (else after the whole share range); ``granularity``: percent of the GPU a share moves per attempt (10:
    Gimbal's; §7.4 studies 5, 10, 20 and 30), a multiple of the engine's share step, of which ``share_units``
    make a whole GPU (10 on the default 10% grid, 20 on the 5% one: the scenario option ``share_step``); an
    attempt of several steps issues them at one instant, so each job moved pays one switch pause; shares stay
    at 100% less whole attempts, down to the lowest such share above 0;
    ``departures``: expected remaining times account for partners finishing
    (:meth:`ThroughputModel.remaining_times`)."""

    def __init__(self, kind: str, demand: Any, deadline: Any, lgrr: bool = True, liss: bool = True,
                 early_exit: bool = True, predictor: XiPredictor | None = None, stealing: Any = None,
                 departures: bool = True, granularity: int = DEFAULT_GRANULARITY,
                 share_units: int = round(1.0 / DEFAULT_SHARE_STEP)) -> None:
        if kind not in OBJECTIVES:
            raise ValueError(f"Coordinator: unknown objective {kind!r}; known: {', '.join(OBJECTIVES)}")
        self.kind, self.demand, self.deadline = kind, demand, deadline
        self.lgrr, self.liss, self.early_exit = lgrr, liss, early_exit
        self.stealing = stealing
        self.departures = departures
        self.granularity = granularity
        self.full = share_units
        self.steps = attempt_steps(granularity, share_units)
        # Shares stay on the attempt's lattice, 100% less whole attempts; the least is the lowest such share
        # above 0 (10% for 10% attempts, 20% for 20%, 10% for 30%), whatever the engine's grid, so a search
        # is the same on a finer grid
        self.least = share_units - self.steps * ((share_units - 1) // self.steps)
        self._predictor = predictor
        self.model: ThroughputModel | None = None
        self.shares: dict[tuple[int, int], int] = {}
        self.liss_on: set[int] = set()
        self.searches: dict[int, SetSearch] = {}
        self.stats = SearchStats()
        self._sets: KeptSets | None = None
        self._ticked: list[JobSet] | None = None  # the sets of the last tick (KeptSets' list: same while unchanged)
        self._ended: dict[int, JobSet] = {}  # id -> those of them whose search has ended (held: ids stay theirs)
        self._watch: TenantWatch | None = None  # the GPUs' tenants at the last _sync

    def use_sets(self, sets: KeptSets) -> None:
        """Read the packing sets from ``sets`` (a host's, for the same view) instead of keeping its own."""
        self._sets = sets

    def use_model(self, model: ThroughputModel) -> None:
        """Predict rates with ``model`` (a host's, for the same view, demand and predictor) instead of its own."""
        self.model = model
        self._watch = None  # (the next tick reads every share afresh)

    # ------------------------------------------------------------------ bookkeeping
    def _sync(self, view: ClusterView) -> list[tuple[int, int]]:
        """Drop the shares of jobs that stopped (a restarted job starts again at full share); the ``(job, GPU)`` of
        the shares left on the GPUs whose tenants changed since the last call, the only ones a change can have
        left alone (every share at the first call). A share is set only on a GPU shared then, and a job that stops
        leaves all its GPUs, so only the jobs on those GPUs are asked whether they run."""
        if self.model is None or self.model.view is not view:
            if view.share_units != self.full:
                raise ValueError(f"Coordinator: made for a share grid of {self.full} steps per GPU, the engine's has "
                                 f"{view.share_units} (pass share_units=view.share_units)")
            self.model = ThroughputModel(view, self.demand, self._predictor)
            self._watch = None
        if self._watch is None or self._watch.view is not view:
            self._watch = TenantWatch(view)
        rows = self._watch.changes()
        if rows is not None and not rows:
            return []
        shares = self.shares
        if rows is None:
            keys = list(shares)
            jobs = {k[0] for k in keys} | self.liss_on
        else:
            keys = [(j, g) for g, before, now in rows for j in {*before, *now} if (j, g) in shares]
            jobs = {j for _, before, now in rows for j in (*before, *now) if j >= 0}
        stopped = {j for j in jobs if not view.is_running(j)}  # each job asked once
        if stopped:
            if stopped.intersection(k[0] for k in keys):
                self.shares = {k: s for k, s in shares.items() if k[0] not in stopped}
                keys = [k for k in keys if k[0] not in stopped]
            self.liss_on -= stopped
        return keys

    def forget(self, jobs: Any) -> None:
        """Drop the shares of ``jobs`` that a scheduler stops or moves (a job starts again at full share, maybe
        at once, before the next tick's bookkeeping could see it stop)."""
        gone = set(jobs)
        if gone:
            self.shares = {k: s for k, s in self.shares.items() if k[0] not in gone}

    def objective(self, view: ClusterView, jobs: tuple[int, ...], shares: dict[tuple[int, int], int],
                  memo: dict[tuple[int, frozenset[int]], float] | None = None) -> float:
        """The local objective of ``jobs`` under ``shares`` (predicted rates; ``memo``: as
        :meth:`ThroughputModel.finish_times`')."""
        assert self.model is not None
        if self.departures:
            times: list[float] | np.ndarray = self.model.finish_times(jobs, shares, memo)
            if self.kind == "makespan":  # eq. 5 over finite floats: their largest
                return max(times) if all(x == x for x in times) else math.nan  # np.max: NaN wins
        else:
            times = self.model.remaining_times(jobs, shares, False)
        if self.kind != "deadline":  # eq. 1 and 5 read no slack
            return local_objective(self.kind, times)
        now = view.now
        return local_objective(self.kind, times, [self.deadline(j) - now for j in jobs])

    def _priority(self, view: ClusterView, j: int) -> float:
        assert self.model is not None
        t = int(view.gpu_type[self.model.gpus(j)[0]])
        if self.kind == "jct":  # eq. 2 reads the utilization alone: no rate to predict
            return priority(self.kind, 0.0, 1.0, self.demand(j, t))
        return priority(self.kind, self.model.remaining_one(j), self.model.rate(j, self.shares),
                        self.demand(j, t), self.deadline(j) - view.now)

    def _mean_priority(self, view: ClusterView, jobs: tuple[int, ...]) -> float:
        """The mean :meth:`_priority` of ``jobs`` (one job: its own, as the mean of one is)."""
        if len(jobs) == 1:
            return self._priority(view, jobs[0])
        return float(np.mean([self._priority(view, j) for j in jobs]))

    # ------------------------------------------------------------------ Algorithm 1
    def start(self, view: ClusterView, s: JobSet, acts: list[Action]) -> SetSearch:
        """Lines 1-5: the subsets by mean priority, and the high one swelled back to full share (its actions
        go to ``acts``); the search's best point is where it starts."""
        sub1, sub2 = (s.jmax,), s.others
        p1 = self._mean_priority(view, sub1)
        p2 = self._mean_priority(view, sub2)
        if p2 < p1:
            sub1, sub2 = sub2, sub1
        assert self.model is not None
        gpus = self.model.gpus
        self.move_to(view, {(j, g): self.full for j in sub2 for g in gpus(j).tolist()}, acts)
        self.stats.searches += 1
        return SetSearch(s.jobs, sub1, sub2, self._point(s.jobs))

    def _point(self, jobs: tuple[int, ...]) -> dict[tuple[int, int], int]:
        """The shares of the workers of a packing set's ``jobs`` now (all a search's objective and restore read of
        the shares: every partner of a member is a member), not a copy of every share."""
        assert self.model is not None
        shares, gpus = self.shares, self.model.gpus
        return {k: shares[k] for j in jobs for g in gpus(j).tolist() if (k := (j, g)) in shares}

    def _set(self, j: int, g: int, acts: list[Action], swell: bool) -> bool:
        """One step of the engine's share grid for job ``j`` on GPU ``g`` (merged with the previous action when it
        moves the same job the same way, so a plan changes a job's share once); whether the share moved."""
        cur = self.shares.get((j, g), self.full)
        new = min(self.full, cur + 1) if swell else max(self.least, cur - 1)
        if new == cur:
            return False
        if new == self.full:
            self.shares.pop((j, g), None)
        else:
            self.shares[(j, g)] = new
        kind = Swell if swell else Squeeze
        last = acts[-1] if acts else None
        if isinstance(last, kind) and last.job == j and last.gpus is not None and g not in last.gpus:
            acts[-1] = kind(j, gpus=(*last.gpus, g))
        else:
            acts.append(kind(j, gpus=(g,)))
        return True

    def move_to(self, view: ClusterView, target: dict[tuple[int, int], int], acts: list[Action]) -> None:
        """Every step that takes the ``(job, gpu)`` shares of ``target`` from the current ones to theirs, at
        once (the steps of one instant pay one switch pause)."""
        moved = True
        while moved:  # (not the number of actions: a step may merge into the action before it)
            moved = False
            for (j, g), want in sorted(target.items()):
                cur = self.shares.get((j, g), self.full)
                if cur != want:
                    moved = self._set(j, g, acts, swell=want > cur) or moved

    def _squeeze_workers(self, view: ClusterView, j: int, gpus: np.ndarray, acts: list[Action]) -> None:
        """Squeeze job ``j`` by one attempt's ``granularity`` on those of ``gpus`` it shares (a worker alone gains
        nothing from it)."""
        assert self.model is not None
        both = self.model.shared_gpus(j)  # the tenants stay as they are during a tick
        shared = [g for g in gpus.tolist() if g in both]
        for _ in range(self.steps):
            for g in shared:
                self._set(j, g, acts, swell=False)

    def step(self, view: ClusterView, st: SetSearch, jmax: int) -> list[Action]:
        """Lines 7 and 11-20: one coordination plan as engine actions (empty: nothing left to try).

        ``J_max``'s stragglers are its workers with a larger predicted ratio. Sample stealing (LISS) is the
        mechanism of "swell the slow workers, squeeze the fast ones" inside one job (gimbal §4.2), and also
        removes the stragglers LGRR creates, so it is switched on (free) the first time ``J_max`` has
        stragglers; after that they no longer pace the job. Then: no stragglers, or ``J_max`` stealing and
        low-priority: squeeze the low subset (each job on the GPUs it shares); ``J_max`` high-priority with
        stragglers: squeeze the partners' workers on its slow GPUs; without LISS and ``J_max`` low-priority:
        swell its slow workers and squeeze its fast shared ones (LGRR alone)."""
        assert self.model is not None
        acts: list[Action] = []
        slow, fast = self.model.stragglers(jmax, self.shares)
        if len(slow) and self.liss and self.stealing is not None and jmax not in self.liss_on:
            self.liss_on.add(jmax)
            self.stats.liss_switches += 1
            acts.append(self.stealing(jmax, True))
            if jmax in st.low:
                return acts  # LISS is this attempt's plan
        if not self.lgrr:
            return acts
        n0 = len(acts)
        balanced = len(slow) == 0 or jmax in self.liss_on
        if balanced or jmax not in st.low:
            for j in st.low:
                gp = self.model.gpus(j)
                if not balanced and j != jmax:
                    gp = np.intersect1d(gp, slow)  # the workers colocated with J_max's slow ones
                self._squeeze_workers(view, j, gp, acts)
        else:
            for _ in range(self.steps):
                for g in slow.tolist():
                    self._set(jmax, g, acts, swell=True)
            self._squeeze_workers(view, jmax, fast, acts)
        self.stats.lgrr_steps += len(acts) - n0
        return acts

    def _restore(self, view: ClusterView, st: SetSearch, acts: list[Action]) -> None:
        """Back to the best point of the search, at once."""
        assert self.model is not None
        gpus = self.model.gpus
        self.move_to(view, {(j, g): st.best_shares.get((j, g), self.full) for j in st.members
                            for g in gpus(j).tolist()}, acts)

    def release_lone(self, view: ClusterView, acts: list[Action], keys: list[tuple[int, int]] | None = None
                     ) -> None:
        """Full share back for every worker (of ``keys``, the shares' ``(job, GPU)``; None: all) that no longer
        shares its GPU (its partner finished or left)."""
        keys = list(self.shares) if keys is None else keys
        if not keys:
            return
        alone = (view.tenants([k[1] for k in keys]) < 0).any(axis=1).tolist()
        self.move_to(view, {k: self.full for k, a in zip(keys, alone, strict=True) if a}, acts)

    def tick(self, view: ClusterView) -> list[Action]:
        """Runtime monitoring: release lone workers, then for every packing set evaluate the last plan's gain
        (the objective under the current shares against the best point's, both at the current progress) and
        issue the next plan, or end the search and go back to its best point."""
        touched = self._sync(view)
        assert self.model is not None
        acts: list[Action] = []
        if touched:  # (every share was set on a GPU shared then: none is alone while the tenants stay)
            self.release_lone(view, acts, touched)
        if self._sets is None or self._sets.view is not view:
            self._sets = KeptSets(view)
        sets = self._sets.now()
        if sets is not self._ticked:  # (the same list: the same sets, every search kept)
            live = {s.jmax for s in sets}
            self.searches = {k: v for k, v in self.searches.items() if k in live}
            self._ended = {id(s): s for s in sets if id(s) in self._ended}
            self._ticked = sets
        # a set whose search ended is passed over while it is the same JobSet object (KeptSets makes a new one
        # for a group whose pairs changed): its search is kept, ended, for its very members, a tick a no-op
        ended = self._ended
        todo = [s for s in sets if id(s) not in ended] if ended else sets
        with self.model.held():  # the cluster does not change during a tick
            if len(todo) > 1:  # every set's iterations left in one read of the view (elementwise: the same values)
                self.model.read_ahead([j for s in todo for j in s.jobs])
            for s in todo:
                self._tick_set(view, s, acts)
        searches = self.searches
        for s in todo:
            if searches[s.jmax].done:
                ended[id(s)] = s
        return acts

    def _tick_set(self, view: ClusterView, s: JobSet, acts: list[Action]) -> None:
        """One tick of Algorithm 1 on packing set ``s`` (see :meth:`tick`)."""
        st = self.searches.get(s.jmax)
        if st is None or st.members != s.jobs:
            st = self.searches[s.jmax] = self.start(view, s, acts)
        elif not st.done:
            # the best point's rates stay while the members' inputs do: only their iterations left are read again
            assert self.model is not None
            inputs = self.model.inputs(s.jobs)
            kept, best = st.best_rates
            if kept != inputs or inputs is None:
                best = {}
            now: dict[tuple[int, frozenset[int]], float] = {}
            if self.objective(view, s.jobs, self.shares, now) < self.objective(view, s.jobs, st.best_shares, best) * (
                    1.0 - 1e-9):
                st.best_shares, st.fails, best = self._point(s.jobs), 0, now
            else:
                st.fails += 1
            st.best_rates = (inputs, best)
        if st.done:
            return
        limit = MAX_FAILS if self.early_exit else -(-self.full // self.steps)
        plan = self.step(view, st, s.jmax) if st.fails < limit else []
        if plan:
            st.attempts += 1
            self.stats.attempts += 1
            acts += plan
        else:
            st.done = True
            self.stats.early_exits += int(st.fails >= MAX_FAILS and self.early_exit)
            self._restore(view, st, acts)
