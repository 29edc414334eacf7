"""The flat ``Discrete`` encoding of the action vocabulary, and its mask.

Layout (``N`` = pending window, ``M`` = running window, ``T`` = GPU types of the cluster, ``K`` = accumulation
choices ``s = 1, 2, 4, ...``, ``W`` = place columns), in this order::

    0                                    wait
    place(i, t)        N x W             pending slot i on GPU type t, or t = T for "any" (mixed types allowed)
    share(i)           N  (compact)      pending slot i on GPUs that hold one job each, partners by the rule below
    colocate(i, r, k)  N x M x K (full)  pending slot i shares running slot r's GPUs, accumulation 2**k
    squeeze(r)         M
    swell(r)           M
    preempt(r)         M
    fork(r)            M                 one more copy on free GPUs of other nodes (round-based scenarios)

Two layouts (``GPUClusterEnv(action_layout=...)``):

* ``"compact"`` (default): ``W = 1`` ("any": the engine's placement rule, fastest type first) on a one-type
  cluster, ``W = T + 1`` otherwise; ``share(i)`` instead of the colocate block; ``M = 32``. 1 + 16 x W + 16 +
  4 x 32 actions with the default windows: 161 on a one-type cluster, 209 on ``tiny`` (three types).
* ``"full"``: ``W = T + 1``, no ``share``, ``colocate(i, r, k)`` with ``K = n_accum`` explicit accumulations,
  ``M = 16`` (1,121-1,185 actions, the layout before the compact one).

``share(i)`` is valid when some GPU holds one job beside which job i fits in memory (at its largest
accumulation) and such GPUs with the free GPUs job i fits on number at least its GPU count. Its GPU set
(:meth:`ActionCodec.share_plan`): those shared GPUs by the predicted slowdown of the pair (the catalog's
interference predictor, the sum of both jobs' ``1 - 1/xi``; ties by partner, then GPU index), as many as the job
needs, topped up with free GPUs on nodes already used first, then on the nodes with most free GPUs. The engine
picks the smallest accumulation that fits on all of them. Partners may be several jobs, as Castor's and
SJF-FFS's colocations are, and need not be in the running window.

Window slots map to jobs: pending slot i is the i-th job of the queue, running slot r the r-th running job in
start order. The mask is exact: every action it allows, the engine accepts, and the environment rejects
every action it does not allow.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..engine import (
    Action,
    ClusterEngine,
    Colocate,
    Fork,
    Place,
    Preempt,
    Squeeze,
    Swell,
    Wait,
)
from ..performance import fits_memory, worker_memory_gb

# Kinds of action ints, as ActionCodec.table gives them.
WAIT, PLACE, COLOCATE, SQUEEZE, SWELL, PREEMPT, FORK, SHARE = range(8)


DEFAULT_N_PENDING = 16
"""The pending window's default size."""
DEFAULT_N_RUNNING = {"compact": 32, "full": 16}
"""The running window's default size by action layout."""
DEFAULT_N_ACCUM = {"compact": 1, "full": 4}
"""Accumulation factors in the action space by layout (compact: the engine picks)."""


@dataclass(frozen=True)
class ActionLayout:
    """Sizes and offsets of the flat action space."""

    n_pending: int
    n_running: int
    n_types: int
    n_accum: int
    compact: bool = False
    """``share(i)`` instead of ``colocate(i, r, k)``, and one place column on one-type clusters."""
    place_width: int = field(init=False)
    place_off: int = field(init=False)
    share_off: int = field(init=False)
    colocate_off: int = field(init=False)
    squeeze_off: int = field(init=False)
    swell_off: int = field(init=False)
    preempt_off: int = field(init=False)
    fork_off: int = field(init=False)
    size: int = field(init=False)

    def __post_init__(self) -> None:
        width = 1 if self.compact and self.n_types == 1 else self.n_types + 1
        object.__setattr__(self, "place_width", width)
        offs = {"place_off": 1}
        offs["share_off"] = offs["place_off"] + self.n_pending * width
        offs["colocate_off"] = offs["share_off"] + (self.n_pending if self.compact else 0)
        offs["squeeze_off"] = offs["colocate_off"] + (0 if self.compact else
                                                      self.n_pending * self.n_running * self.n_accum)
        offs["swell_off"] = offs["squeeze_off"] + self.n_running
        offs["preempt_off"] = offs["swell_off"] + self.n_running
        offs["fork_off"] = offs["preempt_off"] + self.n_running
        offs["size"] = offs["fork_off"] + self.n_running
        for k, v in offs.items():
            object.__setattr__(self, k, v)


class ActionCodec:
    """Decodes flat action ints to typed actions for the current windows, and computes the mask."""

    def __init__(self, layout: ActionLayout, type_names: tuple[str, ...]) -> None:
        self.layout = layout
        self.type_names = type_names
        self.accum_choices = [int(x) for x in 2 ** np.arange(layout.n_accum)]  # of the colocate columns
        self._names: dict[int, str] = {}  # describe() of each action int asked so far (a pure function of it)
        self.table = self._table()

    def _place_type(self, column: int) -> int | None:
        """GPU type index of place column ``column`` (None: any type, the engine's placement rule)."""
        return None if self.layout.place_width == 1 or column == self.layout.n_types else column

    def _table(self) -> list[tuple[int, int, int | None, int | None]]:
        """Per action int: (kind, pending slot, running slot or GPU type index (None: any type), accumulation
        (None: the engine's choice)); slots and values that a kind does not use are 0."""
        L = self.layout
        out: list[tuple[int, int, int | None, int | None]] = [(WAIT, 0, 0, 0)]
        for i in range(L.n_pending):
            out += [(PLACE, i, self._place_type(t), 0) for t in range(L.place_width)]
        if L.compact:
            out += [(SHARE, i, 0, None) for i in range(L.n_pending)]
        else:
            for i in range(L.n_pending):
                out += [(COLOCATE, i, r, s) for r in range(L.n_running) for s in self.accum_choices]
        for kind in (SQUEEZE, SWELL, PREEMPT, FORK):
            out += [(kind, 0, r, 0) for r in range(L.n_running)]
        assert len(out) == L.size
        return out

    def describe(self, a: int) -> str:
        """A stable human-readable name of action int ``a`` (independent of the current state)."""
        name = self._names.get(a)
        if name is None:
            name = self._names[a] = self._describe(a)
        return name

    def _describe(self, a: int) -> str:
        L = self.layout
        if a == 0:
            return "wait"
        if a < L.share_off:
            i, c = divmod(a - L.place_off, L.place_width)
            t = self._place_type(c)
            return f"place(pending[{i}], {'any' if t is None else self.type_names[t]})"
        if a < L.colocate_off:
            return f"share(pending[{a - L.share_off}])"
        if a < L.squeeze_off:
            i, rest = divmod(a - L.colocate_off, L.n_running * L.n_accum)
            r, k = divmod(rest, L.n_accum)
            return f"colocate(pending[{i}], running[{r}], s={self.accum_choices[k]})"
        for name, off in (("squeeze", L.squeeze_off), ("swell", L.swell_off), ("preempt", L.preempt_off),
                          ("fork", L.fork_off)):
            if off <= a < off + L.n_running:
                return f"{name}(running[{a - off}])"
        raise ValueError(f"action {a} is outside the action space [0, {L.size})")

    def encode(self, kind: str, slot: int = 0, gpu_type: str | None = None, partner: int = 0,
               accumulation: int = 1) -> int:
        """The action int named by ``kind`` (``wait``, ``place``, ``share``, ``colocate``, ``squeeze``,
        ``swell``, ``preempt``, ``fork``) on window ``slot`` (pending for place/share/colocate, running for the
        rest); ``place`` on ``gpu_type`` (None: any type), ``colocate`` beside running ``partner`` with
        ``accumulation``. The inverse of :meth:`describe`: ``describe(encode(...))`` names the same action. A
        name this layout has no int for is a one-line ``ValueError`` saying why (e.g. a GPU type of another
        cluster, or a slot past the window)."""
        L = self.layout
        win = L.n_pending if kind in ("place", "share", "colocate") else L.n_running
        if kind == "wait":
            return 0
        if not 0 <= slot < win:
            raise ValueError(f"{kind}: slot {slot} is outside the window [0, {win})")
        if kind == "place":
            if gpu_type is None:
                col = L.place_width - 1
            elif gpu_type not in self.type_names:
                raise ValueError(f"place: GPU type {gpu_type!r} is not in this cluster "
                                 f"({', '.join(self.type_names)})")
            else:
                col = 0 if L.place_width == 1 else self.type_names.index(gpu_type)
            return L.place_off + slot * L.place_width + col
        if kind == "share":
            if not L.compact:
                raise ValueError("share: the full layout has colocate(pending, running, s) instead")
            return L.share_off + slot
        if kind == "colocate":
            if L.compact:
                raise ValueError("colocate: the compact layout has share(pending) instead")
            if not 0 <= partner < L.n_running or accumulation not in self.accum_choices:
                raise ValueError(f"colocate: partner must be in [0, {L.n_running}) and accumulation one of "
                                 f"{self.accum_choices}")
            return (L.colocate_off + (slot * L.n_running + partner) * L.n_accum
                    + self.accum_choices.index(accumulation))
        offs = {"squeeze": L.squeeze_off, "swell": L.swell_off, "preempt": L.preempt_off, "fork": L.fork_off}
        if kind not in offs:
            raise ValueError(f"unknown action kind {kind!r}; known: wait, place, share, colocate, "
                             f"{', '.join(offs)}")
        return offs[kind] + slot

    def decode(self, a: int, pending: np.ndarray, running: np.ndarray, eng: ClusterEngine | None = None,
               xi_tab: np.ndarray | None = None) -> Action:
        """The typed action int ``a`` stands for, given the current pending and running windows (``share``
        needs the engine and the predicted slowdown table to name its GPUs)."""
        L = self.layout
        if not (0 <= a < L.size):
            raise ValueError(f"action {a} is outside the action space [0, {L.size})")
        if a == 0:
            return Wait()
        try:
            if a < L.share_off:
                i, c = divmod(a - L.place_off, L.place_width)
                t = self._place_type(c)
                return Place(int(pending[i]), None if t is None else self.type_names[t])
            if a < L.colocate_off:
                j = int(pending[a - L.share_off])
                plan = self.share_plan(eng, j, xi_tab) if eng is not None and xi_tab is not None else None
                if plan is None:
                    raise ValueError(f"action {a} ({self.describe(a)}): no GPUs to share for job {j} now")
                return Colocate(j, plan[0], None, plan[1])
            if a < L.squeeze_off:
                i, rest = divmod(a - L.colocate_off, L.n_running * L.n_accum)
                r, k = divmod(rest, L.n_accum)
                return Colocate(int(pending[i]), int(running[r]), self.accum_choices[k])
            r = (a - L.squeeze_off) % L.n_running
            kind = (a - L.squeeze_off) // L.n_running
            job = int(running[r])
        except IndexError:
            raise ValueError(f"action {a} ({self.describe(a)}) names an empty window slot") from None
        return (Squeeze(job), Swell(job), Preempt(job), Fork(job))[kind]

    def footprints(self, eng: ClusterEngine) -> np.ndarray:
        """Per job and accumulation choice, the job's per-GPU memory footprint (inf where s > batch); in the
        compact layout one column: the smallest footprint any accumulation gives (the largest power of two not
        above the batch), so the job fits beside a tenant at some accumulation iff that one fits."""
        if getattr(self, "_fp_engine", None) is not eng:
            base = np.array([p.mem_base_gb for p in eng.profiles])[eng.job_model][:, None]
            slope = np.array([p.mem_per_sample_gb for p in eng.profiles])[eng.job_model][:, None]
            b = eng.batch[:, None].astype(float)
            if self.layout.compact:
                s = (2.0 ** np.floor(np.log2(np.maximum(eng.batch, 1))))[:, None]
            else:
                s = np.array(self.accum_choices, dtype=float)[None, :]
            self._fp = np.where(s <= b, worker_memory_gb(base, slope, b / s), np.inf)
            self._fp_engine = eng
        return self._fp

    def _share_candidates(self, eng: ClusterEngine, j: int) -> tuple[np.ndarray, np.ndarray]:
        """GPUs holding one job beside which job ``j`` fits in memory, and free GPUs of types it fits."""
        fp = self.footprints(eng)[j, 0]
        a, b = eng.slot_job[:, 0], eng.slot_job[:, 1]
        mem = eng.type_mem[eng.gpu_type]
        single = (a >= 0) & (b < 0)
        ok = single & fits_memory(fp, mem - eng.footprint[np.maximum(a, 0)])
        free = (a < 0) & eng.fits_type[j][eng.gpu_type]
        return np.flatnonzero(ok), np.flatnonzero(free)

    def share_plan(self, eng: ClusterEngine, j: int, xi_tab: np.ndarray) -> tuple[int, tuple[int, ...]] | None:
        """``share(j)``'s first partner and GPU set (the rule in the module docstring), or None if invalid."""
        ok, free = self._share_candidates(eng, j)
        need = int(eng.req_gpus[j])
        if len(ok) == 0 or len(ok) + len(free) < need:
            return None
        tenant = eng.slot_job[ok, 0]
        t = eng.gpu_type[ok]
        score = xi_tab[eng.job_model[j], eng.job_model[tenant], t].sum(axis=-1)
        chosen = ok[np.lexsort((ok, tenant, score))][:need].tolist()
        if len(chosen) < need:
            used = set(eng.gpu_node[chosen].tolist())
            node = eng.gpu_node[free]
            per_node = np.bincount(node, minlength=eng.num_nodes)[node]
            far = np.array([n not in used for n in node.tolist()], dtype=np.int64)
            chosen += free[np.lexsort((free, -per_node, far))][:need - len(chosen)].tolist()
        return int(eng.slot_job[chosen[0], 0]), tuple(int(x) for x in chosen)

    def fork_block(self, m: np.ndarray, eng: ClusterEngine, running: np.ndarray, allow: frozenset[str]) -> None:
        L = self.layout
        if len(running) and "fork" in allow and eng.config.round_s is not None:
            m[L.fork_off:L.fork_off + len(running)] = [eng.plan_fork(int(j)) is not None for j in running]

    def restrict_topology(self, m: np.ndarray, eng: ClusterEngine, pending: np.ndarray, running: np.ndarray,
                          xi_tab: np.ndarray) -> None:
        """Clear, in place, the place, share and colocate actions of ``m`` whose GPU set (planned as the engine
        plans it) breaks the engine's topology rule
        (:meth:`~gpucluster_env.engine.action_checks.ActionChecks.topology_violation`), for scenarios that switch it on;
        the mask stays exact."""
        L = self.layout
        for a in (np.flatnonzero(m[L.place_off:L.squeeze_off]) + L.place_off).tolist():
            act = self.decode(a, pending, running, eng, xi_tab)
            if isinstance(act, Place):
                g = eng.plan_place(act.job, act.gpu_type)
            elif act.gpus is not None:
                g = np.asarray(act.gpus, dtype=np.int64)
            else:
                g = eng.plan_colocate(act.job, act.partner)
            if g is None or eng.topology_violation(act.job, g) is not None:
                m[a] = False

