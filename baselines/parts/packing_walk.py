"""A packing scheduler's queue walk answered over arrays: what Lucid and Gandiva (and their Gimbal variants) ask of
each job their walk reaches (:meth:`.job_shape.FailedShapes.walk`) -- may it start beside a running partner, may
it start on free GPUs -- worked out for all those jobs at once, in one cluster state.

* :class:`HostRows`: per number of GPUs asked, the running jobs that offer a pending job GPUs (the kept answers
  of :class:`~.gimbal_rules.PartnerCache`), with the GPU type and the least memory room of those GPUs, as arrays;
  updated from the jobs whose GPUs' tenants changed, and each pending job's partner kept and weighed only
  against the rows that changed since.
* :class:`Footprints`: each pending job's worker memory at accumulation 1, the ``fits_on`` side of a job.
* :func:`first_true`: the first passing partner of each job, over a jobs x partners mask.
* :func:`free_start`: a start on free GPUs, with the placement asked only when enough GPUs are free;
  :class:`FreeStarts`: its answers kept by job shape while the free GPUs stay, and none asked for a job the
  topology rule would refuse every free placement (:class:`NodesAllowed`).

Each answer is the one the per-job question (``pick_partner``, ``least_utilized_host``, ``plan_place``) gives: a
partner's memory test ``fits_on`` passes on all of its GPUs exactly when it passes on the one of least room, and
the placement rule finds no set when fewer GPUs are free than the job asks (fewest nodes of one type, or of every
type it fits: never more than are free), nor one the topology rule allows on more nodes than it allows a job of
that size on any types (``tests/baselines/test_decision_memory.py`` checks every kept answer against the
question asked afresh, at every decision of real runs).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator

import numpy as np
from gpucluster_env.baselines.parts.gimbal_rules import PartnerCache, TopologyRule

from gpucluster_env.engine import Place
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.performance import fits_memory, footprint_gb


class Footprints:
    """GPU memory (GB) of one worker of pending jobs at accumulation 1 (what ``fits_on`` compares with a GPU's
    room), worked out once a job: a pending job runs at its stated batch (as :class:`.job_shape.FailedShapes`
    reads its shape)."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self._fp = np.full(view.n_jobs, np.nan)

    def of(self, jobs: np.ndarray) -> np.ndarray:
        """The footprints of pending ``jobs`` (a fresh array)."""
        fp = self._fp[jobs]
        new = np.isnan(fp)
        if new.any():
            v = self.view
            for j in jobs[new].tolist():
                self._fp[j] = footprint_gb(v.model(j), v.batch(j), 1)
            fp = self._fp[jobs]
        return fp


Rows = tuple[np.ndarray, np.ndarray, np.ndarray]
"""A :meth:`HostRows.table`: ``(partners, type, room)``."""
Partial = dict[int, tuple[int, list[tuple[int, int]]]]
""":meth:`HostRows.split`'s jobs to weigh against changed rows, by size: the oldest of the stamps of their kept
answers, and each job with its kept partner."""


class HostRows:
    """The partners a pending job may pack beside, per number of GPUs asked, as arrays (by job index), and the
    partner each pending job was given over them (:meth:`split`, :meth:`keep`). A size's table stays while the
    cache's :meth:`~.gimbal_rules.PartnerCache.stamp` for that size stays (no job that could offer such a job
    GPUs started, stopped or saw its GPUs' tenants change); when it moves, the table is updated from the jobs
    whose answers the cache forgot since (:meth:`~.gimbal_rules.PartnerCache.forgot_since`: they leave it and
    those that offer GPUs come back; every other row is as it was), and a kept partner is checked only against
    the rows of those jobs (:meth:`split`). A walk passes its ``state`` object (a new one when the GPUs' tenants
    changed): the cache is synced once per state."""

    def __init__(self, view: ClusterView, hosts: PartnerCache) -> None:
        self.view, self.hosts = view, hosts
        self.footprints = Footprints(view)
        self._state: Hashable = None
        self._run: np.ndarray | None = None  # running jobs in this state (read when a table is built afresh)
        self._size = np.zeros(0, dtype=np.int64)
        self._tables: dict[int, tuple[int, Rows]] = {}  # need -> (stamp, table)
        self._kept: dict[Hashable, tuple[int, Hashable, int]] = {}  # key -> (stamp of its table, tag, partner)
        self._forgot: tuple[object, np.ndarray, np.ndarray] = (None, self._size, self._size)  # the last list
        # _update was given: it, as an array, and its jobs' sizes

    def by_size(self, state: Hashable, jobs: np.ndarray, partial: Partial | None = None
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Pending ``jobs`` grouped by size, each group with its :meth:`table` (sizes no partner offers GPUs
        left out), then the ``partial`` jobs of :meth:`split` grouped by size, each group with the rows of its
        table the cache forgot since the oldest of their stamps (a row that stayed since a job's own stamp was
        weighed against its kept partner then, and loses to it still): ``(group, partners, type, fits, kept)``,
        ``fits`` the group x partners mask of ``fits_on`` at accumulation 1 on all of a partner's GPUs, ``kept``
        each job's kept partner, to be weighed against those rows (-1: none; all -1 for the whole tables)."""
        need = self.view.req_gpus[jobs]
        for n in set(need.tolist()):
            js = jobs if len(jobs) == 1 else jobs[need == n]
            ps, types, rooms = self.table(state, int(js[0]))
            if len(ps):
                yield (js, ps, types, fits_memory(self.footprints.of(js)[:, None], rooms[None, :]),
                       np.full(len(js), -1, dtype=np.int64))
        for n, (oldest, rows) in (partial or {}).items():
            stamp, (ps, types, rooms) = self._tables[n]
            forgot = self.hosts.forgot_since(oldest, stamp)
            assert forgot is not None  # (no older than a stamp split found within reach)
            cols = positions(ps, forgot)
            js = np.array([j for j, _ in rows], dtype=np.int64)
            yield (js, ps[cols], types[cols], fits_memory(self.footprints.of(js)[:, None], rooms[cols][None, :]),
                   np.array([p for _, p in rows], dtype=np.int64))

    def table(self, state: Hashable, j: int) -> Rows:
        """``(partners, type, room)`` for pending job ``j``: the running jobs of its size (or larger, when the
        cache's ``unequal`` allows) that offer it GPUs, by index; the type of the first of those GPUs; their
        least room (GB) (:meth:`~.gimbal_rules.PartnerCache.rows`). The same object for every job of ``j``'s
        size while the cache's stamp for that size stays."""
        v = self.view
        if state is not self._state:
            self._state, self._run = state, None
            self.hosts.sync()
        need = int(v.req_gpus[j])
        stamp = self.hosts.stamp(need)
        t = self._tables.get(need)
        if t is None or t[0] != stamp:
            # (updated only where a job's change moves the tables of every smaller size, with unequal partners:
            # over one size's few rows, reading them afresh costs less)
            forgot = None if t is None or not self.hosts.unequal else self.hosts.forgot_since(t[0], stamp)
            if forgot is not None:
                rows = self._update(t[1], forgot, j)
            else:
                if self._run is None:
                    self._run = v.running_jobs()
                    self._size = v.req_gpus[self._run]
                run, n_p = self._run, self._size
                rows = self.hosts.rows(j, run[n_p >= need if self.hosts.unequal else n_p == need])
            t = self._tables[need] = (stamp, rows)
        return t[1]

    def _update(self, rows: Rows, forgot_jobs: list[int], j: int) -> Rows:
        """A size's table ``rows`` (for pending job ``j``'s size) after the cache forgot the answers of
        ``forgot_jobs`` (ascending): their rows out, and those of them that run, have a size that may offer ``j``
        GPUs and offer them, in (the table read afresh: :meth:`table`)."""
        v = self.view
        need = int(v.req_gpus[j])
        if forgot_jobs is not self._forgot[0]:  # (one sync's list, asked again for each size)
            f = np.array(forgot_jobs, dtype=np.int64)
            self._forgot = (forgot_jobs, f, v.req_gpus[f])
        _, forgot, n_f = self._forgot
        forgot = forgot[n_f >= need if self.hosts.unequal else n_f == need]
        if not len(forgot):
            return rows
        ps, types, rooms = rows
        keep = np.ones(len(ps), dtype=bool)
        keep[positions(ps, forgot)] = False
        new_ps, new_types, new_rooms = self.hosts.rows(j, forgot[v.running_of(forgot)])
        if not len(new_ps):
            return ps[keep], types[keep], rooms[keep]
        # (the forgotten rows out, the new ones in, by job index: no job in both)
        ps = np.concatenate((ps[keep], new_ps))
        order = np.argsort(ps, kind="stable")
        return (ps[order], np.concatenate((types[keep], new_types))[order],
                np.concatenate((rooms[keep], new_rooms))[order])

    def split(self, state: Hashable, jobs: np.ndarray, keys: list[Hashable], tag: Hashable
              ) -> tuple[dict[int, int], np.ndarray, Partial]:
        """The partners of pending ``jobs`` (in this state) that are known without working them out -- kept by
        :meth:`keep` over the :meth:`table` of their size now with the same ``tag`` (what else the policy's
        answer reads), or none when no partner offers GPUs -- as ``{job: partner or -1}``; the jobs left to work
        out over their whole table; and, by size, the ``(job, kept partner)`` of the jobs whose
        answer was kept over an older table of their size whose kept partner's row stayed the same: only the
        rows the cache forgot since then can change their answer (:meth:`by_size`). ``keys``: one per job, all
        its answer reads of it but its size."""
        got: dict[int, int] = {}
        left: list[int] = []
        partial: Partial = {}
        forgot: dict[tuple[int, int], set[int] | None] = {}
        tables: dict[int, tuple[int, Rows]] = {}
        kept = self._kept
        for j, n, k in zip(jobs.tolist(), self.view.req_gpus[jobs].tolist(), keys, strict=True):
            t = tables.get(n)
            if t is None:
                self.table(state, j)
                t = tables[n] = self._tables[n]
            a = kept.get(k)
            if not len(t[1][0]):
                got[j] = -1
            elif a is None or a[1] != tag:
                left.append(j)
            elif a[0] == t[0]:
                got[j] = a[2]
            elif not self.hosts.unequal:  # (as the tables: worked out afresh over one size's few rows)
                left.append(j)
            else:
                f = forgot.get((n, a[0]), ())
                if f == ():
                    arr = self.hosts.forgot_since(a[0], t[0])
                    f = forgot[(n, a[0])] = None if arr is None else set(arr)
                if f is None or a[2] in f:
                    left.append(j)
                else:
                    oldest, rows = partial.get(n, (a[0], []))
                    partial[n] = (min(oldest, a[0]), rows)
                    rows.append((j, a[2]))
        if partial and left:  # a size worked out over its whole table anyway: its jobs go with it (one matrix)
            sizes = set(self.view.req_gpus[left].tolist())
            for n in [n for n in partial if n in sizes]:
                left += [j for j, _ in partial.pop(n)[1]]
        return got, np.array(left, dtype=np.int64), partial

    def keep(self, key: Hashable, j: int, tag: Hashable, partner: int) -> None:
        """Remember ``partner`` (-1: none) as the answer of pending job ``j`` (``key``, ``tag``: as :meth:`split`)
        over the :meth:`table` of its size now."""
        self._kept[key] = (self._tables[int(self.view.req_gpus[j])][0], tag, partner)


def positions(ps: np.ndarray, jobs: list[int] | np.ndarray) -> np.ndarray:
    """The positions (ascending) in ascending ``ps`` of those of ascending ``jobs`` it holds."""
    f = np.asarray(jobs, dtype=np.int64)
    at = np.searchsorted(ps, f)
    hit = at < len(ps)
    hit[hit] = ps[at[hit]] == f[hit]
    return at[hit]


def first_true(ok: np.ndarray) -> np.ndarray:
    """Per row of the boolean matrix ``ok``: the column of its first True, or -1 when it has none."""
    if ok.shape[1] == 0:
        return np.full(ok.shape[0], -1, dtype=np.int64)
    first = ok.argmax(axis=1)
    return np.where(ok[np.arange(ok.shape[0]), first], first, -1)


class FreeStarts:
    """:func:`free_start` answers kept by job shape (:class:`.job_shape.FailedShapes`' code: the placement reads
    of a job its GPUs asked, model and batch, the rule its GPUs asked) while the free GPUs stay the same (the
    placement reads the free GPUs per node and which GPUs are free; the rule, for a set of free GPUs, the nodes
    it spans): a start beside a partner, or a job ending beside one, leaves them as they were. A walk passes
    its ``state`` object (a new one when the GPUs' tenants changed): the free GPUs are read once per state."""

    def __init__(self, view: ClusterView, rule: TopologyRule) -> None:
        self.view, self.rule = view, rule
        self._state: Hashable = None
        self._free: bytes | None = None
        self._kept: dict[int, np.ndarray | None] = {}  # shape code -> free_start's GPUs (None: no start)
        self._allowed = NodesAllowed(view) if rule.on else None
        self._free_cum: np.ndarray | None = None  # free GPUs on the 1, 2, ... nodes with most free (None: unread)

    def start(self, state: Hashable, j: int, code: int) -> Place | None:
        """:func:`free_start` of pending job ``j`` (of shape ``code``) in this ``state``. A job whose GPUs asked
        the nodes with the most free GPUs hold only on more nodes than the rule allows it on any types
        (:class:`NodesAllowed`) is not placed: every placement would break the rule."""
        v = self.view
        need = int(v.req_gpus[j])
        if v.num_free() < need:
            return None
        if state is not self._state:
            self._state = state
            free = (v.tenants()[:, 0] < 0).tobytes()
            if free != self._free:
                self._free, self._kept, self._free_cum = free, {}, None
        if code in self._kept:
            g = self._kept[code]
        elif self._refused(need):
            g = self._kept[code] = None
        else:
            a = free_start(v, self.rule, j)
            g = self._kept[code] = None if a is None else a.gpus
        return None if g is None else Place(j, gpus=g)

    def _refused(self, need: int) -> bool:
        """Whether any free GPUs a job of ``need`` GPUs could take now span more nodes than the rule allows it on
        any types (:class:`NodesAllowed`; the free GPUs per node read at the first question after they changed)."""
        if self._allowed is None or need == 1:
            return False  # (one free GPU, which start() has seen, is on one node: never more than the rule allows)
        if self._free_cum is None:
            self._free_cum = np.cumsum(np.sort(self.view.free_by_node_type().sum(axis=1))[::-1])
        return int(np.searchsorted(self._free_cum, need)) + 1 > self._allowed.most(need)


class NodesAllowed:
    """The most nodes the topology rule lets a job of ``n`` GPUs span on any GPU types: the rule allows as few
    nodes as the largest nodes of its GPUs' types need to hold ``n``, so the most is that of the one type that
    needs the most (more types only add nodes to choose from). A start on free GPUs spans at least as many nodes
    as the nodes with the most free GPUs need to hold ``n``; when that is more, no free start keeps the rule."""

    def __init__(self, view: ClusterView) -> None:
        node_type = np.zeros(int(view.gpu_node.max()) + 1, dtype=np.int64)
        node_type[view.gpu_node] = view.gpu_type
        sizes = np.bincount(view.gpu_node)
        self._cum = [np.cumsum(np.sort(sizes[node_type == t])[::-1]) for t in np.unique(view.gpu_type).tolist()]
        self._most: dict[int, int] = {}

    def most(self, n: int) -> int:
        """The most nodes a start of ``n`` GPUs may span under the rule, on any GPU types (see the class)."""
        m = self._most.get(n)
        if m is None:
            m = self._most[n] = max(int(np.searchsorted(c, n)) + 1 for c in self._cum)
        return m


def free_start(view: ClusterView, rule: TopologyRule, j: int) -> Place | None:
    """Pending job ``j`` on the free GPUs the engine's placement gives it, when the ``rule`` allows them; None
    when there are none (the placement is not asked when fewer GPUs are free than ``j`` asks)."""
    if view.num_free() < int(view.req_gpus[j]):
        return None
    g = view.plan_place(j)
    if g is not None and rule.allows(j, g):
        return Place(j, gpus=tuple(int(x) for x in g))
    return None
