"""Validation of actions: every check an action passes before it changes anything, each failure a clear
:class:`~gpucluster_env.engine.actions.ActionError` naming the action and the reason.

The fast entry points (``place_job`` ...) name their action as a ``(cls, args)`` pair and build the typed
action only when they raise (:func:`typed`). The checks of the moves of running jobs are in :mod:`.move_checks`;
the state changes that follow a check in :mod:`.lifecycle` and :mod:`.moves`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..performance import fits_memory, footprint_gb
from .actions import Action, ActionError
from .occupancy import Occupancy
from .rates import Rates
from .state import PENDING, RUNNING, STATUS_NAMES, EngineState


def typed(action: Action | tuple) -> Action:
    """The typed action an error message names: ``action``, or ``cls(*args)`` from a ``(cls, args)`` pair."""
    return action[0](*action[1]) if type(action) is tuple else action


class ActionChecks:
    """Validation of actions on an :class:`~gpucluster_env.engine.state.EngineState` (reads the state, the
    occupancy queries and the rates; changes nothing)."""

    def __init__(self, state: EngineState, occupancy: Occupancy, rates: Rates) -> None:
        self.state = state
        self.occupancy = occupancy
        self.rates = rates
        self._fewest: dict[tuple[frozenset[int], int], int] = {}  # fewest_nodes' answers

    def type_index(self, name: str) -> int:
        st = self.state
        try:
            return st.type_names.index(name)
        except ValueError:
            raise ActionError(
                f"unknown GPU type {name!r} for this cluster; it has {', '.join(st.type_names)}"
            ) from None

    def check_job(self, action: Action | tuple, j: int) -> None:
        st = self.state
        if isinstance(j, bool | np.bool_) or not (isinstance(j, int | np.integer) and 0 <= j < st.n_jobs):
            raise ActionError(f"{typed(action)}: no job with index {j!r} (episode has {st.n_jobs} jobs)")

    def job_index(self, action: Action | tuple, j: int) -> int:
        """Job ``j`` as a Python int, or the ActionError naming ``action`` when it is no job of the episode."""
        if not (type(j) is int and 0 <= j < self.state.n_jobs):
            self.check_job(action, j)
            j = int(j)
        return j

    def running_index(self, action: Action | tuple, j: int) -> int:
        """:meth:`job_index`, and the ActionError naming ``action`` when the job is not running."""
        j = self.job_index(action, j)
        self.require(action, j, RUNNING, "job")
        return j

    def require(self, action: Action | tuple, j: int, status: int, who: str) -> None:
        """ActionError unless job ``j`` (the action's ``who``: job or partner) has ``status``."""
        st = self.state.status.item(j)
        if st != status:
            raise ActionError(f"{typed(action)}: {who} {j} is {STATUS_NAMES[st]}, not {STATUS_NAMES[status]}")

    def check_gpus(self, action: Action | tuple, gpus: tuple[int, ...] | np.ndarray) -> np.ndarray:
        g = np.asarray(gpus, dtype=np.int64).ravel()
        self._check_gpu_ints(action, g.tolist())
        return g

    def gpu_list(self, action: Action | tuple, gpus: tuple[int, ...] | np.ndarray) -> list[int]:
        """``check_gpus(action, gpus).tolist()``: a tuple of Python ints (what agents send) is checked as ints
        without an array; anything else goes through :meth:`check_gpus`."""
        if type(gpus) is tuple and len(gpus) == 1:  # one GPU (most gangs): its one check here
            x = gpus[0]
            if type(x) is int and 0 <= x < self.state.num_gpus:
                return [x]
        if type(gpus) is not tuple or not gpus or any(type(x) is not int for x in gpus):
            return self.check_gpus(action, gpus).tolist()
        self._check_gpu_ints(action, gpus)
        return list(gpus)

    def _check_gpu_ints(self, action: Action | tuple, gl: list[int] | tuple[int, ...]) -> None:
        """The GPU-set rules: indices within the cluster, no GPU named twice."""
        n = self.state.num_gpus
        if not gl or min(gl) < 0 or max(gl) >= n:
            raise ActionError(f"{typed(action)}: GPU indices must lie in [0, {n})")
        if len(set(gl)) != len(gl):
            raise ActionError(f"{typed(action)}: GPU set repeats a GPU")

    def check_start(
        self, action: Action | tuple, j: int, g: np.ndarray, accumulation: int | None, t: int | None = None,
        tenant: int = -1, gl: list[int] | None = None
    ) -> int:
        """The accumulation job ``j`` starts with on ``g``, or ActionError. ``t`` (a GPU type) is given by the
        planners (and by exact starts, :meth:`check_exact_start`) when every GPU of ``g`` is of type ``t`` and
        either free (``tenant`` -1) or held by ``tenant`` alone; the checks then run on scalars, with the same
        results. ``gl``: ``g.tolist()`` if at hand."""
        st = self.state
        if st.status.item(j) != PENDING:
            self.require(action, j, PENDING, "job")
        if len(g) != st.req_l[j]:
            raise ActionError(f"{typed(action)}: job {j} needs {st.req_gpus[j]} GPUs, got {len(g)}")
        if gl is None:
            gl = g.tolist()
        if t is None:
            sjf = st.slot_job_flat
            for x in gl:
                if sjf.item(2 * x + 1) >= 0:
                    raise ActionError(f"{typed(action)}: a GPU of the set already holds two jobs")
        if st.config.topology_rule:
            why = self.topology_violation(j, g)
            if why is not None:
                raise ActionError(f"{typed(action)}: topology rule: {why}")
        self.check_measured(action, j, g, gl=gl)
        batch = st.batch_l[j]
        p = st.profiles[st.model_l[j]]
        other = st.footprint.item(tenant) if tenant >= 0 else 0.0
        if accumulation is None:
            if t is not None:  # accumulation_for on one type beside one tenant (or none)
                s = self.rates.fit(st.model_l[j], batch, st.type_mem_l[t] - other)
            else:
                s = self.rates.accumulation_for(j, g)
            if s is None:
                raise ActionError(
                    f"{typed(action)}: job {j} does not fit in GPU memory there at any accumulation"
                )
            return s
        s = int(accumulation)
        if s < 1 or s & (s - 1) or s > batch:
            raise ActionError(
                f"{typed(action)}: accumulation must be a power of two in [1, {batch}], got {accumulation}"
            )
        fp = footprint_gb(p, batch, s)
        if t is not None and fits_memory(fp, st.type_mem_l[t] - other):
            return s
        sjf, fps, tm, gt = st.slot_job_flat, st.footprint, st.type_mem_l, st.gpu_type_l
        for gi in gl:  # the memory beside each GPU's tenant (slot 0), as floats
            o = sjf.item(2 * gi)
            other_gb = fps.item(o) if o >= 0 else 0.0
            mem = tm[gt[gi]]
            if not fits_memory(fp, mem - other_gb):
                raise ActionError(
                    f"{typed(action)}: memory does not fit on GPU {gi}: {fp:.1f} GB + "
                    f"{other_gb:.1f} GB > {mem:.0f} GB"
                )
        return s

    def check_measured(self, action: Action | tuple, j: int, g: np.ndarray, batch: int | None = None,
                       gl: list[int] | None = None) -> None:
        """ActionError when job ``j``'s gang on ``g`` (one GPU type) at per-GPU ``batch`` (default its batch now)
        is a configuration Gavel measured at zero throughput (:mod:`gpucluster_env.catalog.solo`: it cannot run
        there). ``gl``: ``g.tolist()`` if at hand."""
        st = self.state
        t, n_nodes = self.rates.gang(g.tolist() if gl is None else gl)
        if t < 0:
            return
        b = st.batch_l[j] if batch is None else batch
        if math.isinf(st.gang_scale(st.model_l[j], b, t, len(g), n_nodes)):
            raise ActionError(f"{typed(action)}: job {j} ({st.model_names[st.model_l[j]]}, batch "
                              f"{b}) cannot run on {len(g)} {st.type_names[t]}: Gavel measured "
                              "zero throughput there")

    def check_fork_gpus(self, action: Action | tuple, j: int, gpus: tuple[int, ...]) -> np.ndarray:
        """The exact GPU set of one more copy of running job ``j``, checked."""
        st = self.state
        g = self.check_gpus(action, gpus)
        if len(g) != st.req_gpus[j]:
            raise ActionError(f"{typed(action)}: a copy of job {j} needs {st.req_gpus[j]} GPUs")
        if (st.slot_job[g, 0] >= 0).any():
            raise ActionError(f"{typed(action)}: a copy needs free GPUs")
        if np.isin(st.gpu_node[g], st.gpu_node[self.occupancy.gpus_of(j)]).any():
            raise ActionError(f"{typed(action)}: a copy must run on nodes the job does not use")
        self.check_measured(action, j, g)
        return g

    def check_exact_start(self, action: Action, j: int, p: int | None, g: np.ndarray,
                          gl: list[int] | None = None) -> int | None:
        """The checks of a place (``p`` None) or colocate with ``partner`` ``p`` on an exact GPU set ``g``
        (``gl``: ``g.tolist()`` if at hand). Returns the set's one GPU type when every GPU of it is of that type
        and free (a place) or held by ``p`` alone (a colocate), else None: what :meth:`check_start` is given as
        ``t`` by the planners, so that its checks run on scalars."""
        st = self.state
        sjf = st.slot_job_flat  # the slot arrays read per GPU of the gang, as ints
        if gl is None:
            gl = g.tolist()
        if p is None:
            for x in gl:
                if sjf.item(2 * x) >= 0:
                    raise ActionError(f"{action}: place needs free GPUs; use colocate to share")
            gt = getattr(action, "gpu_type", None)
            if gt is not None:
                t, types = self.type_index(gt), st.gpu_type_l
                if any(types[x] != t for x in gl):
                    raise ActionError(f"{action}: not every GPU named is a {gt}")
        else:
            found, alone = False, True  # p holds a GPU of the set; p holds every GPU of it alone
            for x in gl:
                if sjf.item(2 * x) == p:
                    found = True
                    if sjf.item(2 * x + 1) >= 0:
                        alone = False
                else:
                    alone = False
                    if sjf.item(2 * x + 1) == p:
                        found = True
            if not found:
                raise ActionError(f"{action}: the GPU set shares no GPU with partner {p}")
            if not alone:
                return None
        t = self.rates.gang(gl)[0]
        return t if t >= 0 else None

    def check_fork(self, action: Action | tuple, j: int, copies: int, gpus: Any) -> None:
        """The checks of a fork that come before any copy is placed."""
        if self.state.config.round_s is None:
            raise ActionError(f"{typed(action)}: forking needs a round-based scenario (round_s is not set)")
        self.require(action, j, RUNNING, "job")
        if copies < 1:
            raise ActionError(f"{typed(action)}: copies must be >= 1")
        if gpus is not None and copies != 1:
            raise ActionError(f"{typed(action)}: an exact GPU set names one copy; use copies=1")

    def check_stealing(self, action: Action, j: int, on: bool) -> None:
        """The checks of ``SetStealing(j, on)``: ``j`` pending or running, ``on`` a bool, and when LISS is
        turned on for a running job, every worker's LISS micro-batch (:meth:`Rates.liss_micro_batches
        <gpucluster_env.engine.rates.Rates.liss_micro_batches>`) fitting in its GPU's memory beside the GPU's
        other tenant."""
        state = self.state
        j = self.job_index(action, j)
        if not isinstance(on, bool | np.bool_):
            raise ActionError(f"{action}: on must be True or False, got {on!r}")
        st = state.status.item(j)
        if st not in (PENDING, RUNNING):
            raise ActionError(f"{action}: job {j} is {STATUS_NAMES[st]}, not pending or running")
        if not on or st != RUNNING:
            return
        p = state.profiles[state.model_l[j]]
        for c in state.copy_consts[j]:
            if c.n == 1:
                continue
            b = self.rates.liss_micro_batches(j, c)
            for g, bi in zip(c.gl, b.tolist(), strict=True):
                other = next((int(x) for x in state.slot_job[g] if x >= 0 and x != j), -1)
                room = state.type_mem_l[state.gpu_type_l[g]] - (state.footprint.item(other) if other >= 0 else 0.0)
                fp = footprint_gb(p, bi, 1)
                if not fits_memory(fp, room):
                    raise ActionError(
                        f"{action}: job {j}'s LISS micro-batch of {bi:.1f} samples on GPU {g} needs {fp:.1f} GB, "
                        f"{room:.1f} GB free there"
                    )

    def fewest_nodes(self, types: frozenset[int], n: int) -> int:
        """The fewest nodes of GPU types ``types`` that hold ``n`` GPUs (the largest nodes first); kept per
        argument, a pure function of the cluster."""
        key = (types, n)
        f = self._fewest.get(key)
        if f is None:
            st = self.state
            sizes = np.sort(st.node_size[np.isin(st.node_type, sorted(types))])[::-1]
            f = self._fewest[key] = int(np.searchsorted(np.cumsum(sizes), n)) + 1
        return f

    def topology_violation(self, j: int, g: np.ndarray) -> str | None:
        """Why starting pending job ``j`` on GPUs ``g`` breaks Gimbal's topology rule ("topological
        guaranteeing"), or None. (1) The job spans the fewest nodes possible: as few as the largest nodes of
        its GPUs' types need to hold its world size. (2) A job colocates with one job only, a larger one (world
        size), on GPUs all held by it, and that job is not itself colocated with a larger one: every packing
        set is one largest job and smaller jobs packed on it alone. (3) Equal world sizes pack only balanced:
        the very same GPUs, and the partner shares with no other job."""
        st = self.state
        gl = g.tolist()
        n = len(gl)
        nodes = len({st.gpu_node_l[x] for x in gl})
        fewest = self.fewest_nodes(frozenset(st.gpu_type_l[x] for x in gl), n)
        if nodes > fewest:
            return f"job {j} ({n} GPUs) would span {nodes} nodes; the fewest possible is {fewest}"
        held = st.slot_job[g, 0]
        tenants = sorted(set(held[held >= 0].tolist()))
        if not tenants:
            return None
        if len(tenants) > 1:
            return f"job {j} would share GPUs with jobs {tenants}; a job colocates with one larger job only"
        p = tenants[0]
        wj, wp = n, st.req_l[p]
        partly_free = bool((held < 0).any())
        partners = st.shared_map.get(p, {})
        if wj > wp:
            return f"job {j} ({wj} GPUs) would colocate with smaller job {p} ({wp} GPUs); only smaller with larger"
        if wj == wp:
            if partly_free or partners or set(g.tolist()) != set(self.occupancy.gpus_of(p).tolist()):
                return (f"job {j} and job {p} have the same world size ({wj} GPUs): only balanced packing, on "
                        f"exactly job {p}'s GPUs and with no other partner")
            return None
        if partly_free:
            return f"job {j} would run partly on free GPUs beside job {p}; a packed job shares all its GPUs"
        bigger = [q for q in partners if st.req_l[q] >= wp]
        if bigger:
            return f"job {p} is packed with job {bigger[0]} (not smaller than it); it takes no more partners"
        return None
