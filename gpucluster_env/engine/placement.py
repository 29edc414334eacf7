"""Placement: pure planning functions over the cluster state. Each reads the engine's state (free GPUs per
node and type, slots, copies) and returns a GPU set; none changes anything. The engine's ``place``,
``colocate`` and ``fork`` actions apply what they return; agents call them through
:class:`~gpucluster_env.engine.view.ClusterView`.

The rule: fewest nodes first -- a gang goes on one node when one has room (the first of the smallest that
fit), else on the fullest nodes first (ties by node index); on each node the first free GPUs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .perf import fits_memory
from .state import RUNNING


def pick_nodes(free: list[int], need: int) -> list[tuple[int, int]]:
    """``(node, GPUs to take)`` pairs for ``need`` GPUs given the free GPUs per node: best fit on one node,
    else the fullest nodes first (ties by index). ``[]`` when too few are free."""
    if need <= 0 or sum(free) < need:
        return []
    fit = [x for x in free if x >= need]
    if fit:
        return [(free.index(min(fit)), need)]
    picks: list[tuple[int, int]] = []
    left = need
    for node in sorted(range(len(free)), key=free.__getitem__, reverse=True):  # stable, as argsort(-free)
        take = min(free[node], left)
        if take:
            picks.append((node, take))
            left -= take
            if not left:
                break
    return picks


def first_free_gpus(eng: Any, picks: list[tuple[int, int]], free: list[int]) -> list[int]:
    """The first free GPUs of each picked node (as many as picked); ``free``: the free GPUs per node."""
    starts, sizes = eng._node_start_l, eng._node_size_l
    gl: list[int] = []
    for node, k in picks:
        lo = starts[node]
        if free[node] == sizes[node]:  # the whole node is free
            gl.extend(range(lo, lo + k))
        else:
            col = eng.slot_job[lo:lo + sizes[node], 0].tolist()
            gl.extend([lo + i for i, x in enumerate(col) if x < 0][:k])
    return gl


def _free_per_node(eng: Any, types: list[int], exclude_nodes: np.ndarray | None) -> list[int]:
    """Free GPUs per node among ``types`` (a node holds one type), 0 on ``exclude_nodes``."""
    fnt = eng.free_nt
    f = (fnt[:, types[0]] if len(types) == 1 else fnt[:, types].sum(axis=1)).tolist()
    if exclude_nodes is not None:
        for node in np.asarray(exclude_nodes).tolist():
            f[node] = 0
    return f


def _place_on(eng: Any, need: int, types: list[int], exclude_nodes: np.ndarray | None) -> np.ndarray | None:
    f = _free_per_node(eng, types, exclude_nodes)
    picks = pick_nodes(f, need)
    return np.array(first_free_gpus(eng, picks, f), dtype=np.int64) if picks else None


def plan_place(
    eng: Any, j: int, t: int | None, exclude_nodes: np.ndarray | None = None
) -> tuple[np.ndarray | None, int | None]:
    """Free GPUs for pending job ``j`` by the placement rule, and their one GPU type (None when mixed or when
    there is no set). With type ``t``: fewest nodes of that type. Without: the fastest type the job fits
    (alone, at some accumulation) that can host the whole gang; if none alone can, a mixed set over every
    type it fits, fullest nodes first. ``exclude_nodes``: nodes not to use."""
    need = eng._req_l[j]
    fits = eng._fits_l[j]  # fits alone (at some accumulation) on each type
    if t is not None:
        if not fits[t]:
            return None, None
        g = _place_on(eng, need, [t], exclude_nodes)
        return (g, t) if g is not None else (None, None)
    fitting = [t for t in eng._type_order_m[eng._model_l[j]] if fits[t]]
    for t in fitting:
        g = _place_on(eng, need, [t], exclude_nodes)
        if g is not None:
            return g, t
    if len(fitting) > 1:
        return _place_on(eng, need, fitting, exclude_nodes), None
    return None, None


def colocate_order(gpu_node: list[int], pg: list[int]) -> list[int]:
    """GPUs ``pg`` grouped by node, the nodes holding most of them first (ties by node index), GPUs in
    ``pg`` order within a node."""
    groups: dict[int, list[int]] = {}
    for x in pg:
        k = gpu_node[x]
        if k in groups:
            groups[k].append(x)
        else:
            groups[k] = [x]
    if len(groups) == 1:
        return pg
    return [x for k in sorted(groups, key=lambda k: (-len(groups[k]), k)) for x in groups[k]]


def single_gpus(eng: Any, p: int) -> list[int]:
    """The GPUs running job ``p`` alone (every copy), in :func:`colocate_order`."""
    sj = eng._sj_flat
    return colocate_order(eng._gpu_node_l, [x for x in eng.gpus_of(p).tolist() if sj.item(2 * x + 1) < 0])


def plan_colocate(eng: Any, j: int, partner: int) -> tuple[np.ndarray | None, int | None]:
    """GPUs for pending job ``j`` sharing with running job ``partner``: the partner's singly-held GPUs (nodes
    holding most of them first), topped up with free GPUs on the same nodes, then elsewhere (fewest nodes
    first); None if that cannot be done. Also returns the GPU type of the set when every GPU of it is one of
    ``partner``'s, held by ``partner`` alone, all of one type (else None)."""
    if eng.status.item(partner) != RUNNING or partner == j:
        return None, None
    need = eng._req_l[j]
    cs = eng._copy_consts[partner]
    sj = eng._sj_flat
    if len(cs) == 1 and cs[0].t >= 0 and cs[0].n >= need:  # one copy of one type, large enough
        c = cs[0]
        if c.n == 1:
            return (c.g.copy(), c.t) if sj.item(2 * c.gpu + 1) < 0 else (None, None)
        if c.n - eng.held_shared.item(partner) >= need:  # its GPUs with an empty slot 1 suffice
            if eng.held_shared.item(partner) == 0:
                if c.order is None:
                    c.order = np.array(colocate_order(eng._gpu_node_l, c.gl), dtype=np.int64)
                return c.order[:need].copy(), c.t
            pg = colocate_order(eng._gpu_node_l, [x for x in c.gl if sj.item(2 * x + 1) < 0])
            return np.array(pg[:need], dtype=np.int64), c.t
    pg = [x for x in eng.gpus_of(partner).tolist() if sj.item(2 * x + 1) < 0]
    if not pg:
        return None, None
    if len(pg) >= need:
        return np.array(colocate_order(eng._gpu_node_l, pg)[:need], dtype=np.int64), None
    # top up with free GPUs: on the partner's nodes first, then elsewhere
    extra_need = need - len(pg)
    pnodes = set(eng._gpu_node_l[x] for x in pg)
    free = eng.free_nt.sum(axis=1).tolist()
    near_f = [f if node in pnodes else 0 for node, f in enumerate(free)]
    picks = pick_nodes(near_f, min(sum(near_f), extra_need))
    rest = extra_need - sum(k for _, k in picks)
    if rest:
        far = pick_nodes([0 if node in pnodes else f for node, f in enumerate(free)], rest)
        if not far:
            return None, None
        picks += far
    return np.array(pg + first_free_gpus(eng, picks, free), dtype=np.int64), None


def plan_fork(eng: Any, j: int) -> np.ndarray | None:
    """Free GPUs for one more copy of running job ``j`` on nodes none of its copies use, where its footprint
    fits, or None (always None without rounds)."""
    if eng.config.round_s is None or eng.status[j] != RUNNING:
        return None
    used = np.unique(eng.gpu_node[eng.gpus_of(j)])
    g, _ = plan_place(eng, j, None, exclude_nodes=used)
    if g is None or not fits_memory(eng.footprint.item(j), float(eng.type_mem[eng.gpu_type[g]].min())):
        return None
    return g
