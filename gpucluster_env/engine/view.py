"""A read-only view of the cluster for white-box agents (DESIGN.md, "Agents").

Reference schedulers need more than an observation: exact GPU sets, who holds which GPU, and the
performance model's estimate for a placement they consider. :class:`ClusterView` gives them that without
handing out the engine's arrays: every method returns a fresh value or a read-only copy, and nothing here
changes the world -- agents do that only through the actions they return.

What it offers:

* **Time and jobs**: ``now``, the queue (:meth:`~ClusterView.pending_jobs`, :meth:`~ClusterView.pending_head`),
  the running jobs, each job's status, GPUs asked, model, batch, accumulation, memory footprint, remaining work,
  and per-job tables (:attr:`~ClusterView.submit`, :attr:`~ClusterView.req_gpus` ...) as read-only arrays.
* **GPUs**: each GPU's type, node and tenants (:meth:`~ClusterView.tenants`), each type's published specs
  (:attr:`~ClusterView.gpu_specs`), the free and singly-held GPUs (:meth:`~ClusterView.free_gpus`,
  :meth:`~ClusterView.single_gpus`), free GPUs by type and by node and type, a job's GPUs and the ones it holds
  alone (:meth:`~ClusterView.single_gpus_of`), the type each job runs on alone (:meth:`~ClusterView.alone_types`),
  its partners and MPS share, and the share grid (:attr:`~ClusterView.share_step`, :attr:`~ClusterView.share_units`).
* **The performance model for a hypothetical placement** (:mod:`gpucluster_env.performance`): the iteration
  time of a job on a GPU set at an accumulation under given per-worker interference ratios
  (:meth:`~ClusterView.iter_time`), and the accumulations that fit beside the GPUs' tenants
  (:meth:`~ClusterView.accumulation_for`, :meth:`~ClusterView.accumulations_for`, :meth:`~ClusterView.fits_on`).
* **The engine's planners** (:class:`~gpucluster_env.engine.placement.Placement`): :meth:`~ClusterView.plan_place`,
  :meth:`~ClusterView.plan_colocate`, :meth:`~ClusterView.plan_fork`, :meth:`~ClusterView.plan_reallocate`.
* **Moves of running jobs**: a job's copies with their GPUs, per-copy throughput, quota and start-up
  (:meth:`~ClusterView.copies_of`, :meth:`~ClusterView.copy_states`), whether it can be reallocated
  (:meth:`~ClusterView.can_reallocate`) and to which sizes (:meth:`~ClusterView.size_range`,
  :meth:`~ClusterView.is_elastic`).
* **Array forms** of the per-job reads (:class:`~gpucluster_env.engine.view_arrays.JobArrays`:
  :meth:`~ClusterView.running_of`, :meth:`~ClusterView.remaining_of`, :meth:`~ClusterView.demand_of` ...), for
  policies that decide over many jobs at once.

The true interference ratios are not in the view; :meth:`~ClusterView.true_pair_xi` exists for oracle agents
and evaluation only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..hardware import GPUType
from ..performance import accumulations, fits_memory, footprint_gb
from ..workloads import ModelProfile
from .state import PENDING, RUNNING
from .view_arrays import JobArrays

if TYPE_CHECKING:
    from .simulator import ClusterEngine


def _frozen(a: np.ndarray) -> np.ndarray:
    """A read-only copy of ``a``: a policy may set ``writeable`` back on (numpy allows it on an array that owns
    its data), and then writes only its own copy, never the engine's table."""
    c = np.array(a, copy=True)
    c.flags.writeable = False
    return c


class ClusterView(JobArrays):
    """Read-only view of one engine's cluster, jobs and performance model (see the module docstring)."""

    def __init__(self, engine: ClusterEngine) -> None:
        self._eng = engine
        self._st = engine.state  # the engine's data, read directly (the parts' queries go through the engine)
        e = engine
        self.type_names: tuple[str, ...] = e.type_names
        """GPU type names; a type index points into this tuple."""
        self.num_gpus: int = e.num_gpus
        self.num_nodes: int = e.num_nodes
        self.n_jobs: int = e.n_jobs
        self.gpu_type = _frozen(e.gpu_type)
        """Type index of each GPU."""
        self._type_l: list[int] = e.gpu_type.tolist()
        self._alone_key: tuple[int, int] | None = None  # alone_types' answer, and the tenants it was read at
        self._alone: dict[int, int] = {}
        self._ten_key, self._ten = (-1, -1), _frozen(self._st.slot_job)  # tenants(): every GPU's, and its version
        self.gpu_node = _frozen(e.gpu_node)
        """Node of each GPU."""
        self.type_mem = _frozen(e.type_mem)
        """Memory (GB) of each GPU type."""
        self.gpu_specs: tuple[GPUType, ...] = tuple(e.catalog.gpu_type(t) for t in e.type_names)
        """Each GPU type's catalog entry, by type index: its published data-sheet specs (memory, FP32 TFLOPS,
        memory bandwidth, PCIe generation; what HadarE's initial estimate reads) and the catalog's generic
        speed. No per-job throughput: a job's rate on a type is observable only by running it there
        (:meth:`copy_states`)."""
        self.submit = _frozen(e.submit)
        """Submit time of each job (s)."""
        self.req_gpus = _frozen(e.req_gpus)
        """GPUs each job asks for (one gang)."""
        self.iterations = _frozen(e.iterations)
        self.solo_time = _frozen(e.solo_time)
        """Each job's run time alone on the fastest type it fits (the SJF oracle's duration)."""
        self.deadline = _frozen(e.deadline)
        """Each job's submitted deadline (s; NaN: none)."""
        self.round_s: float | None = e.config.round_s
        """The scenario's round length (s), or None."""
        self.restart_s: float = float(e.config.restart_s)
        """The restart overhead (s) a preempted or moved job pays."""
        self.topology_rule: bool = e.config.topology_rule
        """Whether the scenario enforces Gimbal's topology rule on every start."""

    def views(self, engine: ClusterEngine) -> bool:
        """Whether this is a view of ``engine``."""
        return self._eng is engine

    # ------------------------------------------------------------------ time and jobs
    @property
    def now(self) -> float:
        """The current time (s)."""
        return self._st.now

    @property
    def num_pending(self) -> int:
        return self._eng.num_pending

    @property
    def num_running(self) -> int:
        return self._eng.num_running

    @property
    def busy_gpus(self) -> int:
        """GPUs holding at least one job."""
        return self._st.busy_gpus

    def pending_jobs(self) -> np.ndarray:
        """Pending jobs in queue order (arrival; a preempted job rejoins at the back)."""
        return self._eng.pending_jobs()

    def pending_head(self, n: int) -> np.ndarray:
        """The first ``n`` pending jobs in queue order."""
        return self._eng.pending_head(n)

    def running_jobs(self) -> np.ndarray:
        """Running jobs, by index."""
        return self._eng.running_jobs()

    def is_pending(self, j: int) -> bool:
        return self._st.status.item(j) == PENDING

    def is_running(self, j: int) -> bool:
        return self._st.status.item(j) == RUNNING

    def finish_time(self, j: int) -> float:
        """When job ``j`` finished (NaN while it has not)."""
        return self._st.finish_t.item(j)

    def last_start(self, j: int) -> float:
        """Time job ``j`` last started (s; NaN if it never has)."""
        return self._st.last_start.item(j)

    def pending_since(self, j: int) -> float:
        """Since when job ``j`` has waited in the queue (its submit time, or its last preemption)."""
        return self._st.pending_since.item(j)

    def model_index(self, j: int) -> int:
        """Index of job ``j``'s model (jobs with one index run the same model)."""
        return self._st.model_l[j]

    def model(self, j: int) -> ModelProfile:
        """Job ``j``'s model (its catalog profile)."""
        return self._st.profiles[self._st.model_l[j]]

    def demand(self, j: int, gpu_type: int) -> float:
        """Job ``j``'s profiled GPU demand on GPU type index ``gpu_type``: the fraction of the GPU its model keeps
        busy alone (``Catalog.model_demand``; measured alone, so not the interference truth)."""
        return self._st.demand_tm_l[gpu_type][self._st.model_l[j]]

    def topology_violation(self, j: int, gpus: np.ndarray | list[int]) -> str | None:
        """Why starting job ``j`` on ``gpus`` would break Gimbal's topology rule, or None (the engine's check,
        asked whether or not the scenario enforces it)."""
        return self._eng.topology_violation(int(j), np.asarray(gpus, dtype=np.int64))

    def batch(self, j: int) -> int:
        """Job ``j``'s per-GPU batch now (its stated one unless ``Reallocate`` changed it)."""
        return self._st.batch_l[j]

    def stated_batch(self, j: int) -> int:
        """The per-GPU batch job ``j``'s work is stated at (its job table's ``batch_size``)."""
        return self._st.batch.item(j)

    def stealing(self, j: int) -> bool:
        """Whether job ``j`` rebalances its workers' batch (sample stealing, LISS; ``SetStealing``)."""
        return bool(self._st.stealing.item(j))

    def accumulation(self, j: int) -> int:
        """The gradient accumulation running job ``j`` started with."""
        return self._st.accum.item(j)

    def footprint(self, j: int) -> float:
        """GPU memory (GB) of one worker of running job ``j``."""
        return self._st.footprint.item(j)

    def remaining(self, j: int) -> float:
        """Iterations job ``j`` had left at its last rate change."""
        return self._st.remaining.item(j)

    def remaining_now(self, jobs: np.ndarray | None = None) -> np.ndarray:
        """Every job's iterations left at the current time (``jobs``: those jobs' only, in their order)."""
        return self._eng.remaining_now(None if jobs is None else np.asarray(jobs, dtype=np.int64))

    def remaining_solo_time(self, jobs: np.ndarray | list[int] | None = None) -> np.ndarray:
        """Every job's run time still to do alone on its fastest type (s): its solo time times the share of its
        iterations left now: the oracle remaining duration SRSF's service, the search expert's candidate list and
        ``rl-advantage``'s features read. ``jobs``: those jobs' only (the same values; the work grows with them,
        not with the trace)."""
        idx = None if jobs is None else np.asarray(jobs, dtype=np.int64)
        at = slice(None) if idx is None else idx
        return self.solo_time[at] * (self.remaining_now(idx) / np.maximum(self.iterations[at], 1))

    # ------------------------------------------------------------------ GPUs
    @property
    def tenants_version(self) -> tuple[int, int]:
        """A key that moves whenever a GPU's tenants change (a start, stop or move: the state's ``epoch`` and
        ``gpu_version``): while it stays, so does :meth:`tenants` of every GPU."""
        st = self._st
        return (st.epoch, st.gpu_version)

    def tenants(self, gpus: np.ndarray | list[int] | None = None) -> np.ndarray:
        """``(len(gpus), 2)``: the jobs in each GPU's two slots (-1: empty; slot 1 is used only beside slot 0).
        No ``gpus``: every GPU's, one read-only array per :attr:`tenants_version` (read once, shared by all)."""
        if gpus is not None:
            return self._st.slot_job[np.asarray(gpus, dtype=np.int64)]
        if self._ten_key != self.tenants_version:
            self._ten_key, self._ten = self.tenants_version, _frozen(self._st.slot_job)
        return self._ten

    def free_gpus(self) -> np.ndarray:
        """GPUs holding no job, by index."""
        return np.flatnonzero(self._eng.free_mask())

    def single_gpus(self) -> np.ndarray:
        """GPUs holding exactly one job (a colocation could share them), by index."""
        return np.flatnonzero(self._eng.single_mask())

    def num_free(self) -> int:
        return self.num_gpus - self._st.busy_gpus

    def num_single(self) -> int:
        return self._st.busy_gpus - self._st.shared_gpus

    def free_by_type(self) -> np.ndarray:
        """Free GPUs of each type."""
        return self._eng.free_by_type()

    def free_by_node_type(self) -> np.ndarray:
        """``(nodes, types)``: free GPUs of each type on each node."""
        return self._st.free_nt.copy()

    def gpus_of(self, j: int) -> np.ndarray:
        """The GPUs job ``j`` holds (every copy)."""
        return self._eng.gpus_of(j).copy()

    def alone_types(self) -> dict[int, int]:
        """Each running job's GPU type when it runs alone: every GPU it holds is of that type and holds no other
        job; -1 when it shares a GPU or spans types (a job not in the dict holds no GPU). One pass over the
        slots, for a policy asking this of many jobs at once (Gavel's rounds: which granted jobs already run
        where granted). Kept while the GPUs' tenants stay the same (the state's ``epoch`` and ``gpu_version``:
        only a start, stop or move changes the slots, and a job holding a GPU is running)."""
        st = self._st
        key = (st.epoch, st.gpu_version)
        if self._alone_key == key:
            return dict(self._alone)
        out = self._alone_types()
        self._alone_key, self._alone = key, out
        return dict(out)

    def _alone_types(self) -> dict[int, int]:
        """:meth:`alone_types` from the running jobs' copies, in the order a pass over the slots in GPU order
        meets the jobs (each at its first GPU, slot 0 before slot 1): the answer of that pass, at the cost of
        the jobs running, not of the GPUs (PhillyScale's 4,416)."""
        st = self._st
        sjf, held_shared, consts = st.slot_job_flat, st.held_shared, st.copy_consts
        keyed = []
        for j in st.running_set:
            cs = consts.get(j)
            if not cs:
                continue
            if len(cs) == 1:
                x, t = min(cs[0].gl), cs[0].t
            else:
                x, t = min(min(c.gl) for c in cs), cs[0].t
                if any(c.t != t for c in cs):
                    t = -1
            if held_shared.item(j) != 0:
                t = -1
            keyed.append((2 * x + (sjf.item(2 * x) != j), j, t))
        keyed.sort()
        return {j: t for _, j, t in keyed}

    def single_gpus_of(self, j: int) -> np.ndarray:
        """The GPUs running job ``j`` alone, the nodes holding most of them first (the order the engine's
        colocation takes them in)."""
        return np.array(self._eng.placement.single_gpus(j), dtype=np.int64)

    def partners_of(self, j: int) -> list[int]:
        """Jobs sharing a GPU with job ``j``."""
        return self._eng.partners_of(j)

    def share_of(self, j: int) -> float:
        """Mean MPS share of job ``j`` over its GPUs (1.0 = 100%)."""
        return self._eng.share_of(j)

    @property
    def share_step(self) -> float:
        """The engine's MPS share grid as a fraction of the GPU (``EngineConfig.share_step``: 0.1, 0.05 ...):
        ``Squeeze`` and ``Swell`` move a share by one step."""
        return self._st.share_step

    @property
    def share_units(self) -> int:
        """Steps of the share grid in a whole GPU (10 on the 10% grid, 20 on the 5% one)."""
        return self._st.share_units

    # ------------------------------------------------------------------ the performance model
    def iter_time(self, j: int, gpus: np.ndarray, s: int, xi: np.ndarray | float = 1.0,
                  batch: int | None = None) -> float:
        """Iteration time of job ``j`` on ``gpus`` at accumulation ``s`` with each worker slowed by ``xi``
        (one ratio per GPU, or one for all; 1 alone) at per-GPU ``batch`` (default its batch now):
        :func:`~gpucluster_env.performance.copy_iter_time`."""
        return self._eng.iter_time_for(j, gpus, s, xi, batch)

    def accumulation_for(self, j: int, gpus: np.ndarray) -> int | None:
        """Smallest power-of-two accumulation under which job ``j`` fits beside the tenants of ``gpus``."""
        return self._eng.accumulation_for(j, gpus)

    def _room(self, gpus: np.ndarray) -> np.ndarray:
        e = self._st
        tenant = e.slot_job[gpus, 0]
        return e.type_mem[e.gpu_type[gpus]] - np.where(tenant >= 0, e.footprint[np.maximum(tenant, 0)], 0.0)

    def accumulations_for(self, j: int, gpus: np.ndarray) -> list[int]:
        """Every power-of-two accumulation under which job ``j`` fits beside the tenants of every GPU of
        ``gpus`` (Castor Algorithm 2's search range)."""
        e = self._st
        sjf, fp, mem, gt = e.slot_job_flat, e.footprint, e.type_mem_l, e.gpu_type_l
        room = min(mem[gt[x]] - (fp.item(o) if (o := sjf.item(2 * x)) >= 0 else 0.0)
                   for x in np.asarray(gpus, dtype=np.int64).tolist())  # as min(_room(gpus)), over ints
        return accumulations(self.model(j), self.batch(j), room)

    def solo_accumulation(self, j: int, gpus: np.ndarray, batch: int | None = None) -> int | None:
        """Smallest accumulation under which job ``j`` fits alone on every GPU of ``gpus`` at per-GPU ``batch``
        (default its batch now; :meth:`~gpucluster_env.engine.rates.Rates.solo_accumulation`)."""
        return self._eng.rates.solo_accumulation(j, gpus, batch)

    def fits_on(self, j: int, gpus: np.ndarray, s: int) -> np.ndarray:
        """Per GPU of ``gpus``: whether a worker of job ``j`` at accumulation ``s`` fits beside its tenant."""
        return fits_memory(footprint_gb(self.model(j), self.batch(j), s), self._room(gpus))

    # ------------------------------------------------------------------ planners
    def plan_place(self, j: int, gpu_type: str | None = None) -> np.ndarray | None:
        """The free GPUs the engine's placement rule would give pending job ``j`` now (None: too few)."""
        return self._eng.plan_place(j, gpu_type)

    def plan_colocate(self, j: int, partner: int) -> np.ndarray | None:
        """The GPUs the engine's colocation rule would give job ``j`` beside running ``partner`` (None:
        none)."""
        return self._eng.plan_colocate(j, partner)

    def plan_fork(self, j: int) -> np.ndarray | None:
        """Free GPUs for one more copy of running job ``j`` on nodes it does not use (None: none)."""
        return self._eng.plan_fork(j)

    def plan_reallocate(self, j: int, gpu_type: str | None = None, n: int | None = None) -> np.ndarray | None:
        """The GPUs ``Reallocate(j, gpu_type=gpu_type)`` would move running job ``j`` to now (``n`` GPUs,
        default its current count; its own GPUs count as free), or None."""
        return self._eng.plan_reallocate(j, gpu_type, n)

    # ------------------------------------------------------------------ moves of running jobs
    def copies_of(self, j: int) -> list[np.ndarray]:
        """The GPUs of each copy of running job ``j`` (one copy unless forked); copy ``i`` of this list is
        ``DropCopy(j, i)`` / ``MoveCopy(j, i, ...)``'s ``copy``."""
        return [g.copy() for g in self._st.copies.get(j, [])]

    def copy_states(self, j: int) -> list[dict]:
        """Per copy of running job ``j``: ``gpus``, ``rate`` (its throughput when it progresses, iterations of
        the job's global batch per second), ``quota`` (steps of its round quota left now, None when not
        forked), ``ready`` (end of its start-up) and ``active`` (progressing now)."""
        return self._eng.copy_states(j)

    def size_range(self, j: int) -> tuple[int, int]:
        """The GPU counts job ``j`` may be reallocated to (``min_gpus``, ``max_gpus``; both its asked count
        for a job that is not elastic)."""
        e = self._st
        return e.min_gpus.item(j), e.max_gpus.item(j)

    def is_elastic(self, j: int) -> bool:
        """Whether job ``j`` may run on a GPU count other than the one it asked for."""
        lo, hi = self.size_range(j)
        return lo != hi

    def can_reallocate(self, j: int) -> bool:
        """Whether ``Reallocate`` applies to job ``j`` now: running as one copy (a forked job moves by copy)."""
        e = self._st
        return e.status.item(j) == RUNNING and len(e.copies.get(j, ())) == 1

    def true_pair_xi(self, a: int, b: int, gpu_type: str) -> tuple[float, float]:
        """The engine's true free-competition ratios of jobs ``a`` and ``b`` on a ``gpu_type`` GPU: for oracle
        agents and evaluation only (other agents predict them)."""
        return self._eng.true_pair_xi(a, b, gpu_type)
