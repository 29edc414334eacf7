"""Occupancy: which job holds which GPU slot at which MPS share, a job's copies, and the counts kept beside
the slots (free GPUs per node and type, busy and shared GPUs per type, GPUs each job holds and shares, who
shares with whom). :meth:`Occupancy.occupy` and :meth:`Occupancy.vacate` are the only writers of slots.

A job runs as one or more *copies* (more than one only when forked, HadarE), each a gang of GPUs
(:class:`Copy`); its rate is the sum of its copies' rates.
"""

from __future__ import annotations

import copy

import numpy as np

from ..performance import CopyModel, footprint_gb
from .state import SHARE_MIN_UNITS, EngineState


def colocate_order(gpu_node: list[int], pg: list[int]) -> list[int]:
    """GPUs ``pg`` grouped by node, the nodes holding most of them first (ties by node index), GPUs in
    ``pg`` order within a node (the order a colocation takes a partner's GPUs in)."""
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


class Copy:
    """One running copy of a job: its GPUs and, for the hot paths, what it keeps while it runs.

    ``g`` / ``gl``: the GPUs (array / list); ``k``: the performance model's constants
    (:class:`~gpucluster_env.performance.CopyModel`); ``gpu``: the GPU when ``n == 1``; ``t``: the one GPU
    type, or -1 when mixed (``types``: each GPU's type); ``xi_tl`` / ``xi_tm``: for one type, the worker-xi
    table of that type and the job's model, as nested lists / array, indexed ``[partner model + 1, own share,
    partner share]``. Computed when first needed: ``order`` (plan_colocate's order of the GPUs) and ``g2`` /
    ``g2p1`` (flat slot indices)."""

    __slots__ = ("g", "gl", "n", "gpu", "t", "types", "n_nodes", "k", "xi_tl", "xi_tm", "order", "_g2", "_g2p1")

    g: np.ndarray
    gl: list[int]
    n: int
    gpu: int
    t: int
    types: np.ndarray
    n_nodes: int
    k: CopyModel
    xi_tl: list
    xi_tm: np.ndarray
    order: np.ndarray | None

    @property
    def solo_iter(self) -> float:
        """Iteration time alone at full share (xi = 1 on every worker)."""
        return self.k.solo_iter

    @property
    def g2(self) -> np.ndarray:
        """Flat indices of slot 0 of each GPU in the (G, 2) slot arrays."""
        if self._g2 is None:
            self._g2 = 2 * self.g
        return self._g2

    @property
    def g2p1(self) -> np.ndarray:
        """Flat indices of slot 1 of each GPU."""
        if self._g2p1 is None:
            self._g2p1 = self.g2 + 1
        return self._g2p1

    def with_model(self, k: CopyModel) -> Copy:
        """This copy under the performance constants ``k``, as a new object (a clone shares the running copies
        with its original, :meth:`EngineState.shared_memo
        <gpucluster_env.engine.state.EngineState.shared_memo>`: they are replaced, never changed)."""
        c = copy.copy(self)
        c.k = k
        return c

    def colocation_order(self, gpu_node: list[int]) -> np.ndarray:
        """The copy's GPUs in :func:`colocate_order` (``gpu_node``: each GPU's node), kept once computed."""
        if self.order is None:
            self.order = np.array(colocate_order(gpu_node, self.gl), dtype=np.int64)
        return self.order


def _tally(key: list[int], gpus: list[int]) -> dict[int, int]:
    """How many of ``gpus`` have each value of ``key`` (a per-GPU list: type, or flat node-type index)."""
    out: dict[int, int] = {}
    for x in gpus:
        k = key[x]
        out[k] = out.get(k, 0) + 1
    return out


class Occupancy:
    """Slots, shares, copies and their counts on an :class:`~gpucluster_env.engine.state.EngineState`: the one
    writer of the slot arrays (:meth:`occupy`, :meth:`vacate`), of each job's copies and what follows them
    (share range, accumulation, footprint, per-GPU batch, forked set, most copies), and the queries of who holds
    what."""

    def __init__(self, state: EngineState) -> None:
        self.state = state

    def occupy(self, j: int, c: Copy) -> set[int]:
        """Put job ``j``'s copy ``c`` on its GPUs: slot 0 of a free GPU, slot 1 beside a GPU's one tenant, at
        full share. Returns the partners it now shares with."""
        s = self.state
        s.gpu_version += 1
        s.sm_activity.mark(c.gl)
        sjf, ssf, full = s.slot_job_flat, s.slot_share_flat, s.share_units
        tenants: dict[int, int] = {}  # partner: GPUs shared with it, in order of first GPU
        alone: list[int] = []
        shared: list[int] = []
        for x in c.gl:
            i = 2 * x
            o = sjf.item(i)
            if o < 0:
                sjf[i] = j
                ssf[i] = full
                alone.append(x)
            else:
                sjf[i + 1] = j
                ssf[i + 1] = full
                shared.append(x)
                tenants[o] = tenants.get(o, 0) + 1
        self._count_gpus(j, c, alone, shared, tenants, 1)
        return set(tenants)

    def vacate(self, j: int, c: Copy) -> set[int]:
        """Take job ``j``'s copy ``c`` off its GPUs; returns the partners it shared with. On each GPU the other
        tenant, if any, ends in slot 0 with its share; slot 1 ends empty."""
        s = self.state
        s.gpu_version += 1
        s.sm_activity.mark(c.gl)
        sjf, ssf = s.slot_job_flat, s.slot_share_flat
        tenants: dict[int, int] = {}
        alone: list[int] = []
        shared: list[int] = []
        for x in c.gl:
            i = 2 * x
            o = sjf.item(i)
            if o == j:  # j in slot 0: the tenant of slot 1 (if any) moves to slot 0 with its share
                o = sjf.item(i + 1)
                sjf[i] = o
                ssf[i] = ssf.item(i + 1)  # the empty slot 1 holds a full share
            sjf[i + 1] = -1  # (j in slot 1: the tenant of slot 0 stays there with its share)
            ssf[i + 1] = s.share_units
            if o >= 0:
                shared.append(x)
                tenants[o] = tenants.get(o, 0) + 1
            else:
                alone.append(x)
        self._count_gpus(j, c, alone, shared, tenants, -1)
        return set(tenants)

    def _count_gpus(
        self, j: int, c: Copy, alone: list[int], shared: list[int], tenants: dict[int, int], sign: int
    ) -> None:
        """The counts beside the slots when job ``j`` takes (``sign`` +1) or leaves (-1) the GPUs of its copy
        ``c``: ``alone`` (GPUs it holds alone) and ``shared`` (GPUs it shares with ``tenants``, partner:
        GPUs). Per-type counts follow from the copy when it is of one type, per-node-type counts when it is
        also on one node."""
        s = self.state
        t = c.t
        # the int64 counts as ``a[k] = a.item(k) + v`` (Python ints: the same sums as ``a[k] += v``, fewer numpy calls)
        if shared:
            n = len(shared)
            s.shared_gpus += sign * n
            st = s.shared_t
            if t >= 0:
                st[t] = st.item(t) + sign * n
            else:
                for k, v in _tally(s.gpu_type_l, shared).items():
                    st[k] += sign * v
            hs = s.held_shared
            hs[j] = hs.item(j) + sign * n
            for p, v in tenants.items():
                hs[p] = hs.item(p) + sign * v
            self._pair(j, tenants, sign)
        if alone:
            n = len(alone)
            ff, bt = s.free_flat, s.busy_t
            if t >= 0 and c.n_nodes == 1:
                k = s.gpu_nt_l[alone[0]]
                ff[k] = ff.item(k) - sign * n
            else:
                for k, v in _tally(s.gpu_nt_l, alone).items():
                    ff[k] -= sign * v
            s.busy_gpus += sign * n
            if t >= 0:
                bt[t] = bt.item(t) + sign * n
            else:
                for k, v in _tally(s.gpu_type_l, alone).items():
                    bt[k] += sign * v
        held = s.held
        held[j] = held.item(j) + sign * c.n

    def _pair(self, j: int, counts: dict[int, int], sign: int) -> None:
        """Job ``j`` starts (+1) or stops (-1) sharing ``counts[p]`` GPUs with each partner ``p``."""
        shared_with = self.state.shared_map
        mine = shared_with.setdefault(j, {})
        for p, k in counts.items():
            theirs = shared_with.setdefault(p, {})
            n = mine.get(p, 0) + sign * k
            if n:
                mine[p] = theirs[j] = n
            else:
                del mine[p], theirs[j]
                if not theirs:
                    del shared_with[p]
        if not mine:
            del shared_with[j]

    def vacate_all(self, j: int, requeued: bool = False) -> set[int]:
        """Take every copy of job ``j`` off its GPUs and drop its copies (it no longer runs); returns the
        partners it shared with. ``requeued`` (a preemption): it is back at its stated per-GPU batch (a batch set
        by ``Reallocate`` lasts while the job runs)."""
        s = self.state
        if requeued:
            s.batch_l[j] = s.batch.item(j)
        s.forked_set.discard(j)
        cs = s.copy_consts.pop(j, [])
        s.copies.pop(j, None)
        if len(cs) == 1:  # one copy (not forked): its partners, a new set
            return self.vacate(j, cs[0])
        partners: set[int] = set()
        for c in cs:
            partners |= self.vacate(j, c)
        return partners

    def refresh_share_range(self, j: int) -> None:
        """Job ``j``'s least and greatest MPS share over its GPUs (``share_lo``, ``share_hi``), read again from
        the slots."""
        s = self.state
        sjf, ssf = s.slot_job_flat, s.slot_share_flat
        shares = [ssf.item(2 * x + (sjf.item(2 * x + 1) == j)) for c in s.copy_consts[j] for x in c.gl]
        s.share_lo[j], s.share_hi[j] = min(shares), max(shares)

    def shift_shares(self, j: int, gl: list[int], step: int, whole: bool) -> bool:
        """One step of the share grid (``step`` -1 down, +1 up) of job ``j``'s share on each of its GPUs
        ``gl``, within the grid's bounds; ``whole``: ``gl`` are all its GPUs and it has one share on them,
        which the step keeps within the bounds. False, and nothing changed, when no share would move."""
        s = self.state
        sjf, ssf = s.slot_job_flat, s.slot_share_flat
        pos = []  # j's slot on each GPU, as a flat index (loops, not comprehensions: most sets are one GPU)
        for x in gl:
            pos.append(2 * x + (sjf.item(2 * x + 1) == j))
        if whole:
            v = s.share_lo.item(j) + step
            for i in pos:
                ssf[i] = v
            s.share_lo[j] = s.share_hi[j] = v
        else:
            full = s.share_units
            new = []
            moved = False
            for i in pos:
                x = ssf.item(i)
                y = min(x + 1, full) if step > 0 else max(x - 1, SHARE_MIN_UNITS)
                new.append(y)
                moved = moved or y != x
            if not moved:
                return False
            for i, x in zip(pos, new, strict=True):
                ssf[i] = x
            self.refresh_share_range(j)
        s.sm_activity.mark(gl)
        return True

    # ------------------------------------------------------------------ a job's copies
    def set_batch(self, j: int, batch: int) -> None:
        """Job ``j``'s per-GPU batch is ``batch`` now (``Reallocate``'s, before its new copy is made)."""
        self.state.batch_l[j] = batch

    def place(self, j: int, c: Copy, s: int) -> set[int]:
        """Job ``j`` runs as the one copy ``c`` at accumulation ``s`` (a start, a reallocation), at full share on
        each of its GPUs, its footprint that of its per-GPU batch now; returns the partners it now shares
        with."""
        st = self.state
        st.copies[j] = [c.g]
        st.copy_consts[j] = [c]
        st.accum[j] = s
        st.footprint[j] = footprint_gb(st.profiles[st.model_l[j]], st.batch_l[j], s)
        st.share_lo[j] = st.share_hi[j] = st.share_units
        return self.occupy(j, c)

    def add_copy(self, j: int, c: Copy) -> None:
        """One more copy ``c`` of job ``j`` (a fork) on its GPUs."""
        s = self.state
        self.occupy(j, c)
        s.copies[j].append(c.g)
        s.copy_consts[j].append(c)

    def drop_last_copy(self, j: int) -> None:
        """Take job ``j``'s latest copy off its GPUs and drop it (a fork given back)."""
        s = self.state
        self.vacate(j, s.copy_consts[j].pop())
        s.copies[j].pop()

    def forked(self, j: int) -> None:
        """Job ``j`` runs the copies a fork added: its share range over them all, the most copies it has run."""
        s = self.state
        self.refresh_share_range(j)  # the new copies start at 100% share
        s.forked_set.add(j)
        s.max_copies[j] = max(s.max_copies[j], len(s.copies[j]))

    def drop_copy(self, j: int, i: int) -> tuple[Copy, set[int]]:
        """Take copy ``i`` of job ``j`` off its GPUs and drop it; returns it and the partners it shared with."""
        s = self.state
        c = s.copy_consts[j].pop(i)
        s.copies[j].pop(i)
        partners = self.vacate(j, c)
        if len(s.copies[j]) == 1:
            s.forked_set.discard(j)
        return c, partners

    def replace_copy(self, j: int, i: int, c: Copy) -> tuple[Copy, set[int]]:
        """Copy ``i`` of job ``j`` moves: ``c`` takes its place on other GPUs; returns the old copy and the
        partners of both."""
        s = self.state
        old = s.copy_consts[j][i]
        partners = self.vacate(j, old)
        s.copies[j][i] = c.g
        s.copy_consts[j][i] = c
        return old, partners | self.occupy(j, c)

    def set_models(self, j: int, models: list[CopyModel]) -> None:
        """Job ``j``'s copies run under the performance constants ``models`` (one per copy, in order) now."""
        cs = self.state.copy_consts[j]
        cs[:] = [c.with_model(k) for c, k in zip(cs, models, strict=True)]

    # ------------------------------------------------------------------ queries
    def free_mask(self) -> np.ndarray:
        """Boolean per GPU: holds no job."""
        return self.state.slot_job[:, 0] < 0

    def single_mask(self) -> np.ndarray:
        """Boolean per GPU: holds exactly one job."""
        sj = self.state.slot_job
        return (sj[:, 0] >= 0) & (sj[:, 1] < 0)

    def free_by_type(self) -> np.ndarray:
        """Free GPUs per GPU type (in ``type_names`` order)."""
        return self.state.type_total - self.state.busy_t

    def gpus_of(self, j: int) -> np.ndarray:
        """All GPUs job ``j`` holds (every copy)."""
        cs = self.state.copies.get(j)
        if not cs:
            return np.empty(0, dtype=np.int64)
        return cs[0] if len(cs) == 1 else np.concatenate(cs)

    def type_and_nodes(self, j: int) -> tuple[int, int] | None:
        """The GPU type of job ``j``'s first GPU and the number of nodes its GPUs span (every copy); None when it
        holds none."""
        cs = self.state.copy_consts.get(j)
        if not cs:
            return None
        c = cs[0]
        t = self.state.gpu_type_l[c.gl[0]]
        if len(cs) == 1:
            return t, c.n_nodes
        gn = self.state.gpu_node_l
        return t, len({gn[x] for c in cs for x in c.gl})

    def partners_of(self, j: int) -> list[int]:
        """Jobs sharing a GPU with job ``j``."""
        return sorted(self.state.shared_map.get(j, ()))

    def share_of(self, j: int) -> float:
        """Mean MPS share of job ``j`` over its GPUs (1.0 = 100%); 0 when not running."""
        s = self.state
        g = self.gpus_of(j)
        if len(g) == 0:
            return 0.0
        slot = (s.slot_job[g, 1] == j).astype(np.int64)
        return float(s.slot_share[g, slot].mean() * s.share_step)
