"""Observations built from engine state: a single-level ``Dict`` of bounded float32 vectors (or one flat ``Box``).

Each key is a 1-D vector; the windows are laid out row-major (all features of the first job, then the next).

Every feature lies in [0, 1]; durations are squashed as ``x / (x + scale)``; padding rows are all zero and
flagged by feature 0 (``valid``).

``pending`` (N x 12), the first N jobs of the queue:
    0 valid, 1 GPUs asked (log-scaled by cluster size), 2 time waited, 3 estimated remaining work (solo time on
    the fastest type), 4-6 model features (compute intensity, memory intensity, communication share),
    7 speed on its best GPU type (relative to the cluster's fastest), 8 can be placed now on free GPUs,
    9 was preempted before, 10 has a deadline, 11 deadline slack (below).
``running`` (M x 16), the first M running jobs in start order:
    0 valid, 1 GPUs held, 2 MPS share (mean), 3 observed slowdown 1 - 1/xi (0 alone), 4 progress,
    5 remaining time at the current rate, 6 fraction of its GPUs shared, 7 forked copies beyond the first,
    8 fraction of its GPUs that could host a partner, 9-11 model features, 12 GPU type (index over T - 1, 0 on
    one-type clusters), 13 nodes it spans (log-scaled as GPUs held), 14 gradient accumulation 1 - 1/s,
    15 deadline slack at the current rate.
``pairs`` (N x M x 2), for pending slot i beside running slot r on r's GPU type: the *predicted* slowdowns
    1 - 1/xi of the pending job and of the running job under MPS free competition, from the catalog's
    interference predictor (castor §6's XGBoost model; the feature formula where the catalog has none) --
    never the engine's true xi. 0 where either slot is empty.
``cluster`` (T x 4), per GPU type: free, holding one job, holding two jobs (each over the type's GPUs), the
    type's share of all GPUs.
``clock`` (7): time (squashed by a day), queue length, running count, fraction of jobs done, fraction
    arrived, phase within the current round (0 without rounds), time over the episode's horizon estimate
    ``x / (1 + x)`` with ``x = now / (last arrival + total solo GPU-time / GPUs)`` (0.5 at the horizon: it does
    not saturate within an episode as a fixed scale would on long traces or early on short ones).

Deadline slack: ``0.5 + 0.5 * s / (|s| + 3600)`` with ``s = deadline - now - remaining time`` in seconds
(remaining solo time on the fastest type for pending jobs), 0 without a deadline.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from ..engine import ClusterEngine

PENDING_FEATURES = 12
RUNNING_FEATURES = 16
PAIR_FEATURES = 2
CLUSTER_FEATURES = 4
CLOCK_FEATURES = 7
KEYS = ("pending", "running", "pairs", "cluster", "clock")
_XI_TABLES: dict[tuple, np.ndarray] = {}  # predicted slowdown tables by (catalog, models, GPU types)


def predicted_slowdowns(eng: ClusterEngine) -> np.ndarray:
    """``(models, models, types, 2)`` float64: predicted ``1 - 1/xi`` of model a beside model b on each GPU type
    of the cluster, ``[..., 0]`` for a and ``[..., 1]`` for b, from the catalog's fitted interference predictor
    (the feature formula when it cannot be loaded). Cached per process by models and GPU types (the predictor
    is the package's, whatever the catalog)."""
    key = (tuple(p.name for p in eng.profiles), tuple(eng.type_names))
    tab = _XI_TABLES.get(key)
    if tab is None:
        try:
            from ..catalog.predictor import load_predictor

            pred = load_predictor()
            rows = [[pred.predict_many([(a, b) for b in eng.profiles], t) for a in eng.profiles]
                    for t in eng.type_names]
            xi = np.array(rows, dtype=np.float64).transpose(1, 2, 0, 3)
        except (ImportError, ValueError, OSError):
            from ..interference import FeatureInterference

            f = FeatureInterference()
            xi = np.array([[[f.pair_xi(a, b, t) for t in eng.type_names] for b in eng.profiles]
                           for a in eng.profiles], dtype=np.float64)
        tab = _XI_TABLES[key] = 1.0 - 1.0 / np.maximum(xi, 1.0)
    return tab


class ObservationBuilder:
    """The observation's static per-job tables and its space for one engine. The environment fills its buffer
    each step with the compiled kernel of :mod:`gpucluster_env.env.kernel`, which reads these tables; the tests
    check the kernel against a plain numpy oracle (``tests/env/mask_observation_oracle.py``)."""

    def __init__(self, eng: ClusterEngine, n_pending: int, n_running: int) -> None:
        self.n_pending = n_pending
        self.n_running = n_running
        self.n_types = len(eng.type_names)
        sizes = (n_pending * PENDING_FEATURES, n_running * RUNNING_FEATURES, n_pending * n_running * PAIR_FEATURES,
                 self.n_types * CLUSTER_FEATURES, CLOCK_FEATURES)
        self.ends = tuple(int(x) for x in np.cumsum(sizes))  # ends of the five blocks in the flat layout
        self.bind(eng)

    def bind(self, eng: ClusterEngine) -> None:
        """Attach to a (new) engine of the same scenario."""
        self.eng = eng
        self.model_feat = np.array([p.features for p in eng.profiles], dtype=np.float64).reshape(-1, 3)
        top = eng.speed_mt.max()
        self.best_speed = eng.speed_mt.max(axis=1) / top if top > 0 else np.zeros(len(eng.profiles))
        # speed of each model on each GPU type relative to the fastest pair (the ``sets`` view's job_types)
        self.type_speed = (eng.speed_mt / top if top > 0 else np.zeros_like(eng.speed_mt)).astype(np.float32)
        self.log_g = np.log2(eng.num_gpus + 1.0)
        self.type_total = np.maximum(eng.type_total, 1).astype(np.float64)
        self.type_frac = eng.type_total / eng.num_gpus
        self.inv_type_total = 1.0 / self.type_total
        self.log_held = np.log2(np.arange(eng.num_gpus + 2) + 1.0) / self.log_g
        # Per-job features that never change during an episode.
        mi = eng.job_model
        self.static_pending = np.zeros((eng.n_jobs, PENDING_FEATURES), dtype=np.float32)
        self.static_pending[:, 0] = 1.0
        self.static_pending[:, 1] = np.log2(eng.req_gpus + 1.0) / self.log_g
        self.static_pending[:, 4:7] = self.model_feat[mi]
        self.static_pending[:, 7] = self.best_speed[mi]
        self.static_running = np.zeros((eng.n_jobs, RUNNING_FEATURES), dtype=np.float32)
        self.static_running[:, 0] = 1.0
        self.static_running[:, 9:12] = self.model_feat[mi]
        self.static_running.clip(0.0, 1.0, out=self.static_running)  # as each step's running block is
        self.solo_iter = eng.solo_time / eng.iterations
        self._xi_tab: np.ndarray | None = None  # predicted when first read (a run without observation may never)
        self.inv_types = 1.0 / max(self.n_types - 1, 1)
        self.inv_horizon = 1.0 / max(float(eng.submit.max()) + float((eng.solo_time * eng.req_gpus).sum())
                                     / eng.num_gpus, 1.0)
        # per job: GPU type of its first GPU and nodes it spans, kept by the environment as jobs start
        self.job_type = np.zeros(eng.n_jobs, dtype=np.int64)
        self.job_nodes = np.ones(eng.n_jobs, dtype=np.int64)

    @property
    def xi_tab(self) -> np.ndarray:
        """The predicted slowdown table of the engine's models and GPU types (:func:`predicted_slowdowns`),
        computed on first use: the observation's pairs block, an integer share action and the topology rule
        read it; a white-box agent's run without observation does not."""
        if self._xi_tab is None:
            self._xi_tab = predicted_slowdowns(self.eng)
        return self._xi_tab

    def record_gpus(self, j: int) -> None:
        """Note the GPU type and node count of job ``j``'s GPUs (after it starts or forks)."""
        tn = self.eng.type_and_nodes(j)
        if tn is not None:
            self.job_type[j], self.job_nodes[j] = tn

    def space(self, flat: bool) -> spaces.Space:
        shapes = {
            "pending": (self.n_pending, PENDING_FEATURES),
            "running": (self.n_running, RUNNING_FEATURES),
            "pairs": (self.n_pending, self.n_running, PAIR_FEATURES),
            "cluster": (self.n_types, CLUSTER_FEATURES),
            "clock": (CLOCK_FEATURES,),
        }
        if flat:
            size = sum(int(np.prod(s)) for s in shapes.values())
            return spaces.Box(0.0, 1.0, (size,), np.float32)
        # Each key is one flat vector (rows laid out job after job): SB3's MultiInputPolicy takes 1-D keys.
        return spaces.Dict({k: spaces.Box(0.0, 1.0, (int(np.prod(s)),), np.float32) for k, s in shapes.items()})

    def split(self, flat_obs: np.ndarray) -> dict[str, np.ndarray]:
        """The ``Dict`` observation whose keys are views of the five blocks of one flat array."""
        starts = (0, *self.ends[:-1])
        return {k: flat_obs[a:b] for k, a, b in zip(KEYS, starts, self.ends, strict=True)}
