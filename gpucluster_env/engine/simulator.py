"""The discrete-event simulator of a heterogeneous GPU cluster running deep-learning training jobs.

State lives in numpy arrays (one entry per GPU, per node, per job); events live in a heap. Each running job
has a piecewise-constant rate (iterations per second); progress is settled lazily, only for the jobs whose
rate changes, and a job's completion time is computed exactly and pushed as an event with a version number so
that a rate change invalidates the old prediction. Nothing steps through time in fixed ticks.

Each GPU has two slots (at most two jobs per GPU, MPS sharing); each slot holds a job index and that worker's
MPS active-thread share in tenths (10 = 100%). A job runs as one or more *copies* (more than one only when
forked, HadarE), each a gang of GPUs; its rate is the sum of its copies' rates.

The engine knows nothing of Gymnasium: it exposes decision points (:meth:`ClusterEngine.advance`) and applies
typed actions (:meth:`ClusterEngine.apply`), or the same actions from plain ints without building the action
objects (:meth:`ClusterEngine.place_job`, ``colocate_job``, ``calibrate_job``, ``preempt_job``, ``fork_job``).

Bit-for-bit determinism is a contract (same seed, same floats, same log): the hot paths read numpy state as
Python scalars and static tables as Python lists, which carry the same values, and compute with the same IEEE
operations in the same order; values that reach the event log, the clock or ``sharing_benefits`` keep the
numpy types they had.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..catalog import Catalog, default_catalog
from ..hardware import ClusterSpec
from ..interference import MAX_SHARE, MIN_SHARE, SHARE_STEP
from ..jobs import validate_jobs
from ..workloads import comm_time, iteration_time
from .actions import (
    Action,
    ActionError,
    Colocate,
    Fork,
    Place,
    Preempt,
    Squeeze,
    StalledError,
    Swell,
    Wait,
)
from .eventlog import EventLog

FUTURE, PENDING, RUNNING, DONE = 0, 1, 2, 3
STATUS_NAMES = ("future", "pending", "running", "done")

_FINISH, _ROUND, _TICK, _IDLE = 1, 2, 3, 4
_TENTHS_MIN = round(MIN_SHARE / SHARE_STEP)
_TENTHS_MAX = round(MAX_SHARE / SHARE_STEP)
_EPOCHS = itertools.count()  # one per engine state started (construction or reset), process-wide


@dataclass(frozen=True)
class EngineConfig:
    """Per-scenario settings of the simulation.

    ``round_s``: length of scheduling rounds (a decision point at each boundary; forking needs rounds).
    ``restart_s``: overhead a preempted job pays when it starts again. ``consolidation_s``: overhead a forked
    job pays at every round boundary. ``tick_s``: period of calibration ticks (decision points for
    Gimbal-style coordination). ``idle_tick_s``: how far time moves when the agent waits and nothing else is
    due.
    ``sample_stealing``: LISS, per-worker batches rebalanced so a job on unequal workers is not paced by the
    slowest. ``calibration_overhead_s``: pause a job pays when its share changes (Gimbal's LGRR switch).
    ``max_idle_ticks``: consecutive decision points with nothing running and no arrival or completion (idle,
    round or calibration ticks) after which the episode is stalled.
    """

    round_s: float | None = None
    restart_s: float = 0.0
    consolidation_s: float = 0.0
    tick_s: float | None = None
    idle_tick_s: float = 60.0
    sample_stealing: bool = False
    calibration_overhead_s: float = 0.0
    max_idle_ticks: int = 100_000

    def __post_init__(self) -> None:
        for name in ("round_s", "tick_s"):
            v = getattr(self, name)
            if v is not None and not (v > 0):
                raise ValueError(f"EngineConfig.{name} must be positive or None, got {v!r}")
        for name in ("restart_s", "consolidation_s", "calibration_overhead_s"):
            if not (getattr(self, name) >= 0):
                raise ValueError(f"EngineConfig.{name} must be >= 0")
        if not (self.idle_tick_s > 0):
            raise ValueError("EngineConfig.idle_tick_s must be positive")


class _Copy:
    """Constants of one running copy of a job (a gang of GPUs at a fixed accumulation), computed once when the
    copy starts and dropped when it stops: everything the copy's iteration time needs that the dynamic state
    (partners, MPS shares) cannot change. Each field is what :meth:`ClusterEngine.iter_time_for` would compute
    for the copy, by the same operations in the same order, so results are bit for bit the same."""

    __slots__ = ("g", "n", "gpu", "t", "speed", "sab", "_g2", "_g2p1", "homog", "spd", "types", "xi_tm", "tcn",
                 "steal_num", "comm", "min_mem", "solo_iter", "n_nodes", "s", "delta", "comm_pow", "inv_delta",
                 "gl", "xi_tl", "order", "frees", "tcnf", "speedf")

    g: np.ndarray  # the GPUs
    n: int
    gpu: int  # n == 1: the GPU, its type, the job's speed there and s * (alpha + beta * B/s)
    t: int
    speed: float
    sab: float
    gl: list[int]  # the GPUs as a list
    homog: bool  # one GPU type (then ``speed`` and ``xi_tm`` are that type's)
    spd: np.ndarray  # the job's speed on each GPU
    types: np.ndarray
    xi_tm: np.ndarray  # homog: the worker-xi table of this type and model, indexed [partner model + 1, own, other]
    tcn: float  # alpha + beta * B/s (numerator of the compute time)
    steal_num: float  # n alpha + beta (B/s) n (LISS numerator)
    comm: float  # all-reduce time (Castor eq. 2)
    n_nodes: int
    s: int  # accumulation
    delta: float  # the model's overlap exponent, comm ** delta and 1 / delta (for iteration_time)
    comm_pow: float
    inv_delta: float
    min_mem: float  # smallest GPU memory of the copy
    solo_iter: float  # iteration time alone at full share (xi = 1 on every worker)
    xi_tl: list  # homog: ``xi_tm`` as nested lists
    tcnf: float  # homog: float(tcn), float(speed)
    speedf: float
    order: np.ndarray | None  # n > 1, homog: the GPUs in plan_colocate's order (computed when first needed)
    frees: list[tuple[int, int]] | None  # n > 1: (index into free_nt's flat view, GPUs there), when needed

    @property
    def g2(self) -> np.ndarray:
        """n > 1: flat indices of slot 0 of each GPU in the (G, 2) slot arrays (computed when first needed)."""
        if self._g2 is None:
            self._g2 = 2 * self.g
            self._g2p1 = self._g2 + 1
        return self._g2

    @property
    def g2p1(self) -> np.ndarray:
        """n > 1: flat indices of slot 1 of each GPU."""
        if self._g2 is None:
            self.g2  # noqa: B018 (computes both)
        return self._g2p1


class ClusterEngine:
    """Simulates one episode: a cluster, a job table, a catalog, a config.

    Typical use::

        eng = ClusterEngine(cluster, jobs, catalog, config)
        eng.advance()                      # to the first decision point
        while not eng.done:
            eng.apply(Place(job))          # any number of actions, applied at once
            eng.advance()                  # = Wait
        eng.metrics()
    """

    def __init__(
        self,
        cluster: ClusterSpec,
        jobs: pd.DataFrame,
        catalog: Catalog | None = None,
        config: EngineConfig | None = None,
        source: str = "job table",
        skip_bad_rows: bool = False,
    ) -> None:
        self.catalog = catalog or default_catalog()
        self.cluster = cluster
        self.config = config or EngineConfig()
        self.jobs, self.skip_report = validate_jobs(jobs, self.catalog, cluster, source, skip_bad_rows)
        self._build_static()
        self._reset_state()

    # ------------------------------------------------------------------ static tables
    def _build_static(self) -> None:
        cat, cl = self.catalog, self.cluster
        self.type_names: tuple[str, ...] = cl.gpu_types
        type_idx = {t: i for i, t in enumerate(self.type_names)}
        gtypes = [cat.gpu_type(t) for t in self.type_names]
        self.type_mem = np.array([g.memory_gb for g in gtypes])
        self._type_mem_l = self.type_mem.tolist()
        self.type_intra_bw = np.array([g.intra_node_bw_gbps for g in gtypes])
        self.num_nodes = len(cl.nodes)
        self.node_size = np.array([n.count for n in cl.nodes], dtype=np.int64)
        self.node_start = np.concatenate([[0], np.cumsum(self.node_size)[:-1]]).astype(np.int64)
        self.node_type = np.array([type_idx[n.gpu_type] for n in cl.nodes], dtype=np.int64)
        self.num_gpus = int(self.node_size.sum())
        self.gpu_node = np.repeat(np.arange(self.num_nodes), self.node_size)
        self.gpu_type = self.node_type[self.gpu_node]
        self.type_total = np.bincount(self.gpu_type, minlength=len(self.type_names))

        jobs = self.jobs
        self.model_names: tuple[str, ...] = tuple(sorted(set(jobs["model"])))
        model_idx = {m: i for i, m in enumerate(self.model_names)}
        self.profiles = [cat.model(m) for m in self.model_names]
        nm, nt = len(self.model_names), len(self.type_names)
        self.speed_mt = np.array(
            [[cat.model_speed(p, t) for t in self.type_names] for p in self.profiles], dtype=float
        ).reshape(nm, nt)
        self.demand_m = np.array([p.gpu_demand for p in self.profiles])
        self.alpha_m = np.array([p.alpha_s for p in self.profiles])
        self.beta_m = np.array([p.beta_s for p in self.profiles])
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

        self.n_jobs = len(jobs)
        self.job_ids = jobs["job_id"].to_numpy()
        self.submit = jobs["submit_s"].to_numpy(float)
        self.req_gpus = jobs["num_gpus"].to_numpy(np.int64)
        self.job_model = np.array([model_idx[m] for m in jobs["model"]], dtype=np.int64)
        self.batch = jobs["batch_size"].to_numpy(np.int64)
        self.iterations = jobs["iterations"].to_numpy(float)
        self.deadline = jobs["deadline_s"].to_numpy(float)
        # Whether each job fits alone (at some accumulation) on each GPU type; computed per (model, batch).
        keys, inverse = np.unique(np.stack([self.job_model, self.batch], axis=1), axis=0, return_inverse=True)
        fits_key = np.array(
            [[self._fit_accumulation(int(m), int(b), t, 0.0) is not None for t in range(nt)]
             for m, b in keys],
            dtype=bool,
        ).reshape(len(keys), nt)
        self.fits_type = fits_key[inverse.ravel()]
        self.solo_time = self._solo_times()
        self._build_fast_tables()

    def _build_fast_tables(self) -> None:
        """Static lookup tables of the hot paths (pure functions of the catalog, cluster and job table)."""
        nt, nm = len(self.type_names), len(self.model_names)
        # Worker interference ratio xi = pressure / cap (see _worker_xi), tabulated over every GPU type, own
        # model + 1, partner model + 1 (0: no partner), own share and partner share in tenths, with the same
        # numpy operations elementwise, so a lookup equals the direct computation bit for bit.
        t_ = np.arange(nt).reshape(nt, 1, 1, 1, 1)
        m1 = np.arange(nm + 1).reshape(1, nm + 1, 1, 1, 1)
        pm1 = np.arange(nm + 1).reshape(1, 1, nm + 1, 1, 1)
        tenths = np.arange(_TENTHS_MAX + 1, dtype=np.int64)
        own_share = tenths.reshape(1, 1, 1, -1, 1) * SHARE_STEP
        partner_share = tenths.reshape(1, 1, 1, 1, -1) * SHARE_STEP
        m = np.maximum(m1 - 1, 0)
        has = pm1 > 0
        xi0 = self.xi_free[t_, m, np.where(has, pm1 - 1, 0)]
        pressure = 1.0 + (xi0 - 1.0) * partner_share * has
        with np.errstate(divide="ignore"):  # own share 0 never occurs
            cap = np.minimum(1.0, own_share / self.demand_m[m])
            self._xi_tab = pressure / cap
        self._jm1 = np.append(self.job_model + 1, 0)  # model + 1 by job index; index -1 (no job) gives 0
        self._gpu_nt = self.gpu_node * nt + self.gpu_type  # flat index into free_nt
        self._type_order_m = [[int(t) for t in np.argsort(-self.speed_mt[mi], kind="stable")] for mi in range(nm)]
        self._inter_bw = self.cluster.inter_node_bw_gbps
        # The same static values as Python lists (scalar reads from a list cost a fraction of numpy's): the
        # list entries are the arrays' values converted exactly (int64 -> int, float64 -> float).
        self._xi_tab_l = self._xi_tab.tolist()  # [type][own model + 1][partner model + 1][own][partner]
        self._xi_free_l = self.xi_free.tolist()
        self._demand_l = self.demand_m.tolist()
        self._speed_l = self.speed_mt.tolist()
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
        # placement on Python lists when the cluster has few nodes (else numpy, which scales better)
        self._small = self.num_nodes <= 64
        self._stealing = self.config.sample_stealing
        self._calib_overhead = self.config.calibration_overhead_s
        self._copy_cache: dict[tuple, tuple] = {}  # _new_copy's constants of a one-type copy, by its key

    def _solo_times(self) -> np.ndarray:
        """Each job's run time alone on the fastest type it fits, packed on the fewest nodes, no sharing."""
        out = np.empty(self.n_jobs)
        cache: dict[tuple[int, int, int], float] = {}
        for j in range(self.n_jobs):
            key = (int(self.job_model[j]), int(self.batch[j]), int(self.req_gpus[j]))
            if key not in cache:
                best = math.inf
                for t in range(len(self.type_names)):
                    s = self._fit_accumulation(key[0], key[1], t, 0.0)
                    if s is None:
                        continue
                    per_node = int(self.node_size[self.node_type == t].max())
                    n_nodes = -(-key[2] // per_node)
                    best = min(best, self._copy_iter_time_homog(key[0], key[1], s, t, key[2], n_nodes))
                cache[key] = best
            out[j] = self.iterations[j] * cache[key]
        return out

    # ------------------------------------------------------------------ dynamic state
    def _reset_state(self) -> None:
        G, J = self.num_gpus, self.n_jobs
        self.now = 0.0
        self.slot_job = np.full((G, 2), -1, dtype=np.int64)
        self.slot_share = np.full((G, 2), _TENTHS_MAX, dtype=np.int64)
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
        self.finish_t = np.full(J, np.nan)
        self.queue_s = np.zeros(J)
        self.pending_since = np.zeros(J)
        self.n_preempt = np.zeros(J, dtype=np.int64)
        self.n_colocated = np.zeros(J, dtype=np.int64)
        self.max_copies = np.ones(J, dtype=np.int64)
        self.copies: dict[int, list[np.ndarray]] = {}
        self._copy_consts: dict[int, list[_Copy]] = {}  # parallel to ``copies``: each copy's constants
        self._bind_views()
        self._pending: dict[int, None] = {}
        self._running: dict[int, None] = {}
        self._forked: set[int] = set()
        # events (time as a Python float, kind, sequence, job, version, time as given): compared by the float
        # time, kind and sequence (unique), in the same order as the times themselves; the time as given
        # (None for completions: a numpy float) keeps its type for the clock
        self._heap: list[tuple[float, int, int, int, int, float | None]] = []
        self._seq = 0
        self._next_arrival = 0
        self.n_done = 0
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
        self.share_lo = np.full(J, _TENTHS_MAX, dtype=np.int64)  # min / max MPS share over its GPUs (tenths)
        self.share_hi = np.full(J, _TENTHS_MAX, dtype=np.int64)
        self.solo_rate = np.zeros(J)  # rate the job would have with no partners, at shares of 100%
        self.busy_gpu_s = 0.0
        self.shared_gpu_s = 0.0
        self._acc_t = 0.0
        self._idle_ticks = 0
        self.counts = {"colocations": 0, "preemptions": 0, "forks": 0, "squeezes": 0, "swells": 0,
                       "decisions": 0, "actions": 0}
        self.sharing_benefits: list[tuple[int, float, float]] = []
        self.log = EventLog()
        self._next_round = self.config.round_s
        self._next_tick = self.config.tick_s
        if self._next_round is not None:
            self._push(self._next_round, _ROUND, -1, 0)
        if self._next_tick is not None:
            self._push(self._next_tick, _TICK, -1, 0)
        self.last_reasons: tuple[str, ...] = ()

    def reset(self) -> None:
        """Start the episode again from time 0 (same jobs)."""
        self._reset_state()

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

    # ------------------------------------------------------------------ events
    def _push(self, t: float, kind: int, job: int, version: int) -> None:
        self._seq += 1
        # at equal times completions come first (then rounds, ticks, idle): a job done exactly at a round
        # boundary must not pay that round's consolidation
        heapq.heappush(self._heap, (float(t), kind, self._seq, job, version, t))

    @property
    def done(self) -> bool:
        return self.n_done == self.n_jobs

    def _next_time(self) -> float:
        heap = self._heap
        if heap:
            t = heap[0][5]
            if t is None:  # a completion: its time is a numpy float
                t = np.float64(heap[0][0])
        else:
            t = math.inf
        i = self._next_arrival
        if i < self.n_jobs and self._submit_l[i] < t:  # min(t, submit[i])
            t = self.submit[i]
        return t

    def _accumulate_util(self, t: float) -> None:
        dt = t - self._acc_t
        if dt > 0:
            self.busy_gpu_s += dt * self.busy_gpus
            self.shared_gpu_s += dt * self.shared_gpus
            self._acc_t = t

    def advance(self) -> tuple[str, ...]:
        """Run time forward to the next decision point (the ``wait`` action) and return its reasons:
        some of ``arrival``, ``completion``, ``round``, ``tick``, ``idle``. Returns ``()`` when done."""
        self.counts["decisions"] += 1
        while self.n_done != self.n_jobs:  # not self.done
            t = self._next_time()
            if t == math.inf:
                if self._running:
                    raise RuntimeError("engine invariant broken: running jobs but no completion event")
                self._push(self.now + self.config.idle_tick_s, _IDLE, -1, 0)
                continue
            reasons = self._process_time(t)
            if reasons:
                self.last_reasons = tuple(reasons)
                return self.last_reasons
        self.last_reasons = ()
        return ()

    def _process_time(self, t: float) -> list[str]:
        self._accumulate_util(t)
        self.now = t
        reasons: list[str] = []
        while self._next_arrival < self.n_jobs and self._submit_l[self._next_arrival] <= t:
            j = self._next_arrival
            self._next_arrival += 1
            self.status[j] = PENDING
            self._pending[j] = None
            self.queue_version += 1
            self.pending_since[j] = self.submit[j]
            self.log.add(t, "arrive", j)
            if "arrival" not in reasons:
                reasons.append("arrival")
        heap = self._heap
        while heap and heap[0][0] <= t:
            _, kind, _, j, ver, _ = heapq.heappop(heap)
            if kind == _FINISH:
                if self.version.item(j) != ver or self.status.item(j) != RUNNING:
                    continue
                self._finish(j, t)
                if "completion" not in reasons:
                    reasons.append("completion")
            elif kind == _ROUND:
                self._round_boundary(t)
                reasons.append("round")
            elif kind == _TICK:
                if not self.done:
                    self._next_tick = t + self.config.tick_s  # type: ignore[operator]
                    self._push(self._next_tick, _TICK, -1, 0)
                reasons.append("tick")
            elif kind == _IDLE:
                reasons.append("idle")
        # A decision point with no arrival or completion, nothing running and jobs waiting is an idle wait
        # (idle ticks, and round or calibration ticks in scenarios that have them).
        if "arrival" in reasons or "completion" in reasons or self._running or not reasons:
            self._idle_ticks = 0
        else:
            self._idle_ticks += 1
            if self._idle_ticks > self.config.max_idle_ticks:
                raise StalledError(
                    f"episode stalled at t={t:.0f}s: {len(self._pending)} pending jobs, nothing running, "
                    f"and {self.config.max_idle_ticks} consecutive waits"
                )
        return reasons

    def _round_boundary(self, t: float) -> None:
        if not self.done:
            self._next_round = t + self.config.round_s  # type: ignore[operator]
            self._push(self._next_round, _ROUND, -1, 0)
        self.log.add(t, "round", -1)
        c = self.config.consolidation_s
        for j in sorted(self._forked):
            if len(self.copies[j]) > 1 and c > 0:
                self._settle(j, t)
                self.active_from[j] = max(self.active_from[j], t + c)
                self._reschedule(j, t)

    # ------------------------------------------------------------------ progress
    def _settle(self, j: int, t: float) -> None:
        last = self.last_t.item(j)
        start = max(last, self.active_from.item(j))
        if t > start:
            rate = self.rate.item(j)
            if rate > 0:
                self.remaining[j] = max(0.0, self.remaining.item(j) - rate * (t - start))
        self.last_t[j] = max(last, t)

    def _reschedule(self, j: int, t: float) -> None:
        """Recompute job ``j``'s rate (its progress already settled to ``t``) and its completion event."""
        v = self.version.item(j) + 1
        self.version[j] = v
        r = self._job_rate(j)
        self.rate[j] = r
        if r > 0:
            finish = max(t, self.active_from[j]) + self.remaining[j] / r
            self._seq += 1
            heapq.heappush(self._heap, (float(finish), _FINISH, self._seq, j, v, None))

    def _update_rates(self, jobs: set[int] | list[int], t: float) -> None:
        self._rerate(sorted(jobs), t)

    def _rerate(self, jobs: list[int], t: float) -> None:
        """:meth:`_update_rates` on jobs already sorted and distinct: :meth:`_settle` then :meth:`_reschedule`
        of each running one, inlined (the same operations on the same values)."""
        status, last_t, active, rate, remaining, version = (
            self.status, self.last_t, self.active_from, self.rate, self.remaining, self.version)
        heap = self._heap
        tf = float(t)  # the same value
        for j in jobs:
            if status.item(j) != RUNNING:
                continue
            last = last_t.item(j)
            af = active.item(j)
            start = max(last, af)
            rem = None
            if tf > start:
                r0 = rate.item(j)
                if r0 > 0:
                    rem = max(0.0, remaining.item(j) - r0 * (tf - start))
                    remaining[j] = rem
            last_t[j] = max(last, tf)
            v = version.item(j) + 1
            version[j] = v
            r = self._job_rate(j)
            rate[j] = r
            if r > 0:
                if rem is None:
                    rem = remaining.item(j)
                # at max(t, active_from[j]) + remaining[j] / r
                self._seq += 1
                heapq.heappush(heap, (max(tf, af) + rem / r, _FINISH, self._seq, j, v, None))

    def remaining_now(self) -> np.ndarray:
        """Remaining iterations of every job at the current time (settled view, nothing mutated)."""
        start = np.maximum(self.last_t, self.active_from)
        elapsed = np.maximum(0.0, self.now - start)
        return np.maximum(0.0, self.remaining - self.rate * elapsed)

    # ------------------------------------------------------------------ performance model
    def _fit_accumulation(self, m: int, batch: int, t: int, other_gb: float) -> int | None:
        """Smallest power-of-two accumulation s <= batch with footprint(B/s) + other_gb <= memory of type
        t."""
        p = self.profiles[m]
        cap = self._type_mem_l[t] - other_gb
        base, per = p.mem_base_gb, p.mem_per_sample_gb
        s = 1
        while s <= batch:
            if base + per * (batch / s) <= cap + 1e-9:  # p.memory_gb(batch / s)
                return s
            s *= 2
        return None

    def _copy_iter_time_homog(self, m: int, batch: int, s: int, t: int, n: int, n_nodes: int) -> float:
        p = self.profiles[m]
        tc = p.t_comp(batch / s, self.speed_mt[m, t])
        comm = comm_time(p, n, n_nodes, self.type_intra_bw[t], self.cluster.inter_node_bw_gbps)
        return iteration_time(tc, s, comm, p.delta)

    def _worker_xi(self, j: int, gpus: np.ndarray) -> np.ndarray:
        """True interference ratio of each of job ``j``'s workers on ``gpus`` under the current shares."""
        sj = self.slot_job[gpus]
        own = (sj[:, 1] == j).astype(np.int64)
        rows = np.arange(len(gpus))
        partner = sj[rows, 1 - own]
        has = partner >= 0
        m = self.job_model[j]
        share_self = self.slot_share[gpus, own] * SHARE_STEP
        share_p = self.slot_share[gpus, 1 - own] * SHARE_STEP
        pm = np.where(has, self.job_model[np.maximum(partner, 0)], 0)
        xi0 = self.xi_free[self.gpu_type[gpus], m, pm]
        pressure = 1.0 + (xi0 - 1.0) * share_p * has
        cap = np.minimum(1.0, share_self / self.demand_m[m])
        return pressure / cap

    def copy_iter_time(self, j: int, gpus: np.ndarray, xi: np.ndarray | None = None) -> float:
        """True iteration time of one copy of job ``j`` running on ``gpus`` in the current state (or under the
        per-worker interference ratios ``xi``, e.g. all ones for the job alone)."""
        m = int(self.job_model[j])
        p = self.profiles[m]
        s = int(self.accum[j])
        b = self.batch[j] / s
        if len(gpus) == 1:  # scalar fast path (most jobs): same formulas as _worker_xi, no array temporaries
            g = int(gpus[0])
            t = int(self.gpu_type[g])
            if xi is None:
                own = 0 if self.slot_job[g, 0] == j else 1
                partner = int(self.slot_job[g, 1 - own])
                x = 1.0
                if partner >= 0:
                    x0 = self.xi_free[t, m, self.job_model[partner]]
                    x += (x0 - 1.0) * self.slot_share[g, 1 - own] * SHARE_STEP
                x /= min(1.0, self.slot_share[g, own] * SHARE_STEP / self.demand_m[m])
            else:
                x = float(xi[0])
            return float(s * (p.alpha_s + p.beta_s * b) * x / self.speed_mt[m, t])
        return self.iter_time_for(j, gpus, s, self._worker_xi(j, gpus) if xi is None else xi)

    def iter_time_for(self, j: int, gpus: np.ndarray, s: int, xi: np.ndarray | float = 1.0) -> float:
        """Iteration time of one copy of job ``j`` on ``gpus`` at accumulation ``s`` with each worker's compute
        slowed by ``xi`` (Castor eq. 1-3, slowest-worker pacing or LISS). Pure: reads no dynamic state, so
        agents may use it to evaluate hypothetical placements with their own predicted ``xi``."""
        m = int(self.job_model[j])
        p = self.profiles[m]
        b = self.batch[j] / s
        types = self.gpu_type[gpus]
        v = self.speed_mt[m, types] / np.broadcast_to(np.asarray(xi, dtype=float), types.shape)
        n = len(gpus)
        if n == 1:
            return float(s * (p.alpha_s + p.beta_s * b) / float(v[0]))
        if self.config.sample_stealing:
            # LISS: per-worker batches b_i with (alpha + beta b_i)/v_i equal and sum b_i = n b. No worker
            # takes fewer than 0 samples, and even an empty one pays its fixed alpha: never below alpha/v_min.
            tc = max((n * p.alpha_s + p.beta_s * b * n) / float(v.sum()), p.alpha_s / float(v.min()))
        else:
            tc = (p.alpha_s + p.beta_s * b) / float(v.min())
        n_nodes = len(set(self.gpu_node[gpus].tolist()))
        intra = float(self.type_intra_bw[types].min())
        comm = comm_time(p, n, n_nodes, intra, self.cluster.inter_node_bw_gbps)
        return float(iteration_time(tc, s, comm, p.delta))

    def _new_copy(self, j: int, g: np.ndarray, s: int, t: int | None = None, gl: list[int] | None = None) -> _Copy:
        """The constants of a copy of job ``j`` on ``g`` at accumulation ``s`` (see :class:`_Copy`); ``t``: the
        GPU type of every GPU of ``g`` when the caller knows it is one; ``gl``: ``g.tolist()`` if at hand."""
        c = _Copy()
        c._g2 = c.order = c.frees = None
        m = self._model_l[j]
        batch = self._batch_l[j]
        n = len(g)
        c.g, c.n = g, n
        c.gl = gl = g.tolist() if gl is None else gl
        if n == 1:
            p = self.profiles[m]
            b = batch / s  # = batch[j] / s (both exact integers, one correctly rounded division)
            c.gpu = gpu = gl[0]
            c.t = t = self._gpu_type_l[gpu]
            c.n_nodes = 1
            c.speed = self._speed_l[m][t]
            c.sab = s * (p.alpha_s + p.beta_s * b)
            c.min_mem = self._type_mem_l[t]
            c.solo_iter = c.sab * 1.0 / c.speed  # copy_iter_time with xi = [1.0]
            return c
        if t is None:
            c.types = self.gpu_type[g]
            t = int(c.types[0])
            c.homog = bool((c.types == t).all())
        else:
            c.homog = True
        gn = self._gpu_node_l
        c.n_nodes = n_nodes = len({gn[x] for x in gl})
        if c.homog:  # a pure function of (model, batch, accumulation, type, GPUs, nodes): computed once
            key = (m, batch, s, t, n, n_nodes)
            k = self._copy_cache.get(key)
            if k is None:
                k = self._copy_cache[key] = self._homog_copy(m, batch, s, t, n, n_nodes)
            (c.tcn, c.steal_num, c.speed, c.xi_tm, c.xi_tl, c.min_mem, c.spd, c.comm, c.delta, c.inv_delta,
             c.comm_pow, c.solo_iter, c.tcnf, c.speedf) = k
            c.t, c.s = t, s
            return c
        p = self.profiles[m]
        b = self.batch[j] / s
        stealing = self.config.sample_stealing
        c.tcn = p.alpha_s + p.beta_s * b
        c.steal_num = n * p.alpha_s + p.beta_s * b * n
        c.spd = self.speed_mt[m, c.types]
        intra = float(self.type_intra_bw[c.types].min())
        c.min_mem = float(self.type_mem[c.types].min())
        spd_min = float(c.spd.min())
        c.comm = comm_time(p, n, n_nodes, intra, self._inter_bw)
        c.s, c.delta, c.inv_delta = s, p.delta, 1.0 / p.delta
        c.comm_pow = c.comm**p.delta
        # iter_time_for with xi = 1 on every worker: v = spd / 1.0 = spd
        if stealing:
            tc = max(c.steal_num / float(c.spd.sum()), p.alpha_s / spd_min)
        else:
            tc = c.tcn / spd_min
        c.solo_iter = float(iteration_time(tc, s, c.comm, p.delta))
        return c

    def _homog_copy(self, m: int, batch: int, s: int, t: int, n: int, n_nodes: int) -> tuple:
        """The constants of a copy on ``n`` GPUs of type ``t`` over ``n_nodes`` nodes (model ``m``, per-GPU
        batch ``batch``, accumulation ``s``), by the same numpy operations as before the table existed."""
        p = self.profiles[m]
        b = np.int64(batch) / s  # as self.batch[j] / s
        tcn = p.alpha_s + p.beta_s * b
        steal_num = n * p.alpha_s + p.beta_s * b * n
        speed = self.speed_mt[m, t]
        intra = float(self.type_intra_bw[t])
        min_mem = float(self.type_mem[t])
        stealing = self.config.sample_stealing
        spd = np.full(n, speed) if stealing else None
        spd_min = float(speed)
        comm = comm_time(p, n, n_nodes, intra, self._inter_bw)
        comm_pow = comm**p.delta
        # iter_time_for with xi = 1 on every worker: v = spd / 1.0 = spd
        if stealing:
            tc = max(steal_num / float(spd.sum()), p.alpha_s / spd_min)
        else:
            tc = tcn / spd_min
        solo_iter = float(iteration_time(tc, s, comm, p.delta))
        return (tcn, steal_num, speed, self._xi_tab[t, m + 1], self._xi_tab_l[t][m + 1], min_mem, spd, comm,
                p.delta, 1.0 / p.delta, comm_pow, solo_iter, float(tcn), float(speed))

    def _copy_time(self, j: int, c: _Copy) -> float:
        """``copy_iter_time(j, c.g)`` (the copy's true iteration time now) from the copy's constants: the same
        operations on the same values, with the workers' xi read from the precomputed table."""
        m = self._model_l[j]
        if c.n == 1:  # as copy_iter_time's scalar path, on Python floats (the same IEEE operations)
            g2 = 2 * c.gpu
            sj, ss = self._sj_flat, self._ss_flat
            mine, other = (g2, g2 + 1) if sj.item(g2) == j else (g2 + 1, g2)
            partner = sj.item(other)
            x = 1.0
            if partner >= 0:
                x0 = self._xi_free_l[c.t][m][self._model_l[partner]]
                x += (x0 - 1.0) * ss.item(other) * SHARE_STEP
            x /= min(1.0, ss.item(mine) * SHARE_STEP / self._demand_l[m])
            return c.sab * x / c.speed
        s = c.s
        stealing = self._stealing
        if c.homog and not stealing:
            # The largest worker xi from a few table lookups, when j and each of its partners has one MPS share
            # on all its GPUs (then each worker's xi is that of its partner, or of no partner).
            lo, hi = self.share_lo, self.share_hi
            sh = lo.item(j)
            if sh == hi.item(j) and len(self.copies[j]) == 1:
                tab = c.xi_tl
                xmax = tab[0][sh][_TENTHS_MAX] if self.held_shared.item(j) < c.n else 0.0
                jm = self._model_l
                for p in self._shared_with.get(j, ()):
                    sp = lo.item(p)
                    if sp != hi.item(p):
                        break
                    x = tab[jm[p] + 1][sh][sp]
                    if x > xmax:
                        xmax = x
                else:  # min over workers of speed / xi = speed / max xi (division is monotonic)
                    tc = c.tcnf / (c.speedf / xmax)  # float(c.tcn) / (float(c.speed) / xmax)
                    # iteration_time(tc, s, comm, delta) on Python floats (the same IEEE operations and libm pow)
                    if c.comm <= 0.0:
                        return float(s * tc)
                    return (s - 1) * tc + (tc**c.delta + c.comm_pow) ** c.inv_delta
        p = self.profiles[m]
        sj, ss = self._sj_flat, self._ss_flat
        own = sj[c.g2p1] == j  # job j sits in slot 1 of that GPU
        mine = c.g2 + own
        other = c.g2p1 - own
        pm1 = self._jm1[sj[other]]
        if c.homog:
            xi = c.xi_tm[pm1, ss[mine], ss[other]]
            if not stealing:  # min over workers of speed / xi = speed / max xi (division is monotonic)
                vmin = float(c.speed) / float(xi.max())
        else:
            xi = self._xi_tab[c.types, m + 1, pm1, ss[mine], ss[other]]
        if stealing or not c.homog:
            v = c.spd / xi
            vmin = float(v.min())
            if stealing:
                tc = max(c.steal_num / float(v.sum()), p.alpha_s / vmin)
                return float(iteration_time(tc, s, c.comm, p.delta))
        return float(iteration_time(c.tcn / vmin, s, c.comm, p.delta))

    def _job_rate(self, j: int) -> float:
        if self.held_shared.item(j) == 0 and self.share_lo.item(j) == _TENTHS_MAX:
            solo = self.solo_rate.item(j)
            if solo > 0:
                return solo  # alone at full share on every GPU: xi = 1 everywhere
        cs = self._copy_consts.get(j, ())
        if len(cs) == 1:
            return 0 + 1.0 / self._copy_time(j, cs[0])  # as sum() of one term
        return sum(1.0 / self._copy_time(j, c) for c in cs)

    # ------------------------------------------------------------------ GPU bookkeeping
    def _frees(self, c: _Copy) -> list[tuple[int, int]]:
        """The copy's GPUs counted by (node, type), as (index into ``_free_flat``, GPUs) pairs."""
        fr = c.frees
        if fr is None:
            d: dict[int, int] = {}
            gnt = self._gpu_nt_l
            for x in c.gl:
                k = gnt[x]
                d[k] = d.get(k, 0) + 1
            fr = c.frees = list(d.items())
        return fr

    def _occupy(self, j: int, gpus: np.ndarray, tenant: int | None = None, c: _Copy | None = None) -> set[int]:
        """Put job j on ``gpus``; return the partners it now shares with. ``tenant`` and ``c``, when the caller
        knows: -1 if every GPU of ``gpus`` is free, else the one job holding each of them alone; and the
        constants of the copy on ``gpus``, all of one GPU type."""
        self.gpu_version += 1
        partners: set[int] = set()
        if tenant is not None and c is not None:
            n = c.n
            t = c.t
            if tenant < 0:
                if n == 1:
                    self._sj_flat[2 * c.gpu] = j
                    self._ss_flat[2 * c.gpu] = _TENTHS_MAX
                elif n <= 16:
                    sjf, ssf = self._sj_flat, self._ss_flat
                    for x in c.gl:
                        sjf[2 * x] = j
                        ssf[2 * x] = _TENTHS_MAX
                else:
                    self.slot_job[gpus, 0] = j
                    self.slot_share[gpus, 0] = _TENTHS_MAX
                ff = self._free_flat
                for k, cnt in self._frees(c):
                    ff[k] -= cnt
                self.busy_gpus += n
                self.busy_t[t] += n
            else:
                partners.add(tenant)
                if n == 1:
                    self._sj_flat[2 * c.gpu + 1] = j
                    self._ss_flat[2 * c.gpu + 1] = _TENTHS_MAX
                elif n <= 16:
                    sjf, ssf = self._sj_flat, self._ss_flat
                    for x in c.gl:
                        sjf[2 * x + 1] = j
                        ssf[2 * x + 1] = _TENTHS_MAX
                else:
                    self.slot_job[gpus, 1] = j
                    self.slot_share[gpus, 1] = _TENTHS_MAX
                self.shared_gpus += n
                self.shared_t[t] += n
                hs = self.held_shared
                hs[j] += n
                hs[tenant] += n
                # self._pair(j, {tenant: n}, 1)
                sw = self._shared_with
                mine = sw.setdefault(j, {})
                theirs = sw.setdefault(tenant, {})
                mine[tenant] = theirs[j] = mine.get(tenant, 0) + n
            self.held[j] += n
            return partners
        if len(gpus) == 1 and self.slot_job[gpus[0], 0] < 0:  # fast path: one free GPU
            g = int(gpus[0])
            t = int(self.gpu_type[g])
            self.slot_job[g, 0] = j
            self.slot_share[g, 0] = _TENTHS_MAX
            self.free_nt[self.gpu_node[g], t] -= 1
            self.busy_gpus += 1
            self.busy_t[t] += 1
            self.held[j] += 1
            return partners
        sj0 = self.slot_job[gpus, 0]
        empty = sj0 < 0
        n_free = int(np.count_nonzero(empty))
        eg = gpus if n_free == len(gpus) else gpus[empty]
        sg = gpus[~empty] if n_free < len(gpus) else None
        if n_free:
            self.slot_job[eg, 0] = j
            self.slot_share[eg, 0] = _TENTHS_MAX
            self._count(self._free_flat, self._gpu_nt[eg], -1)
            self.busy_gpus += n_free
            self._count(self.busy_t, self.gpu_type[eg], 1)
        if sg is not None:
            tenants = sj0[~empty]
            partners.update(tenants.tolist())
            self.slot_job[sg, 1] = j
            self.slot_share[sg, 1] = _TENTHS_MAX
            self.shared_gpus += len(sg)
            self._count(self.shared_t, self.gpu_type[sg], 1)
            self.held_shared[j] += len(sg)
            if len(partners) == 1:
                self.held_shared[tenants[0]] += len(sg)
                self._pair(j, {int(tenants[0]): len(sg)}, 1)
            else:
                np.add.at(self.held_shared, tenants, 1)
                self._pair(j, Counter(tenants.tolist()), 1)
        self.held[j] += len(gpus)
        return partners

    def _pair(self, j: int, counts: dict[int, int], sign: int) -> None:
        """Job ``j`` starts (+1) or stops (-1) sharing ``counts[p]`` GPUs with each partner ``p``."""
        mine = self._shared_with.setdefault(j, {})
        for p, k in counts.items():
            theirs = self._shared_with.setdefault(p, {})
            n = mine.get(p, 0) + sign * k
            if n:
                mine[p] = theirs[j] = n
            else:
                del mine[p], theirs[j]
                if not theirs:
                    del self._shared_with[p]
        if not mine:
            del self._shared_with[j]

    @staticmethod
    def _count(counts: np.ndarray, idx: np.ndarray, delta: int) -> None:
        """``counts[i] += delta`` once per entry ``i`` of ``idx`` (repeats add up), for a short ``counts``."""
        if len(counts) == 1:
            counts[0] += delta * len(idx)
        elif delta > 0:
            counts += np.bincount(idx, minlength=len(counts))
        else:
            counts -= np.bincount(idx, minlength=len(counts))

    def _vacate(self, j: int, gpus: np.ndarray, c: _Copy | None = None) -> set[int]:
        """Take job j off ``gpus``; return the partners it shared with. A partner left alone moves to slot 0
        and keeps its share. ``c``: the constants of the copy on ``gpus``, when the caller has them."""
        self.gpu_version += 1
        n = len(gpus)
        if n == 1:
            g = c.gpu if c is not None else int(gpus[0])
            if self._sj_flat.item(2 * g + 1) < 0:  # fast path: one unshared GPU
                t = self._gpu_type_l[g]
                self._sj_flat[2 * g] = -1
                self._ss_flat[2 * g] = _TENTHS_MAX
                self._free_flat[self._gpu_nt_l[g]] += 1
                self.busy_gpus -= 1
                self.busy_t[t] -= 1
                self.held[j] -= 1
                return set()
        # the one GPU type of the copy, when known
        t1 = c.t if c is not None and (n == 1 or c.homog) else None
        if self.held_shared.item(j) == 0:  # alone on every GPU, so in slot 0 (slot 1 is empty, at full share)
            self.slot_job[gpus, 0] = -1
            self.slot_share[gpus, 0] = _TENTHS_MAX
            if t1 is not None:
                ff = self._free_flat
                for k, cnt in self._frees(c):
                    ff[k] += cnt
                self.busy_gpus -= n
                self.busy_t[t1] -= n
            else:
                self._count(self._free_flat, self._gpu_nt[gpus], 1)
                self.busy_gpus -= n
                self._count(self.busy_t, self.gpu_type[gpus], -1)
            self.held[j] -= n
            return set()
        with_j = self._shared_with.get(j, {})
        if len(with_j) == 1 and self.held.item(j) == n:
            (p, k), = with_j.items()
            if k == n and n <= 32:  # every GPU held with one partner p: p keeps (or moves to) slot 0 at its share
                sjf, ssf = self._sj_flat, self._ss_flat
                for x in (gpus.tolist() if c is None else c.gl):
                    i = 2 * x
                    if sjf.item(i) == j:
                        sjf[i] = p
                        ssf[i] = ssf.item(i + 1)
                    sjf[i + 1] = -1
                    ssf[i + 1] = _TENTHS_MAX
                return self._leave_partner(j, p, n, gpus, t1)
        if n <= 32:
            return self._vacate_shared(j, gpus.tolist() if c is None else c.gl)
        if len(with_j) == 1 and self.held.item(j) == n:
            (p, k), = with_j.items()
            if k == n:  # every GPU held with one partner p: p keeps (or moves to) slot 0 at its share
                n1 = self._sj_flat[2 * gpus + 1 if c is None else c.g2p1].tolist().count(j)  # j in slot 1
                if n1 == 0:
                    self.slot_job[gpus, 0] = p
                    self.slot_share[gpus, 0] = self.slot_share[gpus, 1]
                if n1 in (0, n):
                    self.slot_job[gpus, 1] = -1
                    self.slot_share[gpus, 1] = _TENTHS_MAX
                    return self._leave_partner(j, p, n, gpus, t1)
        sj = self.slot_job[gpus]
        in0 = sj[:, 0] == j
        other = np.where(in0, sj[:, 1], sj[:, 0])
        shared = other >= 0
        n_shared = int(np.count_nonzero(shared))
        if n_shared == 0:  # j alone on every GPU (so in slot 0)
            partners: set[int] = set()
            self.slot_job[gpus] = -1
            self.slot_share[gpus] = _TENTHS_MAX
            fg = gpus
        else:
            ss = self.slot_share[gpus]
            other_share = np.where(in0, ss[:, 1], ss[:, 0])
            tenants = other[shared]
            partners = set(tenants.tolist())
            self.slot_job[gpus, 0] = np.where(shared, other, -1)
            self.slot_share[gpus, 0] = np.where(shared, other_share, _TENTHS_MAX)
            self.slot_job[gpus, 1] = -1
            self.slot_share[gpus, 1] = _TENTHS_MAX
            fg = gpus[~shared]
            self.shared_gpus -= n_shared
            self._count(self.shared_t, self.gpu_type[gpus[shared]], -1)
            self.held_shared[j] -= n_shared
            if len(partners) == 1:
                self.held_shared[tenants[0]] -= n_shared
                self._pair(j, {int(tenants[0]): n_shared}, -1)
            else:
                np.subtract.at(self.held_shared, tenants, 1)
                self._pair(j, Counter(tenants.tolist()), -1)
        if len(fg):
            self._count(self._free_flat, self._gpu_nt[fg], 1)
            self.busy_gpus -= len(fg)
            self._count(self.busy_t, self.gpu_type[fg], -1)
        self.held[j] -= len(gpus)
        return partners

    def _leave_partner(self, j: int, p: int, n: int, gpus: np.ndarray, t1: int | None) -> set[int]:
        """The counts of :meth:`_vacate` once job ``j`` has left the ``n`` GPUs ``gpus`` it shared, every one,
        with its only partner ``p`` (``t1``: their one GPU type, or None): returns ``{p}``."""
        self.shared_gpus -= n
        if t1 is not None:
            self.shared_t[t1] -= n
        else:
            self._count(self.shared_t, self.gpu_type[gpus], -1)
        self.held_shared[j] -= n
        self.held_shared[p] -= n
        # self._pair(j, {p: n}, -1): j and p share nothing any more
        sw = self._shared_with
        theirs = sw[p]
        del sw[j][p], theirs[j]
        if not theirs:
            del sw[p]
        del sw[j]
        self.held[j] -= n
        return {p}

    def _vacate_shared(self, j: int, gl: list[int]) -> set[int]:
        """:meth:`_vacate` GPU by GPU on scalars (for a few GPUs, some shared): the same slot contents and
        counts. On each GPU the other tenant, if any, ends in slot 0 with its share; slot 1 ends empty."""
        sjf, ssf = self._sj_flat, self._ss_flat
        gt, gnt = self._gpu_type_l, self._gpu_nt_l
        tenants: dict[int, int] = {}  # partner: GPUs shared with it, in order of first GPU (as Counter)
        shared_by_t: dict[int, int] = {}
        freed_nt: dict[int, int] = {}
        freed_t: dict[int, int] = {}
        n_shared = 0
        for x in gl:
            i = 2 * x
            o = sjf.item(i)
            if o == j:  # j in slot 0: the tenant of slot 1 (if any) moves to slot 0 with its share
                o = sjf.item(i + 1)
                if o >= 0:
                    sjf[i] = o
                    ssf[i] = ssf.item(i + 1)
                else:
                    sjf[i] = -1
                    ssf[i] = _TENTHS_MAX
            if o >= 0:  # (j in slot 1: the tenant of slot 0 stays there with its share)
                n_shared += 1
                tenants[o] = tenants.get(o, 0) + 1
                k = gt[x]
                shared_by_t[k] = shared_by_t.get(k, 0) + 1
            else:
                k = gnt[x]
                freed_nt[k] = freed_nt.get(k, 0) + 1
                k = gt[x]
                freed_t[k] = freed_t.get(k, 0) + 1
            sjf[i + 1] = -1
            ssf[i + 1] = _TENTHS_MAX
        if n_shared:
            self.shared_gpus -= n_shared
            st = self.shared_t
            for k, v in shared_by_t.items():
                st[k] -= v
            hs = self.held_shared
            hs[j] -= n_shared
            for p, v in tenants.items():
                hs[p] -= v
            self._pair(j, tenants, -1)
        if freed_nt:
            ff, bt = self._free_flat, self.busy_t
            for k, v in freed_nt.items():
                ff[k] += v
            self.busy_gpus -= len(gl) - n_shared
            for k, v in freed_t.items():
                bt[k] -= v
        self.held[j] -= len(gl)
        return set(tenants)

    def free_mask(self) -> np.ndarray:
        """Boolean per GPU: holds no job."""
        return self.slot_job[:, 0] < 0

    def single_mask(self) -> np.ndarray:
        """Boolean per GPU: holds exactly one job."""
        return (self.slot_job[:, 0] >= 0) & (self.slot_job[:, 1] < 0)

    def free_by_type(self) -> np.ndarray:
        """Free GPUs per GPU type (in ``type_names`` order)."""
        return self.type_total - self.busy_t

    def gpus_of(self, j: int) -> np.ndarray:
        """All GPUs job ``j`` holds (every copy)."""
        cs = self.copies.get(j)
        if not cs:
            return np.empty(0, dtype=np.int64)
        return cs[0] if len(cs) == 1 else np.concatenate(cs)

    def partners_of(self, j: int) -> list[int]:
        """Jobs sharing a GPU with job ``j``."""
        g = self.gpus_of(j)
        if len(g) == 0:
            return []
        return sorted(self._shared_with.get(j, ()))

    # ------------------------------------------------------------------ placement rule
    def _pick_on_nodes(
        self, need: int, free_per_node: np.ndarray, exclude_nodes: np.ndarray | None
    ) -> list[int]:
        """Nodes and counts, fewest nodes first: best fit on one node, else the fullest nodes first."""
        f = free_per_node
        if exclude_nodes is not None and len(exclude_nodes):
            f = f.copy()
            f[exclude_nodes] = 0
        if f.sum() < need:
            return []
        fits = np.flatnonzero(f >= need)
        if len(fits):
            best = fits[0] if len(fits) == 1 else fits[np.argmin(f[fits])]
            return [int(best)] * need
        order = np.argsort(-f, kind="stable")
        out: list[int] = []
        for node in order:
            take = min(int(f[node]), need - len(out))
            out.extend([int(node)] * take)
            if len(out) == need:
                break
        return out

    def _gpus_from_nodes(self, nodes: list[int], type_idx: int | None) -> np.ndarray:
        """The first free GPUs of each node in ``nodes`` (as many as the node is named); ``type_idx`` is the
        type of every such node (a node holds one GPU type) or None."""
        parts: list[np.ndarray] = []
        for node in dict.fromkeys(nodes):
            k = nodes.count(node)
            lo = self.node_start[node]
            free = np.flatnonzero(self.slot_job[lo:lo + self.node_size[node], 0] < 0)[:k]
            parts.append(free + lo)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def type_order(self, j: int) -> list[int]:
        """GPU types by this job's speed on them, fastest first."""
        return list(self._type_order_m[self.job_model[j]])

    def plan_place(
        self, j: int, gpu_type: str | None = None, exclude_nodes: np.ndarray | None = None
    ) -> np.ndarray | None:
        """The free GPUs the placement rule would give job ``j`` now, or None if there are too few.

        With a type: fewest nodes of that type (best fit). Without: the fastest type that can host the whole
        gang and fits its memory; if none alone can, a mixed set over all types, fullest nodes first.
        """
        return self._plan_place(j, None if gpu_type is None else self._type_index(gpu_type), exclude_nodes)[0]

    def _plan_place(
        self, j: int, t: int | None, exclude_nodes: np.ndarray | None = None
    ) -> tuple[np.ndarray | None, int | None]:
        """:meth:`plan_place` with the type as an index; also returns the one GPU type of the set (None when
        mixed or when there is no set)."""
        need = self._req_l[j]
        fits = self._fits_l[j]  # fits alone (at some accumulation) on each type
        if exclude_nodes is None and self._small:  # the same rule on Python lists
            if t is not None:
                if not fits[t]:
                    return None, None
                g = self._place_small(need, t)
                return (g, t) if g is not None else (None, None)
            fitting = [t for t in self._type_order_m[self._model_l[j]] if fits[t]]
            for t in fitting:
                g = self._place_small(need, t)
                if g is not None:
                    return g, t
            return self._place_mixed(need, fitting, None)
        if t is not None:
            if not fits[t]:
                return None, None
            nodes = self._pick_on_nodes(need, self.free_nt[:, t], exclude_nodes)
            return (self._gpus_from_nodes(nodes, t), t) if nodes else (None, None)
        fitting = [t for t in self._type_order_m[self.job_model[j]] if fits[t]]
        for t in fitting:
            nodes = self._pick_on_nodes(need, self.free_nt[:, t], exclude_nodes)
            if nodes:
                return self._gpus_from_nodes(nodes, t), t
        return self._place_mixed(need, fitting, exclude_nodes)

    def _place_mixed(
        self, need: int, fitting: list[int], exclude_nodes: np.ndarray | None
    ) -> tuple[np.ndarray | None, None]:
        """_plan_place's last resort: a mixed set over the fitting types, fullest nodes first."""
        if len(fitting) > 1:
            nodes = self._pick_on_nodes(need, self.free_nt[:, fitting].sum(axis=1), exclude_nodes)
            if nodes:
                return (self._gpus_from_nodes(nodes, None) if len(fitting) == len(self.type_names) else
                        self._gpus_from_nodes_types(nodes, fitting)), None
        return None, None

    def _place_small(self, need: int, t: int) -> np.ndarray | None:
        """``_gpus_from_nodes(_pick_on_nodes(need, free_nt[:, t], None), t)`` on Python lists (None for no
        set): the same nodes, in the same order, and the same GPUs."""
        f = self.free_nt[:, t].tolist()
        if sum(f) < need:
            return None
        fit = [x for x in f if x >= need]
        if fit:  # best fit on one node: the first of the smallest that fit
            picks: list[tuple[int, int]] | tuple[tuple[int, int]] = ((f.index(min(fit)), need),)
        else:  # the fullest nodes first (ties by index)
            picks = []
            left = need
            for node in sorted(range(len(f)), key=f.__getitem__, reverse=True):  # stable, as argsort(-f)
                take = min(f[node], left)
                if take:
                    picks.append((node, take))
                    left -= take
                    if not left:
                        break
        starts, sizes = self._node_start_l, self._node_size_l
        if len(picks) == 1:
            node, k = picks[0]
            lo = starts[node]
            if f[node] == sizes[node]:  # a node holds one GPU type: all of its GPUs are free
                return np.arange(lo, lo + k, dtype=np.int64)
        gl: list[int] = []
        for node, k in picks:
            lo = starts[node]
            if f[node] == sizes[node]:
                gl.extend(range(lo, lo + k))
            else:
                col = self.slot_job[lo:lo + sizes[node], 0].tolist()
                gl.extend([lo + i for i, x in enumerate(col) if x < 0][:k])
        return np.array(gl, dtype=np.int64)

    def _gpus_from_nodes_types(self, nodes: list[int], types: list[int]) -> np.ndarray:
        out: list[int] = []
        allowed = np.isin(self.gpu_type, types)
        for node in dict.fromkeys(nodes):
            k = nodes.count(node)
            lo = self.node_start[node]
            g = np.arange(lo, lo + self.node_size[node])
            ok = (self.slot_job[g, 0] < 0) & allowed[g]
            out.extend(int(x) for x in g[ok][:k])
        return np.array(out, dtype=np.int64)

    def plan_colocate(self, j: int, partner: int) -> np.ndarray | None:
        """GPUs for job ``j`` sharing with running job ``partner``: the partner's singly-held GPUs (fewest
        nodes first), topped up with free GPUs on the same nodes, then elsewhere. None if that cannot be
        done."""
        return self._plan_colocate(j, partner)[0]

    def _plan_colocate(self, j: int, partner: int) -> tuple[np.ndarray | None, int | None]:
        """:meth:`plan_colocate`, and the GPU type of the set when every GPU of it is one of ``partner``'s,
        held by ``partner`` alone, all of one type (else None)."""
        if self.status.item(partner) != RUNNING or partner == j:
            return None, None
        need = self._req_l[j]
        cs = self._copy_consts[partner]
        if len(cs) == 1 and (cs[0].n == 1 or cs[0].homog) and cs[0].n >= need:
            # one copy, one type: its singly-held GPUs in copy order, one node first if they span several
            c = cs[0]
            if c.n == 1:
                return (c.g.copy(), c.t) if self._sj_flat.item(2 * c.gpu + 1) < 0 else (None, None)
            n_alone = c.n - self.held_shared.item(partner)  # its one copy's GPUs with an empty slot 1
            if n_alone >= need:
                if n_alone == c.n:
                    if c.order is None:
                        c.order = np.array(self._colocate_order(c.gl), dtype=np.int64) if c.n_nodes > 1 else c.g
                    return c.order[:need].copy(), c.t
                sj = self._sj_flat
                pg = [x for x in c.gl if sj.item(2 * x + 1) < 0]
                if c.n_nodes > 1:
                    pg = self._colocate_order(pg)
                return np.array(pg[:need], dtype=np.int64), c.t
        pg = self.gpus_of(partner)
        pg = pg[self.slot_job[pg, 1] < 0]
        if len(pg) == 0:
            return None, None
        return self._plan_colocate_on(pg, need), None

    def _colocate_order(self, pg: list[int]) -> list[int]:
        """GPUs ``pg`` with their nodes by GPUs of pg on them (most first, ties by node index), GPUs in pg
        order within (the order of ``pg[argsort(node - count * num_nodes, kind="stable")]``)."""
        gn = self._gpu_node_l
        groups: dict[int, list[int]] = {}
        for x in pg:
            k = gn[x]
            if k in groups:
                groups[k].append(x)
            else:
                groups[k] = [x]
        if len(groups) == 1:
            return pg
        return [x for k in sorted(groups, key=lambda k: (-len(groups[k]), k)) for x in groups[k]]

    def _plan_colocate_on(self, pg: np.ndarray, need: int) -> np.ndarray | None:
        """plan_colocate given the partner's singly-held GPUs ``pg`` (not empty)."""
        if len(pg) >= need:
            nodes, counts = np.unique(self.gpu_node[pg], return_counts=True)
            order = nodes[np.argsort(-counts, kind="stable")]
            rank = {int(n): i for i, n in enumerate(order)}
            key = np.array([rank[int(n)] for n in self.gpu_node[pg]])
            return pg[np.argsort(key, kind="stable")][:need]
        extra_need = need - len(pg)
        pnodes = np.unique(self.gpu_node[pg])
        free = self.free_nt.sum(axis=1)
        near = min(int(free[pnodes].sum()), extra_need)
        chosen: list[int] = []
        if near:
            f = np.zeros_like(free)
            f[pnodes] = free[pnodes]
            chosen = self._pick_on_nodes(near, f, None)
        rest = extra_need - len(chosen)
        if rest:
            f = free.copy()
            f[pnodes] = 0
            more = self._pick_on_nodes(rest, f, None)
            if not more:
                return None
            chosen += more
        extra = self._gpus_from_nodes(chosen, None)
        return np.concatenate([pg, extra])

    def _type_index(self, name: str) -> int:
        try:
            return self.type_names.index(name)
        except ValueError:
            raise ActionError(
                f"unknown GPU type {name!r} for this cluster; it has {', '.join(self.type_names)}"
            ) from None

    # ------------------------------------------------------------------ validation helpers
    def _check_job(self, action: Action | tuple, j: int) -> None:
        if isinstance(j, bool | np.bool_) or not (isinstance(j, int | np.integer) and 0 <= j < self.n_jobs):
            raise ActionError(f"{self._typed(action)}: no job with index {j!r} (episode has {self.n_jobs} jobs)")

    def _check_gpus(self, action: Action | tuple, gpus: tuple[int, ...] | np.ndarray) -> np.ndarray:
        g = np.asarray(gpus, dtype=np.int64).ravel()
        if len(g) == 0 or g.min() < 0 or g.max() >= self.num_gpus:
            raise ActionError(f"{self._typed(action)}: GPU indices must lie in [0, {self.num_gpus})")
        if len(set(g.tolist())) != len(g):
            raise ActionError(f"{self._typed(action)}: GPU set repeats a GPU")
        return g

    def accumulation_for(self, j: int, gpus: np.ndarray) -> int | None:
        """Smallest power-of-two accumulation under which job ``j`` fits in memory on every GPU of ``gpus``
        beside their current tenants."""
        m, batch = int(self.job_model[j]), int(self.batch[j])
        sj = self.slot_job[gpus, 0]
        other = np.where(sj >= 0, self.footprint[np.maximum(sj, 0)], 0.0)
        best = 1
        for t in np.unique(self.gpu_type[gpus]):
            sel = self.gpu_type[gpus] == t
            s = self._fit_accumulation(m, batch, int(t), float(other[sel].max()))
            if s is None:
                return None
            best = max(best, s)
        return best

    def _check_start(
        self, action: Action | tuple, j: int, g: np.ndarray, accumulation: int | None, t: int | None = None,
        tenant: int = -1
    ) -> int:
        """The accumulation job ``j`` starts with on ``g``, or ActionError. ``t`` (a GPU type) is given by the
        planners when every GPU of ``g`` is of type ``t`` and either free (``tenant`` -1) or held by ``tenant``
        alone; the checks then run on scalars, with the same results. ``action``: see :meth:`_typed`."""
        st = self.status.item(j)
        if st != PENDING:
            raise ActionError(f"{self._typed(action)}: job {j} is {STATUS_NAMES[st]}, not pending")
        if len(g) != self._req_l[j]:
            raise ActionError(f"{self._typed(action)}: job {j} needs {self.req_gpus[j]} GPUs, got {len(g)}")
        if t is None and (self.slot_job[g, 1] >= 0).any():
            raise ActionError(f"{self._typed(action)}: a GPU of the set already holds two jobs")
        batch = self._batch_l[j]
        if accumulation is None:
            if t is not None:  # accumulation_for on one type beside one tenant (or none)
                s = self._fit_accumulation(
                    self._model_l[j], batch, t, self.footprint.item(tenant) if tenant >= 0 else 0.0
                )
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
        p = self.profiles[self._model_l[j]]
        fp = p.mem_base_gb + p.mem_per_sample_gb * (batch / s)  # p.memory_gb(batch / s)
        if t is not None and not (fp + (self.footprint.item(tenant) if tenant >= 0 else 0.0)
                                  > self._type_mem_l[t] + 1e-9):
            return s
        sj = self.slot_job[g, 0]
        other = np.where(sj >= 0, self.footprint[np.maximum(sj, 0)], 0.0)
        over = fp + other > self.type_mem[self.gpu_type[g]] + 1e-9
        if over.any():
            gi = int(g[np.argmax(over)])
            raise ActionError(
                f"{self._typed(action)}: memory does not fit on GPU {gi}: {fp:.1f} GB + "
                f"{other[np.argmax(over)]:.1f} GB > {self.type_mem[self.gpu_type[gi]]:.0f} GB"
            )
        return s

    # ------------------------------------------------------------------ actions
    def apply(self, action: Action) -> None:
        """Apply one typed action at the current time (``Wait`` advances to the next decision point)."""
        self.counts["actions"] += 1
        if isinstance(action, Wait):
            self.advance()
        elif isinstance(action, Place):
            self._check_job(action, action.job)
            j = int(action.job)
            if action.gpus is None:
                self._place(action, j, action.gpu_type, action.accumulation)
                return
            g = self._check_gpus(action, action.gpus)
            if (self.slot_job[g, 0] >= 0).any():
                raise ActionError(f"{action}: place needs free GPUs; use colocate to share")
            if action.gpu_type is not None and (self.gpu_type[g] != self._type_index(action.gpu_type)).any():
                raise ActionError(f"{action}: not every GPU named is a {action.gpu_type}")
            self._start(j, g, self._check_start(action, j, g, action.accumulation))
        elif isinstance(action, Colocate):
            self._check_job(action, action.job)
            self._check_job(action, action.partner)
            j, p = int(action.job), int(action.partner)
            if action.gpus is None:
                self._colocate(action, j, p, action.accumulation)
                return
            if self.status[p] != RUNNING:
                raise ActionError(f"{action}: partner {p} is {STATUS_NAMES[self.status[p]]}, not running")
            g = self._check_gpus(action, action.gpus)
            if not (self.slot_job[g, 0] == p).any() and not (self.slot_job[g, 1] == p).any():
                raise ActionError(f"{action}: the GPU set shares no GPU with partner {p}")
            self._start(j, g, self._check_start(action, j, g, action.accumulation))
        elif isinstance(action, Squeeze | Swell):
            self._calibrate(action, action.job, -1 if isinstance(action, Squeeze) else 1, action.gpus)
        elif isinstance(action, Preempt):
            self._preempt_checked(action, action.job)
        elif isinstance(action, Fork):
            self._fork(action, action.job, action.copies, action.gpus)
        else:
            raise ActionError(f"unknown action {action!r}")

    # Fast entry points: the typed actions' work from plain ints, without building the action objects (each
    # builds its typed action only to name it in an ActionError). ``apply`` runs the same code for those
    # actions, so both give the same state, the same errors and the same counts.
    def place_job(self, j: int, t: int | None) -> None:
        """``apply(Place(j, type_names[t]))`` (``t`` None: ``Place(j)``, the fastest type that fits), with the
        engine's placement rule and the smallest accumulation that fits. Raises the same ActionError (an
        index ``t`` outside ``type_names`` raises ActionError too)."""
        self.counts["actions"] += 1
        if t is not None and not (isinstance(t, int | np.integer) and not isinstance(t, bool | np.bool_)
                                  and 0 <= t < len(self.type_names)):
            raise ActionError(
                f"place(job {j!r}): no GPU type with index {t!r} (this cluster has {', '.join(self.type_names)})"
            )
        action = (Place, (j, None if t is None else self.type_names[t]))
        j = self._job_index(action, j)
        self._place(action, j, None if t is None else int(t), None)

    def colocate_job(self, j: int, partner: int, accumulation: int | None) -> None:
        """``apply(Colocate(j, partner, accumulation))``: start pending job ``j`` on running ``partner``'s GPUs
        (topped up with free ones) at that accumulation (None: the smallest that fits). Raises the same
        ActionError."""
        self.counts["actions"] += 1
        action = (Colocate, (j, partner, accumulation))
        j = self._job_index(action, j)
        if not (type(partner) is int and 0 <= partner < self.n_jobs):
            self._check_job(action, partner)
            partner = int(partner)
        self._colocate(action, j, partner, accumulation)

    def calibrate_job(self, j: int, step: int) -> None:
        """``apply(Squeeze(j))`` (``step`` -1) or ``apply(Swell(j))`` (``step`` +1): one 10% share step on
        all of running job ``j``'s GPUs. Raises the same ActionError."""
        self.counts["actions"] += 1
        if step not in (-1, 1):
            raise ActionError(f"calibrate job {j!r}: step must be -1 (squeeze) or 1 (swell), got {step!r}")
        self._calibrate((Squeeze if step < 0 else Swell, (j,)), j, step, None)

    def preempt_job(self, j: int) -> None:
        """``apply(Preempt(j))``: checkpoint running job ``j`` and queue it again. Raises the same
        ActionError."""
        self.counts["actions"] += 1
        self._preempt_checked((Preempt, (j,)), j)

    def fork_job(self, j: int) -> None:
        """``apply(Fork(j))``: one more copy of running job ``j`` on free GPUs of other nodes. Raises the same
        ActionError."""
        self.counts["actions"] += 1
        self._fork((Fork, (j,)), j, 1, None)

    @staticmethod
    def _typed(action: Action | tuple) -> Action:
        """The typed action an error message names: ``action``, or ``cls(*args)`` from a ``(cls, args)`` pair
        (the fast entry points build it only when they raise)."""
        return action[0](*action[1]) if type(action) is tuple else action

    def _place(self, action: Action | tuple, j: int, t: int | str | None, accumulation: int | None) -> None:
        """Place of job ``j`` (a valid index) by the placement rule on type ``t`` (an index, a name, or None
        for any)."""
        st = self.status.item(j)
        if st != PENDING:
            raise ActionError(f"{self._typed(action)}: job {j} is {STATUS_NAMES[st]}, not pending")
        if type(t) is str:
            t = self._type_index(t)
        planned, gt = self._plan_place(j, t)
        if planned is None:
            where = self._typed(action).gpu_type or "any type"
            raise ActionError(f"{self._typed(action)}: not enough free GPUs ({where}) for job {j}")
        self._start(j, planned, self._check_start(action, j, planned, accumulation, gt), gt,
                    None if gt is None else -1)

    def _colocate(self, action: Action | tuple, j: int, p: int, accumulation: int | None) -> None:
        """Colocate of job ``j`` with partner ``p`` (valid indices) on the GPUs of the colocation rule."""
        sp = self.status.item(p)
        if sp != RUNNING:
            raise ActionError(f"{self._typed(action)}: partner {p} is {STATUS_NAMES[sp]}, not running")
        st = self.status.item(j)
        if st != PENDING:
            raise ActionError(f"{self._typed(action)}: job {j} is {STATUS_NAMES[st]}, not pending")
        planned, t = self._plan_colocate(j, p)
        if planned is None:
            raise ActionError(f"{self._typed(action)}: partner {p} has no room for job {j}")
        self._start(j, planned, self._check_start(action, j, planned, accumulation, t, p), t,
                    None if t is None else p)

    def _start(self, j: int, g: np.ndarray, s: int, gpu_t: int | None = None, tenant: int | None = None) -> None:
        """Start pending job ``j`` on ``g`` at accumulation ``s``. ``gpu_t`` and ``tenant``, when the caller
        knows them: the one GPU type of ``g``, and -1 if every GPU is free or the job holding each alone."""
        t = self.now
        self._pending.pop(j, None)
        self._running[j] = None
        self.queue_version += 1
        self.status[j] = RUNNING
        self.accum[j] = s
        p = self.profiles[self._model_l[j]]
        self.footprint[j] = p.mem_base_gb + p.mem_per_sample_gb * (self._batch_l[j] / s)  # memory_gb(batch / s)
        self.queue_s[j] = self.queue_s.item(j) + (t - self.pending_since.item(j))  # queue_s[j] += ...
        if math.isnan(self.first_start.item(j)):
            self.first_start[j] = t
        self.last_t[j] = t
        self.active_from[j] = t + (self.config.restart_s if self.n_preempt.item(j) > 0 else 0.0)
        self.copies[j] = [g]
        gl = g.tolist()
        c = self._new_copy(j, g, s, gpu_t, gl)
        self._copy_consts[j] = [c]
        self.job_min_mem[j] = c.min_mem
        self.share_lo[j] = self.share_hi[j] = _TENTHS_MAX
        self.solo_rate[j] = 1.0 / c.solo_iter
        partners = self._occupy(j, g, tenant, c if gpu_t is not None else None)
        self.log.records.append((t, "start", j, {"gpus": gl[:], "accumulation": s}))  # log.add(...)
        if partners:
            self.counts["colocations"] += 1
            self.n_colocated[j] += 1
            rate = self.rate
            before = {p: rate.item(p) for p in partners}
            if len(partners) == 1:
                p = next(iter(partners))
                self._rerate([p, j] if p < j else [j, p], t)
            else:
                self._rerate(sorted(partners | {j}), t)
            self._record_sharing_benefit(j, partners, before, c.solo_iter)
        else:
            self._rerate([j], t)

    def _record_sharing_benefit(
        self, j: int, partners: set[int], rate_before: dict[int, float], solo_iter: float
    ) -> None:
        """Castor §9.2: JCT of job j if it had waited for its partners to finish and then run alone, over its
        JCT colocated, both assuming no further arrivals. ``solo_iter``: j's iteration time alone on its GPUs.
        (On Python floats, the same operations as on numpy's; the results are numpy floats as before.)"""
        t = self.now
        rem, rate = self.remaining, self.rate
        if len(partners) == 1:  # max() of one value
            p = next(iter(partners))
            r = rate_before[p]
            wait = rem.item(p) / r if r > 0 else 0.0
        else:
            wait = max(rem.item(p) / rate_before[p] if rate_before[p] > 0 else 0.0 for p in partners)
        since = t - self._submit_l[j]
        rj = rem.item(j)
        t_solo = since + wait + rj * solo_iter
        # Colocated: shared rate until the partners finish at their shared rates, then solo rate.
        shared_rate = rate.item(j)
        if len(partners) == 1:
            r = rate.item(p)
            p_done = rem.item(p) / r if r > 0 else 0.0
        else:
            p_done = max(rem.item(p) / r if (r := rate.item(p)) > 0 else 0.0 for p in partners)
        alone = rj / shared_rate if shared_rate else self.remaining[j] / self.rate[j]
        if alone <= p_done:
            t_co = alone
        else:
            t_co = p_done + (rj - shared_rate * p_done) * solo_iter
        t_co += since
        self.sharing_benefits.append((j, np.float64(t_solo), np.float64(t_co)))

    def _finish(self, j: int, t: float) -> None:
        self._running.pop(j, None)
        self.queue_version += 1
        self._forked.discard(j)
        self.status[j] = DONE
        self.remaining[j] = 0.0
        self.rate[j] = 0.0
        self.solo_rate[j] = 0.0
        self.finish_t[j] = t
        self.n_done += 1
        partners = self._vacate_all(j)
        self.log.records.append((t, "finish", j, None))  # log.add(t, "finish", j)
        self._rerate(sorted(partners), t)

    def _vacate_all(self, j: int) -> set[int]:
        """Take every copy of job ``j`` off its GPUs; return the partners it shared with."""
        cs = self._copy_consts.pop(j, None)
        gs = self.copies.pop(j, [])
        if cs is None:
            cs = [None] * len(gs)
        if len(gs) == 1:
            return self._vacate(j, gs[0], cs[0])
        partners: set[int] = set()
        for g, c in zip(gs, cs, strict=True):
            partners |= self._vacate(j, g, c)
        return partners

    def _job_index(self, action: Action | tuple, j: int) -> int:
        """Job ``j`` as a Python int, or the ActionError naming ``action`` when it is no job of the episode."""
        if not (type(j) is int and 0 <= j < self.n_jobs):
            self._check_job(action, j)
            j = int(j)
        return j

    def _running_index(self, action: Action | tuple, j: int) -> int:
        """:meth:`_job_index`, and the ActionError naming ``action`` when the job is not running."""
        j = self._job_index(action, j)
        st = self.status.item(j)
        if st != RUNNING:
            raise ActionError(f"{self._typed(action)}: job {j} is {STATUS_NAMES[st]}, not running")
        return j

    def _preempt_checked(self, action: Action | tuple, j: int) -> None:
        j = self._running_index(action, j)
        self._preempt(j)

    def _preempt(self, j: int) -> None:
        t = self.now
        self._settle(j, t)
        self._running.pop(j, None)
        self._forked.discard(j)
        self._pending[j] = None
        self.queue_version += 1
        self.status[j] = PENDING
        self.rate[j] = 0.0
        self.solo_rate[j] = 0.0
        self.version[j] = self.version.item(j) + 1
        self.pending_since[j] = t
        self.n_preempt[j] = self.n_preempt.item(j) + 1
        self.counts["preemptions"] += 1
        partners = self._vacate_all(j)
        self.log.records.append((t, "preempt", j, None))  # log.add(t, "preempt", j)
        self._rerate(sorted(partners), t)

    def _calibrate(self, action: Action | tuple, j: int, step: int, gpus: tuple[int, ...] | None) -> None:
        j = self._running_index(action, j)
        lo, hi = self.share_lo.item(j), self.share_hi.item(j)
        cs = self._copy_consts[j]
        if gpus is None:
            if (step < 0 and hi <= _TENTHS_MIN) or (step > 0 and lo >= _TENTHS_MAX):
                bound = "minimum" if step < 0 else "maximum"
                raise ActionError(f"{self._typed(action)}: job {j}'s share is already at the {bound} on all its GPUs")
            if len(cs) == 1:  # j's slot on each GPU, as flat indices into the slot arrays
                c = cs[0]
                gl = c.gl
                if lo == hi and c.n > 1 and self.held_shared.item(j):  # one share: set GPU by GPU
                    pos = None
                    sjf, ssf = self._sj_flat, self._ss_flat
                    v = lo + step
                    for x in gl:
                        i = 2 * x + (sjf.item(2 * x + 1) == j)
                        ssf[i] = v
                elif c.n == 1:
                    pos = 2 * c.gpu + (self._sj_flat.item(2 * c.gpu + 1) == j)
                elif self.held_shared.item(j) == 0:  # alone on every GPU, so in slot 0
                    pos = c.g2
                else:
                    pos = c.g2 + (self._sj_flat[c.g2p1] == j)
            else:
                g = self.gpus_of(j)
                gl = g.tolist()
                pos = 2 * g + (self._sj_flat[2 * g + 1] == j)
        else:
            g = self._check_gpus(action, gpus)
            if not np.isin(g, self.gpus_of(j)).all():
                raise ActionError(f"{self._typed(action)}: job {j} does not run on every GPU named")
            gl = g.tolist()
            pos = 2 * g + (self._sj_flat[2 * g + 1] == j)
        if gpus is None and lo == hi:
            # one share on every GPU, and the check above keeps lo + step within bounds
            if pos is not None:
                self._ss_flat[pos] = lo + step
            self.share_lo[j] = self.share_hi[j] = lo + step
        else:
            cur = self._ss_flat[pos]
            new = np.minimum(cur + 1, _TENTHS_MAX) if step > 0 else np.maximum(cur - 1, _TENTHS_MIN)
            if (new == cur).all():
                bound = "minimum" if step < 0 else "maximum"
                raise ActionError(f"{self._typed(action)}: job {j}'s share is already at the {bound} on those GPUs")
            self._ss_flat[pos] = new
            if gpus is None:
                self.share_lo[j], self.share_hi[j] = int(new.min()), int(new.max())
            else:
                self._refresh_share_range(j)
        self.counts["squeezes" if step < 0 else "swells"] += 1
        t = self.now
        if self._calib_overhead > 0:
            self._settle(j, t)
            self.active_from[j] = max(self.active_from[j], t + self.config.calibration_overhead_s)
        self.log.records.append((t, "squeeze" if step < 0 else "swell", j, {"gpus": gl[:]}))  # log.add(...)
        sw = self._shared_with.get(j)
        if not sw:
            self._rerate([j], t)
        elif len(sw) == 1:
            (p,) = sw
            self._rerate([p, j] if p < j else [j, p], t)
        else:
            self._rerate(sorted({j, *sw}), t)

    def _refresh_share_range(self, j: int) -> None:
        allg = self.gpus_of(j)
        all_shares = self.slot_share[allg, (self.slot_job[allg, 1] == j).astype(np.int64)]
        self.share_lo[j], self.share_hi[j] = int(all_shares.min()), int(all_shares.max())

    def share_of(self, j: int) -> float:
        """Mean MPS share of job ``j`` over its GPUs (1.0 = 100%); 0 when not running."""
        g = self.gpus_of(j)
        if len(g) == 0:
            return 0.0
        slot = (self.slot_job[g, 1] == j).astype(np.int64)
        return float(self.slot_share[g, slot].mean() * SHARE_STEP)

    def plan_fork(self, j: int) -> np.ndarray | None:
        """Free GPUs for one more copy of running job ``j`` on nodes none of its copies use, or None."""
        if self.config.round_s is None or self.status[j] != RUNNING:
            return None
        used = np.unique(self.gpu_node[self.gpus_of(j)])
        g = self.plan_place(j, None, exclude_nodes=used)
        if g is None or self.footprint[j] > self.type_mem[self.gpu_type[g]].min() + 1e-9:
            return None
        return g

    def _fork(self, action: Action | tuple, j: int, copies: int, gpus: tuple[int, ...] | None) -> None:
        j = self._job_index(action, j)
        if self.config.round_s is None:
            raise ActionError(f"{self._typed(action)}: forking needs a round-based scenario (round_s is not set)")
        if self.status[j] != RUNNING:
            raise ActionError(f"{self._typed(action)}: job {j} is {STATUS_NAMES[self.status[j]]}, not running")
        if copies < 1:
            raise ActionError(f"{self._typed(action)}: copies must be >= 1")
        if gpus is not None and copies != 1:
            raise ActionError(f"{self._typed(action)}: an exact GPU set names one copy; use copies=1")
        plans: list[np.ndarray] = []
        saved = (float(self.job_min_mem[j]), float(self.solo_rate[j]))
        try:
            for _ in range(copies):
                plans.append(self._fork_one(action, j, gpus))
        except ActionError:
            # all or nothing: give back the copies already placed by this action
            for g in plans:
                self._vacate(j, g)
                self.copies[j].pop()
                self._copy_consts[j].pop()
            self.job_min_mem[j], self.solo_rate[j] = saved
            raise
        t = self.now
        self._refresh_share_range(j)  # the new copies start at 100% share
        self._forked.add(j)
        self.max_copies[j] = max(self.max_copies[j], len(self.copies[j]))
        self.counts["forks"] += len(plans)
        for g in plans:
            self.log.add(t, "fork", j, gpus=g.tolist())
        self._update_rates({j}, t)

    def _fork_one(self, action: Action | tuple, j: int, gpus: tuple[int, ...] | None) -> np.ndarray:
        """Check and occupy the GPUs of one more copy of job ``j``; raise ActionError before any change."""
        if gpus is not None:
            g = self._check_gpus(action, gpus)
            if len(g) != self.req_gpus[j]:
                raise ActionError(f"{self._typed(action)}: a copy of job {j} needs {self.req_gpus[j]} GPUs")
            if (self.slot_job[g, 0] >= 0).any():
                raise ActionError(f"{self._typed(action)}: a copy needs free GPUs")
            if np.isin(self.gpu_node[g], self.gpu_node[self.gpus_of(j)]).any():
                raise ActionError(f"{self._typed(action)}: a copy must run on nodes the job does not use")
        else:
            g = self.plan_fork(j)
            if g is None:
                raise ActionError(f"{self._typed(action)}: no free node for another copy of job {j}")
        fp = self.footprint[j]
        if (fp > self.type_mem[self.gpu_type[g]] + 1e-9).any():
            raise ActionError(f"{self._typed(action)}: job {j} does not fit in memory on those GPUs")
        self._occupy(j, g)
        c = self._new_copy(j, g, int(self.accum[j]))
        self.copies[j].append(g)
        self._copy_consts[j].append(c)
        self.job_min_mem[j] = min(self.job_min_mem[j], c.min_mem)
        self.solo_rate[j] += 1.0 / c.solo_iter
        return g

    # ------------------------------------------------------------------ queries for agents
    def pending_jobs(self) -> np.ndarray:
        """Indices of pending jobs in queue order: by arrival, a preempted job rejoining at the back."""
        return np.fromiter(self._pending, dtype=np.int64, count=len(self._pending))

    def pending_head(self, n: int) -> np.ndarray:
        """The first ``n`` pending jobs in queue order (cheap for long queues)."""
        return np.fromiter(itertools.islice(self._pending, n), dtype=np.int64)

    def running_head(self, n: int) -> np.ndarray:
        """The first ``n`` running jobs in start order."""
        return np.fromiter(itertools.islice(self._running, n), dtype=np.int64)

    def running_jobs(self) -> np.ndarray:
        """Indices of running jobs, in submit order."""
        return np.array(sorted(self._running), dtype=np.int64)

    @property
    def num_pending(self) -> int:
        return len(self._pending)

    @property
    def num_running(self) -> int:
        return len(self._running)

    def solo_iter_time(self, j: int, gpu_type: str | None = None) -> float:
        """Iteration time of job ``j`` alone on ``gpu_type`` (default: its fastest type), packed on the fewest
        nodes, at the smallest accumulation that fits."""
        types = [self._type_index(gpu_type)] if gpu_type else self.type_order(j)
        m, b, n = int(self.job_model[j]), int(self.batch[j]), int(self.req_gpus[j])
        best = math.inf
        for t in types:
            s = self._fit_accumulation(m, b, t, 0.0)
            if s is None:
                continue
            per_node = int(self.node_size[self.node_type == t].max())
            best = min(best, self._copy_iter_time_homog(m, b, s, t, n, -(-n // per_node)))
        return best

    def true_pair_xi(self, a: int, b: int, gpu_type: str) -> tuple[float, float]:
        """Ground-truth free-competition interference ratios of jobs ``a`` and ``b`` sharing a ``gpu_type``
        GPU (for oracle agents and evaluation; learned and heuristic agents should predict it instead)."""
        t = self._type_index(gpu_type)
        ma, mb = self.job_model[a], self.job_model[b]
        return float(self.xi_free[t, ma, mb]), float(self.xi_free[t, mb, ma])

    # ------------------------------------------------------------------ results
    def metrics(self) -> dict[str, float]:
        """Episode metrics (see :func:`gpucluster_env.engine.metrics.episode_metrics`)."""
        from .metrics import episode_metrics

        return episode_metrics(self)

    def job_table(self) -> pd.DataFrame:
        """One row per job: arrival, start, finish, JCT, queueing, GPUs, sharers, preemptions."""
        from .metrics import job_table

        return job_table(self)
