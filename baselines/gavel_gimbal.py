"""Gavel with Gimbal (gimbal §7.2, makespan): Gavel's minimize-makespan allocation realized in rounds, with
Gimbal's relaxed packing on Gavel's placement and Gimbal's makespan coordination (eq. 5-6) on every packing set.

How packing sets form under Gavel. The paper's original Gavel packs by its optimization problem and
round-robins the highest-priority job pairs, equal GPU counts only; the Gimbal-enhanced one is "relaxed for more
aggressive packing decisions" with the equal-size restriction removed (§7.1-7.2). Gavel's packed LP
(``gavel-packed``, also with ``objective="makespan"``) pairs equal sizes only, so ``gavel+gimbal`` lays Gimbal's
relaxed packing on Gavel's round decisions instead of on that LP (``gavel-packed+gimbal``, at the end of this
(:mod:`gpucluster_env.baselines.gavel_packed_gimbal`), is the other reading: Gimbal's coordination on the LP's own
pairs):

1. each round Gavel grants exclusive gangs exactly as ``gavel`` does (the makespan LP by default, priority =
   allocation / share of time received, deficits, the round length of the scenario or 360 s);
2. the jobs the round leaves waiting -- those plain Gavel time-slices out -- are then packed, highest Gavel
   priority first, each beside the running job of least profiled utilization that Gimbal's topology rule lets
   it share (:func:`~.gimbal_hosts.least_utilized_host`; a smaller job on GPUs of a larger one, equal sizes only
   on exactly its GPUs), where it fits in memory;
3. at the next round a packed job stays where it is (no restart) while the job it shares with keeps its GPUs
   and it is not granted GPUs of its own; granted while its host is granted too, it moves to its own gang;
   granted while its host is not, it keeps its GPUs (the host stops, or in a balanced pair stays beside it
   packed). Packed time is not counted as time received by Gavel's priorities (it is extra to the allocation),
   though the progress it makes shortens the job's remaining steps in the next LP;
4. at every search step (``SEARCH_STEP_S``, 39 s, gimbal §7.4) Gimbal's coordinator runs Algorithm 1 with the
   makespan local objective (eq. 5) and priority (eq. 6) on every packing set: the shorter side squeezed to
   speed the longer one, LISS against stragglers.

Gavel's own starts also keep the topology rule (they are applied after the round's preemptions and dropped when
the rule forbids their gang: the job stays in the queue and may be packed instead). On one GPU type the LP only
sets each job's share of rounds, so Gavel reduces to round-robin by priority. Options as the other "+gimbal"
policies (``lgrr``, ``liss``, ``early_exit``, ``granularity``); ``objective`` is Gavel's (default makespan),
the coordination objective is always eq. 5-6.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import numpy as np
from gpucluster_env.baselines.parts.gavel_rounds import round_priorities
from gpucluster_env.baselines.parts.gavel_scheduler import OBJECTIVES, Gavel
from gpucluster_env.baselines.parts.gimbal_hosts import HostsByDemand, least_utilized_host
from gpucluster_env.baselines.parts.gimbal_layer import GimbalOptions, Granularity, WithGimbal
from gpucluster_env.baselines.parts.gimbal_rules import (
    PartnerCache,
    TopologyRule,
    packing_sets,
)
from gpucluster_env.baselines.parts.gimbal_search import DEFAULT_GRANULARITY
from gpucluster_env.baselines.parts.job_facts import JobFacts
from gpucluster_env.baselines.parts.job_shape import FailedShapes
from gpucluster_env.baselines.parts.xi_predictor import XiPredictor

from gpucluster_env.engine import Action, Colocate, Place, Preempt, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import register_policy
from gpucluster_env.policy_options import NON_NEGATIVE, OptionSpec


class GavelLeftoverPacking(Gavel):
    """Gavel's rounds (makespan by default) with the jobs a round leaves waiting packed beside granted ones under
    Gimbal's topology rule (steps 1-3 of the module docstring): the host ``gavel+gimbal`` wraps."""

    default_objective: ClassVar[str] = "makespan"

    def __init__(self, objective: str | None = None, round_s: float | None = None, min_reset_s: float = 1920.0,
                 unequal: bool = True) -> None:
        """``objective``, ``round_s``, ``min_reset_s``: Gavel's. ``unequal``: Gimbal's relaxed packing (partners
        of other sizes under its topology rule); False packs equal sizes only, on exactly the host's GPUs, as
        Gavel's own packing does."""
        super().__init__(objective, round_s, min_reset_s)
        self.unequal = bool(unequal)

    def reset(self, env: Any) -> None:
        view = self.view(env)
        self.facts = JobFacts(view)
        self.rule = TopologyRule(view, relaxed=self.unequal)
        self.hosts = PartnerCache(view, self.rule, self.unequal)
        self.by_demand = HostsByDemand(self.hosts, lambda p, t: self.facts.demand(view, p, t))
        self.failed = FailedShapes(view)
        self._starts: list[Place] = []
        self._queue = np.zeros(0, dtype=np.int64)  # the jobs left waiting, by Gavel's priority
        self._anchors: set[int] = set()
        self._keep_now: tuple[list[tuple[tuple[int, ...], int]], dict[tuple[int, ...], int]] | None = None
        self._round_rows: tuple[list[tuple[int, ...]], np.ndarray] = ([], np.zeros((0, 0), dtype=bool))
        super().reset(env)

    # ------------------------------------------------------------------ Gavel's hooks
    def _candidate_rows(self, view: ClusterView, active: list[int], t: np.ndarray
                        ) -> tuple[list[tuple[int, ...]], np.ndarray]:
        self._round_rows = super()._candidate_rows(view, active, t)
        return self._round_rows

    def _kept(self, view: ClusterView, key: tuple[int, ...], k: int) -> bool:
        """As Gavel's, and a packed job granted a round keeps its GPUs when it anchors its set this round (see
        :meth:`_actions`)."""
        j = key[0]
        if not view.is_running(j) or (view.partners_of(j) and j not in self._anchors):
            return False
        gt = self._gpu_type_l
        return all(gt[x] == k for x in view.gpus_of(j).tolist())

    def _keep(self, view: ClusterView, grants: list[tuple[tuple[int, ...], int]]) -> dict[tuple[int, ...], int]:
        """As Gavel's: for the round's grants, what :meth:`_actions` worked out for them (nothing has changed
        since)."""
        now = self._keep_now
        if now is not None and now[0] is grants:
            return dict(now[1])
        return super()._keep(view, grants)

    def _place_row(self, view: ClusterView, key: tuple[int, ...], gang: tuple[int, ...]) -> list[Action]:
        """Deferred to the follow-up, after the round's preemptions, where the topology rule is asked."""
        self._starts.append(Place(key[0], gpus=gang))
        return []

    def _actions(self, view: ClusterView, grants: list[tuple[tuple[int, ...], int]], anywhere: list[int]
                 ) -> list[Action]:
        """Gavel's round actions, less the preemption of packed jobs that stay beside a kept host; the jobs left
        waiting are queued for packing, by Gavel's priority (the wrapper drops the shares of the jobs stopped or
        moved)."""
        req = view.req_gpus
        granted = {j for key, _ in grants for j in key}
        # who keeps a packing set's GPUs: J_max when granted (its packed jobs not granted stay beside it); else
        # each granted packed job in place (J_max stops), and of a balanced pair J_max stays beside it
        self._anchors = set()
        stay_by: dict[int, int] = {}
        for s in packing_sets(view):
            if s.jmax in granted:
                self._anchors.add(s.jmax)
                stay_by.update({o: s.jmax for o in s.others if o not in granted})
                continue
            mine = [o for o in s.others if o in granted]
            self._anchors.update(mine)
            if mine and len(s.others) == 1 and req[s.others[0]] == req[s.jmax]:
                stay_by[s.jmax] = s.others[0]
        keep = {key: k for key, k in grants if self._kept(view, key, k)}
        hosts = {key[0] for key in keep}
        stay = {j for j, a in stay_by.items() if a in hosts}
        self._starts = []
        self._keep_now = (grants, keep)  # Gavel's _actions asks _keep of the same grants in the same state
        out = [a for a in super()._actions(view, grants, anywhere)
               if not isinstance(a, Wait) and not (isinstance(a, Preempt) and a.job in stay)]
        self._keep_now = None
        rows, runnable = self._round_rows
        alloc = self._rows(self.alloc, rows)
        pr = round_priorities(alloc, self._rows(self.job_time, rows), runnable).max(axis=1)
        deficit = self._rows(self.deficit, rows).sum(axis=1)
        order = np.lexsort((-np.arange(len(rows)), alloc.sum(axis=1), deficit, pr))[::-1]
        self._queue = np.array([rows[i][0] for i in order.tolist() if len(rows[i]) == 1 and rows[i][0] not in granted],
                               dtype=np.int64)
        return out or [self._follow_up(view)]

    def _follow_up(self, view: ClusterView) -> Action:
        """The round's deferred starts the topology rule allows, then one packing of a waiting job per call."""
        while self._starts:
            a = self._starts.pop(0)
            assert a.gpus is not None
            if view.is_pending(a.job) and (view.tenants(list(a.gpus)) < 0).all() and self.rule.allows(a.job, a.gpus):
                return a
            self.granted.pop((a.job,), None)
        if not len(self._queue):
            return Wait()
        ask = self._pack
        # the queue's pending jobs in order, a shape that found no host in this state skipped (job_shape); the
        # jobs up to the one packed leave the queue. The first pending job is asked first: an answer means its
        # shape finds a host in this state, so the walk would have asked it first too (a shape's answer is the
        # same for all its jobs in one state, job_shape); no answer: the walk, which marks its shape
        queue = self._queue
        first = next((j for j in map(queue.item, range(len(queue))) if view.is_pending(j)), None)
        a = None if first is None else ask(first)
        if a is None and first is not None:
            pending = np.zeros(view.n_jobs, dtype=bool)
            pending[view.pending_jobs()] = True
            a = self.failed.walk(queue[pending[queue]], None, None, ask)
        if a is None:
            self._queue = queue[:0]
            return Wait()
        self._queue = queue[int(np.flatnonzero(queue == a.job)[0]) + 1:]
        return a

    def _pack(self, j: int) -> Colocate | None:
        """Pending job ``j`` beside the running job of least profiled demand that offers it GPUs, where it fits
        (:func:`~.gimbal_hosts.least_utilized_host`); None: no such job."""
        return least_utilized_host(self.by_demand.view, self.by_demand, j)


@register_policy
class GavelGimbal(WithGimbal):
    """Gavel (makespan) with Gimbal: round grants as Gavel, the jobs left waiting packed beside granted ones
    under the topology rule, makespan coordination (module docstring)."""

    name: ClassVar[str] = "gavel+gimbal"
    description: ClassVar[str] = (
        "Gavel's minimize-makespan rounds; jobs a round leaves waiting packed (unequal sizes, Gimbal's topology "
        "rule) beside the least-utilized running job + Gimbal's makespan coordination"
    )
    paper: ClassVar[str] = "gimbal §5.2 Alg. 1, eq. 5-6, §7.2 (makespan)"

    def __init__(self, objective: Annotated[str | None, OptionSpec(choices=OBJECTIVES)] = None,
                 round_s: float | None = None, min_reset_s: Annotated[float, NON_NEGATIVE] = 1920.0,
                 unequal: bool = True, lgrr: bool = True, liss: bool = True, early_exit: bool = True,
                 predictor: XiPredictor | None = None, granularity: Granularity = DEFAULT_GRANULARITY) -> None:
        """``objective``, ``round_s``, ``min_reset_s``, ``unequal``: the host's (:class:`GavelLeftoverPacking`);
        the rest: Gimbal's (:class:`~gpucluster_env.baselines.parts.gimbal_layer.GimbalOptions`). With
        ``unequal``, ``lgrr`` and ``liss`` all off this is Gavel with conservative packing and no coordination,
        the baseline of gimbal §7.2-7.3."""
        super().__init__(GavelLeftoverPacking(objective, round_s, min_reset_s, unequal), "makespan",
                         GimbalOptions(lgrr, liss, early_exit, predictor, granularity), forget_stopped=True)
