"""Gavel's heterogeneity-aware FIFO (Narayanan et al., OSDI'20, §7; ``fifo_perf`` in its simulator) in Gavel's
rounds, beside the event-driven ``fifo``.

At each allocation reset (:mod:`.parts.gavel_rounds`: when jobs arrived or finished, at most every ``min_reset_s``)
the active jobs are taken in arrival order, each given the whole of the GPU type where it runs fastest among
the types that still have room for its gang; the first job no type has room for ends the pass (no job jumps
ahead of an earlier one). The rounds then run exactly the jobs so allocated, each on its one type; a job with
no allocation (queued behind, or arrived since the reset) waits for the next reset, as in Gavel's simulator,
which skips FIFO jobs of priority 0.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from gpucluster_env.baselines.parts.gavel_row_table import RowTable, job_rows
from gpucluster_env.baselines.parts.gavel_scheduler import Gavel

from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import register_policy


def fifo_allocation(throughputs: np.ndarray, gpus: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Gavel's FIFO allocation over jobs in arrival order (rows of ``throughputs``, iterations/s per GPU
    type; 0: cannot run there): ``X[j, k] = 1`` for the fastest type ``k`` with at least ``gpus[j]`` GPUs left
    where ``j`` runs, else the row stays 0; the pass stops at the first job no type has room for."""
    t = np.asarray(throughputs, dtype=float)
    left = np.asarray(capacity, dtype=np.int64).copy()
    x = np.zeros_like(t)
    for j in range(t.shape[0]):
        room = np.flatnonzero(left >= int(gpus[j]))
        if not len(room):
            break
        k = int(room[np.argmax(t[j, room])])  # ties: the first type
        if t[j, k] > 0:
            x[j, k] = 1.0
            left[k] -= int(gpus[j])
    return x


@register_policy
class GavelFIFO(Gavel):
    """``gavel-fifo``: Gavel's heterogeneity-aware FIFO in rounds (module docstring)."""

    name: ClassVar[str] = "gavel-fifo"
    description: ClassVar[str] = (
        "Gavel's FIFO (heterogeneity-aware, as its simulator's fifo_perf): jobs in arrival order each get the "
        "fastest GPU type with room, realized in 360 s rounds; exclusive GPUs, one type per job"
    )
    paper: ClassVar[str] = "Gavel (OSDI'20)"

    def __init__(self, round_s: float | None = None, min_reset_s: float = 1920.0) -> None:
        """``round_s``: round length (None: the scenario's, else 360 s); ``min_reset_s``: least time between
        allocation recomputations."""
        super().__init__("max-min", round_s, min_reset_s)
        self.objective = "fifo"

    def _allocate(self, view: ClusterView, active: list[int], t: np.ndarray) -> None:
        order = np.argsort(view.submit[active], kind="stable")
        x = np.zeros_like(t)
        x[order] = fifo_allocation(t[order], view.req_gpus[active][order], self.capacity)
        self.alloc = RowTable.of_rows(view.n_jobs, job_rows(active), x)

    def _candidate_rows(self, view: ClusterView, active: list[int], t: np.ndarray
                        ) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """Only allocated jobs run, on their type (Gavel skips FIFO jobs of priority 0)."""
        rows, runnable = super()._candidate_rows(view, active, t)
        return rows, runnable & (self._rows(self.alloc, rows) > 0)
