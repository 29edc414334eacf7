"""The engine's state: the static tables built once per cluster, job table and catalog (under the settings of
:class:`~gpucluster_env.config.EngineConfig`), and the dynamic arrays an episode starts from (:class:`EngineState`).

State lives in numpy arrays (one entry per GPU, per node, per job). Each GPU has two slots (at most two jobs
per GPU, MPS sharing); each slot holds a job index and that worker's MPS active-thread share as a whole number
of steps of the engine's share grid (``EngineConfig.share_step``: ``share_units`` steps are 100%, one step is
the least share). The environment (``gpucluster_env.env``) reads these arrays by name (``submit``,
``remaining``, ``rate``, ``held``, ``held_shared``, ``share_lo`` ...); agents read
:class:`~gpucluster_env.engine.view.ClusterView` instead.
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any

import numpy as np

from ..config import EngineConfig
from ..performance import fit_accumulation, solo_iter_time, xi_table
from .activity import SmActivity
from .eventlog import EventLog
from .events import EventQueue

FUTURE, PENDING, RUNNING, DONE = 0, 1, 2, 3
STATUS_NAMES = ("future", "pending", "running", "done")

SHARE_MIN_UNITS = 1
"""The least MPS share a worker may have: one step of the engine's share grid."""
_EPOCHS = itertools.count()  # one per engine state started (construction or reset), process-wide


class EngineState:
    """Static tables and dynamic state of :class:`~gpucluster_env.engine.simulator.ClusterEngine` (a mixin:
    the engine's other parts read and change these attributes)."""

    catalog: Any
    cluster: Any
    config: EngineConfig
    jobs: Any

    # ------------------------------------------------------------------ static tables
    def _build_static(self) -> None:
        """Every static table: the cluster's, the models', the jobs', then the hot paths' lookup tables."""
        self._build_cluster_tables()
        model_idx = self._build_model_tables()
        self._build_job_tables(model_idx)
        self.solo_time = self._solo_times()
        self._build_fast_tables()

    def _build_cluster_tables(self) -> None:
        """The share grid, the GPU types, nodes and GPUs of the cluster."""
        cat, cl = self.catalog, self.cluster
        # the MPS share grid: shares are whole numbers of steps, share_units of them a whole GPU
        self.share_step: float = self.config.share_step
        self.share_units: int = self.config.share_units
        self.type_names: tuple[str, ...] = cl.gpu_types
        type_idx = {t: i for i, t in enumerate(self.type_names)}
        gtypes = [cat.gpu_type(t) for t in self.type_names]
        self.type_mem = np.array([g.memory_gb for g in gtypes])
        self.type_intra_bw = np.array([g.intra_node_bw_gbps for g in gtypes])
        self.num_nodes = len(cl.nodes)
        self.node_size = np.array([n.count for n in cl.nodes], dtype=np.int64)
        self.node_start = np.concatenate([[0], np.cumsum(self.node_size)[:-1]]).astype(np.int64)
        self.node_type = np.array([type_idx[n.gpu_type] for n in cl.nodes], dtype=np.int64)
        self.num_gpus = int(self.node_size.sum())
        self.gpu_node = np.repeat(np.arange(self.num_nodes), self.node_size)
        self.gpu_type = self.node_type[self.gpu_node]
        self.type_total = np.bincount(self.gpu_type, minlength=len(self.type_names))

    def _build_model_tables(self) -> dict[str, int]:
        """The models of the job table: profiles, speed and demand per GPU type, free-competition interference
        ratios of every pair; returns each model name's index."""
        cat, jobs = self.catalog, self.jobs
        self.model_names: tuple[str, ...] = tuple(sorted(set(jobs["model"])))
        model_idx = {m: i for i, m in enumerate(self.model_names)}
        self.profiles = [cat.model(m) for m in self.model_names]
        nm, nt = len(self.model_names), len(self.type_names)
        self.speed_mt = np.array(
            [[cat.model_speed(p, t) for t in self.type_names] for p in self.profiles], dtype=float
        ).reshape(nm, nt)
        # GPU demand of each model on each type (the share model's d), [type, model]
        self.demand_tm = np.array(
            [[cat.model_demand(p, t) for p in self.profiles] for t in self.type_names], dtype=float
        ).reshape(nt, nm)
        self.xi_free = np.ones((nt, nm, nm))
        for ti, t in enumerate(self.type_names):
            for a, pa in enumerate(self.profiles):
                for b, pb in enumerate(self.profiles):
                    xa, _ = cat.interference.pair_xi(pa, pb, t)
                    if not (xa >= 1.0 and math.isfinite(xa)):
                        raise ValueError(
                            f"interference model gave xi={xa!r} < 1 for {pa.name}+{pb.name} on {t}"
                        )
                    self.xi_free[ti, a, b] = xa
        return model_idx

    def _build_job_tables(self, model_idx: dict[str, int]) -> None:
        """The job table's columns as arrays, and whether each job fits alone on each GPU type."""
        jobs, nt = self.jobs, len(self.type_names)
        self.n_jobs = len(jobs)
        self.job_ids = jobs["job_id"].to_numpy()
        self.submit = jobs["submit_s"].to_numpy(float)
        self.req_gpus = jobs["num_gpus"].to_numpy(np.int64)
        self.job_model = np.array([model_idx[m] for m in jobs["model"]], dtype=np.int64)
        self.batch = jobs["batch_size"].to_numpy(np.int64)
        self.iterations = jobs["iterations"].to_numpy(float)
        self.deadline = jobs["deadline_s"].to_numpy(float)
        # elastic jobs (Reallocate may resize them): the optional job-table columns, default the asked size
        self.min_gpus = jobs["min_gpus"].to_numpy(np.int64) if "min_gpus" in jobs else self.req_gpus.copy()
        self.max_gpus = jobs["max_gpus"].to_numpy(np.int64) if "max_gpus" in jobs else self.req_gpus.copy()
        # Whether each job fits alone (at some accumulation) on each GPU type; computed per (model, batch).
        keys, inverse = np.unique(np.stack([self.job_model, self.batch], axis=1), axis=0, return_inverse=True)
        fits_key = np.array(
            [[fit_accumulation(self.profiles[int(m)], int(b), float(self.type_mem[t])) is not None
              for t in range(nt)] for m, b in keys],
            dtype=bool,
        ).reshape(len(keys), nt)
        self.fits_type = fits_key[inverse.ravel()]
        self._scales: dict[tuple[int, int, int, int, int], float] = {}
        self._type_node_max = [int(self.node_size[self.node_type == t].max(initial=1)) for t in range(nt)]
        # Gavel measured zero throughput (cannot run) for the job's gang on a type: masked as if it did not fit
        gangs, inv = np.unique(np.stack([self.job_model, self.batch, self.req_gpus], axis=1), axis=0,
                               return_inverse=True)
        runs = np.array([[math.isfinite(self.gang_scale(int(m), int(b), t, int(n))) for t in range(nt)]
                         for m, b, n in gangs], dtype=bool).reshape(len(gangs), nt)
        self.fits_type &= runs[inv.ravel()]

    def _build_fast_tables(self) -> None:
        """Static lookup tables of the hot paths (pure functions of the catalog, cluster and job table)."""
        nm = len(self.model_names)
        # Worker interference ratio under MPS shares for every GPU type, own model + 1, partner model + 1 (0:
        # no partner), own share and partner share in share steps (performance.xi_table), for copies of any size.
        self._xi_tab = xi_table(self.xi_free, self.demand_tm, self.share_units)
        self._comm_xi = self.config.interference_scope == "iteration"  # xi multiplies the all-reduce too
        self._jm1 = np.append(self.job_model + 1, 0)  # model + 1 by job index; index -1 (no job) gives 0
        self._gpu_nt = self.gpu_node * len(self.type_names) + self.gpu_type  # flat index into free_nt
        self._type_order_m = [[int(t) for t in np.argsort(-self.speed_mt[mi], kind="stable")] for mi in range(nm)]
        # The same static values as Python lists (scalar reads from a list cost a fraction of numpy's): the
        # list entries are the arrays' values converted exactly (int64 -> int, float64 -> float).
        self._xi_tab_l = self._xi_tab.tolist()  # [type][own model + 1][partner model + 1][own][partner]
        self._type_mem_l = self.type_mem.tolist()
        self._demand_tm_l = self.demand_tm.tolist()  # [type][model]
        self._req_l = self.req_gpus.tolist()
        self._model_l = self.job_model.tolist()
        self._batch_l = self.batch.tolist()
        self._submit_l = self.submit.tolist()
        self._fits_l = [tuple(r) for r in self.fits_type.tolist()]
        self._gpu_node_l = self.gpu_node.tolist()
        self._gpu_type_l = self.gpu_type.tolist()
        self._gpu_nt_l = self._gpu_nt.tolist()
        self._node_start_l = self.node_start.tolist()
        self._node_size_l = self.node_size.tolist()
        self._copy_models: dict[tuple, Any] = {}  # performance.CopyModel of one-type copies, by their key

    def gang_scale(self, m: int, batch: int, t: int, n: int, n_nodes: int | None = None) -> float:
        """Measured over modelled solo time of model ``m`` at per-GPU ``batch`` on ``n`` GPUs of type ``t``
        over ``n_nodes`` nodes (None: the fewest the type allows), :meth:`~gpucluster_env.catalog.Catalog.
        solo_scale`: 1.0 where unmeasured, inf where Gavel measured zero. Cached; a pure function of the
        catalog and cluster."""
        fewest = -(-n // self._type_node_max[t])
        nodes = fewest if n_nodes is None else n_nodes
        key = (m, batch, t, n, nodes)
        f = self._scales.get(key)
        if f is None:
            p = self.profiles[m]
            modelled = solo_iter_time(p, batch, 1, self.speed_mt[m, t], n, nodes, self.type_intra_bw[t],
                                      self.cluster.inter_node_bw_gbps)
            f = self._scales[key] = self.catalog.solo_scale(p, batch, self.type_names[t], n, nodes <= fewest,
                                                            modelled)
        return f

    def fastest_solo_iter(self, m: int, batch: int, n: int, types: list[int]) -> float:
        """Iteration time of a job (model ``m``, per-GPU batch ``batch``, ``n`` GPUs) alone on the fastest of
        ``types`` it fits, packed on the fewest nodes, at the smallest accumulation that fits (inf: none)."""
        p = self.profiles[m]
        best = math.inf
        for t in types:
            s = fit_accumulation(p, batch, float(self.type_mem[t]))
            if s is None:
                continue
            per_node = int(self.node_size[self.node_type == t].max())
            f = self.gang_scale(m, batch, t, n)
            if math.isinf(f):
                continue
            best = min(best, solo_iter_time(p, batch, s, self.speed_mt[m, t], n, -(-n // per_node),
                                            self.type_intra_bw[t], self.cluster.inter_node_bw_gbps, f))
        return best

    def _solo_times(self) -> np.ndarray:
        """Each job's run time alone on the fastest type it fits, packed on the fewest nodes, no sharing."""
        out = np.empty(self.n_jobs)
        cache: dict[tuple[int, int, int], float] = {}
        types = list(range(len(self.type_names)))
        for j in range(self.n_jobs):
            key = (int(self.job_model[j]), int(self.batch[j]), int(self.req_gpus[j]))
            if key not in cache:
                cache[key] = self.fastest_solo_iter(*key, types)
            out[j] = self.iterations[j] * cache[key]
        return out

    # ------------------------------------------------------------------ dynamic state
    def _reset_state(self) -> None:
        """The state at time 0: every GPU free, every job in the future, no event but the clock's first."""
        self.now = 0.0
        self._reset_jobs()
        self._reset_queues()
        self._reset_occupancy()
        self._reset_totals()

    def _reset_jobs(self) -> None:
        """The slot arrays and the per-job dynamic arrays."""
        G, J = self.num_gpus, self.n_jobs
        self.slot_job = np.full((G, 2), -1, dtype=np.int64)
        self.slot_share = np.full((G, 2), self.share_units, dtype=np.int64)
        self.free_nt = np.zeros((self.num_nodes, len(self.type_names)), dtype=np.int64)
        np.add.at(self.free_nt, (self.gpu_node, self.gpu_type), 1)
        self.status = np.zeros(J, dtype=np.int8)
        self.remaining = self.iterations.copy()
        self.rate = np.zeros(J)
        self.last_t = np.zeros(J)
        self.active_from = np.zeros(J)
        self.version = np.zeros(J, dtype=np.int64)
        self.accum = np.ones(J, dtype=np.int64)
        self.footprint = np.zeros(J)
        self.first_start = np.full(J, np.nan)
        self.last_start = np.full(J, np.nan)  # time of each job's latest start (NaN: never started)
        self.finish_t = np.full(J, np.nan)
        self.queue_s = np.zeros(J)
        self.pending_since = np.zeros(J)
        self.n_preempt = np.zeros(J, dtype=np.int64)
        self.n_colocated = np.zeros(J, dtype=np.int64)
        self.max_copies = np.ones(J, dtype=np.int64)
        self.copies: dict[int, list[np.ndarray]] = {}
        self._copy_consts: dict[int, list[Any]] = {}  # parallel to ``copies``: each copy (occupancy.Copy)
        self._bind_views()

    def _reset_queues(self) -> None:
        """The pending queue, the running set, per-copy progress and the event queue."""
        self._pending: dict[int, None] = {}
        self._running: dict[int, None] = {}
        self._forked: set[int] = set()
        # per-copy progress of the jobs whose rate is not one full-size copy's (engine.copies.CopyProgress)
        self._cp: dict[int, Any] = {}
        self.events = EventQueue()  # completions, rounds, ticks (engine.events)
        self._next_arrival = 0
        self.n_done = 0

    def _reset_occupancy(self) -> None:
        """The change counters for observers, the counts kept beside the slots and the per-job figures that follow
        them (GPUs held and shared, smallest GPU memory, share range, solo rate, LISS)."""
        J = self.n_jobs
        # Change counters for observers (the environment keeps views of the state between steps):
        # queue_version moves whenever the pending queue or the running set changes (arrival, start, finish,
        # preemption); gpu_version whenever a GPU's tenants change (and with them free, busy and shared
        # counts, and the jobs' held and held_shared). A job's own dynamic state moves with version[j]. All of
        # them start again at each reset; ``epoch`` tells the episodes (and engines) apart.
        self.epoch = next(_EPOCHS)
        self.queue_version = 0
        self.gpu_version = 0
        self.busy_gpus = 0
        self.shared_gpus = 0
        nt = len(self.type_names)
        self.busy_t = np.zeros(nt, dtype=np.int64)  # GPUs of each type holding at least one job
        self.shared_t = np.zeros(nt, dtype=np.int64)  # GPUs of each type holding two jobs
        self.held = np.zeros(J, dtype=np.int64)  # GPUs each job holds (all copies)
        self.held_shared = np.zeros(J, dtype=np.int64)  # of those, GPUs shared with a partner
        # for each job sharing GPUs: its partners and how many GPUs it shares with each (sums to held_shared)
        self._shared_with: dict[int, dict[int, int]] = {}
        self.job_min_mem = np.zeros(J)  # smallest GPU memory among the job's GPUs
        # min / max MPS share over its GPUs (share steps)
        self.share_lo = np.full(J, self.share_units, dtype=np.int64)
        self.share_hi = np.full(J, self.share_units, dtype=np.int64)
        self.solo_rate = np.zeros(J)  # rate the job would have with no partners, at shares of 100%
        self.stealing = np.full(J, self.config.sample_stealing, dtype=bool)  # LISS per job (SetStealing)

    def _reset_totals(self) -> None:
        """The utilization integrals, action counts, event log and the clock's first events."""
        self.busy_gpu_s = 0.0
        self.shared_gpu_s = 0.0
        self.sm_active_gpu_s = 0.0  # estimated active-SM GPU-time (engine.activity)
        self._sm = SmActivity(self._gpu_type_l, self._demand_tm_l, self._model_l, self.share_step, self.num_gpus)
        self._acc_t = 0.0
        self._idle_ticks = 0
        self.counts = {"colocations": 0, "preemptions": 0, "forks": 0, "squeezes": 0, "swells": 0,
                       "decisions": 0, "actions": 0, "reallocations": 0, "copy_drops": 0, "copy_moves": 0}
        self.sharing_benefits: list[tuple[int, float, float]] = []
        self.log = EventLog()
        self._start_clock()  # engine.clock.Clock: the first round and calibration ticks
        self.last_reasons: tuple[str, ...] = ()

    def reset(self) -> None:
        """Start the episode again from time 0 (same jobs)."""
        self._reset_state()

    _static_names: frozenset[str] = frozenset()
    """The attributes set before the first episode state (:meth:`_build_static` and what the constructor set
    before it): tables that no action or event changes, shared by :meth:`clone`."""

    def _mark_static(self) -> None:
        """Record the attributes set so far as static (called once the static tables are built)."""
        self._static_names = frozenset(self.__dict__)

    def clone(self) -> EngineState:
        """An independent engine at this instant: the same state, events and log, so that acting on the copy
        gives bit for bit what acting on this engine would, and nothing done to either changes the other
        (what a search agent rolls out on). The static tables (catalog, cluster, job table, performance
        tables and their cache) and the running copies' constants (replaced, never changed in place) are
        shared; the dynamic state is copied (0.26 ms against 20 ms for ``copy.deepcopy`` mid-episode on
        castor-philly)."""
        d = self.__dict__
        memo: dict[int, Any] = {id(d[k]): d[k] for k in self._static_names}
        for cs in self._copy_consts.values():
            for c in cs:
                memo[id(c)] = c
        return copy.deepcopy(self, memo)

    _VIEWS = ("_sj_flat", "_ss_flat", "_free_flat")

    def _bind_views(self) -> None:
        self._sj_flat = self.slot_job.reshape(-1)  # flat views of the slot arrays (index 2 g + slot)
        self._ss_flat = self.slot_share.reshape(-1)
        self._free_flat = self.free_nt.reshape(-1)  # index node * types + type

    def __getstate__(self) -> dict:
        # views do not survive pickling (they would come back as copies): rebuilt on unpickling
        return {k: v for k, v in self.__dict__.items() if k not in self._VIEWS}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._bind_views()
