"""The discrete-event simulator of a heterogeneous GPU cluster running deep-learning training jobs.

:class:`ClusterEngine` composes one object per concern, each given the others it uses (see ``docs/engine.md``):

* :class:`.state.EngineState` -- settings, static tables, the dynamic arrays (data only, one writer a field);
* :class:`.job_queue.JobQueue` -- each job's status, the pending queue and the running set;
* :class:`.counters.Counters` -- the counts of decisions, actions and changes;
* :class:`.occupancy.Occupancy` -- slots, shares, copies: the one writer of who holds which GPU;
* :class:`.rates.Rates` -- the performance model (:mod:`gpucluster_env.performance`) on the live state: copy
  constants, worker interference, copy and job rates;
* :class:`.job_progress.Progress` -- exact progress between events, completion events, per-copy quotas;
* :class:`.placement.Placement` -- the placement rule (place, colocate, fork, reallocate), planning only;
* :class:`.action_checks.ActionChecks` and :class:`.move_checks.MoveChecks` -- validation of actions, the second
  for the moves of running jobs;
* :class:`.lifecycle.Lifecycle` and :class:`.moves.Moves` -- the state changes after those checks: starts,
  finishes, preemptions, share changes, forks, LISS; reallocations and copy moves;
* :class:`.clock.Clock` -- decision points over the event queue (:class:`.events.EventQueue`);
* :mod:`.metrics` -- episode metrics and the job table (functions of the state), with the active-SM
  estimate kept by :class:`.activity.SmActivity`.

The engine knows nothing of Gymnasium: it exposes decision points (:meth:`ClusterEngine.advance`) and applies
typed actions (:meth:`ClusterEngine.apply`), or the same actions from plain ints without building the action
objects (:meth:`ClusterEngine.place_job`, ``colocate_job``, ``calibrate_job``, ``preempt_job``, ``fork_job``).
The state's arrays are read through the engine by name (``eng.rate``, ``eng.slot_job`` ...: read-only
properties to ``eng.state``). Agents read it through :class:`~gpucluster_env.engine.view.ClusterView`.

Bit-for-bit determinism is a contract (same seed, same floats, same log): the hot paths read numpy state as
Python scalars and static tables as Python lists, which carry the same values, and compute with the same IEEE
operations in the same order; values that reach the event log, the clock or ``sharing_benefits`` keep the
numpy types they had.
"""

from __future__ import annotations

import copy
import itertools
from operator import attrgetter
from typing import Any

import numpy as np
import pandas as pd

from ..catalog import Catalog, default_catalog
from ..hardware import ClusterSpec
from ..jobs import validate_jobs
from .action_checks import ActionChecks
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
from .clock import Clock
from .counters import Counters
from .job_progress import Progress
from .job_queue import JobQueue
from .lifecycle import Lifecycle
from .move_checks import MoveChecks
from .moves import Moves
from .occupancy import Occupancy
from .placement import Placement
from .queue_read import QueueRead
from .rates import Rates
from .state import DONE, FUTURE, PENDING, RUNNING, STATE_FIELDS, STATUS_NAMES, EngineConfig, EngineState

__all__ = ["DONE", "FUTURE", "PENDING", "RUNNING", "STATUS_NAMES", "ClusterEngine", "EngineConfig"]


class ClusterEngine:
    """Simulates one episode: a cluster, a job table, a catalog, a config, as composed parts (module docstring).

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
        catalog = catalog or default_catalog()
        jobs, self.skip_report = validate_jobs(jobs, catalog, cluster, source, skip_bad_rows)
        self._assemble(EngineState(catalog, cluster, config or EngineConfig(), jobs))
        self.clock.start()

    def _assemble(self, st: EngineState) -> None:
        """Make the parts over state ``st``, each given the parts it calls."""
        self.state = st
        self._queue_read = QueueRead(st)
        self.queue = JobQueue(st)
        self.counters = Counters(st)
        self.occupancy = Occupancy(st)
        self.rates = Rates(st)
        self.progress = Progress(st, self.rates, self.occupancy)
        self.placement = Placement(st, self.occupancy)
        self.checks = ActionChecks(st, self.occupancy, self.rates)
        self.lifecycle = Lifecycle(st, self.queue, self.occupancy, self.rates, self.progress, self.checks,
                                   self.placement, self.counters)
        self.moves = Moves(st, self.occupancy, self.rates, self.progress,
                           MoveChecks(st, self.checks, self.placement), self.counters, self.lifecycle.colocated)
        self.clock = Clock(st, self.progress, self.lifecycle, self.queue, self.counters)

    def reset(self) -> None:
        """Start the episode again from time 0 (same jobs)."""
        self.state.reset()
        self.clock.start()

    def close_arrivals(self) -> None:
        """No job that has not arrived yet ever will: the episode plays only the jobs at hand (a search's
        rollout on a :meth:`clone`)."""
        self.queue.close_arrivals()

    def clone(self) -> ClusterEngine:
        """An independent engine at this instant: the same state, events and log, so that acting on the copy
        gives bit for bit what acting on this engine would, and nothing done to either changes the other
        (what a search agent rolls out on). The state is deep-copied with its static tables and the running
        copies' constants shared (:meth:`EngineState.shared_memo`); the parts, which hold only references and
        the clock's few numbers, are made again over the copy."""
        twin = copy.copy(self)
        twin._assemble(copy.deepcopy(self.state, self.state.shared_memo()))
        twin.clock.resume(self.clock)
        return twin

    # ------------------------------------------------------------------ actions
    def apply(self, action: Action) -> None:
        """Apply one typed action at the current time (``Wait`` advances to the next decision point)."""
        self.counters.action()
        life, checks = self.lifecycle, self.checks
        cls = type(action)  # the common actions first, by their exact class
        if cls is Preempt:
            life.preempt(checks.running_index(action, action.job))
            return
        if (cls is Place or cls is Colocate) and action.gpus is not None:
            life.start_exact(action, cls is Colocate)
            return
        if cls is Squeeze or cls is Swell:
            life.calibrate(action, action.job, -1 if cls is Squeeze else 1, action.gpus)
            return
        if isinstance(action, Wait):
            self.clock.advance()
        elif isinstance(action, Place | Colocate):
            checks.check_job(action, action.job)
            j = int(action.job)
            p = None
            if isinstance(action, Colocate):
                checks.check_job(action, action.partner)
                p = int(action.partner)
            if action.gpus is None:
                if p is None:
                    life.place(action, j, action.gpu_type, action.accumulation)
                else:
                    life.colocate(action, j, p, action.accumulation)
                return
            life.start_exact(action, p is not None)
        elif isinstance(action, Squeeze | Swell):
            life.calibrate(action, action.job, -1 if isinstance(action, Squeeze) else 1, action.gpus)
        elif isinstance(action, Preempt):
            life.preempt(checks.running_index(action, action.job))
        elif isinstance(action, Fork):
            life.fork(action, action.job, action.copies, action.gpus)
        elif isinstance(action, SetStealing):
            life.set_stealing(action)
        elif isinstance(action, Reallocate):
            self.moves.reallocate(action)
        elif isinstance(action, DropCopy):
            self.moves.drop_copy(action)
        elif isinstance(action, MoveCopy):
            self.moves.move_copy(action)
        else:
            raise ActionError(f"unknown action {action!r}")

    # Fast entry points: the typed actions' work from plain ints, without building the action objects (each
    # builds its typed action only to name it in an ActionError). ``apply`` runs the same code for those
    # actions, so both give the same state, the same errors and the same counts.
    def place_job(self, j: int, t: int | None) -> None:
        """``apply(Place(j, type_names[t]))`` (``t`` None: ``Place(j)``, the fastest type that fits), with the
        engine's placement rule and the smallest accumulation that fits. Raises the same ActionError (an
        index ``t`` outside ``type_names`` raises ActionError too)."""
        st = self.state
        self.counters.action()
        if t is not None and not (isinstance(t, int | np.integer) and not isinstance(t, bool | np.bool_)
                                  and 0 <= t < len(st.type_names)):
            raise ActionError(
                f"place(job {j!r}): no GPU type with index {t!r} (this cluster has {', '.join(st.type_names)})"
            )
        action = (Place, (j, None if t is None else st.type_names[t]))
        j = self.checks.job_index(action, j)
        self.lifecycle.place(action, j, None if t is None else int(t), None)

    def colocate_job(self, j: int, partner: int, accumulation: int | None) -> None:
        """``apply(Colocate(j, partner, accumulation))``: start pending job ``j`` on running ``partner``'s GPUs
        (topped up with free ones) at that accumulation (None: the smallest that fits). Raises the same
        ActionError."""
        self.counters.action()
        action = (Colocate, (j, partner, accumulation))
        j = self.checks.job_index(action, j)
        partner = self.checks.job_index(action, partner)
        self.lifecycle.colocate(action, j, partner, accumulation)

    def calibrate_job(self, j: int, step: int) -> None:
        """``apply(Squeeze(j))`` (``step`` -1) or ``apply(Swell(j))`` (``step`` +1): one 10% share step on
        all of running job ``j``'s GPUs. Raises the same ActionError."""
        self.counters.action()
        if step not in (-1, 1):
            raise ActionError(f"calibrate job {j!r}: step must be -1 (squeeze) or 1 (swell), got {step!r}")
        self.lifecycle.calibrate((Squeeze if step < 0 else Swell, (j,)), j, step, None)

    def preempt_job(self, j: int) -> None:
        """``apply(Preempt(j))``: checkpoint running job ``j`` and queue it again. Raises the same
        ActionError."""
        self.counters.action()
        self.lifecycle.preempt(self.checks.running_index((Preempt, (j,)), j))

    def fork_job(self, j: int) -> None:
        """``apply(Fork(j))``: one more copy of running job ``j`` on free GPUs of other nodes. Raises the same
        ActionError."""
        self.counters.action()
        self.lifecycle.fork((Fork, (j,)), j, 1, None)

    # ------------------------------------------------------------------ planning (read-only)
    def plan_place(
        self, j: int, gpu_type: str | None = None, exclude_nodes: np.ndarray | None = None
    ) -> np.ndarray | None:
        """The free GPUs the placement rule would give job ``j`` now, or None if there are too few
        (:meth:`~gpucluster_env.engine.placement.Placement.plan_place`)."""
        t = None if gpu_type is None else self.checks.type_index(gpu_type)
        return self.placement.plan_place(j, t, exclude_nodes)[0]

    def plan_colocate(self, j: int, partner: int) -> np.ndarray | None:
        """GPUs for job ``j`` sharing with running job ``partner``, or None
        (:meth:`~gpucluster_env.engine.placement.Placement.plan_colocate`)."""
        return self.placement.plan_colocate(j, partner)[0]

    def plan_reallocate(self, j: int, gpu_type: str | None = None, n: int | None = None) -> np.ndarray | None:
        """The GPUs ``Reallocate(j, gpu_type=gpu_type)`` would move running job ``j`` to now (``n`` GPUs,
        default its current count), counting the GPUs it holds alone as free; None if there is no room
        (:meth:`~gpucluster_env.engine.placement.Placement.plan_reallocate`)."""
        st = self.state
        t = None if gpu_type is None else self.checks.type_index(gpu_type)
        if n is None:
            n = len(st.copies[j][0]) if j in st.copies else st.req_l[j]
        return self.placement.plan_reallocate(j, t, n)[0]

    def plan_fork(self, j: int) -> np.ndarray | None:
        """Free GPUs for one more copy of running job ``j`` on nodes none of its copies use, or None."""
        return self.placement.plan_fork(j)

    def type_order(self, j: int) -> list[int]:
        """GPU types by this job's speed on them, fastest first."""
        return list(self.state.type_order_m[self.state.job_model[j]])

    # ------------------------------------------------------------------ queries
    def pending_jobs(self) -> np.ndarray:
        """Indices of pending jobs in queue order: by arrival, a preempted job rejoining at the back (a fresh
        array; :class:`~gpucluster_env.engine.queue_read.QueueRead`)."""
        return self._queue_read.pending()

    def pending_head(self, n: int) -> np.ndarray:
        """The first ``n`` pending jobs in queue order (cheap for long queues)."""
        return np.fromiter(itertools.islice(self.state.pending_queue, n), dtype=np.int64)

    def running_head(self, n: int) -> np.ndarray:
        """The first ``n`` running jobs in start order."""
        return np.fromiter(itertools.islice(self.state.running_set, n), dtype=np.int64)

    def running_jobs(self) -> np.ndarray:
        """Indices of running jobs, in submit order."""
        return np.array(sorted(self.state.running_set), dtype=np.int64)

    @property
    def num_pending(self) -> int:
        """Jobs waiting in the queue."""
        return len(self.state.pending_queue)

    @property
    def num_running(self) -> int:
        """Jobs running."""
        return len(self.state.running_set)

    def solo_iter_time(self, j: int, gpu_type: str | None = None) -> float:
        """Iteration time of job ``j`` alone on ``gpu_type`` (default: its fastest type), packed on the fewest
        nodes, at the smallest accumulation that fits."""
        st = self.state
        types = [self.checks.type_index(gpu_type)] if gpu_type else self.type_order(j)
        return st.fastest_solo_iter(int(st.job_model[j]), int(st.batch[j]), int(st.req_gpus[j]), types)

    def true_pair_xi(self, a: int, b: int, gpu_type: str) -> tuple[float, float]:
        """Ground-truth free-competition interference ratios of jobs ``a`` and ``b`` sharing a ``gpu_type``
        GPU (for oracle agents and evaluation; learned and heuristic agents should predict it instead)."""
        st = self.state
        t = self.checks.type_index(gpu_type)
        ma, mb = st.job_model[a], st.job_model[b]
        return float(st.xi_free[t, ma, mb]), float(st.xi_free[t, mb, ma])

    # ------------------------------------------------------------------ results
    def metrics(self) -> dict[str, float]:
        """Episode metrics (see :func:`gpucluster_env.engine.metrics.episode_metrics`)."""
        from .metrics import episode_metrics

        self.clock.accumulate_util(self.state.now)
        return episode_metrics(self.state)

    def job_table(self) -> pd.DataFrame:
        """One row per job: arrival, start, finish, JCT, queueing, GPUs, sharers, preemptions."""
        from .metrics import job_table

        return job_table(self.state)

    # ------------------------------------------------------------------ the parts' queries, by the engine's name
    @property
    def done(self) -> bool:
        """Every job of the episode has finished."""
        return self.state.n_done == self.state.n_jobs

    @property
    def last_reasons(self) -> tuple[str, ...]:
        """The reasons of the latest decision point (:meth:`advance`'s return)."""
        return self.clock.last_reasons

    def advance(self, until: float | None = None) -> tuple[str, ...]:
        """:meth:`Clock.advance <gpucluster_env.engine.clock.Clock.advance>`: run to the next decision point."""
        return self.clock.advance(until)

    def remaining_now(self, jobs: np.ndarray | None = None) -> np.ndarray:
        """:meth:`Progress.remaining_now <gpucluster_env.engine.job_progress.Progress.remaining_now>`."""
        return self.progress.remaining_now(jobs)

    def copy_states(self, j: int) -> list[dict[str, Any]]:
        """:meth:`Progress.copy_states <gpucluster_env.engine.job_progress.Progress.copy_states>`."""
        return self.progress.copy_states(j)

    def gpus_of(self, j: int) -> np.ndarray:
        """All GPUs job ``j`` holds (every copy)."""
        return self.occupancy.gpus_of(j)

    def type_and_nodes(self, j: int) -> tuple[int, int] | None:
        """:meth:`Occupancy.type_and_nodes <gpucluster_env.engine.occupancy.Occupancy.type_and_nodes>`."""
        return self.occupancy.type_and_nodes(j)

    def partners_of(self, j: int) -> list[int]:
        """Jobs sharing a GPU with job ``j``."""
        return self.occupancy.partners_of(j)

    def share_of(self, j: int) -> float:
        """Mean MPS share of job ``j`` over its GPUs (1.0 = 100%); 0 when not running."""
        return self.occupancy.share_of(j)

    def free_mask(self) -> np.ndarray:
        """Boolean per GPU: holds no job."""
        return self.occupancy.free_mask()

    def single_mask(self) -> np.ndarray:
        """Boolean per GPU: holds exactly one job."""
        return self.occupancy.single_mask()

    def free_by_type(self) -> np.ndarray:
        """Free GPUs per GPU type (in ``type_names`` order)."""
        return self.occupancy.free_by_type()

    def copy_iter_time(self, j: int, gpus: np.ndarray, xi: np.ndarray | None = None) -> float:
        """:meth:`Rates.copy_iter_time <gpucluster_env.engine.rates.Rates.copy_iter_time>`."""
        return self.rates.copy_iter_time(j, gpus, xi)

    def iter_time_for(self, j: int, gpus: np.ndarray, s: int, xi: np.ndarray | float = 1.0,
                      batch: int | None = None) -> float:
        """:meth:`Rates.iter_time_for <gpucluster_env.engine.rates.Rates.iter_time_for>`."""
        return self.rates.iter_time_for(j, gpus, s, xi, batch)

    def accumulation_for(self, j: int, gpus: np.ndarray) -> int | None:
        """:meth:`Rates.accumulation_for <gpucluster_env.engine.rates.Rates.accumulation_for>`."""
        return self.rates.accumulation_for(j, gpus)

    def topology_violation(self, j: int, g: np.ndarray) -> str | None:
        """:meth:`ActionChecks.topology_violation
        <gpucluster_env.engine.action_checks.ActionChecks.topology_violation>`."""
        return self.checks.topology_violation(j, g)


for _name in STATE_FIELDS:  # read only: each field has one writer, a part (docs/engine.md, "Who writes what")
    setattr(ClusterEngine, _name, property(attrgetter(f"state.{_name}"), doc=f"``state.{_name}`` (read only)."))
del _name
