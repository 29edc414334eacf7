"""Gavel's round-based mechanism (Narayanan et al., OSDI'20, §5) as pure functions.

An allocation ``X[j, k]`` (time fractions, :mod:`.gavel_lp`) is realized over rounds of ``round_s`` seconds
(Gavel: 360 s): each round, job ``j``'s priority on type ``k`` is ``X[j, k]`` divided by the fraction of type
``k``'s time it has received since the last reset (:func:`round_priorities`), and GPUs are granted greedily in
priority order (:func:`select_round`), each job's gang on the fewest nodes (:func:`place_fewest_nodes`). The
allocation is recomputed when jobs arrived or finished, at most every ``min_reset_s`` seconds (Gavel: 1,920 s;
:func:`needs_recompute`), and the time received is then reset (:func:`reset_time_received`), carrying what a
job was owed into its deficit.
"""

from __future__ import annotations

import heapq

import numpy as np

FRESH_PRIORITY = 1e9
"""Gavel's priority factor for a job that has received nothing yet on a type (large, not infinite, so larger
allocations still rank first)."""


GAVEL_ROUND_S = 360.0
"""Gavel's default round length (s)."""


def round_length(option: float | None, scenario_round_s: float | None) -> float:
    """The round length a round-based policy uses: its ``round_s`` option, else the scenario's rounds, else
    :data:`GAVEL_ROUND_S`. Raises a one-line error for an option that is not a positive number."""
    if option is not None and not (isinstance(option, int | float) and option > 0):
        raise ValueError(f"round_s: must be a positive number of seconds, got {option!r}")
    return float(option or scenario_round_s or GAVEL_ROUND_S)


def next_boundary(now: float, round_s: float) -> float:
    """The first round boundary after ``now`` on the grid of multiples of ``round_s`` (the engine's rounds)."""
    return float((np.floor(now / round_s + 1e-9) + 1.0) * round_s)


def needs_recompute(now: float, last_reset: float | None, min_reset_s: float, changed: bool) -> bool:
    """Whether to recompute the allocation now: jobs arrived or finished since the last computation
    (``changed``) and ``min_reset_s`` has passed since the last reset (or there was none)."""
    return changed and (last_reset is None or now - last_reset >= min_reset_s)


def reset_time_received(
    alloc: np.ndarray, job_time: np.ndarray, deficit: np.ndarray, elapsed: float, round_s: float
) -> tuple[np.ndarray, np.ndarray]:
    """Gavel's reset: each job's deficit grows by the time it should have received since the last reset
    (``alloc * elapsed``) minus what it got (its recorded time less the half round every record starts from),
    and every record restarts at half a round. Returns the new ``(job_time, deficit)``."""
    received = np.asarray(job_time, dtype=float) - round_s / 2.0
    new_deficit = np.asarray(deficit, dtype=float) + np.asarray(alloc, dtype=float) * elapsed - received
    return np.full(np.shape(job_time), round_s / 2.0), new_deficit


def round_priorities(alloc: np.ndarray, job_time: np.ndarray, runnable: np.ndarray) -> np.ndarray:
    """Priority of each job on each type: ``alloc / (job_time / type_time)`` where ``type_time`` is the time
    all jobs received on the type; ``alloc * FRESH_PRIORITY`` where the job received none yet; 0 where the
    allocation is 0 or the job cannot run on the type (``runnable`` False)."""
    a = np.asarray(alloc, dtype=float)
    jt = np.asarray(job_time, dtype=float)
    tt = jt.sum(axis=0)
    if (tt > 0).all():  # the usual case (every record starts at half a round): the same quotients, fewer passes
        frac = jt / tt[None, :]
    else:
        frac = np.divide(jt, tt[None, :], out=np.zeros_like(jt), where=tt[None, :] > 0)
    if (frac > 0).all():
        pr = a / frac
    else:
        pr = np.where(frac > 0, np.divide(a, frac, out=np.zeros_like(a), where=frac > 0), a * FRESH_PRIORITY)
    pr[(a <= 0) | ~np.asarray(runnable, dtype=bool)] = 0.0
    return pr


def select_round(
    priority: np.ndarray,
    deficit: np.ndarray,
    alloc: np.ndarray,
    gpus: np.ndarray,
    capacity: np.ndarray,
    runnable: np.ndarray,
    type_order: list[int] | None = None,
    members: list[tuple[int, ...]] | None = None,
) -> list[tuple[int, int]]:
    """The ``(row, type)`` grants of one round: Gavel's greedy pass over each type's rows sorted by
    (priority, deficit, allocation), highest first, types in ``type_order`` (Gavel: fastest first for its
    heterogeneity-aware policies), where the row's whole gang fits in the type's GPUs left and none of its
    jobs was granted yet. A row is one job, or with ``members`` (the jobs of each row) a packed pair."""
    pr = np.asarray(priority, dtype=float)
    n, nk = pr.shape
    left = np.asarray(capacity, dtype=np.int64).tolist()
    g = np.asarray(gpus, dtype=np.int64).tolist()
    run = np.asarray(runnable, dtype=bool)
    mem = [(i,) for i in range(n)] if members is None else members
    done: set[int] = set()  # jobs granted so far
    out: list[tuple[int, int]] = []
    tiebreak = -np.arange(n)
    for k in (range(nk) if type_order is None else type_order):
        order = np.lexsort((tiebreak, alloc[:, k], deficit[:, k], pr[:, k]))[::-1]
        order = order[run[order, k]]  # the rows that can run on type k, in that order
        for j in order.tolist():
            if left[k] == 0:
                break
            if g[j] > left[k] or not done.isdisjoint(mem[j]):
                continue
            left[k] -= g[j]
            done.update(mem[j])
            out.append((j, k))
    return out


def place_fewest_nodes(free_per_node: np.ndarray | list[int], need: int) -> list[tuple[int, int]] | None:
    """``(node, count)`` picks for a gang of ``need`` GPUs on the fewest nodes: the fullest node that still
    fits it whole (best fit, ties to the lower index), else nodes by most free GPUs first. None: too few."""
    return FewestNodes(free_per_node).pick(need)


class FewestNodes:
    """Nodes' free GPUs for gang after gang placed by :func:`place_fewest_nodes`' rule, kept by count: each
    count's nodes in a heap (lowest index first), so a pick reads the few counts a node can have, not every
    node (PhillyScale's 552). Counts only fall (:meth:`take`), so a node's entry in a count it left is stale
    for good and skipped when met."""

    def __init__(self, free: list[int] | np.ndarray) -> None:
        """``free``: each node's free GPUs (kept as a list, updated by :meth:`take`)."""
        arr = np.asarray(free, dtype=np.int64)
        self.free: list[int] = arr.tolist()
        self.total = int(arr.sum())
        # each count's nodes, ascending (a sorted list is a heap already)
        nodes = np.argsort(arr, kind="stable").tolist()
        ends = np.cumsum(np.bincount(arr)).tolist() if len(arr) else [0]
        self.by_count: list[list[int]] = [nodes[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]

    def _lowest(self, c: int) -> int:
        """The lowest-indexed node with exactly ``c`` free GPUs, or -1."""
        heap, free = self.by_count[c], self.free
        while heap and free[heap[0]] != c:
            heapq.heappop(heap)
        return heap[0] if heap else -1

    def pick(self, need: int) -> list[tuple[int, int]] | None:
        """The picks of :func:`place_fewest_nodes` for ``need`` GPUs (the counts are left as they are)."""
        if need <= 0:
            raise ValueError(f"need: a gang asks for at least one GPU, got {need}")
        if self.total < need:
            return None
        for c in range(need, len(self.by_count)):  # best fit: the fewest free GPUs that hold it whole
            h = self._lowest(c)
            if h >= 0:
                return [(h, need)]
        out = []
        for c in range(len(self.by_count) - 1, 0, -1):  # no node holds it: most free first, lower index first
            for h in sorted(h for h in self.by_count[c] if self.free[h] == c):
                take = min(c, need)
                out.append((h, take))
                need -= take
                if need == 0:
                    return out
        return out

    def take(self, picks: list[tuple[int, int]]) -> None:
        """Mark ``picks`` (node, count) taken."""
        for h, c in picks:
            f = self.free[h] = self.free[h] - c
            self.total -= c
            if f:
                heapq.heappush(self.by_count[f], h)


def order_moves(targets: dict[int, tuple[int, ...]], held: dict[int, tuple[int, ...]]) -> tuple[list[int], list[int]]:
    """An order in which running jobs can move to their new GPU sets one at a time (``Reallocate`` takes only
    GPUs that are free or the job's own): ``targets`` maps each moving job to its new GPUs, ``held`` to the GPUs
    it holds now. Returns the jobs to move in order, and the jobs to send through the queue instead where the
    moves form a cycle, fewest first (lowest job index): those are preempted before any move (the moves may take
    their GPUs) and placed after them.

    Each step moves the lowest-indexed job whose target GPUs are all free or its own, else queues the lowest-
    indexed job left; a job that leaves frees the GPUs it held. A job once movable stays movable (GPUs are only
    freed), so each job keeps a count of the target GPUs another job still holds, lowered as they are freed: the
    work is the GPUs named, not (jobs moving)^2 as when every step re-read every job left."""
    holder = {g: j for j, gs in held.items() for g in gs}
    waiting: dict[int, list[int]] = {}  # a GPU held by another job: the moving jobs whose target it is
    blocked: dict[int, int] = {}
    for j, gs in targets.items():
        n = 0
        for g in gs:
            if holder.get(g, j) != j:
                n += 1
                waiting.setdefault(g, []).append(j)
        blocked[j] = n
    ready = [j for j, n in blocked.items() if n == 0]
    heapq.heapify(ready)
    left = sorted(targets)  # the jobs left, lowest first (those already gone skipped as met)
    gone: set[int] = set()
    pos = 0
    order: list[int] = []
    queue: list[int] = []
    while len(gone) < len(blocked):
        while ready and ready[0] in gone:
            heapq.heappop(ready)
        if ready:
            j = heapq.heappop(ready)
            order.append(j)
        else:
            while left[pos] in gone:
                pos += 1
            j = left[pos]
            queue.append(j)
        gone.add(j)
        for g in held.get(j, ()):
            if holder.get(g) == j:
                del holder[g]
                for w in waiting.pop(g, ()):
                    blocked[w] -= 1
                    if blocked[w] == 0 and w not in gone:
                        heapq.heappush(ready, w)
    return order, queue
