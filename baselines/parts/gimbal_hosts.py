"""The hosts a Gimbal packing may put a job on (gimbal §5.1's leftover packing, as the packing schedulers ask it):
which running jobs offer their GPUs to a job of a given size (:func:`fitting_hosts`), and the least-utilized such
host, found from a kept order of the hosts by profiled demand (:class:`HostsByDemand`, answers from
:class:`~.gimbal_rules.PartnerCache`) instead of a scan over every running job (:func:`least_utilized_host`)."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
from heapq import heappop, heappush

import numpy as np
from gpucluster_env.baselines.parts.gimbal_rules import PartnerCache

from gpucluster_env.engine import Colocate
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.performance import fits_memory, footprint_gb


class _SizeOrder:
    """:class:`HostsByDemand`'s state for one number of GPUs asked."""

    __slots__ = ("order", "key", "pending", "bound", "dirty")

    def __init__(self) -> None:
        self.order: list[tuple[float, int]] = []  # (demand, partner) of the partners known to offer GPUs, ascending
        self.key: dict[int, tuple[float, int]] = {}  # partner -> its place in the order
        self.pending: list[tuple[float, int]] = []  # heap of (least demand it could have, job) whose answer is unknown
        self.bound: dict[int, float] = {}  # job -> its pending entry's bound (an entry with another bound is stale)
        self.dirty: set[int] = set()  # the jobs whose answer was forgotten since the last question


class HostsByDemand:
    """The partners that offer GPUs (:class:`PartnerCache`' answers) per number of GPUs asked, in the order of their
    profiled ``demand(partner, type of the first GPU offered)``, then index: :func:`least_utilized_host`'s choice
    is the first of them where the job fits in memory, so a packing reads the few partners before it, not every
    running job. A partner leaves the order when the cache forgets its answer (a tenant of its GPUs changed:
    :meth:`PartnerCache.listen`); a job that starts running changes its GPUs' tenants, so it is forgotten too.
    A forgotten job waits, with the least demand it could have (over the types of its GPUs: the GPUs it offers
    are some of them), until a question reaches that demand; only then is its answer worked out. One holding
    fewer GPUs alone than are asked offers none (``partner_gpus``) and does not wait. ``demand`` must be a
    fixed function of the partner and the GPU type (the profiled utilization)."""

    def __init__(self, hosts: PartnerCache, demand: Callable[[int, int], float]) -> None:
        self.hosts, self.demand, self.view = hosts, demand, hosts.view
        self._sizes: dict[int, _SizeOrder] = {}  # by GPUs asked
        hosts.listen(self._forget)

    def _forget(self, moved: list[int] | None) -> None:
        if moved is None:
            self._sizes = {}
            return
        for st in self._sizes.values():
            keys, order = st.key, st.order
            for p in moved:
                k = keys.pop(p, None)
                if k is not None:
                    del order[bisect_left(order, k)]
            st.dirty.update(moved)

    def _size(self, need: int) -> _SizeOrder:
        """The state for ``need`` GPUs with every forgotten job that could offer them waiting (``pending``)."""
        v = self.view
        st = self._sizes.get(need)
        if st is None:
            st = self._sizes[need] = _SizeOrder()
            jobs = v.running_jobs().tolist()
        elif st.dirty:
            for p in st.dirty:  # a waiting entry of a job forgotten again is stale (it may have stopped)
                st.bound.pop(p, None)
            jobs = [p for p in st.dirty if p >= 0 and v.is_running(p)]
            st.dirty.clear()
        else:
            return st
        req, unequal, types, demand = v.req_gpus, self.hosts.unequal, v.gpu_type, self.demand
        for p in jobs:
            n_p = int(req[p])
            if n_p == need or (unequal and n_p > need):  # sizes partner_gpus can offer
                g = v.gpus_of(p)
                if int((v.tenants(g)[:, 1] < 0).sum()) < need:
                    continue  # fewer GPUs held alone than asked: partner_gpus offers nothing until its GPUs change
                lb = min(demand(p, t) for t in set(types[g].tolist()))
                st.bound[p] = lb
                heappush(st.pending, (lb, p))
        return st

    def least(self, j: int, ok: Callable[[int], bool]) -> int | None:
        """The first partner, least demand first (then by index), that offers pending job ``j`` GPUs (as of the
        cache's last :meth:`~PartnerCache.sync`) and that ``ok`` passes (asked in that order); None: none. A
        waiting job is worked out before the first known partner whose place is not below its bound, so the
        answer is that of the whole order."""
        st = self._size(int(self.view.req_gpus[j]))
        order, pending, bound = st.order, st.pending, st.bound
        i = 0
        while True:
            nxt = order[i] if i < len(order) else None
            while pending and (nxt is None or pending[0] <= nxt):
                lb, q = heappop(pending)
                if bound.get(q) != lb:
                    continue  # stale: worked out already, or waiting again with another bound
                del bound[q]
                ps, types, _ = self.hosts.rows(j, np.array([q], dtype=np.int64))
                if len(ps):  # its place is not below its bound, so not below any partner already passed over
                    k = st.key[q] = (self.demand(q, int(types[0])), q)
                    insort(order, k)
                    nxt = order[i]
            if nxt is None:
                return None
            if ok(nxt[1]):
                return nxt[1]
            i += 1


def fitting_hosts(view: ClusterView, j: int, hosts: list[tuple[int, np.ndarray]]) -> list[tuple[int, np.ndarray]]:
    """The ``(partner, GPUs)`` of ``hosts`` (in their order) on all of whose GPUs pending job ``j`` fits in memory
    at accumulation 1 (one ``fits_on`` over all their GPUs)."""
    if not hosts:
        return []
    fit = view.fits_on(j, np.concatenate([g for _, g in hosts]), 1)
    if len(fit) == len(hosts):  # one GPU each: each host's answer is its GPU's
        return [h for h, ok in zip(hosts, fit.tolist(), strict=True) if ok]
    starts = np.cumsum([0, *(len(g) for _, g in hosts[:-1])])
    return [h for h, ok in zip(hosts, np.logical_and.reduceat(fit, starts).tolist(), strict=True) if ok]


def least_utilized_host(view: ClusterView, hosts: HostsByDemand, j: int,
                        skip: Callable[[int], bool] | None = None) -> Colocate | None:
    """Gandiva's packing choice for pending job ``j``, also Gavel+Gimbal's: beside the running job of least
    profiled demand (``hosts.demand(job, gpu_type)``) among those ``partner_gpus`` offers (the answers of
    ``hosts.hosts``, with its rule and relaxation; ties: the lowest index) where ``j`` fits in memory at
    accumulation 1 (``fits_on`` on all the GPUs offered: on the one of least room), hosts for which ``skip`` says
    True left out; None: no host."""
    cache = hosts.hosts
    cache.sync()
    need = int(view.req_gpus[j])
    fp = footprint_gb(view.model(j), view.batch(j), 1)
    p = hosts.least(j, lambda p: fits_memory(fp, cache.room(need, p)) and (skip is None or not skip(p)))
    if p is None:
        return None
    return Colocate(j, p, accumulation=1, gpus=tuple(int(x) for x in cache.gpus(need, p)))
