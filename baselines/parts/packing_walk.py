"""A packing scheduler's queue walk answered over arrays: what Lucid and Gandiva (and their Gimbal variants) ask of
each job their walk reaches (:meth:`.job_shape.FailedShapes.walk`) -- may it start beside a running partner, may
it start on free GPUs -- worked out for all those jobs at once, in one cluster state.

* :class:`HostRows`: per number of GPUs asked, the running jobs that offer a pending job GPUs (the kept answers
  of :class:`~.gimbal_rules.PartnerCache`), with the GPU type and the least memory room of those GPUs, as arrays;
  read once per cluster state and size.
* :class:`Footprints`: each pending job's worker memory at accumulation 1, the ``fits_on`` side of a job.
* :func:`first_true`: the first passing partner of each job, over a jobs x partners mask.
* :func:`free_start`: a start on free GPUs, with the placement asked only when enough GPUs are free.

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
    """The partners a pending job may pack beside, per number of GPUs asked, as arrays (by job index), kept for
    one cluster state (the ``state`` object of the walk asking: a new one when the GPUs' tenants changed)."""

    def __init__(self, view: ClusterView, hosts: PartnerCache) -> None:
        self.view, self.hosts = view, hosts
        self.footprints = Footprints(view)
        self._state: Hashable = None
        self._run = self._size = np.zeros(0, dtype=np.int64)  # running jobs and their sizes, in this state
        self._tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

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
        least room (GB) (:meth:`~.gimbal_rules.PartnerCache.rows`). The same for every job of ``j``'s size
        while ``state`` is the same object."""
        v = self.view
        if state is not self._state:
            self._state, self._tables = state, {}
            self.hosts.sync()
            self._run = v.running_jobs()
            self._size = v.req_gpus[self._run]
        need = int(v.req_gpus[j])
        t = self._tables.get(need)
        if t is None:
            run, n_p = self._run, self._size
            ok = n_p >= need if self.hosts.unequal else n_p == need
            t = self._tables[need] = self.hosts.rows(j, run[ok])
        return t


def first_true(ok: np.ndarray) -> np.ndarray:
    """Per row of the boolean matrix ``ok``: the column of its first True, or -1 when it has none."""
    if ok.shape[1] == 0:
        return np.full(ok.shape[0], -1, dtype=np.int64)
    first = ok.argmax(axis=1)
    return np.where(ok[np.arange(ok.shape[0]), first], first, -1)


def free_start(view: ClusterView, rule: TopologyRule, j: int) -> Place | None:
    """Pending job ``j`` on the free GPUs the engine's placement gives it, when the ``rule`` allows them; None
    when there are none (the placement is not asked when fewer GPUs are free than ``j`` asks)."""
    if view.num_free() < int(view.req_gpus[j]):
        return None
    g = view.plan_place(j)
    if g is not None and rule.allows(j, g):
        return Place(j, gpus=tuple(int(x) for x in g))
    return None
