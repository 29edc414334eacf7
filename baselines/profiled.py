"""What the packing schedulers (Lucid, Gandiva, Gimbal) know of a job beyond the read-only view: its profiled
GPU demand (the fraction of a GPU it keeps busy alone -- the utilization Lucid's profiler and Gimbal's eq. 2
read) from the environment's catalog, and the deadline its user submitted. Neither is the engine's interference
truth: a profile is measured on the job alone, a deadline is part of the submission.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


class JobFacts:
    """Profiled demand and submitted deadline of the jobs of one environment (rebuilt at each ``reset``)."""

    def __init__(self, env: Any) -> None:
        eng = env.unwrapped.engine
        self._catalog = eng.catalog
        dl = np.array(eng.deadline, dtype=float)
        dl.flags.writeable = False
        self.deadlines = dl
        """Each job's deadline (s; NaN: none)."""
        self._types = tuple(eng.type_names)
        self._cache: dict[tuple[int, int], float] = {}

    def demand(self, view: Any, j: int, gpu_type: int) -> float:
        """Profiled GPU demand of job ``j`` on GPU type index ``gpu_type`` (in (0, 1])."""
        key = (view.model_index(j), int(gpu_type))
        d = self._cache.get(key)
        if d is None:
            cat = self._catalog
            p = view.model(j)
            f = getattr(cat, "model_demand", None)
            d = float(f(p, self._types[key[1]])) if f is not None else float(p.gpu_demand)
            self._cache[key] = d
        return d

    def deadline(self, j: int) -> float:
        """Job ``j``'s deadline (s), ``inf`` when it has none."""
        d = float(self.deadlines[j])
        return math.inf if math.isnan(d) else d
