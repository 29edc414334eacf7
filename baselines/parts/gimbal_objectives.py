"""Gimbal's local objectives and priorities (gimbal §5.2, eq. 1-6) as :class:`~.gimbal_search.Coordinator` reads
them: each job's expected remaining time ``RemainingSteps / Throughput`` (from *predicted* throughput) makes a
packing set's objective and a job's priority. How the paper's priority signs are read: :mod:`.gimbal_search`'s
module docstring."""

from __future__ import annotations

import math
import sys

import numpy as np

OBJECTIVES = ("jct", "deadline", "makespan")


def local_objective(kind: str, times: np.ndarray | list[float], slack: np.ndarray | list[float] | None = None
                    ) -> float:
    """The local objective of a packing set (lower is better) from each job's expected remaining time
    ``RemainingSteps / Throughput``: eq. 1 their mean (``jct``), eq. 3 the largest lateness ``max(0, time -
    slack)`` (``deadline``; ``slack`` = deadline - now; NaN: no deadline; an infinite slack counts as the
    largest finite float, as ``np.nan_to_num`` reads it), eq. 5 their largest (``makespan``)."""
    if kind == "deadline":
        if slack is None:
            raise ValueError("local_objective: kind 'deadline' needs slack")
        return _largest_lateness(times if isinstance(times, list) else np.asarray(times, dtype=float).tolist(),
                                 slack if isinstance(slack, list) else np.asarray(slack, dtype=float).tolist())
    t = np.asarray(times, dtype=float)
    if kind == "jct":
        return float(t.mean())
    if kind == "makespan":
        return float(t.max())
    raise ValueError(f"local_objective: unknown kind {kind!r}; known: {', '.join(OBJECTIVES)}")


_BIG = sys.float_info.max


def _largest_lateness(times: list[float], slack: list[float]) -> float:
    """Eq. 3 over Python floats, the bits ``np.maximum(0, times - np.nan_to_num(slack, nan=inf)).max()`` gives: a
    NaN slack is no deadline (infinite), an infinite one the largest finite float of its sign, a NaN lateness
    wins (``tests/baselines/test_gimbal_kept.py`` keeps the array form as its oracle)."""
    worst = 0.0
    for t, s in zip(times, slack, strict=True):
        if s != s:
            s = math.inf
        elif s == math.inf:
            s = _BIG
        elif s == -math.inf:
            s = -_BIG
        d = t - s
        if d != d:
            return math.nan
        if d > worst:
            worst = d
    return worst


def priority(kind: str, remaining: float, rate: float, utilization: float, slack: float = math.nan) -> float:
    """How much a job should be favoured (higher: swelled first): eq. 2 ``-utilization`` (``jct``), eq. 4 minus
    the headroom ``slack - remaining/rate`` (``deadline``; no deadline: no urgency), eq. 6 the expected
    duration ``remaining/rate`` (``makespan``); see the module docstring for the signs."""
    if kind == "jct":
        return -float(utilization)
    t = float(remaining) / float(rate)
    if kind == "makespan":
        return t
    if kind == "deadline":
        return -math.inf if math.isnan(slack) else -(float(slack) - t)
    raise ValueError(f"priority: unknown kind {kind!r}; known: {', '.join(OBJECTIVES)}")
