"""A job's life in the engine: it starts (place, colocate), finishes, is preempted, has its MPS share changed
(squeeze, swell) or is forked. Each change runs after its action's checks
(:mod:`gpucluster_env.engine.action_checks`) and leaves every count, rate and completion event up to date. The
moves of running jobs (reallocate, drop or move a copy) are :mod:`gpucluster_env.engine.moves`.
"""

from __future__ import annotations

import numpy as np

from ..performance import fits_memory
from .action_checks import ActionChecks, typed
from .actions import Action, ActionError, Colocate, Place, SetStealing
from .counters import Counters
from .job_progress import Progress
from .job_queue import JobQueue
from .occupancy import Copy, Occupancy
from .placement import Placement
from .rates import Rates
from .state import PENDING, RUNNING, SHARE_MIN_UNITS, EngineState


class Lifecycle:
    """Starts, finishes, preemptions, share changes and forks on an
    :class:`~gpucluster_env.engine.state.EngineState`: checks with :class:`ActionChecks`, plans with
    :class:`Placement`, moves jobs between queue and running set through :class:`JobQueue`, takes and leaves
    GPUs through :class:`Occupancy`, settles and re-rates through :class:`Progress`, counts through
    :class:`Counters`. It writes only what is its own: the jobs' colocation counts, the sharing benefits and
    the LISS switches (``n_colocated``, ``sharing_benefits``, ``stealing``)."""

    def __init__(self, state: EngineState, queue: JobQueue, occupancy: Occupancy, rates: Rates, progress: Progress,
                 checks: ActionChecks, placement: Placement, counters: Counters) -> None:
        self.state = state
        self.queue = queue
        self.occupancy = occupancy
        self.rates = rates
        self.progress = progress
        self.checks = checks
        self.placement = placement
        self.counters = counters

    def place(self, action: Action | tuple, j: int, t: int | str | None, accumulation: int | None) -> None:
        """Place of job ``j`` (a valid index) by the placement rule on type ``t`` (an index, a name, or None
        for any)."""
        self.checks.require(action, j, PENDING, "job")
        if type(t) is str:
            t = self.checks.type_index(t)
        planned, gt = self.placement.plan_place(j, t)
        if planned is None:
            where = typed(action).gpu_type or "any type"
            raise ActionError(f"{typed(action)}: not enough free GPUs ({where}) for job {j}")
        self.start(j, planned, self.checks.check_start(action, j, planned, accumulation, gt))

    def colocate(self, action: Action | tuple, j: int, p: int, accumulation: int | None) -> None:
        """Colocate of job ``j`` with partner ``p`` (valid indices) on the GPUs of the colocation rule."""
        self.checks.require(action, p, RUNNING, "partner")
        self.checks.require(action, j, PENDING, "job")
        planned, t = self.placement.plan_colocate(j, p)
        if planned is None:
            raise ActionError(f"{typed(action)}: partner {p} has no room for job {j}")
        self.start(j, planned, self.checks.check_start(action, j, planned, accumulation, t, p))

    def start_exact(self, action: Place | Colocate, colocate: bool) -> None:
        """A ``Place`` or ``Colocate`` (``colocate``) on the exact GPU set it names: every check, in the order
        ``ClusterEngine.apply`` gives, then the start. The set is read as a list once for all the checks."""
        checks = self.checks
        j = checks.job_index(action, action.job)
        p = None
        if colocate:
            p = checks.job_index(action, action.partner)  # type: ignore[union-attr]
            checks.require(action, p, RUNNING, "partner")
        gl = checks.gpu_list(action, action.gpus)  # type: ignore[arg-type]
        g = self.rates.gpu_array(gl)
        t = checks.check_exact_start(action, j, p, g, gl)  # the set's one type where it is free or p's alone
        self.start(j, g, checks.check_start(action, j, g, action.accumulation, t, -1 if p is None else p, gl), gl)

    def start(self, j: int, g: np.ndarray, s: int, gl: list[int] | None = None) -> None:
        """Start pending job ``j`` on ``g`` at accumulation ``s`` (``gl``: a new list of ``g``'s GPUs, if at
        hand; the copy keeps it)."""
        st = self.state
        t = st.now
        self.queue.start(j, t)
        # restart_s after a preemption; with restart_on_allocation (Hadar) on every new allocation, the first too
        cfg = st.config
        until = t + (cfg.restart_s if st.n_preempt.item(j) > 0 or cfg.restart_on_allocation else 0.0)
        if gl is None:
            gl = g.tolist()
        c = self.rates.new_copy(j, g, s, gl)
        self.progress.start(j, t, until, c)  # a start is full-size: its rate alone is 1 / solo_iter
        partners = self.occupancy.place(j, c, s)
        st.log.gpus(t, "start", j, gl, s)
        if partners:
            self.colocated(j, partners, sorted(partners | {j}), t, c.k.solo_iter)
        else:
            self.progress.rerate([j], t)

    def colocated(self, j: int, partners: set[int], rerate: list[int], t: float, solo_iter: float) -> None:
        """Job ``j`` has just started, or moved, on GPUs its ``partners`` hold: count the colocation, re-rate the
        jobs ``rerate`` at ``t`` and record its sharing benefit (``solo_iter``: its iteration time alone there)."""
        st = self.state
        self.counters.colocation()
        st.n_colocated[j] += 1
        rate = st.rate
        before = {}  # the partners' rates before the start (a loop: no comprehension's call for one or two)
        for p in partners:
            before[p] = rate.item(p)
        self.progress.rerate(rerate, t)
        st.sharing_benefits.append(self.rates.sharing_benefit(j, partners, before, solo_iter))

    def finish(self, j: int, t: float) -> None:
        """Running job ``j`` has done its last iteration at ``t``: it leaves its GPUs and its partners are
        re-rated."""
        self.queue.finish(j, t)
        self.progress.stop(j)
        partners = self.occupancy.vacate_all(j)
        self.state.log.record(t, "finish", j, None)
        if partners:  # most jobs run alone: nothing to re-rate
            self.progress.rerate(sorted(partners), t)

    def preempt(self, j: int) -> None:
        """Checkpoint running job ``j`` (a valid index) and queue it again at the back; its next start pays
        ``restart_s``."""
        st = self.state
        t = st.now
        self.progress.halt(j, t)
        self.queue.requeue(j, t)
        self.counters.preemption()
        partners = self.occupancy.vacate_all(j, requeued=True)
        st.log.record(t, "preempt", j, None)
        if partners:  # most jobs run alone: nothing to re-rate
            self.progress.rerate(sorted(partners), t)

    def calibrate(self, action: Action | tuple, j: int, step: int, gpus: tuple[int, ...] | None) -> None:
        """One share step of the engine's grid (``step`` -1 squeeze, +1 swell) of running job ``j`` on ``gpus``
        (None: all its GPUs)."""
        st = self.state
        j = self.checks.running_index(action, j)
        lo, hi, full = st.share_lo.item(j), st.share_hi.item(j), st.share_units
        if gpus is None:
            if (step < 0 and hi <= SHARE_MIN_UNITS) or (step > 0 and lo >= full):
                bound = "minimum" if step < 0 else "maximum"
                raise ActionError(f"{typed(action)}: job {j}'s share is already at the {bound} on all its GPUs")
            gl = self.occupancy.gpus_of(j).tolist()
        else:
            gl = self.checks.gpu_list(action, gpus)
            cs = st.copy_consts[j]
            if not set(gl).issubset(cs[0].gl if len(cs) == 1 else [x for c in cs for x in c.gl]):
                raise ActionError(f"{typed(action)}: job {j} does not run on every GPU named")
        # one share on every GPU (lo == hi), and the check above keeps lo + step within bounds
        if not self.occupancy.shift_shares(j, gl, step, gpus is None and lo == hi):
            bound = "minimum" if step < 0 else "maximum"
            raise ActionError(f"{typed(action)}: job {j}'s share is already at the {bound} on those GPUs")
        self.counters.share_step(step)
        t = st.now
        if st.config.calibration_overhead_s > 0:
            self.progress.pause(j, t, t + st.config.calibration_overhead_s)
        st.log.gpus(t, "squeeze" if step < 0 else "swell", j, gl)
        self.progress.rerate(sorted({j, *st.shared_map.get(j, ())}), t)

    def fork(self, action: Action | tuple, j: int, copies: int, gpus: tuple[int, ...] | None) -> None:
        """HadarE's fork: ``copies`` more copies of running job ``j`` (on ``gpus`` for one copy, else by the
        placement rule), all or none; its remaining steps are split among its copies."""
        st = self.state
        j = self.checks.job_index(action, j)
        self.checks.check_fork(action, j, copies, gpus)
        if len(st.copies[j][0]) != st.req_l[j]:
            raise ActionError(f"{typed(action)}: job {j} runs on {len(st.copies[j][0])} GPUs, not the "
                              f"{st.req_l[j]} it asked for; copies are full-size gangs (Reallocate it back first)")
        t = st.now
        self.progress.settle(j, t)  # progress so far at the old rate, before the steps are split among the copies
        new: list[Copy] = []
        try:
            for _ in range(copies):
                new.append(self._fork_one(action, j, gpus))
        except ActionError:
            for _ in new:  # all or nothing: give back the copies already placed by this action
                self.occupancy.drop_last_copy(j)
            raise
        self.occupancy.forked(j)
        self.counters.forks(len(new))
        # per-copy progress (job_progress): the new copies start up, the steps left are split by throughput
        self.progress.copies_added(j, new, t + st.config.copy_startup_s)
        for c in new:
            st.log.add(t, "fork", j, gpus=c.g.tolist())
        self.progress.rerate([j], t)

    def _fork_one(self, action: Action | tuple, j: int, gpus: tuple[int, ...] | None) -> Copy:
        """Check and occupy the GPUs of one more copy of job ``j``; raise ActionError before any change."""
        st = self.state
        if gpus is not None:
            g = self.checks.check_fork_gpus(action, j, gpus)
        else:
            g = self.placement.plan_fork(j)
            if g is None:
                raise ActionError(f"{typed(action)}: no free node for another copy of job {j}")
        fp = st.footprint.item(j)
        if not all(fits_memory(fp, m) for m in st.type_mem[st.gpu_type[g]].tolist()):
            raise ActionError(f"{typed(action)}: job {j} does not fit in memory on those GPUs")
        c = self.rates.new_copy(j, g, int(st.accum[j]))
        self.occupancy.add_copy(j, c)
        return c

    def set_stealing(self, action: SetStealing) -> None:
        """Turn LISS on or off for one job, at no cost (Gimbal: a LISS switch "involves only parameter
        changes"): a running job's copies get the performance constants of the new setting and its rate is
        recomputed."""
        st = self.state
        j = int(action.job)
        self.checks.check_stealing(action, j, action.on)
        st.stealing[j] = on = bool(action.on)
        if st.status.item(j) == RUNNING:
            m, b, s = st.model_l[j], st.batch_l[j], st.accum.item(j)
            self.occupancy.set_models(j, [self.rates.copy_model(m, b, s, c.gl, c.t, c.n_nodes, on)
                                          for c in st.copy_consts[j]])
            self.progress.new_constants(j)
            self.progress.rerate([j], st.now)
