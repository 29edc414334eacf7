"""Placement: planning over the cluster state (:class:`Placement`). Each plan reads the engine's state (free GPUs
per node and type, slots, copies) and returns a GPU set; none changes anything. The engine's ``place``,
``colocate`` and ``fork`` actions apply what they return; agents call them through
:class:`~gpucluster_env.engine.view.ClusterView`.

The rule: fewest nodes first -- a gang goes on one node when one has room (the first of the smallest that
fit), else on the fullest nodes first (ties by node index); on each node the first free GPUs.
"""

from __future__ import annotations

import numpy as np

from ..performance import fits_memory
from .occupancy import Occupancy, colocate_order
from .state import RUNNING, EngineState


def pick_nodes(free: np.ndarray, need: int) -> list[tuple[int, int]]:
    """``(node, GPUs to take)`` pairs for ``need`` GPUs given the free GPUs per node (an int array): best fit
    on one node (the first of the smallest that fit), else the fullest nodes first (ties by index). ``[]``
    when too few are free."""
    if need <= 0 or int(free.sum()) < need:
        return []
    fits = np.flatnonzero(free >= need)
    if len(fits):
        return [(int(fits[0] if len(fits) == 1 else fits[np.argmin(free[fits])]), need)]
    picks: list[tuple[int, int]] = []
    left = need
    for node in np.argsort(-free, kind="stable").tolist():
        take = min(int(free[node]), left)
        picks.append((node, take))
        left -= take
        if not left:
            break
    return picks


def near_picks(nodes: list[int], free: list[int], need: int) -> list[tuple[int, int]]:
    """:func:`pick_nodes` over only ``nodes`` (ascending, with ``free`` GPUs each), every other node counted as
    full, for as many of ``need`` GPUs as they hold: the first of the smallest that fit, else the fullest
    first (ties by index)."""
    need = min(sum(free), need)
    if need <= 0:
        return []
    fits = [(f, k) for k, f in zip(nodes, free, strict=True) if f >= need]
    if fits:
        return [(min(fits)[1], need)]
    picks: list[tuple[int, int]] = []
    for f, k in sorted(zip(free, nodes, strict=True), key=lambda fk: (-fk[0], fk[1])):
        take = min(f, need)
        picks.append((k, take))
        need -= take
        if not need:
            break
    return picks


class Placement:
    """The placement rule over an :class:`~gpucluster_env.engine.state.EngineState`: plans a GPU set for a
    start, a colocation, a fork or a reallocation; changes nothing."""

    def __init__(self, state: EngineState, occupancy: Occupancy) -> None:
        self.state = state
        self.occupancy = occupancy

    def first_free_gpus(self, picks: list[tuple[int, int]], free: np.ndarray) -> np.ndarray:
        """The first free GPUs of each picked node (as many as picked); ``free``: the free GPUs per node."""
        st = self.state
        parts = []
        for node, k in picks:
            lo, size = st.node_start_l[node], st.node_size_l[node]
            if free[node] == size:  # the whole node is free
                parts.append(np.arange(lo, lo + k, dtype=np.int64))
            else:
                parts.append(np.flatnonzero(st.slot_job[lo:lo + size, 0] < 0)[:k] + lo)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


    def _free_per_node(self, types: list[int], exclude_nodes: np.ndarray | None) -> np.ndarray:
        """Free GPUs per node among ``types`` (a node holds one type), 0 on ``exclude_nodes``."""
        fnt = self.state.free_nt
        f = fnt[:, types[0]] if len(types) == 1 else fnt[:, types].sum(axis=1)
        if exclude_nodes is not None:
            f = f.copy()
            f[exclude_nodes] = 0
        return f


    def _place_on(self, need: int, types: list[int], exclude_nodes: np.ndarray | None) -> np.ndarray | None:
        f = self._free_per_node(types, exclude_nodes)
        picks = pick_nodes(f, need)
        return self.first_free_gpus(picks, f) if picks else None


    def plan_place(
        self, j: int, t: int | None, exclude_nodes: np.ndarray | None = None
    ) -> tuple[np.ndarray | None, int | None]:
        """Free GPUs for pending job ``j`` by the placement rule, and their one GPU type (None when mixed or when
        there is no set). With type ``t``: fewest nodes of that type. Without: the fastest type the job fits
        (alone, at some accumulation) that can host the whole gang; if none alone can, a mixed set over every
        type it fits, fullest nodes first. ``exclude_nodes``: nodes not to use."""
        st = self.state
        need = st.req_l[j]
        fits = st.fits_l[j]  # fits alone (at some accumulation) on each type
        if t is not None:
            if not fits[t]:
                return None, None
            g = self._place_on(need, [t], exclude_nodes)
            return (g, t) if g is not None else (None, None)
        fitting = [t for t in st.type_order_m[st.model_l[j]] if fits[t]]
        for t in fitting:
            g = self._place_on(need, [t], exclude_nodes)
            if g is not None:
                return g, t
        if len(fitting) > 1:
            return self._place_on(need, fitting, exclude_nodes), None
        return None, None


    def single_gpus(self, p: int) -> list[int]:
        """The GPUs running job ``p`` alone (every copy), in :func:`colocate_order`."""
        st = self.state
        sj = st.slot_job_flat
        return colocate_order(st.gpu_node_l, [x for x in self.occupancy.gpus_of(p).tolist() if sj.item(2 * x + 1) < 0])


    def plan_colocate(self, j: int, partner: int) -> tuple[np.ndarray | None, int | None]:
        """GPUs for pending job ``j`` sharing with running job ``partner``: the partner's singly-held GPUs (nodes
        holding most of them first), topped up with free GPUs on the same nodes, then elsewhere (fewest nodes
        first); None if that cannot be done. Also returns the GPU type of the set when every GPU of it is one of
        ``partner``'s, held by ``partner`` alone, all of one type (else None)."""
        st = self.state
        if st.status.item(partner) != RUNNING or partner == j:
            return None, None
        need = st.req_l[j]
        cs = st.copy_consts[partner]
        sj = st.slot_job_flat
        if len(cs) == 1 and cs[0].t >= 0 and cs[0].n >= need:  # one copy of one type, large enough
            c = cs[0]
            if c.n == 1:
                return (c.g.copy(), c.t) if sj.item(2 * c.gpu + 1) < 0 else (None, None)
            if c.n - st.held_shared.item(partner) >= need:  # its GPUs with an empty slot 1 suffice
                if st.held_shared.item(partner) == 0:
                    return c.colocation_order(st.gpu_node_l)[:need].copy(), c.t
                pg = colocate_order(st.gpu_node_l, [x for x in c.gl if sj.item(2 * x + 1) < 0])
                return np.array(pg[:need], dtype=np.int64), c.t
        pg = [x for x in self.occupancy.gpus_of(partner).tolist() if sj.item(2 * x + 1) < 0]
        if not pg:
            return None, None
        if len(pg) >= need:
            return np.array(colocate_order(st.gpu_node_l, pg)[:need], dtype=np.int64), None
        # top up with free GPUs: on the partner's nodes first, then elsewhere
        extra_need = need - len(pg)
        pnodes = sorted({st.gpu_node_l[x] for x in pg})
        free = st.free_nt.sum(axis=1)
        picks = near_picks(pnodes, [free.item(k) for k in pnodes], extra_need)
        rest = extra_need - sum(k for _, k in picks)
        if rest:
            free[pnodes] = 0
            far = pick_nodes(free, rest)
            if not far:
                return None, None
            picks += far
        return np.concatenate([np.array(pg, dtype=np.int64), self.first_free_gpus(picks, st.free_nt.sum(axis=1))]), None


    def plan_fork(self, j: int) -> np.ndarray | None:
        """Free GPUs for one more copy of running job ``j`` on nodes none of its copies use, where its footprint
        fits, or None (always None without rounds)."""
        st = self.state
        if st.config.round_s is None or st.status[j] != RUNNING:
            return None
        used = np.unique(st.gpu_node[self.occupancy.gpus_of(j)])
        g, _ = self.plan_place(j, None, exclude_nodes=used)
        if g is None or not fits_memory(st.footprint.item(j), float(st.type_mem[st.gpu_type[g]].min())):
            return None
        return g


    def plan_reallocate(self, j: int, t: int | None, need: int) -> tuple[np.ndarray | None, int | None]:
        """GPUs for running job ``j`` moved as ``need`` GPUs by the placement rule, counting the GPUs it holds
        alone as free (its old GPUs are freed as the new ones are taken): with type ``t``, fewest nodes of that
        type; without, the fastest type it fits that can host the gang, else mixed types. On each node its own GPUs
        come first, then free ones by index. Also returns the set's one GPU type (None when mixed or no set)."""
        st = self.state
        sj = st.slot_job_flat
        own = [x for x in self.occupancy.gpus_of(j).tolist() if sj.item(2 * x + 1) < 0]
        fnt = st.free_nt.copy()
        np.add.at(fnt, (st.gpu_node[own], st.gpu_type[own]), 1)
        fits = st.fits_l[j]
        if t is not None:
            candidates = [[t]] if fits[t] else []
        else:
            fitting = [u for u in st.type_order_m[st.model_l[j]] if fits[u]]
            candidates = [[u] for u in fitting] + ([fitting] if len(fitting) > 1 else [])
        for types in candidates:
            f = fnt[:, types].sum(axis=1)
            picks = pick_nodes(f, need)
            if not picks:
                continue
            parts = []
            for node, k in picks:
                lo, size = st.node_start_l[node], st.node_size_l[node]
                mine = [x for x in own if lo <= x < lo + size]
                free = (np.flatnonzero(st.slot_job[lo:lo + size, 0] < 0) + lo).tolist()
                parts += (mine + free)[:k]
            return np.array(parts, dtype=np.int64), (types[0] if len(types) == 1 else None)
        return None, None
