"""The discrete-event simulator of a heterogeneous GPU cluster running deep-learning training jobs.

:class:`ClusterEngine` is assembled from one part per concern (see ``docs/engine.md``):

* :mod:`.state` -- settings, static tables, the dynamic arrays;
* :mod:`.clock` -- decision points and exact progress, over the event queue (:class:`.events.EventQueue`, an
  object of its own);
* :mod:`.occupancy` -- slots, shares, copies, occupy / vacate;
* :mod:`.rates` -- the performance model (:mod:`gpucluster_env.performance`) on the live state: copy constants, worker
  interference, job rates;
* :mod:`.placement` -- pure planning functions (place, colocate, fork);
* :mod:`.checks` and :mod:`.transitions` -- actions: their validation, then their state changes;
* :mod:`.checks_mech` and :mod:`.moves` -- the same for the moves of running jobs (reallocate, drop or move
  a copy), :mod:`.copies` -- per-copy progress (HadarE's quotas, copy start-up, resized gangs);
* :mod:`.metrics` -- episode metrics and the job table (functions of the state), with the active-SM
  estimate kept by :class:`.activity.SmActivity` (an object of its own).

The performance model itself is one model-layer module, :mod:`gpucluster_env.performance`.

The engine knows nothing of Gymnasium: it exposes decision points (:meth:`ClusterEngine.advance`) and applies
typed actions (:meth:`ClusterEngine.apply`), or the same actions from plain ints without building the action
objects (:meth:`ClusterEngine.place_job`, ``colocate_job``, ``calibrate_job``, ``preempt_job``, ``fork_job``).
Agents read it through :class:`~gpucluster_env.engine.view.ClusterView`.

Bit-for-bit determinism is a contract (same seed, same floats, same log): the hot paths read numpy state as
Python scalars and static tables as Python lists, which carry the same values, and compute with the same IEEE
operations in the same order; values that reach the event log, the clock or ``sharing_benefits`` keep the
numpy types they had.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ..catalog import Catalog, default_catalog
from ..hardware import ClusterSpec
from ..jobs import validate_jobs
from . import placement
from .actions import (
    Action,
    ActionError,
    Colocate,
    DropCopy,
    Fork,
    MoveCopy,
    Place,
    Preempt,
    Reallocate,
    SetStealing,
    Squeeze,
    Swell,
    Wait,
)
from .checks import Checks
from .checks_mech import MoveChecks
from .clock import Clock
from .copies import Copies
from .moves import Moves
from .occupancy import Occupancy
from .rates import Rates
from .state import DONE, FUTURE, PENDING, RUNNING, STATUS_NAMES, EngineConfig, EngineState
from .transitions import Transitions

__all__ = ["DONE", "FUTURE", "PENDING", "RUNNING", "STATUS_NAMES", "ClusterEngine", "EngineConfig"]


class ClusterEngine(EngineState, Clock, Occupancy, Rates, Copies, Checks, MoveChecks, Transitions, Moves):
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
        self._mark_static()
        self._reset_state()

    # ------------------------------------------------------------------ actions
    def apply(self, action: Action) -> None:
        """Apply one typed action at the current time (``Wait`` advances to the next decision point)."""
        self.counts["actions"] += 1
        if isinstance(action, Wait):
            self.advance()
        elif isinstance(action, Place | Colocate):
            self._check_job(action, action.job)
            j = int(action.job)
            p = None
            if isinstance(action, Colocate):
                self._check_job(action, action.partner)
                p = int(action.partner)
            if action.gpus is None:
                if p is None:
                    self._place(action, j, action.gpu_type, action.accumulation)
                else:
                    self._colocate(action, j, p, action.accumulation)
                return
            if p is not None:
                self._require(action, p, RUNNING, "partner")
            g = self._check_gpus(action, action.gpus)
            self._check_exact_start(action, j, p, g)
            self._start(j, g, self._check_start(action, j, g, action.accumulation))
        elif isinstance(action, Squeeze | Swell):
            self._calibrate(action, action.job, -1 if isinstance(action, Squeeze) else 1, action.gpus)
        elif isinstance(action, Preempt):
            self._preempt(self._running_index(action, action.job))
        elif isinstance(action, Fork):
            self._fork(action, action.job, action.copies, action.gpus)
        elif isinstance(action, SetStealing):
            self._set_stealing(action)
        elif isinstance(action, Reallocate):
            self._reallocate(action)
        elif isinstance(action, DropCopy):
            self._drop_copy(action)
        elif isinstance(action, MoveCopy):
            self._move_copy(action)
        else:
            raise ActionError(f"unknown action {action!r}")

    def _set_stealing(self, action: SetStealing) -> None:
        """Turn LISS on or off for one job, at no cost (Gimbal: a LISS switch "involves only parameter
        changes"): a running job's copies get the performance constants of the new setting and its rate is
        recomputed."""
        j = int(action.job)
        self._check_stealing(action, j, action.on)
        self.stealing[j] = on = bool(action.on)
        if self.status.item(j) == RUNNING:
            for c in self._copy_consts[j]:
                c.k = self._copy_model(self._model_l[j], self._batch_l[j], self.accum.item(j), c.gl, c.t,
                                       c.n_nodes, on)
            self.solo_rate[j] = 1.0 / self._copy_consts[j][0].k.solo_iter
            self._rerate([j], self.now)

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
        partner = self._job_index(action, partner)
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
        self._preempt(self._running_index((Preempt, (j,)), j))

    def fork_job(self, j: int) -> None:
        """``apply(Fork(j))``: one more copy of running job ``j`` on free GPUs of other nodes. Raises the same
        ActionError."""
        self.counts["actions"] += 1
        self._fork((Fork, (j,)), j, 1, None)

    # ------------------------------------------------------------------ planning (read-only)
    def plan_place(
        self, j: int, gpu_type: str | None = None, exclude_nodes: np.ndarray | None = None
    ) -> np.ndarray | None:
        """The free GPUs the placement rule would give job ``j`` now, or None if there are too few
        (:func:`~gpucluster_env.engine.placement.plan_place`)."""
        t = None if gpu_type is None else self._type_index(gpu_type)
        return placement.plan_place(self, j, t, exclude_nodes)[0]

    def plan_colocate(self, j: int, partner: int) -> np.ndarray | None:
        """GPUs for job ``j`` sharing with running job ``partner``, or None
        (:func:`~gpucluster_env.engine.placement.plan_colocate`)."""
        return placement.plan_colocate(self, j, partner)[0]

    def plan_reallocate(self, j: int, gpu_type: str | None = None, n: int | None = None) -> np.ndarray | None:
        """The GPUs ``Reallocate(j, gpu_type=gpu_type)`` would move running job ``j`` to now (``n`` GPUs,
        default its current count), counting the GPUs it holds alone as free; None if there is no room
        (:func:`~gpucluster_env.engine.placement.plan_reallocate`)."""
        t = None if gpu_type is None else self._type_index(gpu_type)
        if n is None:
            n = len(self.copies[j][0]) if j in self.copies else self._req_l[j]
        return placement.plan_reallocate(self, j, t, n)[0]

    def plan_fork(self, j: int) -> np.ndarray | None:
        """Free GPUs for one more copy of running job ``j`` on nodes none of its copies use, or None."""
        return placement.plan_fork(self, j)

    def type_order(self, j: int) -> list[int]:
        """GPU types by this job's speed on them, fastest first."""
        return list(self._type_order_m[self.job_model[j]])

    # ------------------------------------------------------------------ queries
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
        """Jobs waiting in the queue."""
        return len(self._pending)

    @property
    def num_running(self) -> int:
        """Jobs running."""
        return len(self._running)

    def solo_iter_time(self, j: int, gpu_type: str | None = None) -> float:
        """Iteration time of job ``j`` alone on ``gpu_type`` (default: its fastest type), packed on the fewest
        nodes, at the smallest accumulation that fits."""
        types = [self._type_index(gpu_type)] if gpu_type else self.type_order(j)
        return self.fastest_solo_iter(int(self.job_model[j]), int(self.batch[j]), int(self.req_gpus[j]), types)

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

        self._accumulate_util(self.now)
        return episode_metrics(self)

    def job_table(self) -> pd.DataFrame:
        """One row per job: arrival, start, finish, JCT, queueing, GPUs, sharers, preemptions."""
        from .metrics import job_table

        return job_table(self)
