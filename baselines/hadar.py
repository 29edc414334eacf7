"""Hadar (Sultana et al., hadar-hadare §III) acting through the environment.

**Hadar** allocates at round boundaries (``round_s``: the scenario's rounds, else 360 s), as in the paper's
Fig. 1(b) where jobs change GPUs from round to round: every active job is offered to Algorithm 2
(:func:`.hadar_alloc.select_jobs`; its picks as arrays, :func:`.hadar_alloc.select_picks`) in order of its best
utility per GPU (option ``order``), with prices over the servers (:func:`.hadar_alloc.make_prices`); a running job
may keep its GPUs (no restart overhead) or take what FIND_ALLOC finds (paying the restart overhead, the scenario's
``restart_s``); each chosen job runs on GPUs possibly of several types (task-level heterogeneity: the gang runs at
its slowest GPU's pace, which the engine models). A job's throughput on a type is, with ``estimate="oracle"``
(Hadar's default: the paper feeds Hadar measured throughputs as input, §III-E), the performance model's value for
its gang there; with ``estimate="spec"`` (HadarE's default, §V-A) HadarE's initial estimate from GPU specs,
replaced by the rate a job's model is measured at once it has run on a type (:mod:`.parts.throughput_estimate`). A
running job given new GPUs moves there (``Reallocate``); running jobs left out are preempted. One rule of ours:
when the cluster would otherwise sit empty (no job running and none with a positive payoff), the job with the best
payoff starts anyway, so an episode cannot stall on prices.
HadarE (forking) is :mod:`gpucluster_env.baselines.hadare`.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import numpy as np
from gpucluster_env.baselines.parts.gavel_rounds import next_boundary, order_moves, round_length
from gpucluster_env.baselines.parts.hadar_alloc import Choice, HadarQueue, find_alloc, make_prices, select_picks
from gpucluster_env.baselines.parts.solo_throughputs import Throughputs
from gpucluster_env.baselines.parts.throughput_estimate import SpecEstimate

from gpucluster_env.engine import Action, Place, Preempt, Reallocate, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy, register_policy
from gpucluster_env.policy_options import NON_NEGATIVE, OptionSpec

ESTIMATES = ("oracle", "spec")
"""Where Hadar's per-type throughputs come from: the performance model, or HadarE's spec estimate."""

ORDERS = ("gpu", "slot")
"""Hadar's queue order (Algorithm 2 does not say): best utility per GPU first (``gpu``), or per GPU-slot of the
job's remaining run (``slot``: Eqs. (6)-(7)'s per-unit-resource utility, which puts short jobs first)."""


@register_policy
class Hadar(Policy):
    """Hadar: primal-dual prices, DP job selection, task-level heterogeneous allocation in rounds."""

    name: ClassVar[str] = "hadar"
    description: ClassVar[str] = (
        "Hadar: primal-dual prices and DP job selection each round, a job's workers on several GPU types "
        "(task-level heterogeneity), consolidated or spread; re-allocated every round (restart overhead)"
    )
    paper: ClassVar[str] = "Hadar (hadar-hadare §III)"
    default_estimate: ClassVar[str] = "oracle"
    forks: ClassVar[bool] = False
    """Whether the policy forks jobs (HadarE): only then can a running job have several copies and be pinned
    (:meth:`_pinned`); Hadar's rounds skip the per-job check otherwise."""

    def __init__(self, round_s: float | None = None, eta: float = 1.0,
                 comm_weight: Annotated[float, NON_NEGATIVE] = 1.0,
                 dp_window: Annotated[int, OptionSpec(low=0, high=62)] = 6,
                 normalize: bool = True, estimate: Annotated[str | None, OptionSpec(choices=ESTIMATES)] = None,
                 run_cost: bool = True, order: Annotated[str, OptionSpec(choices=ORDERS)] = "gpu") -> None:
        """``round_s``: round length (None: the scenario's, else 360 s); ``eta``: the price scaling factor of
        Eq. (5); ``comm_weight``: base prices per worker charged per extra server of a spread allocation;
        ``dp_window``: queued jobs the exact DP ranges over each round (the rest greedily); ``normalize``: a
        job's utility in units of its best throughput (its best-case run time over its completion time), so
        models of different iteration sizes compare; False: raw iterations per second; ``estimate``: ``oracle``
        (the performance model's throughputs) or ``spec`` (HadarE's estimate from GPU specs until measured);
        None: the policy's default (Hadar: oracle, HadarE: spec); ``run_cost``: a job's payoff is charged the
        prices for every round of its run (Eq. (3a): the cost of its whole schedule); False: for this round only
        (this project's reading until 2026-12-06, under which a full server's price no longer blocks a job and
        the utility order alone decides: docs/causes/hadar-median-jct.md); ``order``: the queue order the DP
        window and the greedy tail walk (:data:`ORDERS`; the paper does not give one)."""
        self.round_s_option = round_s
        self.eta = eta
        self.comm_weight = comm_weight
        self.dp_window = dp_window
        self.normalize = normalize
        self.estimate = self.default_estimate if estimate is None else estimate
        self.run_cost = run_cost
        self.order = order

    def reset(self, env: Any) -> None:
        view = self.view(env)
        self.round_s = round_length(self.round_s_option, view.round_s)
        self.overhead_s = view.restart_s
        self.tputs: Throughputs | SpecEstimate = (Throughputs(view, partial=True) if self.estimate == "oracle"
                                                  else SpecEstimate(view, partial=True))
        self._observed_at: float | None = None
        nk = len(view.type_names)
        cap = np.zeros((view.num_nodes, nk), dtype=np.int64)
        np.add.at(cap, (view.gpu_node, view.gpu_type), 1)
        self.capacity = cap
        self._server_gpus = [[[] for _ in range(nk)] for _ in range(view.num_nodes)]  # each server's GPUs by type
        for x, (h, k) in enumerate(zip(view.gpu_node.tolist(), view.gpu_type.tolist(), strict=True)):
            self._server_gpus[h][k].append(x)
        self._next_round = view.now
        self._acted_at: float | None = None
        self._known = np.zeros(0, dtype=bool)  # jobs whose throughput row is kept (oracle estimate)
        self._rows = np.zeros((0, nk))
        self._pos = np.zeros(0, dtype=np.int64)  # _currents' scratch: each job's place in the queue
        where = (view.gpu_node.astype(np.int64) * nk + view.gpu_type).astype(np.int64)
        self._slot_key = np.concatenate([where, where])  # each GPU slot's (server, type), as tenants.T.ravel()

    def _observe(self, view: ClusterView) -> None:
        """At a round boundary, before anything changes: the spec estimate records the rates the running
        copies reached in the round just ended (the nodes' reports to the Job Tracker)."""
        if isinstance(self.tputs, SpecEstimate) and self._observed_at != view.now:
            self._observed_at = view.now
            self.tputs.observe()

    def _pinned(self, view: ClusterView, j: int) -> bool:
        """A running job Hadar leaves as it is this round (one with forked copies)."""
        return view.is_running(j) and not view.can_reallocate(j)

    def _queue(self, view: ClusterView, run: list[int] | None = None, tenants: np.ndarray | None = None
               ) -> tuple[list[int], HadarQueue]:
        """The jobs Hadar allocates this round (every active job but pinned ones), largest :meth:`_density`
        first (ties by job index), as arrays (:class:`.hadar_alloc.HadarQueue`). ``run``: the running jobs that
        are not pinned, when the caller has them; ``tenants``: every GPU's tenants, when the caller has read
        them."""
        pend = view.pending_jobs().tolist()
        if run is None:
            run = [j for j in view.running_jobs().tolist() if not self._pinned(view, j)]
        act = pend + run
        if not act:
            return [], HadarQueue(np.zeros(0, dtype=np.int64), np.zeros((0, self.capacity.shape[1])),
                                  np.zeros((0, 4)), [])
        ids = np.array(act, dtype=np.int64)
        tput = self._tput_rows(ids)
        best = tput.max(axis=1)
        unit = np.where(best > 0, best, 1.0) if self.normalize else np.ones(len(act))
        workers, left = view.req_gpus[ids].astype(np.int64), view.remaining_now(ids).astype(float)  # these jobs
        arrival, iters = view.submit[ids].astype(float), view.iterations[ids].astype(float)
        density = self._density(view.now, workers, left, arrival, iters, unit, best)
        order = np.lexsort((ids, -density))
        facts = np.column_stack([left, arrival, iters, unit])[order]
        ids = ids[order]
        if tenants is None:
            tenants = view.tenants()
        cur_rows, cur_from = self._currents(view, ids, tenants)
        return ids.tolist(), HadarQueue(workers[order], tput[order], facts, cur_rows=cur_rows, cur_from=cur_from)

    def _currents(self, view: ClusterView, jobs: np.ndarray, tenants: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each of ``jobs``' allocation as ``(server, type, count)`` rows in (server, type) order, job ``i``'s
        rows ``rows[at[i]:at[i + 1]]`` (none for a job holding no GPU), from one read of every GPU's tenants
        (``tenants``, the engine's two slots a GPU)."""
        nk = self.capacity.shape[1]
        nt = view.num_nodes * nk
        slot_job = tenants.T.ravel()  # slot 0 of every GPU, then slot 1
        slot_key = self._slot_key
        if len(self._pos) != view.n_jobs + 1:
            self._pos = np.full(view.n_jobs + 1, -1, dtype=np.int64)
        pos = self._pos  # each job's place in jobs, -1 elsewhere (index n_jobs: an empty slot); reset after use
        pos[jobs] = np.arange(len(jobs))
        at = pos[slot_job]
        pos[jobs] = -1
        use = at >= 0
        keys, cnt = np.unique(at[use] * nt + slot_key[use], return_counts=True)
        x = keys % nt
        rows = np.column_stack([x // nk, x % nk, cnt]).astype(np.int64)
        per = np.bincount(keys // nt, minlength=len(jobs))
        return rows, np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(per)])

    def _density(self, now: float, workers: np.ndarray, left: np.ndarray, arrival: np.ndarray, iters: np.ndarray,
                 unit: np.ndarray, best: np.ndarray) -> np.ndarray:
        """The key the queue is ordered by (largest first): each job's utility (:meth:`.HadarJob.utility`,
        effective throughput since its arrival, at its best rate from now) per GPU (``order="gpu"``) or per
        GPU-slot of its remaining run (``order="slot"``, Eqs. (6)-(7)'s per-unit-resource utility); 0 for a job
        that runs on no type."""
        with np.errstate(divide="ignore", invalid="ignore"):
            util = iters / np.maximum(now + left / best - arrival, 1e-9) / unit
            slots = np.maximum(left / best / self.round_s, 1.0) if self.order == "slot" else 1.0
            return np.where(best > 0, util / (workers * slots), 0.0)

    def _tput_rows(self, ids: np.ndarray) -> np.ndarray:
        """Jobs ``ids``' throughputs by type. The oracle's are fixed per job (its model, GPUs asked and batch;
        Hadar never changes a batch), so each job's row is asked once; the spec estimate's change as rates are
        measured, so they are asked each round."""
        if not isinstance(self.tputs, Throughputs):
            return self.tputs.matrix(ids.tolist())
        if len(self._known) != self.tputs.view.n_jobs:
            self._known = np.zeros(self.tputs.view.n_jobs, dtype=bool)
            self._rows = np.zeros((len(self._known), self.capacity.shape[1]))
        for j in ids[~self._known[ids]].tolist():
            self._rows[j] = self.tputs.of(j)
            self._known[j] = True
        return self._rows[ids]

    def _starts(self, view: ClusterView) -> list[Action]:
        """This round's allocation: Algorithm 2 over every active job on the GPUs not held by pinned jobs;
        running jobs that lose their GPUs or move are preempted, the moved and new ones placed."""
        running = view.running_jobs().tolist()
        pinned = {j for j in running if self._pinned(view, j)} if self.forks else set()
        tenants = view.tenants()
        ids, jobs = self._queue(view, [j for j in running if j not in pinned], tenants)
        if not jobs:
            return []
        holds = np.zeros(view.n_jobs + 1, dtype=bool)  # index n_jobs: an empty slot (-1)
        free = self.capacity.copy()
        if pinned:
            holds[list(pinned)] = True
            held = holds[tenants[:, 0]] | holds[tenants[:, 1]]  # the GPUs pinned jobs hold
            np.subtract.at(free, (view.gpu_node[held], view.gpu_type[held]), 1)
        prices = make_prices(jobs, self.capacity, view.now, self.round_s, self.eta, self.run_cost)
        picks = select_picks(jobs, free, prices, view.now, self.overhead_s, self.comm_weight, self.dp_window)
        at = picks.jobs.tolist()
        keep = [ids[i] for i in picks.jobs[picks.kept].tolist()]  # their current GPUs, row for row
        mv = np.flatnonzero(~picks.kept)  # the picks given other GPUs, in queue order
        rl, rf = picks.rows.tolist(), picks.row_from.tolist()  # once: a slice of the list per job
        moves = [(ids[i], rl[rf[t]:rf[t + 1]]) for t, i in zip(mv.tolist(), picks.jobs[mv].tolist(), strict=True)]
        if not at and view.num_running == 0:
            best: tuple[float, int, Choice] | None = None
            for i, h in enumerate(jobs):
                ch = find_alloc(h, free, self.capacity - free, prices, view.now, self.overhead_s,
                                self.comm_weight)
                if ch is not None and (best is None or ch.payoff > best[0]):
                    best = (ch.payoff, i, ch)
            if best is not None:  # nothing runs: no job keeps GPUs
                at, moves = [best[1]], [(ids[best[1]], best[2].take)]
        holds[keep] = True
        taken = (holds[tenants[:, 0]] | holds[tenants[:, 1]]).tolist()  # and the kept jobs
        chosen = {ids[i] for i in at}
        out: list[Action] = [Preempt(j) for j in running if j not in chosen and j not in pinned]
        gangs: dict[int, tuple[int, ...]] = {}
        for j, take in moves:
            gang: list[int] = []
            for h, k, c in take:  # the server's lowest free GPUs of the type
                gang.extend([x for x in self._server_gpus[h][k] if not taken[x]][:c])
            for x in gang:
                taken[x] = True
            gangs[j] = tuple(sorted(gang))
        moving = {j: g for j, g in gangs.items() if view.is_running(j)}
        order, through_queue = order_moves(moving, {j: tuple(view.gpus_of(j).tolist()) for j in moving})
        out.extend(Preempt(j) for j in through_queue)  # first: the moves after them may take their GPUs
        out.extend(Reallocate(j, gpus=moving[j]) for j in order)
        out.extend(Place(j, gpus=g) for j, g in gangs.items() if j not in moving or j in through_queue)
        return out

    def _after_starts(self, view: ClusterView) -> Action:
        """What to do once this round's starts are applied (Hadar: nothing more)."""
        return Wait()

    def act(self, observation: Any, env: Any) -> Action | int | list[Action]:
        view = self.view(env)
        now = view.now
        if self._acted_at == now:
            return self._after_starts(view)
        if now < self._next_round - 1e-9:
            return Wait()
        self._observe(view)
        self._acted_at = now
        self._next_round = next_boundary(now, self.round_s)
        out = self._starts(view)
        return out if out else self._after_starts(view)
