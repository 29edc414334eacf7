"""The state changes of the moves of running jobs: ``Reallocate`` (Gavel's and Hadar's per-round allocations:
another GPU set, type or size in one action, paying ``restart_s``; or Pollux's batch re-tuning in place), and
HadarE's ``DropCopy`` and ``MoveCopy`` of one copy of a forked job. Each runs after its checks
(:mod:`gpucluster_env.engine.move_checks`) and leaves every count, rate and completion event up to date.
"""

from __future__ import annotations

from collections.abc import Callable

from .actions import DropCopy, MoveCopy, Reallocate
from .counters import Counters
from .job_progress import Progress
from .move_checks import MoveChecks
from .occupancy import Occupancy
from .rates import Rates
from .state import EngineState


class Moves:
    """Reallocation and copy moves on an :class:`~gpucluster_env.engine.state.EngineState`: checks with
    :class:`MoveChecks`, takes and leaves GPUs through :class:`Occupancy`, settles and re-rates through
    :class:`Progress`, counts through :class:`Counters`, records a move beside another job through its
    ``colocated`` (the lifecycle's); it writes no field of the state itself."""

    def __init__(self, state: EngineState, occupancy: Occupancy, rates: Rates, progress: Progress,
                 checks: MoveChecks, counters: Counters,
                 colocated: Callable[[int, set[int], list[int], float, float], None]) -> None:
        """``colocated``: what records a job moved beside others (``Lifecycle.colocated``, the records' owner)."""
        self.colocated = colocated
        self.state = state
        self.occupancy = occupancy
        self.rates = rates
        self.progress = progress
        self.checks = checks
        self.counters = counters

    def reallocate(self, action: Reallocate) -> None:
        """Move a running job of one copy to the checked GPU set (its progress kept), paying ``restart_s``, or
        only change its batch (and accumulation) on its own GPUs, in place (no restart). A move onto GPUs another
        job holds counts as a colocation, with its sharing benefit, as a start there does."""
        st = self.state
        j, g, s, b = self.checks.check_reallocate(action)
        t = st.now
        self.progress.settle(j, t)  # progress so far, at the old GPUs' rate
        old = st.copy_consts[j][0]
        gl = g.tolist()
        moved = sorted(gl) != sorted(old.gl)
        occ = self.occupancy
        partners = occ.vacate(j, old)
        occ.set_batch(j, b)
        c = self.rates.new_copy(j, g, s, gl)
        beside = occ.place(j, c, s)
        partners |= beside
        # resized or re-batched: its rate is scaled (Rates.copy_rate), its progress kept per copy
        self.progress.one_copy(j, c, c.n != st.req_l[j] or b != st.batch.item(j))
        if moved or action.batch is None:
            self.progress.pause(j, t, t + st.config.restart_s)  # a checkpoint-restart on the new GPUs
            self.counters.reallocation()
        if action.batch is None:
            st.log.gpus(t, "reallocate", j, gl, s)
        else:
            st.log.record(t, "reallocate", j, {"gpus": gl[:], "accumulation": s, "batch": b})
        if moved and beside:  # restarted on GPUs another job holds: a colocation, as a start beside it is
            self.colocated(j, beside, sorted(partners | {j}), t, c.k.solo_iter)
        else:
            self.progress.rerate(sorted(partners | {j}), t)

    def drop_copy(self, action: DropCopy) -> None:
        """Stop one copy of a forked job; its steps are split among the copies left."""
        st = self.state
        j, i = self.checks.check_copy(action)
        t = st.now
        self.progress.settle(j, t)
        c, partners = self.occupancy.drop_copy(j, i)
        self.progress.copy_dropped(j, i)
        self.progress.refresh_copies(j)
        self.progress.split(j)
        self.counters.copy_drop()
        st.log.record(t, "drop_copy", j, {"gpus": c.gl[:]})
        self.progress.rerate(sorted(partners | {j}), t)

    def move_copy(self, action: MoveCopy) -> None:
        """Move one copy of a forked job to free GPUs; it starts up again there (``copy_startup_s``)."""
        st = self.state
        j, i = self.checks.check_copy(action)
        g = self.checks.check_move_gpus(action, j, i)
        t = st.now
        self.progress.settle(j, t)
        gl = g.tolist()
        c = self.rates.new_copy(j, g, st.accum.item(j), gl)
        old, partners = self.occupancy.replace_copy(j, i, c)
        self.progress.copy_restarts(j, i, t + st.config.copy_startup_s)
        self.progress.refresh_copies(j)
        self.progress.split(j)
        self.counters.copy_move()
        st.log.record(t, "move_copy", j, {"gpus": gl[:], "from": old.gl[:]})
        self.progress.rerate(sorted(partners | {j}), t)
