"""Hadar's allocator (Sultana et al., hadar-hadare §III) as pure functions: prices, FIND_ALLOC and the DP.

Hadar schedules in rounds with task-level heterogeneity: one job's workers may sit on GPUs of several types and
servers, its throughput then set by the slowest (the synchronization barrier, Eq. (1b)). It follows the primal-
dual framework: each server ``h`` and GPU type ``k`` has a price that grows exponentially with the GPUs already
allocated there (Eq. (5)),

    p_hk(g) = U_min_k / (4 eta) * (4 eta U_max_k / U_min_k) ** (g / C_hk),

lowest (``U_min / 4 eta``) on an empty server, ``U_max`` on a full one, where ``U_max_k`` / ``U_min_k`` are
the largest / smallest per-unit-resource utilities of the queued jobs on type ``k`` (Eqs. (6), (7); the utility
of a job is its effective throughput, iterations over completion time). A job's payoff for an allocation is its
utility at the completion the allocation gives minus the cost of its schedule (Eq. (3a): this round's prices x
GPUs for every round the job will hold them, the GPU-slots ``U_max`` is per, so that at ``U_max`` the price
blocks a job as §III-B says; ``run_cost=False``: this round's cost only); Algorithm 2 picks the subset of
queued jobs with the largest total payoff by dynamic programming over (job, server state), each job's
allocation from FIND_ALLOC: the consolidated option (fewest servers) and the non-consolidated one (fastest
GPUs anywhere, plus a communication cost per extra server), whichever pays more.

The paper's text gives the structure but its formulas did not survive extraction; where a detail is ours it is
said here: the horizon ``T`` for ``U_min`` is the time to finish all queued work on the slowest GPUs at full
use plus the longest job's run there; ``eta`` defaults to 1; the communication cost is ``comm_weight`` base
prices per worker and extra server; the DP is exact over the first ``dp_window`` queued jobs (depth first,
compiled) and greedy after them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np


@dataclass(frozen=True)
class HadarJob:
    """One job as Hadar sees it: workers asked, iterations left, gang throughput (iterations/s) if all its
    workers were of each type, arrival time and total iterations (for its utility), for a running job its
    current allocation as ``(server, type, count)`` picks (keeping it pays no restart overhead), and the
    throughput its utility is measured in (1: iterations/s; a policy may pass the job's best throughput so
    utilities of different models compare, as Gavel normalises)."""

    workers: int
    remaining: float
    tput: tuple[float, ...]
    arrival: float
    iterations: float
    current: tuple[tuple[int, int, int], ...] = ()
    unit: float = 1.0

    @cached_property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The job as FIND_ALLOC's compiled call reads it: throughputs by type, ``(remaining, arrival,
        iterations, unit)``, and the current allocation as an ``(n, 3)`` array. Built once per job object."""
        return (np.array(self.tput, dtype=float),
                np.array([self.remaining, self.arrival, self.iterations, self.unit], dtype=float),
                np.array(self.current, dtype=np.int64).reshape(-1, 3))

    def utility(self, finish: float) -> float:
        """Effective throughput: total iterations over the job's completion time (``finish - arrival``), in
        units of ``unit``."""
        return self.iterations / max(finish - self.arrival, 1e-9) / self.unit


class HadarQueue(Sequence[HadarJob]):
    """Queued jobs as arrays, in queue order (what the prices and the greedy tail read); a :class:`HadarJob` of
    one is built when asked (the DP window's few). ``workers`` (n,), ``tput`` (n, types), ``facts`` (n, 4):
    remaining iterations, arrival, total iterations, utility unit; the current allocations either as
    ``current``, each job's ``(server, type, count)`` picks (() when not running), or as arrays, ``cur_rows``
    ``(rows, 3)`` with job ``i``'s rows ``cur_rows[cur_from[i]:cur_from[i + 1]]`` (what the compiled round
    reads; :attr:`current` is then built when asked)."""

    def __init__(self, workers: np.ndarray, tput: np.ndarray, facts: np.ndarray,
                 current: list[tuple[tuple[int, int, int], ...]] | None = None,
                 cur_rows: np.ndarray | None = None, cur_from: np.ndarray | None = None) -> None:
        self.workers = np.asarray(workers, dtype=np.int64)
        self.tput = np.ascontiguousarray(tput, dtype=float).reshape(len(self.workers), -1) if len(self.workers) \
            else np.zeros((0, np.shape(tput)[-1] if np.ndim(tput) == 2 else 0))
        self.facts = np.ascontiguousarray(facts, dtype=float).reshape(len(self.workers), 4)
        self._current = None if current is None else list(current)
        if cur_rows is None or cur_from is None:
            if self._current is None:
                raise ValueError("HadarQueue: give the current allocations as current or as cur_rows and cur_from")
            sizes = np.array([len(c) for c in self._current], dtype=np.int64)
            cur_rows = np.array([r for c in self._current for r in c], dtype=np.int64).reshape(-1, 3)
            cur_from = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(sizes)])
        self.cur_rows = np.ascontiguousarray(cur_rows, dtype=np.int64).reshape(-1, 3)
        self.cur_from = np.asarray(cur_from, dtype=np.int64)
        self._jobs: dict[int, HadarJob] = {}

    @classmethod
    def of(cls, jobs: Sequence[HadarJob]) -> HadarQueue:
        """``jobs`` as a queue (itself when it is one)."""
        if isinstance(jobs, HadarQueue):
            return jobs
        q = cls(np.array([j.workers for j in jobs], dtype=np.int64), np.array([j.tput for j in jobs], dtype=float),
                np.array([(j.remaining, j.arrival, j.iterations, j.unit) for j in jobs], dtype=float),
                [j.current for j in jobs])
        q._jobs = dict(enumerate(jobs))
        return q

    @property
    def current(self) -> list[tuple[tuple[int, int, int], ...]]:
        """Each job's current allocation as ``(server, type, count)`` picks (() when not running)."""
        if self._current is None:
            rl, at = self.cur_rows.tolist(), self.cur_from.tolist()
            self._current = [tuple(map(tuple, rl[a:b])) for a, b in zip(at[:-1], at[1:], strict=True)]
        return self._current

    def __len__(self) -> int:
        return len(self.workers)

    def __getitem__(self, i: int) -> HadarJob:  # type: ignore[override]
        job = self._jobs.get(i)
        if job is None:
            if not 0 <= i < len(self):
                raise IndexError(i)
            r, a, n, u = self.facts[i].tolist()
            job = self._jobs[i] = HadarJob(int(self.workers[i]), r, tuple(self.tput[i].tolist()), a, n,
                                           self.current[i], u)
        return job

    def current_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The current allocations as one ``(rows, 3)`` array and each job's first row (n + 1 offsets)."""
        return self.cur_rows, self.cur_from


@dataclass(frozen=True)
class Prices:
    """Per-type price parameters (Eqs. (5)-(7)), the server capacities ``C_hk`` they scale with, and the slot
    length a schedule's cost is counted in (Eq. (3a): the prices of every slot the job holds its GPUs; 0: this
    round's cost only)."""

    u_min: np.ndarray
    u_max: np.ndarray
    eta: float
    capacity: np.ndarray
    slot_s: float = 0.0

    @cached_property
    def u_min_least(self) -> float:
        """The least ``U_min_k`` over the types (the base of FIND_ALLOC's communication charge), read once."""
        return float(self.u_min.min())

    def price(self, h: int, k: int, g: float) -> float:
        """Eq. (5): the price of type-``k`` GPUs on server ``h`` with ``g`` of them allocated (the cost of one more
        GPU there: one implementation, :meth:`cost`)."""
        used = np.zeros(self.capacity.shape, dtype=np.float64)
        used[h, k] = g
        return self.cost(used, [(h, k, 1)])

    def cost(self, used: np.ndarray, take: list[tuple[int, int, int]]) -> float:
        """Per-round cost of taking ``(server, type, count)`` GPUs given ``used`` (servers x types): the sum of
        each GPU's marginal price as the allocation grows, ``sum_{i<n} p(used + i)`` (a geometric sum)."""
        from gpucluster_env.baselines.parts.hadar_find import cost

        return float(cost(np.asarray(used, dtype=np.float64), np.array(take, dtype=np.int64).reshape(-1, 3),
                          self.u_min, self.u_max, self.eta, self.capacity))


def make_prices(jobs: Sequence[HadarJob], capacity: np.ndarray, now: float, slot_s: float, eta: float = 1.0,
                run_cost: bool = True) -> Prices:
    """Eqs. (6), (7): ``U_max_k``: the best per-GPU-slot utility a job reaches running alone on type ``k`` from
    now; ``U_min_k``: the least, finishing at the horizon ``T`` (module docstring) having held its GPUs all
    along. ``capacity``: servers x types GPU counts. Over arrays of the jobs, each element the same operations
    as :meth:`HadarJob.utility` (the sum of work taken in order). ``run_cost``: a job's payoff is charged the
    prices for every ``slot_s`` slot of its run (Eq. (3a), the cost of its whole schedule, in the GPU-slots
    ``U_max`` is per); False: for this round only (this project's reading until 2026-12-06)."""
    cap = np.asarray(capacity, dtype=float)
    nk = cap.shape[1]
    if eta <= 0:
        raise ValueError(f"eta: must be positive, got {eta}")
    if not jobs:
        return Prices(np.ones(nk), np.ones(nk), eta, cap, slot_s if run_cost else 0.0)
    total = max(cap.sum(), 1.0)
    q = HadarQueue.of(jobs)
    tput, workers = q.tput.reshape(len(q), nk), q.workers
    rem, arrival, iters, unit = q.facts.T
    runs = tput > 0
    slowest = np.where(runs, tput, np.inf).min(axis=1)
    timed = np.isfinite(slowest)
    work = float(np.add.accumulate(workers[timed] * rem[timed] / slowest[timed])[-1]) if timed.any() else 0
    horizon = now + max(work / total, slot_s) + float(np.max(rem[timed] / slowest[timed]))
    with np.errstate(divide="ignore", invalid="ignore"):
        dur = rem[:, None] / tput
        best = iters[:, None] / np.maximum(now + dur - arrival[:, None], 1e-9) / unit[:, None]
        best = best / (workers[:, None] * np.maximum(dur / slot_s, 1.0))
    least = iters / np.maximum(horizon - arrival, 1e-9) / unit / (workers * (horizon - now) / slot_s)
    u_max = np.maximum(np.where(runs, best, -np.inf).max(axis=0), 0.0)
    u_min = np.where(runs, least[:, None], np.inf).min(axis=0)
    u_min = np.where(np.isfinite(u_min), u_min, 1.0)
    u_max = np.maximum(u_max, u_min)
    return Prices(u_min, u_max, eta, cap, slot_s if run_cost else 0.0)


class Choice(NamedTuple):
    """A job's allocation from FIND_ALLOC: ``(server, type, count)`` picks, its throughput, and its payoff (a
    named tuple: the greedy tail makes hundreds a round, and a frozen dataclass took a microsecond each)."""

    take: tuple[tuple[int, int, int], ...]
    tput: float
    payoff: float


def find_alloc(job: HadarJob, free: np.ndarray, used: np.ndarray, prices: Prices, now: float,
               overhead_s: float = 0.0, comm_weight: float = 1.0) -> Choice | None:
    """Algorithm 2's FIND_ALLOC: the better-paying of the consolidated allocation (the fewest servers, their
    fastest GPUs for this job) and the non-consolidated one (the job's fastest free GPUs anywhere, charged
    ``comm_weight`` base prices per worker for each extra server), and of a running job's current allocation
    when it is still free in this state (no restart overhead). ``free`` / ``used``: servers x types.
    None: fewer free GPUs of runnable types than the job's workers. The options and payoffs are one compiled
    call (:func:`.hadar_find.best_alloc`)."""
    from gpucluster_env.baselines.parts.hadar_find import best_alloc, type_orders
    from gpucluster_env.baselines.parts.hadar_free import free_sets

    comm = comm_weight * job.workers * prices.u_min_least / (4.0 * prices.eta)
    speed, facts, current = job.arrays
    oks, kords = type_orders(speed.reshape(1, -1))
    take, tput, pay = best_alloc(free_sets(np.array(free, dtype=np.int64)), speed, oks[0], kords[0], job.workers,
                                 facts, current,
                                 np.asarray(used, dtype=np.float64), prices.u_min, prices.u_max, float(prices.eta),
                                 prices.capacity, float(now), float(overhead_s), comm, float(prices.slot_s))
    if len(take) == 0:
        return None
    return Choice(tuple(map(tuple, take.tolist())), float(tput), float(pay))


class Picks(NamedTuple):
    """Algorithm 2's picks as the compiled round returns them: the jobs taken (queue positions, in queue
    order), their allocations (job ``t``'s ``(server, type, count)`` rows ``rows[row_from[t]:row_from[t + 1]]``),
    throughputs and payoffs, and whether each allocation is the job's current one row for row (``kept``: the
    job keeps its GPUs; a policy need not read its rows)."""

    jobs: np.ndarray
    rows: np.ndarray
    row_from: np.ndarray
    tput: np.ndarray
    payoff: np.ndarray
    kept: np.ndarray

    def choices(self) -> list[tuple[int, Choice]]:
        """Every pick as ``(queue position, Choice)``."""
        rl = self.rows.tolist()  # once: a slice of the list per job, not a list of each slice of the array
        return [(i, Choice(tuple(map(tuple, rl[a:b])), t, p)) for i, a, b, t, p in zip(
            self.jobs.tolist(), self.row_from[:-1].tolist(), self.row_from[1:].tolist(), self.tput.tolist(),
            self.payoff.tolist(), strict=True)]


def select_picks(jobs: Sequence[HadarJob], free: np.ndarray, prices: Prices, now: float,
                 overhead_s: float = 0.0, comm_weight: float = 1.0, dp_window: int = 6) -> Picks:
    """Algorithm 2 (:func:`select_jobs`) with its picks as arrays (:class:`Picks`)."""
    from gpucluster_env.baselines.parts.hadar_tail import select

    if dp_window > 62:
        raise ValueError(f"dp_window: at most 62 (an exact DP over 2**dp_window subsets), got {dp_window}")
    q = HadarQueue.of(jobs)
    comm = comm_weight * q.workers * float(prices.u_min.min()) / (4.0 * prices.eta)
    cur_rows, cur_from = q.current_rows()
    return Picks(*select(
        np.array(free, dtype=np.int64), min(dp_window, len(q)), q.workers, q.tput, q.facts, cur_rows, cur_from,
        comm, prices.u_min, prices.u_max, float(prices.eta), prices.capacity, float(now), float(overhead_s),
        float(prices.slot_s)))


def select_jobs(jobs: Sequence[HadarJob], free: np.ndarray, prices: Prices, now: float,
                overhead_s: float = 0.0, comm_weight: float = 1.0, dp_window: int = 6,
                ) -> list[tuple[int, Choice]]:
    """Algorithm 2: the queued jobs to start this round and their allocations, maximizing the total payoff.
    The first ``dp_window`` jobs (in the order given) are chosen by the exact DP over (job, server state): each
    job either taken (FIND_ALLOC on the state, positive payoff) or skipped; the jobs after the window are then
    taken greedily in order while their payoff is positive. ``free``: servers x types. One compiled call
    (:func:`.hadar_tail.select`) over the queue's arrays, each job FIND_ALLOC's call of :func:`find_alloc` with
    the same communication charge; the window's choice is a bit mask, so ``dp_window`` is at most 62 (the DP
    is exponential in it: 6 by default). :func:`select_picks` gives the same picks as arrays."""
    if dp_window > 62:
        raise ValueError(f"dp_window: at most 62 (an exact DP over 2**dp_window subsets), got {dp_window}")
    if not jobs:
        return []
    return select_picks(jobs, free, prices, now, overhead_s, comm_weight, dp_window).choices()
