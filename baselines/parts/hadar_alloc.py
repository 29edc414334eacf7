"""Hadar's allocator (Sultana et al., hadar-hadare §III) as pure functions: prices, FIND_ALLOC and the DP.

Hadar schedules in rounds with task-level heterogeneity: one job's workers may sit on GPUs of several types and
servers, its throughput then set by the slowest (the synchronization barrier, Eq. (1b)). It follows the primal-
dual framework: each server ``h`` and GPU type ``k`` has a price that grows exponentially with the GPUs already
allocated there (Eq. (5)),

    p_hk(g) = U_min_k / (4 eta) * (4 eta U_max_k / U_min_k) ** (g / C_hk),

lowest (``U_min / 4 eta``) on an empty server, ``U_max`` on a full one, where ``U_max_k`` / ``U_min_k`` are
the largest / smallest per-unit-resource utilities of the queued jobs on type ``k`` (Eqs. (6), (7); the utility
of a job is its effective throughput, iterations over completion time). A job's payoff for an allocation is its
utility at the completion the allocation gives minus the allocation's cost this round (prices x GPUs: Eq. (8)
with the utility fixed is a per-round cost minimization); Algorithm 2 picks the subset of
queued jobs with the largest total payoff by dynamic programming over (job, server state), each job's
allocation from FIND_ALLOC: the consolidated option (fewest servers) and the non-consolidated one (fastest
GPUs anywhere, plus a communication cost per extra server), whichever pays more.

The paper's text gives the structure but its formulas did not survive extraction; where a detail is ours it is
said here: the horizon ``T`` for ``U_min`` is the time to finish all queued work on the slowest GPUs at full
use plus the longest job's run there; ``eta`` defaults to 1; the communication cost is ``comm_weight`` base
prices per worker and extra server; the DP is exact over the first ``dp_window`` queued jobs (memoised on
the state) and greedy after them.
"""

from __future__ import annotations

from dataclasses import dataclass

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

    def utility(self, finish: float) -> float:
        """Effective throughput: total iterations over the job's completion time (``finish - arrival``), in
        units of ``unit``."""
        return self.iterations / max(finish - self.arrival, 1e-9) / self.unit


@dataclass(frozen=True)
class Prices:
    """Per-type price parameters (Eqs. (5)-(7)) and the server capacities ``C_hk`` they scale with."""

    u_min: np.ndarray
    u_max: np.ndarray
    eta: float
    capacity: np.ndarray

    def price(self, h: int, k: int, g: float) -> float:
        """Eq. (5): the price of type-``k`` GPUs on server ``h`` with ``g`` of them allocated."""
        c = self.capacity[h, k]
        lo = self.u_min[k] / (4.0 * self.eta)
        return float(lo * (4.0 * self.eta * self.u_max[k] / self.u_min[k]) ** (g / c))

    def cost(self, used: np.ndarray, take: list[tuple[int, int, int]]) -> float:
        """Per-round cost of taking ``(server, type, count)`` GPUs given ``used`` (servers x types): the sum of
        each GPU's marginal price as the allocation grows, ``sum_{i<n} p(used + i)`` (a geometric sum)."""
        total = 0.0
        for h, k, n in take:
            c = self.capacity[h, k]
            lo = self.u_min[k] / (4.0 * self.eta)
            r = (4.0 * self.eta * self.u_max[k] / self.u_min[k]) ** (1.0 / c)
            first = lo * r ** used[h, k]
            total += first * n if abs(r - 1.0) < 1e-12 else first * (r ** n - 1.0) / (r - 1.0)
        return float(total)


def make_prices(jobs: list[HadarJob], capacity: np.ndarray, now: float, slot_s: float, eta: float = 1.0) -> Prices:
    """Eqs. (6), (7): ``U_max_k``: the best per-GPU-slot utility a job reaches running alone on type ``k`` from
    now; ``U_min_k``: the least, finishing at the horizon ``T`` (module docstring) having held its GPUs all
    along. ``capacity``: servers x types GPU counts."""
    cap = np.asarray(capacity, dtype=float)
    nk = cap.shape[1]
    if eta <= 0:
        raise ValueError(f"eta: must be positive, got {eta}")
    if not jobs:
        return Prices(np.ones(nk), np.ones(nk), eta, cap)
    total = max(cap.sum(), 1.0)
    slowest = [min(t for t in j.tput if t > 0) if any(t > 0 for t in j.tput) else np.inf for j in jobs]
    work = sum(j.workers * j.remaining / s for j, s in zip(jobs, slowest, strict=True) if np.isfinite(s))
    horizon = now + max(work / total, slot_s) + max(j.remaining / s for j, s in zip(jobs, slowest, strict=True)
                                                     if np.isfinite(s))
    u_max = np.zeros(nk)
    u_min = np.full(nk, np.inf)
    for j in jobs:
        for k in range(nk):
            if j.tput[k] <= 0:
                continue
            dur = j.remaining / j.tput[k]
            u_max[k] = max(u_max[k], j.utility(now + dur) / (j.workers * max(dur / slot_s, 1.0)))
            u_min[k] = min(u_min[k], j.utility(horizon) / (j.workers * (horizon - now) / slot_s))
    u_min = np.where(np.isfinite(u_min), u_min, 1.0)
    u_max = np.maximum(u_max, u_min)
    return Prices(u_min, u_max, eta, cap)


@dataclass(frozen=True)
class Choice:
    """A job's allocation from FIND_ALLOC: ``(server, type, count)`` picks, its throughput, and its payoff."""

    take: tuple[tuple[int, int, int], ...]
    tput: float
    payoff: float


def _gang_tput(job: HadarJob, take: list[tuple[int, int, int]]) -> float:
    """Bottleneck throughput (Eq. (1b)): the gang runs at the pace of its slowest GPU type."""
    return min(job.tput[k] for _, k, _ in take)


def _evaluate(job: HadarJob, take: list[tuple[int, int, int]], used: np.ndarray, prices: Prices, now: float,
              overhead_s: float, comm: float) -> Choice:
    tput = _gang_tput(job, take)
    dur = job.remaining / tput + overhead_s
    servers = len({h for h, _, _ in take})
    cost = prices.cost(used, take) + comm * (servers - 1)
    return Choice(tuple(take), tput, job.utility(now + dur) - cost)

Alloc = list[tuple[int, int, int]]
"""An allocation: ``(server, GPU type, count)`` triples."""


def _take_from(fr: np.ndarray, ok: np.ndarray, kord: np.ndarray, servers: list[int], n: int) -> Alloc:
    """``n`` GPUs from ``servers`` in turn, the job's fastest runnable types first on each."""
    out = []
    for h in servers:
        for k in kord.tolist():
            if n == 0 or not ok[k]:
                continue
            c = int(min(fr[h, k], n))
            if c:
                out.append((h, k, c))
                n -= c
    return out


def _consolidated(fr: np.ndarray, speed: np.ndarray, ok: np.ndarray, kord: np.ndarray, usable: np.ndarray,
                  need: int) -> Alloc:
    """The consolidated allocation: one server if any fits (the one whose gang's slowest GPU is fastest, then
    the fullest), else most-free servers first."""
    whole = np.flatnonzero(usable >= need)
    if len(whole):
        ks = kord[ok[kord]]
        cum = np.cumsum(fr[np.ix_(whole, ks)], axis=1)
        slowest = speed[ks][np.argmax(cum >= need, axis=1)]
        h = int(whole[np.lexsort((usable[whole], -slowest))[0]])
        return _take_from(fr, ok, kord, [h], need)
    return _take_from(fr, ok, kord, np.argsort(-usable, kind="stable").tolist(), need)


def _spread(fr: np.ndarray, ok: np.ndarray, kord: np.ndarray, need: int) -> Alloc:
    """The non-consolidated allocation: the fastest GPUs anywhere (most free servers first within a type)."""
    spread: Alloc = []
    n = need
    for k in kord.tolist():
        if not ok[k]:
            continue
        col = fr[:, k]
        order = np.argsort(-col, kind="stable")
        for h, f in zip(order.tolist(), col[order].tolist(), strict=True):
            if f <= 0 or n == 0:
                break  # most free first: the rest of this type has none (free counts are never negative)
            c = min(f, n)
            spread.append((h, k, c))
            n -= c
        if n == 0:
            break
    return spread


def find_alloc(job: HadarJob, free: np.ndarray, used: np.ndarray, prices: Prices, now: float,
               overhead_s: float = 0.0, comm_weight: float = 1.0) -> Choice | None:
    """Algorithm 2's FIND_ALLOC: the better-paying of the consolidated allocation (the fewest servers, their
    fastest GPUs for this job) and the non-consolidated one (the job's fastest free GPUs anywhere, charged
    ``comm_weight`` base prices per worker for each extra server), and of a running job's current allocation
    when it is still free in this state (no restart overhead). ``free`` / ``used``: servers x types.
    None: fewer free GPUs of runnable types than the job's workers."""
    fr = np.asarray(free, dtype=np.int64)
    nh, nk = fr.shape
    speed = np.array(job.tput, dtype=float)
    ok = speed > 0
    usable = (fr * ok[None, :]).sum(axis=1)
    need = job.workers
    if usable.sum() < need:
        return None
    kord = np.argsort(-speed, kind="stable")
    cons = _consolidated(fr, speed, ok, kord, usable, need)
    spread = _spread(fr, ok, kord, need)
    comm = comm_weight * need * float(prices.u_min.min()) / (4.0 * prices.eta)
    best = _evaluate(job, cons, used, prices, now, overhead_s, comm)
    b = _evaluate(job, spread, used, prices, now, overhead_s, comm)
    if b.payoff > best.payoff:
        best = b
    if job.current and all(fr[h, k] >= c for h, k, c in job.current):
        stay = _evaluate(job, list(job.current), used, prices, now, 0.0, comm)
        if stay.payoff >= best.payoff:
            best = stay
    return best


def select_jobs(jobs: list[HadarJob], free: np.ndarray, prices: Prices, now: float,
                overhead_s: float = 0.0, comm_weight: float = 1.0, dp_window: int = 6,
                ) -> list[tuple[int, Choice]]:
    """Algorithm 2: the queued jobs to start this round and their allocations, maximizing the total payoff.
    The first ``dp_window`` jobs (in the order given) are chosen by the memoised DP over (job, server state):
    each job either taken (FIND_ALLOC on the state, positive payoff) or skipped; the jobs after the window are
    then taken greedily in order while their payoff is positive. ``free``: servers x types."""
    fr0 = np.asarray(free, dtype=np.int64)
    win = min(dp_window, len(jobs))
    memo: dict[tuple[int, bytes], tuple[float, tuple[tuple[int, Choice], ...]]] = {}

    def dp(i: int, fr: np.ndarray) -> tuple[float, tuple[tuple[int, Choice], ...]]:
        if i == win:
            return 0.0, ()
        key = (i, fr.tobytes())
        hit = memo.get(key)
        if hit is not None:
            return hit
        best = dp(i + 1, fr)
        ch = find_alloc(jobs[i], fr, prices.capacity - fr, prices, now, overhead_s, comm_weight)
        if ch is not None and ch.payoff > 0:
            nxt = fr.copy()
            for h, k, c in ch.take:
                nxt[h, k] -= c
            val, rest = dp(i + 1, nxt)
            if val + ch.payoff > best[0]:
                best = (val + ch.payoff, ((i, ch),) + rest)
        memo[key] = best
        return best

    _, picked = dp(0, fr0)
    out = list(picked)
    fr = fr0.copy()
    for _, ch in out:
        for h, k, c in ch.take:
            fr[h, k] -= c
    for i in range(win, len(jobs)):
        if not fr.any():
            break
        ch = find_alloc(jobs[i], fr, prices.capacity - fr, prices, now, overhead_s, comm_weight)
        if ch is not None and ch.payoff > 0:
            out.append((i, ch))
            for h, k, c in ch.take:
                fr[h, k] -= c
    return out
