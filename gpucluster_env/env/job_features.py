"""The features of the job-centric decision process (:mod:`gpucluster_env.env.jobs_env`), declared once by name.

Each observation row is one job the agent may act on (a pending job it may start, a running job it may
preempt); the ``context`` vector describes the cluster and the clock. Every feature is declared here, once, with
its unit and meaning: the environment computes them by name, the docs list them from :data:`JOB_FEATURES` and
:data:`CONTEXT_FEATURES`, and a trained model's ``meta.json`` records the names it was trained on, so a model
asks the environment for exactly those (``JobsEnv(features=...)``) wherever it runs.

A feature is offered by default only where it can vary (``when``): the GPU-type features only on clusters of
several types, deadline slack only on traces with deadlines, the interference slowdown only where jobs share
GPUs (not yet in the job-centric process: its actions start and preempt). So no feature is constant on a
scenario's default observation, and a model trained on one scenario can still ask for its own list on another.

All values lie in [0, 1]. Durations are squashed as ``x / (x + scale)`` (0.5 at the scale); counts of GPUs as
``log2(1 + g) / log2(1 + G)`` with ``G`` the cluster's GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..engine import ClusterEngine

HOUR = 3600.0
MAX_TYPES = 8
"""Per-type context slots (registered scenarios have at most 5 GPU types: hadare-testbed)."""


@dataclass(frozen=True)
class Feature:
    """One named feature: its unit before squashing, what it means, and where it is offered by default
    (``always``; ``types``: clusters of several GPU types; ``deadlines``: traces with deadlines; ``share``: a process
    where jobs share GPUs, which the job-centric one does not yet offer; ``fork``: a process with fork rows,
    ``JobsEnv(fork=True)``; ``opt-in``: never by default, asked for by name)."""

    name: str
    unit: str
    meaning: str
    when: str = "always"


JOB_FEATURES: tuple[Feature, ...] = (
    Feature("pending", "flag", "1 for a pending job (its action starts it), 0 for a running one (its action "
            "preempts it)"),
    Feature("actionable", "flag", "1 when the job's action is allowed now (a pending job fits on free GPUs; a "
            "running job has run its minimum quantum and did not start at this instant)"),
    Feature("gpus", "GPUs", "GPUs the job asks for (pending) or holds (running), log2(1 + g) / log2(1 + G)"),
    Feature("remaining_1h", "s", "estimated time still to run alone on its fastest GPU type, squashed by an hour"),
    Feature("remaining_10h", "s", "the same, squashed by ten hours (resolution for long jobs)"),
    Feature("service_left", "GPU-s", "remaining time x GPUs, squashed by 8 GPU-hours"),
    Feature("remaining_rank", "fraction", "share of the rows' jobs with less remaining time than this one"),
    Feature("service_rank", "fraction", "share of the rows' jobs with less remaining GPU-service than this one"),
    Feature("waited", "s", "time since it last entered the queue (pending; 0 running), squashed by an hour"),
    Feature("ran", "s", "time since its last start (running; 0 pending), squashed by an hour"),
    Feature("progress", "fraction", "share of its iterations done"),
    Feature("preempted", "flag", "1 when it was preempted before (its next start pays the restart overhead)"),
    Feature("slowdown", "fraction", "running: 1 - rate / solo rate (interference from a GPU partner); 0 pending",
            when="share"),
    Feature("pace", "ratio", "running: its iteration rate now over its rate alone on its fastest GPU type (below 1 "
            "on a slower type, spread over nodes, or sharing); pending: its model's speed on the fastest type with "
            "enough free GPUs now over its fastest type's (0 when it fits on no type now)", when="opt-in"),
    Feature("best_speed", "ratio", "its model's speed on its fastest GPU type over the cluster's fastest "
            "(model, type) pair", when="types"),
    Feature("deadline_slack", "s", "0.5 + 0.5 s / (abs(s) + 1 h), s = deadline - now - remaining time; 0 without "
            "a deadline", when="deadlines"),
    Feature("fork", "flag", "1 for a fork row: its action runs one more copy of this running job on free GPUs of "
            "other nodes (HadarE); 0 for start and preempt rows", when="fork"),
    Feature("copies", "copies", "copies the job runs beyond its first, k / (k + 1); 0 pending", when="fork"),
)
"""The per-job features, in the order of the default observation's columns."""

CONTEXT_FEATURES: tuple[Feature, ...] = (
    Feature("free_gpus", "fraction", "GPUs holding no job, over all GPUs"),
    Feature("shared_gpus", "fraction", "GPUs holding two jobs, over all GPUs", when="share"),
    Feature("queue", "jobs", "pending jobs q, as q / (q + 16)"),
    Feature("running", "jobs", "running jobs r, as r / (r + 16)"),
    Feature("queue_gpus", "GPUs", "GPUs the pending jobs ask for, over all GPUs, as x / (1 + x)"),
    Feature("queue_service", "GPU-s", "remaining GPU-service of the pending jobs over the cluster's GPUs, "
            "squashed by an hour"),
    Feature("clock", "s", "simulated time, squashed by a day"),
    Feature("done", "fraction", "share of the episode's jobs finished"),
    *(Feature(f"free_type{k}", "fraction", f"free GPUs of the cluster's GPU type {k} over its GPUs (0 past the "
              "last type)", when="types") for k in range(MAX_TYPES)),
)
"""The cluster and clock features, in the order of the ``context`` vector."""

JOB_NAMES = tuple(f.name for f in JOB_FEATURES)
CONTEXT_NAMES = tuple(f.name for f in CONTEXT_FEATURES)


def default_features(n_types: int, has_deadlines: bool,
                     fork: bool = False) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The job and context feature names offered by default on a cluster of ``n_types`` GPU types (with or
    without deadlines, with or without fork rows): those that can vary there."""
    def on(f: Feature) -> bool:
        return (f.when == "always" or (f.when == "types" and n_types > 1) or (f.when == "deadlines" and has_deadlines)
                or (f.when == "fork" and fork))

    ctx = tuple(f.name for f in CONTEXT_FEATURES if on(f) and not (f.name.startswith("free_type")
                                                                    and int(f.name[9:]) >= n_types))
    return tuple(f.name for f in JOB_FEATURES if on(f)), ctx


def check_names(names: tuple[str, ...], known: tuple[str, ...], what: str) -> tuple[str, ...]:
    """``names`` as a tuple, or a ``ValueError`` naming the first unknown one and the known ones."""
    names = tuple(names)
    for n in names:
        if n not in known:
            raise ValueError(f"unknown {what} feature {n!r}; known: {', '.join(known)}")
    if len(set(names)) != len(names) or not names:
        raise ValueError(f"{what} features must be distinct and at least one")
    return names


def _squash(x: np.ndarray, scale: float) -> np.ndarray:
    return x / (x + scale)


def _rank(x: np.ndarray) -> np.ndarray:
    """Share of the other entries strictly below each entry (ties share a rank)."""
    n = len(x)
    if n <= 1:
        return np.zeros(n)
    return np.searchsorted(np.sort(x), x, side="left") / (n - 1)


def running_pace(eng: ClusterEngine, running: np.ndarray) -> np.ndarray:
    """Each running job's rate now over its solo rate on its fastest type (1: as fast as it can run)."""
    return eng.rate[running] * eng.solo_time[running] / np.maximum(eng.iterations[running], 1.0)


def _pace(eng: ClusterEngine, pending: np.ndarray, running: np.ndarray) -> np.ndarray:
    """The ``pace`` column: a running job's :func:`running_pace`; a pending job's speed on the fastest type with
    room for it now over its fastest type's (0: no type has room)."""
    out = np.zeros(len(pending) + len(running))
    if len(running):
        out[len(pending):] = running_pace(eng, running)
    free = eng.type_total - eng.busy_t
    for k, j in enumerate(pending.tolist()):
        speeds = eng.speed_mt[int(eng.job_model[j])]
        for t in eng.type_order(j):
            if eng.fits_type[j, t] and free[t] >= eng.req_gpus[j]:
                out[k] = speeds[t] / max(float(speeds.max()), 1e-12)
                break
    return out


def job_rows(eng: ClusterEngine, pending: np.ndarray, running: np.ndarray, actionable: np.ndarray,
             names: tuple[str, ...], n_fork: int = 0) -> np.ndarray:
    """``(len(pending) + len(running), len(names))`` float32: the named features of the pending jobs, then the
    running ones (the last ``n_fork`` of them fork rows: running jobs again, whose action forks them);
    ``actionable`` marks the rows whose action the mask allows. Only the named columns are computed."""
    rows = np.concatenate([pending, running])
    n, n_p = len(rows), len(pending)
    now = eng.now
    iters = np.maximum(eng.iterations[rows], 1.0)
    left_iters = eng.remaining[rows].astype(float)
    if len(running):
        left_iters[n_p:] = eng.remaining_now()[running]
    rem = eng.solo_time[rows] * left_iters / iters
    g = eng.req_gpus[rows].astype(float)
    if len(running):
        g[n_p:] = np.maximum(eng.held[running], 1)

    def since(times: np.ndarray, lo: int, hi: int) -> np.ndarray:
        out = np.zeros(n)
        out[lo:hi] = np.maximum(now - times, 0.0)
        return out

    def slowdown() -> np.ndarray:
        out = np.zeros(n)
        if len(running):
            solo = eng.solo_rate[running]
            out[n_p:] = np.where(solo > 0, 1.0 - eng.rate[running] / np.where(solo > 0, solo, 1.0), 0.0)
        return out

    def deadline_slack() -> np.ndarray:
        dl = eng.deadline[rows]
        s = dl - now - rem
        return np.where(np.isnan(dl), 0.0, 0.5 + 0.5 * s / (np.abs(s) + HOUR))

    col: dict[str, object] = {
        "pending": lambda: (np.arange(n) < n_p).astype(float),
        "actionable": lambda: actionable.astype(float),
        "gpus": lambda: np.log2(1.0 + g) / np.log2(1.0 + eng.num_gpus),
        "remaining_1h": lambda: _squash(rem, HOUR),
        "remaining_10h": lambda: _squash(rem, 10 * HOUR),
        "service_left": lambda: _squash(rem * g, 8 * HOUR),
        "remaining_rank": lambda: _rank(rem),
        "service_rank": lambda: _rank(rem * g),
        "waited": lambda: _squash(since(eng.pending_since[pending], 0, n_p), HOUR),
        "ran": lambda: _squash(since(eng.last_start[running], n_p, n), HOUR),
        "progress": lambda: 1.0 - left_iters / iters,
        "preempted": lambda: (eng.n_preempt[rows] > 0).astype(float),
        "slowdown": slowdown,
        "pace": lambda: _pace(eng, pending, running),
        "best_speed": lambda: eng.speed_mt[eng.job_model[rows]].max(axis=1) / max(float(eng.speed_mt.max()), 1e-12),
        "deadline_slack": deadline_slack,
        "fork": lambda: (np.arange(n) >= n - n_fork).astype(float),
        "copies": lambda: np.array([0.0] * n_p + [(k - 1) / k for k in (max(len(eng.copies.get(int(j), ())), 1)
                                                                          for j in running)]),
    }
    out = np.empty((n, len(names)))
    for k, name in enumerate(names):
        out[:, k] = col[name]()  # type: ignore[operator]
    return np.clip(out, 0.0, 1.0).astype(np.float32)


def context_vector(eng: ClusterEngine, names: tuple[str, ...]) -> np.ndarray:
    """The named context features of the engine's current state, float32."""
    G = max(eng.num_gpus, 1)
    pend = eng.pending_head(eng.num_pending)
    q_gpus = float(eng.req_gpus[pend].sum())
    q_service = float((eng.solo_time[pend] * eng.remaining[pend] / np.maximum(eng.iterations[pend], 1.0)
                       * eng.req_gpus[pend]).sum())
    vals = {
        "free_gpus": (G - eng.busy_gpus) / G,
        "shared_gpus": eng.shared_gpus / G,
        "queue": eng.num_pending / (eng.num_pending + 16.0),
        "running": eng.num_running / (eng.num_running + 16.0),
        "queue_gpus": (q_gpus / G) / (1.0 + q_gpus / G),
        "queue_service": (q_service / G) / (q_service / G + HOUR),
        "clock": eng.now / (eng.now + 86400.0),
        "done": eng.n_done / max(eng.n_jobs, 1),
    }
    T = len(eng.type_names)
    for k in range(MAX_TYPES):
        vals[f"free_type{k}"] = (1.0 - eng.busy_t[k] / max(int(eng.type_total[k]), 1)) if k < T else 0.0
    return np.clip(np.array([vals[n] for n in names], dtype=np.float32), 0.0, 1.0)


def features_markdown() -> str:
    """The two feature tables as Markdown (docs/rl.md holds this text; a test keeps them equal)."""
    head = "| feature | unit | offered | meaning |\n|---|---|---|---|\n"

    def table(feats: tuple[Feature, ...]) -> str:
        return head + "".join(f"| `{f.name}` | {f.unit} | {f.when} | {f.meaning} |\n" for f in feats)

    per_type = [f for f in CONTEXT_FEATURES if f.name.startswith("free_type")]
    ctx = tuple(f for f in CONTEXT_FEATURES if f not in per_type)
    ctx += (Feature(f"free_type0 .. free_type{MAX_TYPES - 1}", per_type[0].unit,
                    "free GPUs of the cluster's GPU type k over its GPUs (0 past the last type)", "types"),)
    return "Per job (one row each):\n\n" + table(JOB_FEATURES) + "\nContext (one vector):\n\n" + table(ctx)
