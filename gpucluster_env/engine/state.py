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

import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config import EngineConfig
from ..performance import fit_accumulation, solo_iter_time, xi_table
from .activity import SmActivity
from .eventlog import EventLog
from .events import EventQueue
from .state_copy import clone_memo

if TYPE_CHECKING:
    import pandas as pd

    from ..catalog import Catalog
    from ..hardware import ClusterSpec

FUTURE, PENDING, RUNNING, DONE = 0, 1, 2, 3
STATUS_NAMES = ("future", "pending", "running", "done")

SHARE_MIN_UNITS = 1
"""The least MPS share a worker may have: one step of the engine's share grid."""
STATE_FIELDS = (
    "catalog", "cluster", "config", "jobs", "share_step", "share_units", "type_names", "type_mem", "type_intra_bw",
    "num_nodes", "node_size", "node_start", "node_type", "num_gpus", "gpu_node", "gpu_type", "type_total",
    "model_names", "profiles", "speed_mt", "demand_tm", "xi_free", "n_jobs", "job_ids", "submit", "req_gpus",
    "job_model", "batch", "iterations", "deadline", "min_gpus", "max_gpus", "fits_type", "solo_time",
    "now", "slot_job", "slot_share", "free_nt", "status", "remaining", "rate", "last_t", "active_from", "version",
    "accum", "footprint", "first_start", "last_start", "finish_t", "queue_s", "pending_since", "n_preempt",
    "n_colocated", "max_copies", "copies", "events", "next_arrival", "n_done", "epoch", "queue_version",
    "gpu_version", "busy_gpus", "shared_gpus", "busy_t", "shared_t", "held", "held_shared", "job_min_mem",
    "share_lo", "share_hi", "solo_rate", "stealing", "busy_gpu_s", "shared_gpu_s", "sm_active_gpu_s", "counts",
    "sharing_benefits", "log",
)
"""The :class:`EngineState` attributes :class:`~gpucluster_env.engine.simulator.ClusterEngine` shows by name
(the environment and tests read them as ``eng.<name>``)."""
ENGINE_INTERNALS = (
    "type_mem_l", "req_l", "model_l", "gpu_node_l", "gpu_type_l", "gpu_nt_l", "batch_l", "submit_l", "demand_tm_l",
    "node_start_l", "node_size_l", "fits_l", "xi_share_tab", "xi_tab_l", "jm1", "type_order_m", "copy_models",
    "copy_consts", "copy_progress", "pending_queue", "running_set", "forked_set", "shared_map", "sm_activity",
    "slot_job_flat", "slot_share_flat", "free_flat",
)
"""The :class:`EngineState` attributes only the engine's own parts read (:mod:`gpucluster_env.engine`): hot-path
copies of tables as Python lists (``*_l``), flat views of the slot arrays (``*_flat``), the queue and running set,
per-copy progress and constants, the activity tracker. :class:`ClusterEngine` does not show them, and a test
checks that no module outside the engine reads them."""
_EPOCHS = itertools.count()  # one per engine state started (construction or reset), process-wide


class EngineState:
    """The data of one engine: static tables (built once, shared by clones) and the dynamic state of the
    episode (reset to time 0 by :meth:`reset`). The engine's parts (:mod:`.occupancy`, :mod:`.rates`,
    :mod:`.job_progress`, :mod:`.job_queue`, :mod:`.clock`, the checks and the changes) each hold this one object
    and read its attributes; each attribute that changes after a reset is written by one part, its owner, and
    the others change it through the owner's methods (``docs/engine.md``, "Who writes what"). It holds data and
    the pure queries of its static tables, no rule of the simulation. Its attributes are :data:`STATE_FIELDS`
    (shown by the engine, read only) and :data:`ENGINE_INTERNALS` (read by the engine's parts only)."""

    def __init__(self, catalog: Catalog, cluster: ClusterSpec, config: EngineConfig, jobs: pd.DataFrame) -> None:
        self.catalog = catalog
        self.cluster = cluster
        self.config = config
        self.jobs = jobs
        self._build_static()
        self._static_names = frozenset(self.__dict__) | {"_static_names"}
        self.reset()

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
        self.xi_share_tab = xi_table(self.xi_free, self.demand_tm, self.share_units)
        self._comm_xi = self.config.interference_scope == "iteration"  # xi multiplies the all-reduce too
        self.jm1 = np.append(self.job_model + 1, 0)  # model + 1 by job index; index -1 (no job) gives 0
        self._gpu_nt = self.gpu_node * len(self.type_names) + self.gpu_type  # flat index into free_nt
        self.type_order_m = [[int(t) for t in np.argsort(-self.speed_mt[mi], kind="stable")] for mi in range(nm)]
        # The same static values as Python lists (scalar reads from a list cost a fraction of numpy's): the
        # list entries are the arrays' values converted exactly (int64 -> int, float64 -> float).
        self.xi_tab_l = self.xi_share_tab.tolist()  # [type][own model + 1][partner model + 1][own][partner]
        self.type_mem_l = self.type_mem.tolist()
        self.demand_tm_l = self.demand_tm.tolist()  # [type][model]
        self.req_l = self.req_gpus.tolist()
        self.model_l = self.job_model.tolist()
        self.submit_l = self.submit.tolist()
        self.fits_l = [tuple(r) for r in self.fits_type.tolist()]
        self.gpu_node_l = self.gpu_node.tolist()
        self.gpu_type_l = self.gpu_type.tolist()
        self.gpu_nt_l = self._gpu_nt.tolist()
        self.node_start_l = self.node_start.tolist()
        self.node_size_l = self.node_size.tolist()
        self.copy_models: dict[tuple, Any] = {}  # performance.CopyModel of one-type copies, by their key

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
    def reset(self) -> None:
        """The state at time 0: every GPU free, every job in the future, no event (the clock pushes its first,
        :meth:`~gpucluster_env.engine.clock.Clock.start`)."""
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
        self.batch_l = self.batch.tolist()  # per-GPU batch now: Reallocate's batch changes it (dynamic, not static)
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
        self.copy_consts: dict[int, list[Any]] = {}  # parallel to ``copies``: each copy (occupancy.Copy)
        self._bind_views()

    def _reset_queues(self) -> None:
        """The pending queue, the running set, per-copy progress and the event queue."""
        self.pending_queue: dict[int, None] = {}
        self.running_set: dict[int, None] = {}
        self.forked_set: set[int] = set()
        # per-copy progress of the jobs whose rate is not one full-size copy's (job_progress.CopyProgress)
        self.copy_progress: dict[int, Any] = {}
        self.events = EventQueue()  # completions, rounds, ticks (engine.events)
        self.next_arrival = 0  # index of the next job to arrive (jobs are in submit order)
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
        self.shared_map: dict[int, dict[int, int]] = {}
        self.job_min_mem = np.zeros(J)  # smallest GPU memory among the job's GPUs
        # min / max MPS share over its GPUs (share steps)
        self.share_lo = np.full(J, self.share_units, dtype=np.int64)
        self.share_hi = np.full(J, self.share_units, dtype=np.int64)
        self.solo_rate = np.zeros(J)  # rate the job would have with no partners, at shares of 100%
        self.stealing = np.full(J, self.config.sample_stealing, dtype=bool)  # LISS per job (SetStealing)

    def _reset_totals(self) -> None:
        """The utilization integrals, action counts and event log."""
        self.busy_gpu_s = 0.0
        self.shared_gpu_s = 0.0
        self.sm_active_gpu_s = 0.0  # estimated active-SM GPU-time (engine.activity)
        self.sm_activity = SmActivity(self.gpu_type_l, self.demand_tm_l, self.model_l, self.share_step, self.num_gpus)
        self.counts = {"colocations": 0, "preemptions": 0, "forks": 0, "squeezes": 0, "swells": 0,
                       "decisions": 0, "actions": 0, "reallocations": 0, "copy_drops": 0, "copy_moves": 0}
        self.sharing_benefits: list[tuple[int, float, float]] = []
        self.log = EventLog()

    @property
    def done(self) -> bool:
        """Every job of the episode has finished."""
        return self.n_done == self.n_jobs

    def shared_memo(self) -> dict[int, Any]:
        """What a clone shares with this state, as a ``copy.deepcopy`` memo: the static tables (catalog,
        cluster, job table, performance tables and their caches, the attributes set before the first
        :meth:`reset`) and the running copies' constants (replaced, never changed in place); and flat copies of
        the arrays and containers of plain numbers, whose flat copy is a deep one (:mod:`.state_copy`)."""
        return clone_memo(self, self._static_names)

    _VIEWS = ("slot_job_flat", "slot_share_flat", "free_flat")

    def _bind_views(self) -> None:
        self.slot_job_flat = self.slot_job.reshape(-1)  # flat views of the slot arrays (index 2 g + slot)
        self.slot_share_flat = self.slot_share.reshape(-1)
        self.free_flat = self.free_nt.reshape(-1)  # index node * types + type

    def __getstate__(self) -> dict:
        # views do not survive pickling (they would come back as copies): rebuilt on unpickling
        return {k: v for k, v in self.__dict__.items() if k not in self._VIEWS}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._bind_views()
