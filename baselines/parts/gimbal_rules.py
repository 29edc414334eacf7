"""Gimbal's packing constraints (gimbal §5.1) as the packing schedulers use them, and job packing sets.

The rule itself -- two jobs per GPU, every job on the fewest nodes, a job packs only on one larger job (all its
GPUs shared with it) that is not itself packed on a larger one, equal world sizes only balanced -- has one
implementation, the engine's ``topology_violation`` (enforced on every start when a scenario sets
``EngineConfig.topology_rule``). Agents ask it through :class:`TopologyRule` before they act, so they never
send a start the rule forbids, whether the scenario enforces it or not.

Under the rule every connected group of sharing jobs is a **job packing set** (:class:`JobSet`): one job of the
largest world size, ``J_max``, shares with every other member, and the others share only with it
(:func:`packing_sets`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from gpucluster_env.engine.view import ClusterView


@dataclass(frozen=True)
class JobSet:
    """A job packing set: ``jmax`` (largest world size; ties: the lowest index) and the jobs sharing its GPUs,
    by index."""

    jmax: int
    others: tuple[int, ...]

    @property
    def jobs(self) -> tuple[int, ...]:
        """Every member, ``jmax`` first."""
        return (self.jmax, *self.others)


class TopologyRule:
    """The engine's topology rule as a read-only question: may pending job ``j`` start on ``gpus``? A policy
    that does not relax packing (``relaxed`` False) follows it only where the scenario enforces it
    (``EngineConfig.topology_rule``); otherwise every start is allowed."""

    def __init__(self, view: ClusterView, relaxed: bool = True) -> None:
        self._why = view.topology_violation
        self.on = bool(relaxed or view.topology_rule)

    def violation(self, j: int, gpus: np.ndarray | list[int]) -> str | None:
        """Why starting ``j`` on ``gpus`` would break the rule, or None (always None when the rule is off)."""
        if not self.on:
            return None
        return self._why(j, gpus)

    def allows(self, j: int, gpus: np.ndarray | list[int]) -> bool:
        """Whether starting ``j`` on ``gpus`` keeps the rule."""
        return self.violation(j, gpus) is None


def packing_sets(view: ClusterView) -> list[JobSet]:
    """The job packing sets of the running jobs that share at least one GPU, ordered by ``jmax``: the
    connected groups of the jobs that hold the two slots of some GPU (one read of every GPU's tenants)."""
    ten = view.tenants(np.arange(view.num_gpus))
    both = ten[ten[:, 1] >= 0]
    pairs = set(zip(both[:, 0].tolist(), both[:, 1].tolist(), strict=True))
    return sorted(sets_reaching(view, pairs, {j for pair in pairs for j in pair}), key=lambda s: s.jmax)


def sets_reaching(view: ClusterView, pairs: set[tuple[int, int]], jobs: set[int]) -> list[JobSet]:
    """The packing sets of the graph of job ``pairs`` (two jobs sharing a GPU) that hold any of ``jobs``: each
    connected group with its J_max (largest world size, then the lowest index) and the others by index."""
    adj: dict[int, list[int]] = {}
    for a, b in pairs:
        adj.setdefault(a, []).append(b)
        adj.setdefault(b, []).append(a)
    return groups_reaching(view, adj, jobs)


def groups_reaching(view: ClusterView, adj: Mapping[int, Iterable[int]], jobs: Iterable[int]) -> list[JobSet]:
    """:func:`sets_reaching` over the graph's adjacency (each job with a pair: the jobs it shares a GPU with)."""
    req = view.req_gpus
    out, seen = [], set()
    for j in jobs:
        if j in seen or j not in adj:
            continue
        group, stack = {j}, [j]
        while stack:
            for p in adj[stack.pop()]:
                if p not in group:
                    group.add(p)
                    stack.append(p)
        seen |= group
        jmax = min(group, key=lambda x: (-int(req[x]), x))
        out.append(JobSet(jmax, tuple(sorted(group - {jmax}))))
    return out


class KeptSets:
    """:func:`packing_sets` kept while the tenants of the GPUs holding two jobs stay the same (the sets read
    nothing else: a job starting or ending alone on its GPUs leaves them as they are): the same list object
    until then, so a reader may tell unchanged sets by identity. When they change, only the sets of the jobs
    whose pairs came or went are worked out again (:func:`groups_reaching`): a group none of whose jobs gained or
    lost a pair has the same edges as before, so it is the same set. The pairs (with the GPUs each is on), their
    graph and each job's set are updated from the GPUs whose tenants changed, not read again from every GPU."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self._ten: np.ndarray | None = None  # every GPU's tenants at the last look
        self._gpus_of_pair: dict[tuple[int, int], int] = {}  # (slot 0, slot 1) -> GPUs holding that pair
        self._adj: dict[int, set[int]] = {}  # the pairs' graph
        self._set_of: dict[int, JobSet] = {}  # each job with a pair -> its set
        self._sets: list[JobSet] = []
        self._version: tuple[int, int] | None = None  # the view's tenants_version at the last look

    def now(self) -> list[JobSet]:
        """The packing sets now (do not change the list)."""
        version = self.view.tenants_version
        if version == self._version:
            return self._sets
        self._version = version
        ten = self.view.tenants()
        before, self._ten = self._ten, ten
        if before is None:
            rows_before, rows_now = np.zeros((0, 2), dtype=ten.dtype), ten
        else:
            changed = changed_rows(ten, before)
            if not len(changed):
                return self._sets
            rows_before, rows_now = before[changed], ten[changed]
        rows_before = rows_before[rows_before[:, 1] >= 0].tolist()
        rows_now = rows_now[rows_now[:, 1] >= 0].tolist()
        if not rows_before and not rows_now:
            return self._sets  # no GPU holding two jobs changed: the same sets, the same list
        count, adj = self._gpus_of_pair, self._adj
        touched = {(a, b): (a, b) in count for a, b in rows_before + rows_now}  # pair -> held before
        for a, b in rows_before:
            n = count[(a, b)] = count[(a, b)] - 1
            if not n:
                del count[(a, b)]
        for a, b in rows_now:
            count[(a, b)] = count.get((a, b), 0) + 1
        # the jobs of the pairs that came or went (a pair that only moved between GPUs stays)
        moved = {j for pair, held in touched.items() if held != (pair in count) for j in pair}
        for a, b in rows_before:  # edges of the pairs gone, then of the pairs held now
            if (a, b) not in count and (b, a) not in count and b in adj.get(a, ()):
                adj[a].discard(b)
                adj[b].discard(a)
        for a, b in rows_now:
            adj.setdefault(a, set()).add(b)
            adj.setdefault(b, set()).add(a)
        for j in moved:
            if j in adj and not adj[j]:
                del adj[j]
        set_of = self._set_of
        gone = {id(s): s for j in moved if (s := set_of.get(j)) is not None}  # the sets the moved jobs were in
        kept = [s for s in self._sets if id(s) not in gone] if gone else list(self._sets)
        for s in gone.values():
            for j in s.jobs:
                del set_of[j]
        fresh = groups_reaching(self.view, adj, moved)
        for s in fresh:
            for j in s.jobs:
                set_of[j] = s
        self._sets = sorted(kept + fresh, key=lambda s: s.jmax) if fresh else kept
        return self._sets


def host_gpus(view: ClusterView, rule: TopologyRule, j: int, p: int) -> np.ndarray | None:
    """GPUs for pending job ``j`` among the GPUs running job ``p`` alone -- whole nodes of ``p`` first, so the
    job spans as few nodes as it can -- when the topology rule allows them; None otherwise."""
    need = int(view.req_gpus[j])
    singles = view.single_gpus_of(p)
    if len(singles) < need:
        return None
    nodes = view.gpu_node[singles]
    per_node = {int(n): int((nodes == n).sum()) for n in np.unique(nodes)}
    order = sorted(range(len(singles)), key=lambda i: (-per_node[int(nodes[i])], int(nodes[i]), int(singles[i])))
    g = np.sort(singles[order[:need]])
    return g if rule.allows(j, g) else None


def partner_gpus(view: ClusterView, rule: TopologyRule, j: int, p: int, unequal: bool) -> np.ndarray | None:
    """The GPUs pending job ``j`` would take beside running job ``p`` in Lucid's and Gandiva's packing: all of
    ``p``'s GPUs when ``p`` has ``j``'s size and runs alone (their only packing), or, with ``unequal`` (Gimbal's
    relaxation), GPUs of a larger ``p`` by :func:`host_gpus`; only what the ``rule`` allows."""
    n_j, n_p = int(view.req_gpus[j]), int(view.req_gpus[p])
    if n_p == n_j:
        if view.partners_of(p):
            return None
        g = np.sort(view.gpus_of(p))
        return g if rule.allows(j, g) else None
    if unequal and n_p > n_j:
        return host_gpus(view, rule, j, p)
    return None


class TenantWatch:
    """Which jobs' GPUs changed tenants since the last look: answers that read only a running job's GPUs and
    their tenants (its partners, its lone GPUs) stay true until then."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self._tenants: np.ndarray | None = None
        self._version: tuple[int, int] | None = None  # the view's tenants_version at the last look

    def moved(self) -> list[int] | None:
        """The jobs (and -1 for an empty slot) on every GPU whose tenants changed since the last call, before or
        after; None at the first call (everything is new). The tenants are read again only when the view's
        ``tenants_version`` moved."""
        rows = self.changes()
        if rows is None:
            return None
        if not rows:
            return []
        return sorted({j for _, before, now in rows for j in (*before, *now)})  # a few GPUs

    def changes(self) -> list[tuple[int, list[int], list[int]]] | None:
        """``(GPU, its two tenants before, now)`` for every GPU whose tenants changed since the last call (of this
        or :meth:`moved`), by GPU; None at the first call (everything is new)."""
        version = self.view.tenants_version
        if version == self._version:
            return []
        self._version = version
        now = self.view.tenants()
        before, self._tenants = self._tenants, now
        if before is None:
            return None
        changed = changed_rows(now, before)  # (the version moves with a start, stop or move: a change, nearly always)
        if not len(changed):
            return []
        return list(zip(changed.tolist(), before[changed].tolist(), now[changed].tolist(), strict=True))


def changed_rows(now: np.ndarray, before: np.ndarray) -> np.ndarray:
    """The GPUs (rows, ascending) whose two tenant slots differ between ``now`` and ``before`` (one pass per slot
    instead of a row-wise ``any``, which costs more than the comparison on a few hundred GPUs)."""
    ne = now != before
    return np.flatnonzero(ne[:, 0] | ne[:, 1])


MOST_SYNCS = 1
""":meth:`PartnerCache.forgot_since` answers None over more syncs than this (a reader then reads all again: on
PhillyScale, where many syncs pass between two walks, updating over their union cost ~8% more than reading afresh,
with 8 syncs too; after one sync the update costs what reading afresh does there, and less on a loaded month)."""


class PartnerCache:
    """:func:`partner_gpus` answers of one run, kept across decisions by (partner, GPUs asked): an answer reads only
    the partner's GPUs, their tenants and the partners' sizes (and the static topology), so it holds until a
    tenant of one of the partner's GPUs changes (:class:`TenantWatch`, asked at every :meth:`sync`, which every
    question does first). Per number of GPUs asked, two masks over the jobs (answer known, answer None) let
    :meth:`hosts` pass over many candidate partners at once. :meth:`stamp` tells a reader when the answers for
    a number of GPUs asked may have changed."""

    def __init__(self, view: ClusterView, rule: TopologyRule, unequal: bool) -> None:
        self.view, self.rule, self.unequal = view, rule, bool(unequal)
        self._watch = TenantWatch(view)
        self._answers: dict[int, dict[int, np.ndarray | None]] = {}  # by GPUs asked: partner -> answer
        self._known: dict[int, np.ndarray] = {}  # by GPUs asked: partners whose answer is kept
        self._none: dict[int, np.ndarray] = {}  # by GPUs asked: partners whose kept answer is None
        self._type: dict[int, np.ndarray] = {}  # by GPUs asked: type of the first GPU of a kept answer
        self._room: dict[int, np.ndarray] = {}  # by GPUs asked: least room (GB) over a kept answer's GPUs
        self._syncs = 0  # the syncs that forgot answers
        self._log: list[list[int]] = []  # per sync that forgot answers, in order: the jobs whose answers it forgot
        self._stamp = np.zeros(int(view.req_gpus.max(initial=0)) + 2, dtype=np.int64)  # by GPUs asked
        self._listeners: list[Callable[[list[int] | None], None]] = []

    def listen(self, forget: Callable[[list[int] | None], None]) -> None:
        """Have ``forget(jobs)`` told, at every :meth:`sync` that forgets answers, whose answers it forgot (None:
        every job's, at the first sync), so a reader keeping what it derived from the answers can follow."""
        self._listeners.append(forget)

    def sync(self) -> None:
        """Forget the answers of the jobs on GPUs whose tenants changed since the last question."""
        moved = self._watch.moved()
        if moved is None:
            for forget in self._listeners:
                forget(None)
            moved = list(range(self.view.n_jobs))
        moved = [p for p in moved if p >= 0]
        if moved:
            for forget in self._listeners:
                forget(moved)
            at = np.array(moved, dtype=np.int64)  # (one conversion for every size's mask)
            for known in self._known.values():
                known[at] = False
            self._syncs += 1
            self._log.append(moved)
            sizes = self.view.req_gpus[at]
            if self.unequal:  # a partner offers GPUs to jobs of its size or smaller
                self._stamp[:int(sizes.max()) + 1] = self._syncs
            else:
                self._stamp[sizes] = self._syncs

    def stamp(self, need: int) -> int:
        """The last :meth:`sync` that forgot an answer for a job asking ``need`` GPUs: while it stays the same,
        so does every answer for that number, and which running jobs can offer one (a job that starts or stops
        changes its GPUs' tenants)."""
        return int(self._stamp[need])

    def forgot_since(self, stamp: int, now: int, most: int = MOST_SYNCS) -> list[int] | None:
        """The jobs (ascending, once each) whose answers the syncs after :meth:`stamp` ``stamp`` up to ``now``
        forgot: every other job's answers, and whether it runs, stayed the same. None when ``stamp`` is 0 (the
        first sync forgot every job's) or more than ``most`` syncs lie between (read everything again instead).
        Read only."""
        if stamp <= 0 or now - stamp > most:
            return None
        if now - stamp == 1:
            return self._log[stamp]  # (one sync's: ascending, once each)
        return sorted({p for m in self._log[stamp:now] for p in m})

    def _fill(self, need: int, j: int, ps: np.ndarray) -> None:
        """Work out the answers of partners ``ps`` for a job asking ``need`` GPUs (``j``, one such job)."""
        v = self.view
        if need not in self._known:
            self._known[need] = np.zeros(v.n_jobs, dtype=bool)
            self._none[need] = np.zeros(v.n_jobs, dtype=bool)
            self._type[need] = np.zeros(v.n_jobs, dtype=np.int64)
            self._room[need] = np.zeros(v.n_jobs)
            self._answers[need] = {}
        answers, none, types, rooms = self._answers[need], self._none[need], self._type[need], self._room[need]
        for p in ps.tolist():
            g = answers[p] = partner_gpus(v, self.rule, j, p, self.unequal)
            none[p] = g is None
            if g is not None:  # a GPU's room as ``fits_on`` reads it: its memory less its tenant's worker
                types[p] = v.gpu_type[g[0]]
                held = [v.footprint(t) if t >= 0 else 0.0 for t in v.tenants(g)[:, 0].tolist()]
                rooms[p] = float(np.min(v.type_mem[v.gpu_type[g]] - np.array(held)))
        self._known[need][ps] = True

    def hosts(self, j: int, candidates: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """``(p, partner_gpus(j, p))`` for the running ``candidates`` (in their order) that offer pending job
        ``j`` GPUs (as of the last :meth:`sync`; read only)."""
        need = int(self.view.req_gpus[j])
        known = self._known.get(need)
        self._fill(need, j, candidates if known is None else candidates[~known[candidates]])
        answers = self._answers[need]
        return [(p, answers[p]) for p in candidates[~self._none[need][candidates]].tolist()]

    def rows(self, j: int, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`hosts` over arrays: the ``candidates`` that offer pending job ``j`` GPUs (in their order), the
        type of the first of those GPUs, and the least room (GB) a worker finds on them (a GPU's memory less its
        tenant's worker, as ``fits_on`` reads it; a job fits on all of them when ``fits_memory`` passes it
        there). The GPUs themselves: :meth:`gpus`."""
        need = int(self.view.req_gpus[j])
        known = self._known.get(need)
        self._fill(need, j, candidates if known is None else candidates[~known[candidates]])
        ps = candidates[~self._none[need][candidates]]
        return ps, self._type[need][ps], self._room[need][ps]

    def gpus(self, need: int, p: int) -> np.ndarray:
        """The kept GPUs partner ``p`` offers a job asking ``need`` GPUs (one of :meth:`rows`' partners)."""
        g = self._answers[need][p]
        assert g is not None
        return g

    def first_type(self, need: int, p: int) -> int:
        """The type of the first of the kept GPUs partner ``p`` offers a job asking ``need`` GPUs (as :meth:`rows`)."""
        return self._type[need].item(p)

    def room(self, need: int, p: int) -> float:
        """The least room (GB) on the kept GPUs partner ``p`` offers a job asking ``need`` GPUs (as :meth:`rows`)."""
        return self._room[need].item(p)
