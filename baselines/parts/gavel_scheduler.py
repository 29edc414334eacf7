"""Gavel's scheduler (Narayanan et al., OSDI'20): heterogeneity-aware allocation LPs realized by round-based
scheduling, the shared body of the ``gavel*`` policies (``gavel``, ``gavel-makespan``, ``gavel-ftf``, ``gavel-fifo``,
``gavel-packed`` and the ``+gimbal`` variants, each in its own module of :mod:`gpucluster_env.baselines`).

At each round boundary (every ``round_s`` seconds, the scenario's rounds when it has them, else 360 s) the
policy:

1. estimates every active job's throughput on each GPU type from the performance model (its gang on the fewest
   nodes of that type, alone; 0 where its gang or its memory does not fit): Gavel's throughput matrix;
2. recomputes the allocation ``X`` (:mod:`.gavel_lp`) when jobs arrived or finished, at most every
   ``min_reset_s`` seconds (Gavel's 1,920 s), resetting the time received and carrying deficits
   (:mod:`.gavel_rounds`);
3. grants GPUs for the coming round in priority order (allocation / share of time received), each job on one GPU
   type, its gang on the fewest nodes; a job granted the type it already runs on keeps its GPUs, a running job
   granted another type moves there (``Reallocate``, paying the restart overhead), running jobs not granted
   are preempted and waiting ones placed.

Between round boundaries it waits: a job arriving mid-round waits for the next round, GPUs a job frees
mid-round stay idle until then, as in Gavel's simulator. A job whose gang fits on no single GPU type (more GPUs
than any type has) is started on mixed types by the engine's rule when GPUs are left after the grants.

Objectives (``objective``): ``max-min`` (heterogeneity-aware LAS, ``gavel``), ``makespan``
(``gavel-makespan``), ``ftf`` (finish-time fairness, ``gavel-ftf``).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import numpy as np
from gpucluster_env.baselines.parts import gavel_lp as lp
from gpucluster_env.baselines.parts.gavel_rounds import (
    FewestNodes,
    needs_recompute,
    next_boundary,
    order_moves,
    reset_time_received,
    round_length,
    round_priorities,
    select_round,
)
from gpucluster_env.baselines.parts.gavel_row_table import RowIndex, RowTable, job_rows, live_index, row_index
from gpucluster_env.baselines.parts.solo_throughputs import Throughputs

from gpucluster_env.engine import Action, Place, Preempt, Reallocate, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy
from gpucluster_env.policy_options import NON_NEGATIVE, OptionSpec

OBJECTIVES = ("max-min", "makespan", "ftf")


class Gavel(Policy):
    """Gavel's allocation LP and round-based mechanism (module docstring)."""

    name: ClassVar[str] = "gavel"
    description: ClassVar[str] = (
        "Gavel: heterogeneity-aware max-min fairness LP (HiGHS), realized in 360 s rounds by priority = "
        "allocation / time received; exclusive GPUs, one type per job"
    )
    paper: ClassVar[str] = "Gavel (OSDI'20); Hadar/HadarE baseline"
    default_objective: ClassVar[str] = "max-min"

    wait_for_reset: bool = False
    """Gavel's simulator's rule for a job that arrived after the last allocation reset (scheduler.py: a job not
    in the allocation is picked by the round's greedy pass, holding its GPUs for the round, but given none):
    it waits, and the GPUs it was picked for stay idle, until the next reset includes it."""

    def __init__(self, objective: Annotated[str | None, OptionSpec(choices=OBJECTIVES)] = None,
                 round_s: float | None = None, min_reset_s: Annotated[float, NON_NEGATIVE] = 1920.0,
                 wait_for_reset: bool = False) -> None:
        """``objective``: max-min, makespan or ftf (default: the registered name's); ``round_s``: round length
        (None: the scenario's, else 360 s); ``min_reset_s``: least time between allocation recomputations;
        ``wait_for_reset``: Gavel's between-resets rule (:attr:`wait_for_reset`)."""
        self.objective = self.default_objective if objective is None else objective
        self.round_s_option = round_s
        self.min_reset_s = float(min_reset_s)
        self.wait_for_reset = bool(wait_for_reset)

    # ------------------------------------------------------------------ episode state
    def reset(self, env: Any) -> None:
        view = self.view(env)
        self.round_s = round_length(self.round_s_option, view.round_s)
        self.nk = len(view.type_names)
        self.capacity = np.bincount(view.gpu_type, minlength=self.nk)
        self.tputs = Throughputs(view)
        self._t_rows = np.zeros((view.n_jobs, self.nk))  # each job's row of the throughput matrix, once found
        self._t_has = np.zeros(view.n_jobs, dtype=bool)
        # per row (a job (j,), or a packed pair (i, j)): allocation, time received since the reset, deficit
        self.alloc = RowTable(view.n_jobs, self.nk)
        self.job_time = RowTable(view.n_jobs, self.nk)
        self.deficit = RowTable(view.n_jobs, self.nk)
        self.iso_time = np.zeros(view.n_jobs)
        self._iso_prev: dict[int, tuple[float, float]] = {}
        self.granted: dict[tuple[int, ...], int] = {}
        self._alloc_jobs: frozenset[int] = frozenset()
        self._last_reset: float | None = None
        self._round_t = view.now
        self._next_round = view.now
        self._acted_at: float | None = None
        self._follow: list[Action] = []
        # each type's GPUs by node (nodes ascending, GPUs ascending within a node): where gangs are planned
        self._type_nodes: list[list[tuple[int, list[int]]]] = []
        self._type_gpus: list[tuple[np.ndarray, np.ndarray]] = []
        self._gpu_type_l: list[int] = view.gpu_type.tolist()  # each GPU's type, for reads one GPU at a time
        for k in range(self.nk):
            g = np.flatnonzero(view.gpu_type == k)
            nodes = view.gpu_node[g]
            uniq, at = np.unique(nodes, return_inverse=True)
            self._type_nodes.append([(h, g[nodes == h].tolist()) for h in uniq.tolist()])
            self._type_gpus.append((g, at.reshape(-1)))  # the type's GPUs, and the index of each one's node there
        # what a round derives from its active jobs alone, kept while they stay the same (most rounds)
        self._same: tuple[Any, ...] | None = None
        self._index_kept: tuple[list[tuple[int, ...]], RowIndex] | None = None

    def _row_index(self, rows: list[tuple[int, ...]]) -> RowIndex:
        """Where ``rows`` are read in the records: the plain rows of the round's active jobs as kept with them
        (:meth:`_active_facts`), else worked out once per list of rows."""
        same, kept = self._same, self._index_kept
        if same is not None and rows is same[4]:
            return same[6]
        if kept is None or kept[0] is not rows:
            kept = self._index_kept = (rows, row_index(rows))
        return kept[1]

    def _rows(self, table: RowTable, rows: list[tuple[int, ...]]) -> np.ndarray:
        """The values of ``rows`` in the record ``table`` (a fresh array; zeros for a row never written)."""
        return table.take(self._row_index(rows))

    def _account(self, view: ClusterView) -> None:
        """Add the time each row granted last round ran on its type."""
        dt = view.now - self._round_t
        if self.granted:
            ix = row_index(list(self.granted))
            # a row's first job ran the whole round, else until it finished: min(dt, ...) then max(0, ...) as
            # Python's min and max read them (a job that has not finished, NaN, ran dt)
            ran = view.finish_time_of(ix.heads) - self._round_t
            ran = np.where(ran < dt, ran, dt)
            ran = np.where(view.running_of(ix.heads), dt, np.where(ran > 0.0, ran, 0.0))
            self.job_time.add(ix, list(self.granted.values()), np.where(np.isfinite(ran), ran, 0.0))
        self._round_t = view.now

    def _reset_times(self, now: float, active: list[int]) -> None:
        """Gavel's reset of the time received (deficits carry what each row was owed). Rows with a job no
        longer ``active`` (finished: it is never a candidate again) are dropped, so a reset costs what is
        live, not every job ever seen; each row's reset is its own, so the others are unchanged."""
        if self._last_reset is not None:
            live = np.zeros(len(self.iso_time), dtype=bool)
            live[active] = True
            ix = live_index([self.alloc, self.job_time, self.deficit], live)
            jt, d = reset_time_received(self.alloc.take(ix), self.job_time.take(ix), self.deficit.take(ix),
                                        now - self._last_reset, self.round_s)
            self.job_time = RowTable.of_rows(len(live), ix, jt)
            self.deficit = RowTable.of_rows(len(live), ix, d)
        self._last_reset = now

    def _allocate(self, view: ClusterView, active: list[int], t: np.ndarray) -> None:
        """Recompute the allocation for ``active`` jobs with throughputs ``t``."""
        now = view.now
        gpus = view.req_gpus[active]
        cap = self.capacity
        if self.objective == "max-min":
            self.alloc = RowTable.of_rows(view.n_jobs, job_rows(active), lp.max_min_fairness(t, gpus, cap).x)
            return
        rem = view.remaining_now()[active]
        if self.objective == "makespan":
            x = lp.min_makespan(t, gpus, cap, rem)[1]
        else:
            iso = lp.isolated_throughputs(t, gpus, cap)
            for i, j in enumerate(active):
                prev = self._iso_prev.get(j)
                if prev is not None and prev[1] > 0:
                    self.iso_time[j] += (prev[0] - rem[i]) / prev[1]
                self._iso_prev[j] = (float(rem[i]), float(iso[i]))
            since = now - view.submit[active]
            x = lp.finish_time_fairness(t, gpus, cap, rem, since, self.iso_time[active])[1]
        self.alloc = RowTable.of_rows(view.n_jobs, job_rows(active), x)

    def _candidate_rows(self, view: ClusterView, active: list[int], t: np.ndarray
                        ) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """The rows a round grants from and where each can run: one per active job (packed: plus pairs)."""
        same = self._same
        if same is not None and same[0] is active:  # the round's active jobs as in _active_facts: kept rows
            return same[4], same[5]
        return [(j,) for j in active], t > 0

    # ------------------------------------------------------------------ acting
    def act(self, observation: Any, env: Any) -> Action | int | list[Action]:
        view = self.view(env)
        now = view.now
        if self._acted_at == now:
            return self._follow_up(view)
        if now < self._next_round - 1e-9:
            return Wait()
        self._acted_at = now
        self._next_round = next_boundary(now, self.round_s)
        self._account(view)
        active = sorted(view.pending_jobs().tolist() + view.running_jobs().tolist())
        if not active:
            self.granted = {}
            return Wait()
        active, t, order, anywhere = self._active_facts(active)
        changed = frozenset(active) != self._alloc_jobs
        if needs_recompute(now, self._last_reset, self.min_reset_s, changed):
            self._reset_times(now, active)
            self._allocate(view, active, t)
            self._alloc_jobs = frozenset(active)
        rows, runnable = self._candidate_rows(view, active, t)
        ix = self._row_index(rows)
        self.job_time.fill_missing(ix, self.round_s / 2.0)  # Gavel starts every row's record at half a round
        alloc = self.alloc.take(ix)
        pr = round_priorities(alloc, self.job_time.take(ix), runnable)
        grants = select_round(pr, self.deficit.take(ix), alloc, view.req_gpus[ix.heads], self.capacity, runnable,
                              order, members=rows)
        if self.wait_for_reset:  # picked but not in the allocation: holds its GPUs idle this round
            grants = [(i, k) for i, k in grants if self._alloc_jobs.issuperset(rows[i])]
            anywhere = [j for j in anywhere if j in self._alloc_jobs]
        return self._actions(view, [(rows[i], k) for i, k in grants], anywhere)

    def _active_facts(self, active: list[int]) -> tuple[list[int], np.ndarray, list[int], list[int]]:
        """``active`` (the list kept from the last round when the jobs are the same), their throughput matrix,
        its type order and the jobs no single type can run: a pure function of the jobs (no Gavel policy changes
        a job's batch), kept while they stay the same, with the plain rows of :meth:`_candidate_rows`."""
        same = self._same
        if same is not None and same[0] == active:
            return same[0], same[1], same[2], same[3]
        js = np.asarray(active, dtype=np.int64)
        new = js[~self._t_has[js]]
        if len(new):  # each job's row found once (a pure function of the job) and kept for the episode
            self._t_rows[new] = [self.tputs.of(j) for j in new.tolist()]  # a few a round: no matrix() set-up
            self._t_has[new] = True
        t = self._t_rows[js]
        t.flags.writeable = False
        runnable = t > 0
        runnable.flags.writeable = False
        anywhere = [j for j, ok in zip(active, runnable.any(axis=1).tolist(), strict=True) if not ok]
        self._same = (active, t, self._type_order(t), anywhere, [(j,) for j in active], runnable, job_rows(active))
        return active, t, self._same[2], anywhere

    def _follow_up(self, view: ClusterView) -> Action:
        """Actions that must wait for the round's first ones to apply (packed: the second job of each pair)."""
        return Wait()

    def _type_order(self, t: np.ndarray) -> list[int]:
        """GPU types fastest first (by the active jobs' mean throughput), as Gavel orders V100, P100, K80."""
        return np.argsort(-(t.sum(axis=0) / len(t)), kind="stable").tolist()  # the mean's bits, without its overhead

    def _kept(self, view: ClusterView, key: tuple[int, ...], k: int) -> bool:
        """Whether row ``key`` granted type ``k`` already runs there as granted (alone, on type-k GPUs)."""
        return len(key) == 1 and view.runs_as([(key, k)])[0]

    def _keep(self, view: ClusterView, grants: list[tuple[tuple[int, ...], int]]) -> dict[tuple[int, ...], int]:
        """The grants whose rows already run as granted (:meth:`_kept`), with their types."""
        if type(self)._kept is Gavel._kept:  # one-job rows: kept where the job runs alone on the granted type
            return {key: k for (key, k), ok in zip(grants, view.runs_as(grants), strict=True) if ok and len(key) == 1}
        return {key: k for key, k in grants if self._kept(view, key, k)}

    def _place_row(self, view: ClusterView, key: tuple[int, ...], gang: tuple[int, ...]) -> list[Action]:
        """The actions starting row ``key`` on ``gang`` (a job: one Place)."""
        return [Place(key[0], gpus=gang)]

    def _actions(self, view: ClusterView, grants: list[tuple[tuple[int, ...], int]], anywhere: list[int]
                 ) -> list[Action]:
        """Keep what stays, move running jobs to their new GPUs (``Reallocate``, in an order where each target is
        free; a cycle goes through the queue), preempt what stops, place the rest on the fewest nodes of its
        type; jobs no single type can hold (``anywhere``) keep running once started, or start on mixed types."""
        keep = self._keep(view, grants)
        move = [(key, k) for key, k in grants if key not in keep]
        kept_jobs = {j for key in keep for j in key}.union(anywhere)
        movable = {key[0] for key, _ in move
                   if len(key) == 1 and view.can_reallocate(key[0]) and not view.partners_of(key[0])}
        out: list[Action] = [Preempt(j) for j in view.running_jobs().tolist()
                             if j not in kept_jobs and j not in movable]
        self._follow = []
        if not move and not anywhere:  # nothing to place: the rest below would add nothing
            self.granted = keep
            return out or [Wait()]
        holds = np.zeros(view.n_jobs + 1, dtype=bool)  # index n_jobs: an empty slot (-1)
        holds[list(kept_jobs)] = True
        sj = view.tenants()
        held = holds[sj[:, 0]] | holds[sj[:, 1]]  # the GPUs the kept jobs hold
        taken = held.tolist()
        placed, plans = self._plan_gangs(view, move, movable, (~held, taken), out)
        targets = {key[0]: gang for key, gang in plans if key[0] in movable}
        order, through_queue = order_moves(targets, {j: tuple(view.gpus_of(j).tolist()) for j in targets})
        out.extend(Preempt(j) for j in through_queue)  # first: the moves after them may take their GPUs
        out.extend(Reallocate(j, gpus=targets[j]) for j in order)
        for key, gang in plans:
            if key[0] not in targets or key[0] in through_queue:
                out.extend(self._place_row(view, key, gang))
        left = taken.count(False)
        for j in sorted(anywhere):
            if view.is_pending(j) and view.req_gpus[j] <= left:
                out.append(Place(j))
                left -= int(view.req_gpus[j])
        self.granted = {**keep, **placed}
        return out or [Wait()]

    def _plan_gangs(self, view: ClusterView, move: list[tuple[tuple[int, ...], int]], movable: set[int],
                    gpus: tuple[np.ndarray, list[bool]], out: list[Action]
                    ) -> tuple[dict[tuple[int, ...], int], list[tuple[tuple[int, ...], tuple[int, ...]]]]:
        """Each granted row that does not stay gets a gang of its type's GPUs not taken (``gpus``: the GPUs free
        of kept jobs as a mask, and the GPUs taken as a list, marked as gangs take them), the
        largest gangs first, on the fewest nodes (:func:`.gavel_rounds.place_fewest_nodes`' rule, the type's
        nodes kept by free count in a :class:`.gavel_rounds.FewestNodes`; each node's lowest free GPUs first); a
        movable job left without one is preempted (into ``out``).
        Returns the rows given gangs with their types, and the ``(row, gang)`` plans in order."""
        req = view.req_gpus
        placed: dict[tuple[int, ...], int] = {}
        plans: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        nodes_of: dict[int, FewestNodes] = {}  # per type: its nodes' GPUs not taken, kept by count
        free_mask, taken = gpus
        for key, k in sorted(move, key=lambda kk: -int(req[kk[0][0]])):
            nodes = nodes_of.get(k)
            if nodes is None:  # no gang took a type-k GPU yet: the mask holds for them
                g, at = self._type_gpus[k]
                nodes = nodes_of[k] = FewestNodes(np.bincount(at[free_mask[g]], minlength=len(self._type_nodes[k])))
            picks = nodes.pick(int(req[key[0]]))
            if picks is None:
                if key[0] in movable:
                    out.append(Preempt(key[0]))
                continue
            nodes.take(picks)
            type_nodes = self._type_nodes[k]
            # each node's lowest GPUs not taken: the rest stay free, in order
            gang = [x for i, c in picks for x in [y for y in type_nodes[i][1] if not taken[y]][:c]]
            for x in gang:
                taken[x] = True
            plans.append((key, tuple(sorted(gang))))
            placed[key] = k
        return placed, plans
