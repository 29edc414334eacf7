"""A packing scheduler's queue walk answered over arrays: what Lucid and Gandiva (and their Gimbal variants) ask of
each job their walk reaches (:meth:`.job_shape.FailedShapes.walk`) -- may it start beside a running partner, may
it start on free GPUs -- worked out for all those jobs at once, in one cluster state.

* :class:`HostRows`: per number of GPUs asked, the running jobs that offer a pending job GPUs (the kept answers
  of :class:`~.gimbal_rules.PartnerCache`), with the GPU type and the least memory room of those GPUs, as arrays;
  read once per cluster state and size.
* :class:`Footprints`: each pending job's worker memory at accumulation 1, the ``fits_on`` side of a job.
* :func:`first_true`: the first passing partner of each job, over a jobs x partners mask.
* :func:`free_start`: a start on free GPUs, with the placement asked only when enough GPUs are free;
  :class:`FreeStarts`: its answers kept by job shape while the free GPUs stay.

Each answer is the one the per-job question (``pick_partner``, ``least_utilized_host``, ``plan_place``) gives: a
partner's memory test ``fits_on`` passes on all of its GPUs exactly when it passes on the one of least room, and
the placement rule finds no set when fewer GPUs are free than the job asks (fewest nodes of one type, or of every
type it fits: never more than are free).
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


class HostRows:
    """The partners a pending job may pack beside, per number of GPUs asked, as arrays (by job index), kept while
    the cache's :meth:`~.gimbal_rules.PartnerCache.stamp` for that number stays (no job that could offer such a
    job GPUs started, stopped or saw its GPUs' tenants change), and the partner each pending job was given over
    them (:meth:`split`, :meth:`keep`). A walk passes its ``state`` object (a new one when the GPUs' tenants
    changed): the cache is synced once per state."""

    def __init__(self, view: ClusterView, hosts: PartnerCache) -> None:
        self.view, self.hosts = view, hosts
        self.footprints = Footprints(view)
        self._state: Hashable = None
        self._run: np.ndarray | None = None  # running jobs in this state (read when a table is built)
        self._size = np.zeros(0, dtype=np.int64)
        self._tables: dict[int, tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}  # need -> (stamp, table)
        self._kept: dict[Hashable, tuple[tuple[np.ndarray, np.ndarray, np.ndarray], Hashable, int]] = {}

    def by_size(self, state: Hashable, jobs: np.ndarray
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Pending ``jobs`` grouped by size, each group with its :meth:`table` (sizes no partner offers GPUs
        left out): ``(group, partners, type, fits)``, ``fits`` the group x partners mask of ``fits_on`` at
        accumulation 1 on all of a partner's GPUs."""
        need = self.view.req_gpus[jobs]
        for n in set(need.tolist()):
            js = jobs if len(jobs) == 1 else jobs[need == n]
            ps, types, rooms = self.table(state, int(js[0]))
            if len(ps):
                yield js, ps, types, fits_memory(self.footprints.of(js)[:, None], rooms[None, :])

    def table(self, state: Hashable, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
            if self._run is None:
                self._run = v.running_jobs()
                self._size = v.req_gpus[self._run]
            run, n_p = self._run, self._size
            ok = n_p >= need if self.hosts.unequal else n_p == need
            t = self._tables[need] = (stamp, self.hosts.rows(j, run[ok]))
        return t[1]

    def split(self, state: Hashable, jobs: np.ndarray, keys: list[Hashable], tag: Hashable
              ) -> tuple[dict[int, int], np.ndarray]:
        """The partners of pending ``jobs`` (in this state) that are known without working them out -- kept by
        :meth:`keep` over the same :meth:`table` object with the same ``tag`` (what else the policy's answer
        reads), or none when no partner offers GPUs -- as ``{job: partner or -1}``, and the jobs left. ``keys``:
        one per job, all its answer reads of it but its size."""
        got: dict[int, int] = {}
        left: list[int] = []
        tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        kept = self._kept
        for j, n, k in zip(jobs.tolist(), self.view.req_gpus[jobs].tolist(), keys, strict=True):
            t = tables.get(n)
            if t is None:
                t = tables[n] = self.table(state, j)
            a = kept.get(k)
            if a is not None and a[0] is t and a[1] == tag:
                got[j] = a[2]
            elif not len(t[0]):
                got[j] = -1
            else:
                left.append(j)
        return got, np.array(left, dtype=np.int64)

    def keep(self, key: Hashable, j: int, tag: Hashable, partner: int) -> None:
        """Remember ``partner`` (-1: none) as the answer of pending job ``j`` (``key``, ``tag``: as :meth:`split`)
        over the :meth:`table` of its size now."""
        self._kept[key] = (self._tables[int(self.view.req_gpus[j])][1], tag, partner)


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
        self._all = np.arange(view.num_gpus)
        self._state: Hashable = None
        self._free: bytes | None = None
        self._kept: dict[int, np.ndarray | None] = {}  # shape code -> free_start's GPUs (None: no start)

    def start(self, state: Hashable, j: int, code: int) -> Place | None:
        """:func:`free_start` of pending job ``j`` (of shape ``code``) in this ``state``."""
        v = self.view
        if v.num_free() < int(v.req_gpus[j]):
            return None
        if state is not self._state:
            self._state = state
            free = (v.tenants(self._all)[:, 0] < 0).tobytes()
            if free != self._free:
                self._free, self._kept = free, {}
        if code in self._kept:
            g = self._kept[code]
        else:
            a = free_start(v, self.rule, j)
            g = self._kept[code] = None if a is None else a.gpus
        return None if g is None else Place(j, gpus=g)


def free_start(view: ClusterView, rule: TopologyRule, j: int) -> Place | None:
    """Pending job ``j`` on the free GPUs the engine's placement gives it, when the ``rule`` allows them; None
    when there are none (the placement is not asked when fewer GPUs are free than ``j`` asks)."""
    if view.num_free() < int(view.req_gpus[j]):
        return None
    g = view.plan_place(j)
    if g is not None and rule.allows(j, g):
        return Place(j, gpus=tuple(int(x) for x in g))
    return None
