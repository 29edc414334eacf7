"""Validation of actions: every check an action passes before it changes anything, each failure a clear
:class:`~gpucluster_env.engine.actions.ActionError` naming the action and the reason.

The fast entry points (``place_job`` ...) name their action as a ``(cls, args)`` pair and build the typed
action only when they raise (:meth:`Checks._typed`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..performance import fit_accumulation, fits_memory, footprint_gb
from .actions import Action, ActionError
from .state import PENDING, RUNNING, STATUS_NAMES


class Checks:
    """Action validation of :class:`~gpucluster_env.engine.simulator.ClusterEngine` (a mixin over
    :class:`~gpucluster_env.engine.state.EngineState`)."""

    n_jobs: int
    num_gpus: int
    type_names: tuple[str, ...]
    status: np.ndarray

    @staticmethod
    def _typed(action: Action | tuple) -> Action:
        """The typed action an error message names: ``action``, or ``cls(*args)`` from a ``(cls, args)`` pair."""
        return action[0](*action[1]) if type(action) is tuple else action

    def _type_index(self, name: str) -> int:
        try:
            return self.type_names.index(name)
        except ValueError:
            raise ActionError(
                f"unknown GPU type {name!r} for this cluster; it has {', '.join(self.type_names)}"
            ) from None

    def _check_job(self, action: Action | tuple, j: int) -> None:
        if isinstance(j, bool | np.bool_) or not (isinstance(j, int | np.integer) and 0 <= j < self.n_jobs):
            raise ActionError(f"{self._typed(action)}: no job with index {j!r} (episode has {self.n_jobs} jobs)")

    def _job_index(self, action: Action | tuple, j: int) -> int:
        """Job ``j`` as a Python int, or the ActionError naming ``action`` when it is no job of the episode."""
        if not (type(j) is int and 0 <= j < self.n_jobs):
            self._check_job(action, j)
            j = int(j)
        return j

    def _running_index(self, action: Action | tuple, j: int) -> int:
        """:meth:`_job_index`, and the ActionError naming ``action`` when the job is not running."""
        j = self._job_index(action, j)
        self._require(action, j, RUNNING, "job")
        return j

    def _require(self, action: Action | tuple, j: int, status: int, who: str) -> None:
        """ActionError unless job ``j`` (the action's ``who``: job or partner) has ``status``."""
        st = self.status.item(j)
        if st != status:
            raise ActionError(f"{self._typed(action)}: {who} {j} is {STATUS_NAMES[st]}, not {STATUS_NAMES[status]}")

    def _check_gpus(self, action: Action | tuple, gpus: tuple[int, ...] | np.ndarray) -> np.ndarray:
        g = np.asarray(gpus, dtype=np.int64).ravel()
        if len(g) == 0 or g.min() < 0 or g.max() >= self.num_gpus:
            raise ActionError(f"{self._typed(action)}: GPU indices must lie in [0, {self.num_gpus})")
        if len(set(g.tolist())) != len(g):
            raise ActionError(f"{self._typed(action)}: GPU set repeats a GPU")
        return g

    def _check_start(
        self, action: Action | tuple, j: int, g: np.ndarray, accumulation: int | None, t: int | None = None,
        tenant: int = -1
    ) -> int:
        """The accumulation job ``j`` starts with on ``g``, or ActionError. ``t`` (a GPU type) is given by the
        planners when every GPU of ``g`` is of type ``t`` and either free (``tenant`` -1) or held by ``tenant``
        alone; the checks then run on scalars, with the same results."""
        self._require(action, j, PENDING, "job")
        if len(g) != self._req_l[j]:
            raise ActionError(f"{self._typed(action)}: job {j} needs {self.req_gpus[j]} GPUs, got {len(g)}")
        if t is None and (self.slot_job[g, 1] >= 0).any():
            raise ActionError(f"{self._typed(action)}: a GPU of the set already holds two jobs")
        if self.config.topology_rule:
            why = self.topology_violation(j, g)
            if why is not None:
                raise ActionError(f"{self._typed(action)}: topology rule: {why}")
        self._check_measured(action, j, g)
        batch = self._batch_l[j]
        p = self.profiles[self._model_l[j]]
        other = self.footprint.item(tenant) if tenant >= 0 else 0.0
        if accumulation is None:
            if t is not None:  # accumulation_for on one type beside one tenant (or none)
                s = fit_accumulation(p, batch, self._type_mem_l[t] - other)
            else:
                s = self.accumulation_for(j, g)
            if s is None:
                raise ActionError(
                    f"{self._typed(action)}: job {j} does not fit in GPU memory there at any accumulation"
                )
            return s
        s = int(accumulation)
        if s < 1 or s & (s - 1) or s > batch:
            raise ActionError(
                f"{self._typed(action)}: accumulation must be a power of two in [1, {batch}], got {accumulation}"
            )
        fp = footprint_gb(p, batch, s)
        if t is not None and fits_memory(fp, self._type_mem_l[t] - other):
            return s
        sj = self.slot_job[g, 0]
        others = np.where(sj >= 0, self.footprint[np.maximum(sj, 0)], 0.0)
        mem = self.type_mem[self.gpu_type[g]]
        over = [not fits_memory(fp, float(m) - float(o)) for m, o in zip(mem, others, strict=True)]
        if any(over):
            i = over.index(True)
            gi = int(g[i])
            raise ActionError(
                f"{self._typed(action)}: memory does not fit on GPU {gi}: {fp:.1f} GB + "
                f"{others[i]:.1f} GB > {mem[i]:.0f} GB"
            )
        return s

    def _check_measured(self, action: Action | tuple, j: int, g: np.ndarray) -> None:
        """ActionError when job ``j``'s gang on ``g`` (one GPU type) is a configuration Gavel measured at zero
        throughput (:mod:`gpucluster_env.catalog.solo`: it cannot run there)."""
        t = self._gpu_type_l[int(g[0])]
        if len(g) > 1 and (self.gpu_type[g] != t).any():
            return
        n_nodes = 1 if len(g) == 1 else len(set(self.gpu_node[g].tolist()))
        if math.isinf(self.gang_scale(self._model_l[j], self._batch_l[j], t, len(g), n_nodes)):
            raise ActionError(f"{self._typed(action)}: job {j} ({self.model_names[self._model_l[j]]}, batch "
                              f"{self._batch_l[j]}) cannot run on {len(g)} {self.type_names[t]}: Gavel measured "
                              "zero throughput there")

    def _check_fork_gpus(self, action: Action | tuple, j: int, gpus: tuple[int, ...]) -> np.ndarray:
        """The exact GPU set of one more copy of running job ``j``, checked."""
        g = self._check_gpus(action, gpus)
        if len(g) != self.req_gpus[j]:
            raise ActionError(f"{self._typed(action)}: a copy of job {j} needs {self.req_gpus[j]} GPUs")
        if (self.slot_job[g, 0] >= 0).any():
            raise ActionError(f"{self._typed(action)}: a copy needs free GPUs")
        if np.isin(self.gpu_node[g], self.gpu_node[self.gpus_of(j)]).any():
            raise ActionError(f"{self._typed(action)}: a copy must run on nodes the job does not use")
        self._check_measured(action, j, g)
        return g

    def _check_exact_start(self, action: Action, j: int, p: int | None, g: np.ndarray) -> None:
        """The checks of a place (``p`` None) or colocate with ``partner`` ``p`` on an exact GPU set ``g``."""
        if p is None:
            if (self.slot_job[g, 0] >= 0).any():
                raise ActionError(f"{action}: place needs free GPUs; use colocate to share")
            gt = getattr(action, "gpu_type", None)
            if gt is not None and (self.gpu_type[g] != self._type_index(gt)).any():
                raise ActionError(f"{action}: not every GPU named is a {gt}")
        elif not (self.slot_job[g, 0] == p).any() and not (self.slot_job[g, 1] == p).any():
            raise ActionError(f"{action}: the GPU set shares no GPU with partner {p}")

    def _fork_error(self, action: Action | tuple, j: int, copies: int, gpus: Any) -> None:
        """The checks of a fork that come before any copy is placed."""
        if self.config.round_s is None:
            raise ActionError(f"{self._typed(action)}: forking needs a round-based scenario (round_s is not set)")
        self._require(action, j, RUNNING, "job")
        if copies < 1:
            raise ActionError(f"{self._typed(action)}: copies must be >= 1")
        if gpus is not None and copies != 1:
            raise ActionError(f"{self._typed(action)}: an exact GPU set names one copy; use copies=1")

    def _check_stealing(self, action: Action, j: int, on: bool) -> None:
        """The checks of ``SetStealing(j, on)``: ``j`` pending or running, ``on`` a bool, and when LISS is
        turned on for a running job, every worker's LISS micro-batch (:meth:`liss_micro_batches`) fitting in
        its GPU's memory beside the GPU's other tenant."""
        j = self._job_index(action, j)
        if not isinstance(on, bool | np.bool_):
            raise ActionError(f"{action}: on must be True or False, got {on!r}")
        st = self.status.item(j)
        if st not in (PENDING, RUNNING):
            raise ActionError(f"{action}: job {j} is {STATUS_NAMES[st]}, not pending or running")
        if not on or st != RUNNING:
            return
        p = self.profiles[self._model_l[j]]
        for c in self._copy_consts[j]:
            if c.n == 1:
                continue
            b = self.liss_micro_batches(j, c)
            for g, bi in zip(c.gl, b.tolist(), strict=True):
                other = next((int(x) for x in self.slot_job[g] if x >= 0 and x != j), -1)
                room = self._type_mem_l[self._gpu_type_l[g]] - (self.footprint.item(other) if other >= 0 else 0.0)
                fp = footprint_gb(p, bi, 1)
                if not fits_memory(fp, room):
                    raise ActionError(
                        f"{action}: job {j}'s LISS micro-batch of {bi:.1f} samples on GPU {g} needs {fp:.1f} GB, "
                        f"{room:.1f} GB free there"
                    )

    def liss_micro_batches(self, j: int, c: Any) -> np.ndarray:
        """The micro-batch of each worker of job ``j``'s multi-GPU copy ``c`` under LISS at the workers' current
        interference: the inverse of :func:`~gpucluster_env.performance.copy_iter_time`'s balance, ``(alpha +
        beta b_i) / v_i`` equal to the micro-step time ``tc`` for every worker (``v_i = speed_i / xi_i``), so
        ``b_i = (tc v_i - alpha) / beta``, at least 0; they sum to ``n B/s`` unless a worker is clipped at 0."""
        p = self.profiles[self._model_l[j]]
        xi = self._copy_xi(j, c)
        v = c.k.spd / xi
        tc = max(c.k.steal_num / float(v.sum()), c.k.alpha / float(v.min()))
        return np.maximum(0.0, (tc * v - p.alpha_s) / p.beta_s)

    def topology_violation(self, j: int, g: np.ndarray) -> str | None:
        """Why starting pending job ``j`` on GPUs ``g`` breaks Gimbal's topology rule ("topological
        guaranteeing"), or None. (1) The job spans the fewest nodes possible: as few as the largest nodes of
        its GPUs' types need to hold its world size. (2) A job colocates with one job only, a larger one (world
        size), on GPUs all held by it, and that job is not itself colocated with a larger one: every packing
        set is one largest job and smaller jobs packed on it alone. (3) Equal world sizes pack only balanced:
        the very same GPUs, and the partner shares with no other job."""
        n = len(g)
        nodes = len(set(self.gpu_node[g].tolist()))
        sizes = np.sort(self.node_size[np.isin(self.node_type, self.gpu_type[g])])[::-1]
        fewest = int(np.searchsorted(np.cumsum(sizes), n)) + 1
        if nodes > fewest:
            return f"job {j} ({n} GPUs) would span {nodes} nodes; the fewest possible is {fewest}"
        held = self.slot_job[g, 0]
        tenants = sorted(set(held[held >= 0].tolist()))
        if not tenants:
            return None
        if len(tenants) > 1:
            return f"job {j} would share GPUs with jobs {tenants}; a job colocates with one larger job only"
        p = tenants[0]
        wj, wp = n, self._req_l[p]
        partly_free = bool((held < 0).any())
        partners = self._shared_with.get(p, {})
        if wj > wp:
            return f"job {j} ({wj} GPUs) would colocate with smaller job {p} ({wp} GPUs); only smaller with larger"
        if wj == wp:
            if partly_free or partners or set(g.tolist()) != set(self.gpus_of(p).tolist()):
                return (f"job {j} and job {p} have the same world size ({wj} GPUs): only balanced packing, on "
                        f"exactly job {p}'s GPUs and with no other partner")
            return None
        if partly_free:
            return f"job {j} would run partly on free GPUs beside job {p}; a packed job shares all its GPUs"
        bigger = [q for q in partners if self._req_l[q] >= wp]
        if bigger:
            return f"job {p} is packed with job {bigger[0]} (not smaller than it); it takes no more partners"
        return None
