"""What the packing schedulers (Lucid, Gandiva, Gimbal) know of a job beyond the read-only view: its profiled
GPU demand (the fraction of a GPU it keeps busy alone -- the utilization Lucid's profiler and Gimbal's eq. 2
read) from the environment's catalog, and the deadline its user submitted. Neither is the engine's interference
truth: a profile is measured on the job alone, a deadline is part of the submission.
"""

from __future__ import annotations

import math

import numpy as np

from gpucluster_env.engine.view import ClusterView


class JobFacts:
    """Profiled demand and submitted deadline of the jobs of one environment, read from its
    :class:`~gpucluster_env.engine.view.ClusterView` (rebuilt at each ``reset``)."""

    def __init__(self, view: ClusterView) -> None:
        self.deadlines = view.deadline
        """Each job's deadline (s; NaN: none)."""

    @staticmethod
    def demand(view: ClusterView, j: int, gpu_type: int) -> float:
        """Profiled GPU demand of job ``j`` on GPU type index ``gpu_type`` (in (0, 1])."""
        return view.demand(j, int(gpu_type))

    def deadlines_of(self, jobs: np.ndarray) -> np.ndarray:
        """:meth:`deadline` of each of ``jobs``, as an array."""
        d = self.deadlines[jobs]
        return np.where(np.isnan(d), math.inf, d)

    def deadline(self, j: int) -> float:
        """Job ``j``'s deadline (s), ``inf`` when it has none."""
        d = float(self.deadlines[j])
        return math.inf if math.isnan(d) else d
