"""Pollux's goodput model (Qiao et al., OSDI'21, §3): a job's throughput on representative GPU sets of one type,
the per-GPU batches Pollux's batch optimiser tries, statistical efficiency at the job's progress, and the
fair-share goodput its speed-ups are measured against. :mod:`gpucluster_env.baselines.pollux` builds its
search's fitness from these."""

from __future__ import annotations

import numpy as np

from gpucluster_env.catalog.pollux_efficiency import (
    POLLUX_INIT_BATCH,
    POLLUX_LOCAL_BATCH,
    batch_range,
    efficiency,
    has_efficiency,
    noise_scale,
)
from gpucluster_env.engine.view import ClusterView


def representative_gpus(view: ClusterView, nodes_of_type: list[np.ndarray], m: int, r: int) -> np.ndarray | None:
    """``r`` GPUs over exactly ``m`` nodes of one type (``nodes_of_type``: each node's GPUs, largest first):
    one on each of the first ``m`` nodes, the rest filling them in order. None when they cannot hold ``r``."""
    if m < 1 or m > len(nodes_of_type) or r < m:
        return None
    picked = nodes_of_type[:m]
    if sum(len(g) for g in picked) < r:
        return None
    take = [1] * m
    extra = r - m
    for i, g in enumerate(picked):
        add = min(extra, len(g) - 1)
        take[i] += add
        extra -= add
    return np.concatenate([g[:t] for g, t in zip(picked, take, strict=True)])


BATCH_CANDIDATES = 16
"""Total batches Pollux's batch optimiser tries per GPU count (geometric between the smallest and largest
allowed; Pollux's ``GoodputFunction.optimize`` tries 50)."""


def batch_candidates(model: str, max_r: int, count: int = BATCH_CANDIDATES) -> np.ndarray:
    """Per-GPU batches Pollux's optimiser tries for ``model`` on ``0..max_r`` GPUs, shape ``(max_r + 1, count)``
    (0: no candidate): totals geometric from ``max(M0, r x smallest per-GPU batch)`` to the largest validated
    batch, each split over the ``r`` GPUs (rounded up, but the total kept within the validated range)."""
    lo_total, hi_total = batch_range(model)  # type: ignore[misc]
    min_local = POLLUX_LOCAL_BATCH[model][0]
    out = np.zeros((max_r + 1, count), dtype=np.int64)
    for r in range(1, max_r + 1):
        start = max(lo_total, min_local * r)
        if start > hi_total:
            continue
        b = np.minimum(np.ceil(np.geomspace(start, hi_total, count) / r - 1e-8), hi_total // r).astype(np.int64)
        ok = (b >= min_local) & (r * b >= lo_total)
        out[r] = np.where(ok, b, 0)
    return out


def goodput_table(view: ClusterView, j: int, nodes_by_type: list[list[np.ndarray]], batches: np.ndarray
                  ) -> np.ndarray:
    """Throughput (samples/s) of job ``j`` by ``[type, nodes, GPUs, candidate]`` at the per-GPU batches
    ``batches[GPUs, candidate]`` (0 where impossible, out of memory or no candidate), from the performance
    model's iteration time on representative GPU sets."""
    n_types = len(nodes_by_type)
    max_m = max(len(n) for n in nodes_by_type)
    max_r = batches.shape[0] - 1
    out = np.zeros((n_types, max_m + 1, max_r + 1, batches.shape[1]))
    for k, nodes in enumerate(nodes_by_type):
        for r in range(1, max_r + 1):
            for m in range(1, min(r, len(nodes)) + 1):
                g = representative_gpus(view, nodes, m, r)
                if g is None:
                    continue
                for c, b in enumerate(batches[r].tolist()):
                    s = view.solo_accumulation(j, g, b) if b > 0 else None
                    if s is not None:
                        out[k, m, r, c] = r * b / view.iter_time(j, g, s, batch=b)
    return out


def tunes_batch(view: ClusterView, j: int) -> bool:
    """Whether Pollux re-tunes job ``j``'s batch: an elastic job of a model with a validated batch range (a job
    whose size is fixed keeps its batch too, as Pollux's simulator fixes NCF's)."""
    return view.is_elastic(j) and batch_range(view.model(j).name) is not None


def job_noise_scale(view: ClusterView, j: int, remaining: float | None = None) -> float | None:
    """The gradient noise scale ``phi`` of job ``j``'s model at its progress now (None: no data), the only way
    its progress enters its efficiency (piecewise constant: the same over each part of its training);
    ``remaining``: its iterations left now, when the caller has them (``view.remaining_now()[j]``)."""
    name = view.model(j).name
    if not has_efficiency(name):
        return None
    left = float(view.remaining_now()[j]) if remaining is None else remaining
    return noise_scale(name, 1.0 - left / max(float(view.iterations[j]), 1e-12))


def job_efficiency(view: ClusterView, j: int, total: np.ndarray, remaining: float | None = None) -> np.ndarray:
    """Statistical efficiency of job ``j`` at total batches ``total`` at its progress now (1: no data);
    ``remaining`` as for :func:`job_noise_scale`."""
    phi = job_noise_scale(view, j, remaining)
    if phi is None:
        return np.ones(np.shape(total))
    return efficiency(np.maximum(total, 1), POLLUX_INIT_BATCH[view.model(j).name], phi)


def fair_goodput(good: np.ndarray, fair_r: np.ndarray) -> np.ndarray:
    """Each job's goodput at its fair share of ``fair_r[i]`` GPUs (``good``: ``(J, K, M+1, R+1)``): the best
    over types and node counts where that is > 0, else its best anywhere (at least 1e-12)."""
    rows = good.reshape(len(good), -1)
    at = good[np.arange(len(good)), :, :, fair_r].reshape(len(good), -1).max(axis=1)
    return np.where(at > 0, at, np.maximum(rows.max(axis=1), 1e-12))
