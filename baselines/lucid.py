"""Lucid (Hu et al., ASPLOS '23), the JCT baseline of gimbal §7.1 and castor Tables 4-6.

As Gimbal and Castor describe it, and as Lucid's public simulator does it:

* **Queue order**: ascending priority = estimated duration x GPUs (shortest GPU-time first; the estimate here is
  the job's solo run time, the SJF oracle's duration).
* **Non-intrusive packing** (Lucid's "indolent packing"): each job has a *sharing score*, a tier of its
  profiled GPU utilization (0 light, 1 medium, 2 heavy; :func:`sharing_score`). A queued job is first offered a
  partner: a running job that runs alone, asks the same number of GPUs, leaves room in GPU memory, whose score
  summed with the job's is at most ``threshold`` (2), and that is not much shorter than the job (the job's
  priority at most ``time_ratio`` (2) times the partner's). The first such partner is taken; otherwise the job
  starts on free GPUs when enough are free. Nothing is ever preempted or migrated.

``threshold`` and ``unequal`` relax it (gimbal §7.2: "we adjust the score threshold to enable more aggressive
job packing" and "remove this restriction" of equal GPU counts); an unequal partner must then be larger and
allowed to host by Gimbal's topology rule (:mod:`.parts.gimbal_rules`). ``lucid+gimbal`` (:mod:`.lucid_gimbal`) adds
Gimbal's coordination on top.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import numpy as np
from gpucluster_env.baselines.parts.gimbal_hosts import fitting_hosts
from gpucluster_env.baselines.parts.gimbal_rules import PartnerCache, TopologyRule
from gpucluster_env.baselines.parts.job_facts import JobFacts
from gpucluster_env.baselines.parts.job_shape import FailedShapes
from gpucluster_env.baselines.parts.packing_walk import FreeStarts, HostRows, first_true

from gpucluster_env.engine import Action, Colocate, Place, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy, register_policy
from gpucluster_env.policy_options import OptionSpec

SCORE_TIERS = (0.85, 0.95)
"""Utilization bounds of Lucid's sharing-score tiers: below 0.85 light (0), below 0.95 medium (1), else heavy
(2). Lucid learns its tiers from profiled metrics; these bounds are this project's reading of them."""


ScoreSum = Annotated[int, OptionSpec(low=0, high=4)]
"""The option of a packing threshold: a sum of two sharing scores (0-2 each)."""


def sharing_score(utilization: float | np.ndarray, tiers: tuple[float, float] = SCORE_TIERS) -> int | np.ndarray:
    """Lucid's sharing score of a job from its profiled GPU utilization: 0, 1 or 2 (an array of utilizations:
    an array of scores)."""
    u = np.asarray(utilization)
    s = (u >= tiers[0]).astype(np.int64) + (u >= tiers[1])
    return int(s) if s.ndim == 0 else s


@register_policy
class Lucid(Policy):
    """Lucid: shortest GPU-time first with non-intrusive packing by sharing score (see the module docstring)."""

    name: ClassVar[str] = "lucid"
    description: ClassVar[str] = (
        "Lucid: duration x GPUs first; pack beside a lone equal-size job when sharing scores sum <= 2, else "
        "free GPUs; never preempts"
    )
    paper: ClassVar[str] = "gimbal §7.1 baseline (Lucid, ASPLOS '23); castor Tables 4-6"

    def __init__(self, threshold: ScoreSum = 2, unequal: bool = False, time_ratio: float = 2.0) -> None:
        """``threshold``: largest sum of the two sharing scores that may pack (2 as Lucid; 4 packs any pair).
        ``unequal``: allow partners with more GPUs (Gimbal's relaxation). ``time_ratio``: a job packs only
        beside a partner whose priority is at least 1/``time_ratio`` of its own."""
        self.threshold = int(threshold)
        self.unequal = bool(unequal)
        self.time_ratio = float(time_ratio)
        self.facts: JobFacts | None = None
        self.rule: TopologyRule | None = None  # set by reset

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.facts = JobFacts(self.view(env))
        self.rule = TopologyRule(self.view(env), relaxed=self.unequal)
        self.failed = FailedShapes(self.view(env))
        self.hosts = PartnerCache(self.view(env), self.rule, self.unequal)
        self.rows = HostRows(self.view(env), self.hosts)
        self.free = FreeStarts(self.view(env), self.rule)
        self._order: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # pending jobs, their order and keys

    def lucid_priority(self, view: ClusterView, j: int) -> float:
        """Lucid's queue key: estimated duration x GPUs (lower runs first)."""
        return float(view.solo_time[j]) * int(view.req_gpus[j])

    def scores(self, view: ClusterView, jobs: np.ndarray, gpu_types: np.ndarray) -> np.ndarray:
        """Sharing score of each of ``jobs`` on the matching GPU type index of ``gpu_types``, from their profiled
        demand (:meth:`.JobFacts.demand`, read for all at once)."""
        return np.asarray(sharing_score(view.demand_of(jobs, gpu_types)))

    def pick_partner(self, view: ClusterView, j: int) -> Colocate | None:
        """The first running job (by index) Lucid would pack pending job ``j`` beside, as an action."""
        assert self.rule is not None
        self.hosts.sync()
        pj = self.lucid_priority(view, j)
        need = int(view.req_gpus[j])
        run = view.running_jobs()
        n_p = view.req_gpus[run]
        # the partners the time-ratio test passes, of a size partner_gpus can offer (by index)
        ok = ~(pj > self.time_ratio * (view.solo_time[run] * n_p)) & ((n_p == need) | ((n_p > need) & self.unequal))
        hosts = fitting_hosts(view, j, self.hosts.hosts(j, self._may_pass(view, j, run[ok])))
        if not hosts:
            return None
        ps = np.array([p for p, _ in hosts], dtype=np.int64)
        types = view.gpu_type[[int(g[0]) for _, g in hosts]]
        fit = self.scores(view, np.full(len(ps), j), types) + self.scores(view, ps, types) <= self.threshold
        i = int(np.argmax(fit))  # the first that passes, if any
        if not fit[i]:
            return None
        p, g = hosts[i]
        return Colocate(j, p, accumulation=1, gpus=tuple(int(x) for x in g))

    def _may_pass(self, view: ClusterView, j: int, partners: np.ndarray) -> np.ndarray:
        """Those of ``partners`` whose sharing score with ``j``'s passes the threshold on some GPU type: the
        others pass on no host's type, so leaving them out before their hosts are asked keeps the first that
        passes."""
        if self.threshold >= 4:  # any two scores (0-2 each) pass
            return partners
        types = np.arange(len(view.type_names))
        sums = self.scores(view, np.full(len(types), j), types)[None, :] + self.scores(view, partners[:, None], types)
        return partners[(sums <= self.threshold).any(axis=1)]

    def order(self, view: ClusterView) -> tuple[np.ndarray, np.ndarray]:
        """Pending jobs by Lucid's priority (ties: queue order), and their priorities (kept while the pending
        jobs stay the same, in the same queue order: a job's priority reads only its static solo time and size)."""
        pend = view.pending_jobs()
        kept = self._order
        if kept is not None and np.array_equal(kept[0], pend):
            return kept[1], kept[2]
        key = view.solo_time[pend] * view.req_gpus[pend]
        i = np.argsort(key, kind="stable")
        self._order = (pend, pend[i], key[i])
        return pend[i], key[i]

    def act(self, observation: Any, env: Any) -> Action | int | list[Action]:
        view = self.view(env)
        if view.num_pending == 0:
            return Wait()
        # shapes that could not start in this state (job_shape), with the priority they were asked at: a job
        # of one with a priority no better passes no partner's time_ratio test the earlier one failed
        order, keys = self.order(view)
        a = self.failed.walk(order, keys, None, lambda j: self._answer(view, j),
                             lambda jobs: self._prepare(view, jobs))
        return Wait() if a is None else a

    def _prepare(self, view: ClusterView, jobs: np.ndarray) -> np.ndarray:
        """:meth:`pick_partner` for each of ``jobs`` at once (the walk's jobs in one state), kept for
        :meth:`_answer`: per size, a jobs x partners mask of Lucid's tests, the first partner passing them; an
        answer worked out before is kept, weighed only against the partners whose rows changed since
        (:meth:`.HostRows.split`). Returns which of
        ``jobs`` may start (a partner, or as many GPUs free as they ask): the others' :meth:`start` is None."""
        # an answer reads of a job its size, priority, model and batch: kept by job over its size's table
        got, left, partial = self.rows.split(self.failed.state, jobs, jobs.tolist(), None)
        for js, ps, types, ok, kept in self.rows.by_size(self.failed.state, left, partial):
            pj = view.solo_time[js] * view.req_gpus[js]
            ok &= ~(pj[:, None] > self.time_ratio * (view.solo_time[ps] * view.req_gpus[ps])[None, :])
            if self.threshold < 4:  # else any two scores (0-2 each) pass
                ok &= (self.scores(view, js[:, None], types[None, :]) + self.scores(view, ps, types)[None, :]
                       <= self.threshold)
            for j, i, k in zip(js.tolist(), first_true(ok).tolist(), kept.tolist(), strict=True):
                p = int(ps[i]) if i >= 0 else -1
                got[j] = k if k >= 0 and (p < 0 or k < p) else p  # the first by index (a kept one: its rows stayed)
                self.rows.keep(j, j, None, got[j])
        self._partner: dict[int, int] = {j: p for j, p in got.items() if p >= 0}
        partner = self._partner
        return np.array([j in partner for j in jobs.tolist()]) | (view.req_gpus[jobs] <= view.num_free())

    def _answer(self, view: ClusterView, j: int) -> Action | None:
        """:meth:`start` from what :meth:`_prepare` worked out."""
        assert self.rule is not None
        p = self._partner.get(j)
        if p is not None:
            g = self.hosts.gpus(int(view.req_gpus[j]), p)
            return Colocate(j, p, accumulation=1, gpus=tuple(int(x) for x in g))
        return self.free.start(self.failed.state, j, self.failed.code(j))

    def start(self, view: ClusterView, j: int) -> Action | None:
        """Where pending job ``j`` starts now: beside a partner, else on free GPUs the rule allows; None:
        nowhere."""
        assert self.rule is not None
        a = self.pick_partner(view, j)
        if a is not None:
            return a
        g = view.plan_place(j)
        if g is not None and self.rule.allows(j, g):
            return Place(j, gpus=tuple(int(x) for x in g))
        return None
