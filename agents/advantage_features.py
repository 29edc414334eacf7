"""What the rollout-advantage model reads of a decision point: one row of numbers per candidate action.

A row describes the state (the queue and the running jobs, in the same units on any cluster), the base
heuristic's own action and the candidate, so one model scores candidates on clusters of any size and any
number of GPU types. Times are log-scaled minutes (``log1p(seconds / 60)``), GPU counts fractions of the
cluster's GPUs; "service" is remaining solo run time times GPUs (GPU-seconds still to do), "age" the time a job
has waited (pending) or run since its last start (running). Everything is read from the
:class:`~gpucluster_env.engine.view.ClusterView` (true durations, as SRSF reads them); nothing of a job not yet
submitted. (Tried and not kept, docs/rl.md: features of the recent arrivals, with labels from rollouts that see
the arrivals; features of node fragmentation, better on the training scenarios' development seeds but worse
than SJF on clusters unlike them.)
"""

from __future__ import annotations

import numpy as np

from gpucluster_env.engine import Action, Place, Preempt, Wait
from gpucluster_env.engine.view import ClusterView

STATE_FEATURES = (
    "log_pending", "log_running", "free_frac",
    "pending_min_service", "pending_median_service", "pending_service_per_gpu", "pending_gpus_frac",
    "running_min_left", "running_median_left", "running_service_per_gpu",
)
JOB_FEATURES = ("has_job", "left", "gpus_frac", "service", "age")
KIND_FEATURES = ("place", "wait", "preempt")
FEATURE_NAMES = (
    STATE_FEATURES
    + tuple(f"own_{k}" for k in KIND_FEATURES + JOB_FEATURES)
    + tuple(f"cand_{k}" for k in KIND_FEATURES + JOB_FEATURES)
    + ("service_vs_own",)
)
"""The columns of :func:`candidate_features`, in order (saved in a model's meta.json and checked on load)."""


def _minutes(seconds: float | np.ndarray) -> float | np.ndarray:
    return np.log1p(np.asarray(seconds) / 60.0)


def _kind(a: Action) -> list[float]:
    return [float(isinstance(a, Place)), float(isinstance(a, Wait)), float(isinstance(a, Preempt))]


def _job(a: Action) -> int | None:
    return int(a.job) if isinstance(a, (Place, Preempt)) else None


def _state(view: ClusterView, left: np.ndarray, service: np.ndarray, gpus: int) -> list[float]:
    pend, run = view.pending_jobs(), view.running_jobs()
    out = [float(np.log1p(len(pend))), float(np.log1p(len(run))), view.num_free() / gpus]
    if len(pend):
        s = np.sort(service[pend])
        out += [float(_minutes(s[0])), float(_minutes(np.median(s))), float(_minutes(s.sum() / gpus)),
                float(view.req_gpus[pend].sum()) / gpus]
    else:
        out += [0.0] * 4
    if len(run):
        r = np.sort(left[run])
        out += [float(_minutes(r[0])), float(_minutes(np.median(r))), float(_minutes(service[run].sum() / gpus))]
    else:
        out += [0.0] * 3
    return out


def _job_row(view: ClusterView, a: Action, left: np.ndarray, service: np.ndarray) -> list[float]:
    j = _job(a)
    if j is None:
        return [0.0] * len(JOB_FEATURES)
    since = view.last_start(j) if view.is_running(j) else view.pending_since(j)
    return [1.0, float(_minutes(left[j])), float(view.req_gpus[j]) / view.num_gpus, float(_minutes(service[j])),
            float(_minutes(max(view.now - since, 0.0)))]


def candidate_features(view: ClusterView, own: Action, candidates: list[Action],
                       left: np.ndarray | None = None) -> np.ndarray:
    """One row of :data:`FEATURE_NAMES` per action of ``candidates`` (float64, shape ``(len, features)``),
    each compared with the heuristic's ``own`` action at ``view``'s state. ``left``: the state's
    :meth:`~gpucluster_env.engine.view.ClusterView.remaining_solo_time`, when the caller has it."""
    gpus = view.num_gpus
    left = view.remaining_solo_time() if left is None else left
    service = left * view.req_gpus
    head = _state(view, left, service, gpus)
    oj = _job(own)
    head += _kind(own) + _job_row(view, own, left, service)
    rows = []
    for a in candidates:
        cj = _job(a)
        vs = float(_minutes(service[cj]) - _minutes(service[oj])) if cj is not None and oj is not None else 0.0
        rows.append(head + _kind(a) + _job_row(view, a, left, service) + [vs])
    return np.array(rows, dtype=np.float64).reshape(len(candidates), len(FEATURE_NAMES))
