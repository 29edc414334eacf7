"""Gandiva (Xiao et al., OSDI '18) with deadlines, the deadline baseline of gimbal §7.1.

As Gimbal describes it: a first-come-first-served scheduler that packs jobs introspectively -- it packs first
and checks afterwards, from runtime metrics, whether the packing pays, and unpacks when it does not.

* **Queue**: arrival order; the deadline-aware extension gimbal §7.1 asks for puts jobs that can still meet their
  deadline (now + estimated run time <= deadline) ahead of those that cannot, each group in arrival order.
* **Start**: on free GPUs when enough are free (fewest nodes first); otherwise **pack** beside a running job of
  the same GPU count that runs alone and leaves room in memory, the least utilized first (Gandiva packs jobs
  of low utilization), skipping model pairs found harmful before.
* **Introspection** (every monitoring tick): a packed pair whose normalized throughputs sum below 1 (each job's
  rate shared over its rate alone -- packing loses to time-slicing) is unpacked: the job that joined is
  preempted back to the queue and its model pair marked harmful. The throughputs are the predicted ones of
  :class:`~gpucluster_env.baselines.parts.gimbal_search.ThroughputModel` (the predictor stands in for Gandiva's
  runtime profiling; the engine's true ratios are never read).

``unequal`` allows partners with more GPUs under Gimbal's topology rule (``gandiva+gimbal``, gimbal §7.2).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gpucluster_env.baselines.parts.gimbal_hosts import HostsByDemand, least_utilized_host
from gpucluster_env.baselines.parts.gimbal_rules import (
    JobSet,
    KeptSets,
    PartnerCache,
    TopologyRule,
)
from gpucluster_env.baselines.parts.gimbal_search import ThroughputModel
from gpucluster_env.baselines.parts.job_facts import JobFacts
from gpucluster_env.baselines.parts.job_shape import FailedShapes
from gpucluster_env.baselines.parts.packing_walk import FreeStarts, HostRows, first_true
from gpucluster_env.baselines.parts.xi_predictor import PREDICTOR_VERSION, XiPredictor

from gpucluster_env.engine import Action, Colocate, Place, Preempt, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy, register_policy


@register_policy
class Gandiva(Policy):
    """Gandiva: FCFS (deadline-feasible first) with introspective packing (see the module docstring)."""

    version = PREDICTOR_VERSION

    name: ClassVar[str] = "gandiva"
    description: ClassVar[str] = (
        "Gandiva with deadlines: FCFS, feasible deadlines first; pack beside the least-utilized lone equal-size "
        "job, unpack pairs whose normalized throughputs sum below 1"
    )
    paper: ClassVar[str] = "gimbal §7.1 baseline (Gandiva, OSDI '18, extended with deadlines)"

    def __init__(self, unequal: bool = False, tick_s: float = 30.0, predictor: XiPredictor | None = None) -> None:
        """``unequal``: allow larger partners (Gimbal's relaxation). ``tick_s``: introspection period (s).
        ``predictor``: interference predictor (default: the catalog's, as Castor)."""
        if not tick_s > 0:
            raise ValueError(f"gandiva: tick_s must be positive, got {tick_s!r}")
        self.unequal = bool(unequal)
        self.tick_s = float(tick_s)
        self.predictor = predictor
        self.facts: JobFacts | None = None
        self.rule: TopologyRule | None = None  # set by reset
        self.model: ThroughputModel | None = None
        self.harmful: set[tuple[int, int]] = set()
        self.unpacked = 0
        self._next_check = 0.0

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.facts = JobFacts(self.view(env))
        self._deadline = self.facts.deadlines_of(np.arange(self.view(env).n_jobs))  # inf: none
        self._some_deadline = bool(np.isfinite(self._deadline).any())
        self.rule = TopologyRule(self.view(env), relaxed=self.unequal)
        view = self.view(env)
        facts = self.facts
        self.model = ThroughputModel(view, lambda j, t: facts.demand(view, j, t), self.predictor)
        self.harmful = set()
        self.unpacked = 0
        self._next_check = 0.0
        self._judged: set[tuple] = set()
        self.sets = KeptSets(view)
        # the last introspection's sets, whether all were judged, the shares, and the sets whose state was judged
        self._seen: tuple[list[JobSet] | None, bool, dict, set[JobSet]] = (None, False, {}, set())
        self.failed = FailedShapes(view)
        self.hosts = PartnerCache(view, self.rule, self.unequal)
        self.by_demand = HostsByDemand(self.hosts, lambda p, t: facts.demand(view, p, t))
        self.rows = HostRows(view, self.hosts)
        self.free = FreeStarts(view, self.rule)
        self._harm: np.ndarray | None = None  # the harmful pairs by model index, for _harm_n of them
        self._harm_n = 0

    # ------------------------------------------------------------------ queue
    def order(self, view: ClusterView) -> np.ndarray:
        """Pending jobs in arrival order, those that can still meet their deadline first."""
        assert self.facts is not None
        pend = view.pending_jobs()
        if not self._some_deadline:  # no job can be late (nothing is later than no deadline)
            return pend
        late = view.now + view.solo_time[pend] > self._deadline[pend]
        return pend[np.argsort(late, kind="stable")] if late.any() else pend

    def pair_key(self, view: ClusterView, a: int, b: int) -> tuple[int, int]:
        ma, mb = view.model_index(a), view.model_index(b)
        return (ma, mb) if ma <= mb else (mb, ma)

    def pack(self, view: ClusterView, j: int) -> Colocate | None:
        """Gandiva's packing choice for pending job ``j``: the least-utilized qualifying partner, skipping model
        pairs found harmful."""
        assert self.facts is not None and self.rule is not None
        return least_utilized_host(view, self.by_demand, j, lambda p: self.pair_key(view, j, p) in self.harmful)

    # ------------------------------------------------------------------ introspection
    def settled(self, view: ClusterView, jmax: int) -> bool:
        """Whether the packing set of ``jmax`` may be judged now (always, without Gimbal)."""
        return True

    def introspect(self, view: ClusterView) -> list[Action]:
        """Unpack every packed job whose pair loses to running apart (normalized throughputs sum < 1)."""
        assert self.model is not None
        shares = self.current_shares()
        sets = self.sets.now()
        seen_sets, seen_all, seen_shares, passed = self._seen
        if sets is seen_sets and seen_all and shares == seen_shares:
            return []  # the same sets, all judged at the same shares last time: every verdict stands
        # the jobs whose shares moved since the last introspection: a set whose state (members, their shares) was
        # judged by then and none of whose members moved is in that very state, judged
        moved = {k[0] for k in shares.keys() ^ seen_shares.keys()}
        moved.update(k[0] for k, v in shares.items() if seen_shares.get(k, v) != v)
        by_job: dict[int, list[tuple[tuple[int, int], int]]] | None = None
        out: list[Action] = []
        judged_all = True
        judged: set[JobSet] = set()  # the settled sets whose state is judged now
        with self.model.held():  # the cluster does not change while it is judged
            for s in sets:
                if not self.settled(view, s.jmax):
                    judged_all = False
                    continue
                jobs = s.jobs
                judged.add(s)
                if s in passed and moved.isdisjoint(jobs):
                    continue
                if by_job is None:
                    by_job = {}
                    for k, v in shares.items():
                        by_job.setdefault(k[0], []).append((k, v))
                state = (jobs, tuple(sorted(kv for j in jobs for kv in by_job.get(j, ()))) if by_job else ())
                if state in self._judged:  # the same set at the same shares: the same (passing) verdict
                    continue
                self._judged.add(state)
                out += self._unpack(view, s, shares)
        self._seen = (sets, judged_all, dict(shares), judged)
        return out

    def _unpack(self, view: ClusterView, s: JobSet, shares: dict[tuple[int, int], int]) -> list[Action]:
        """The preemptions of the members of ``s`` whose pair with its ``jmax`` loses to running apart."""
        assert self.model is not None
        out: list[Action] = []
        for o in s.others:
            norm = 0.0
            for x in (s.jmax, o):
                g = view.gpus_of(x)
                alone = view.iter_time(x, g, view.accumulation(x), 1.0)
                norm += alone * self.model.rate(x, shares)
            if norm < 1.0:
                self.harmful.add(self.pair_key(view, o, s.jmax))
                self.unpacked += 1
                out.append(Preempt(o))
        return out

    def current_shares(self) -> dict[tuple[int, int], int]:
        """The MPS shares this policy set, in steps of the engine's share grid per (job, GPU) (none: all
        at 100%)."""
        return {}

    def act(self, observation: Any, env: Any) -> Action | int | list[Action]:
        view = self.view(env)
        if view.now >= self._next_check:
            self._next_check = view.now + self.tick_s
            acts = self.introspect(view)
            if acts:
                return acts
        if view.num_pending == 0:
            return Wait()
        # a shape that found nothing in this state (the GPUs' tenants, the harmful pairs) finds nothing again
        a = self.failed.walk(self.order(view), None, self.unpacked, lambda j: self._answer(view, j),
                             lambda jobs: self._prepare(view, jobs))
        return Wait() if a is None else a

    def _prepare(self, view: ClusterView, jobs: np.ndarray) -> np.ndarray:
        """:meth:`pack` for each of ``jobs`` at once (the walk's jobs in one state), kept for :meth:`_answer`:
        per size, a jobs x partners mask (fits in memory, model pair not harmful), the least profiled demand
        among those passing (ties: the lowest index); an answer worked out before is kept, weighed only against
        the partners whose rows changed since (:meth:`.HostRows.split`). Returns which of ``jobs`` may start (a
        partner, or as many GPUs free as they ask): the others' :meth:`start` is None."""
        harm = self._harm_matrix(view)
        # an answer reads of a job its shape alone (size, footprint, model): kept by shape over its size's table
        # while no model pair is found harmful (the pairs only grow)
        codes = dict(zip(jobs.tolist(), self.failed.codes(jobs).tolist(), strict=True))
        tag = len(self.harmful)
        got, left, partial = self.rows.split(self.failed.state, jobs, list(codes.values()), tag)
        for js, ps, types, ok, kept in self.rows.by_size(self.failed.state, left, partial):
            if harm is not None:
                ok &= ~harm[view.model_index_of(js)[:, None], view.model_index_of(ps)[None, :]]
            demand = view.demand_of(ps, types)
            best = np.argmin(np.where(ok, demand[None, :], np.inf), axis=1) if len(ps) else np.zeros(len(js), int)
            first = first_true(ok)
            need = int(view.req_gpus[js[0]])
            for r, (j, i, f, k) in enumerate(zip(js.tolist(), best.tolist(), first.tolist(), kept.tolist(),
                                                 strict=True)):
                # the least demand among the passing ones (all infinite: the first of them); -1: none passes
                i = i if f >= 0 and ok[r, i] else f
                p = int(ps[i]) if f >= 0 else -1
                if k >= 0 and (p < 0 or (self._demand_at(view, need, k), k) < (float(demand[i]), p)):
                    p = k  # a kept partner (its row stayed) still before the changed rows' best
                got[j] = p
                self.rows.keep(codes[j], j, tag, p)
        self._partner: dict[int, int] = {j: p for j, p in got.items() if p >= 0}
        partner = self._partner
        return np.array([j in partner for j in jobs.tolist()]) | (view.req_gpus[jobs] <= view.num_free())

    def _demand_at(self, view: ClusterView, need: int, p: int) -> float:
        """The profiled demand of partner ``p`` on the type of the first GPU it offers a job asking ``need`` GPUs
        (as :meth:`_prepare` reads it over a table)."""
        return float(view.demand_of(np.array([p]), np.array([self.hosts.first_type(need, p)]))[0])

    def _harm_matrix(self, view: ClusterView) -> np.ndarray | None:
        """The harmful model pairs as a symmetric boolean matrix by model index (None: none yet)."""
        if not self.harmful:
            return None
        if self._harm is None or self._harm_n != len(self.harmful):
            m = int(view.model_index_of(np.arange(view.n_jobs)).max()) + 1
            self._harm = np.zeros((m, m), dtype=bool)
            a, b = np.array(sorted(self.harmful)).T
            self._harm[a, b] = self._harm[b, a] = True
            self._harm_n = len(self.harmful)
        return self._harm

    def _answer(self, view: ClusterView, j: int) -> Action | None:
        """:meth:`start` from what :meth:`_prepare` worked out."""
        assert self.rule is not None
        a = self.free.start(self.failed.state, j, self.failed.code(j))
        if a is not None:
            return a
        p = self._partner.get(j)
        if p is None:
            return None
        g = self.hosts.gpus(int(view.req_gpus[j]), p)
        return Colocate(j, p, accumulation=1, gpus=tuple(int(x) for x in g))

    def start(self, view: ClusterView, j: int) -> Action | None:
        """Where pending job ``j`` starts now: free GPUs the rule allows, else packed; None: nowhere."""
        assert self.rule is not None
        g = view.plan_place(j)
        if g is not None and self.rule.allows(j, g):
            return Place(j, gpus=tuple(int(x) for x in g))
        return self.pack(view, j)
