"""Observations built from engine state: a single-level ``Dict`` of bounded float32 vectors (or one flat ``Box``).

Each key is a 1-D vector; the windows are laid out row-major (all features of the first job, then the next).

Every feature lies in [0, 1]; durations are squashed as ``x / (x + scale)``; padding rows are all zero and
flagged by feature 0 (``valid``).

``pending`` (N x 10), the first N jobs of the queue:
    0 valid, 1 GPUs asked (log-scaled by cluster size), 2 time waited, 3 estimated remaining work (solo time on
    the fastest type), 4-6 model features (compute intensity, memory intensity, communication share),
    7 speed on its best GPU type (relative to the cluster's fastest), 8 can be placed now on free GPUs,
    9 was preempted before.
``running`` (M x 12), the first M running jobs in start order:
    0 valid, 1 GPUs held, 2 MPS share (mean), 3 observed slowdown 1 - 1/xi (0 alone), 4 progress,
    5 remaining time at the current rate, 6 fraction of its GPUs shared, 7 forked copies beyond the first,
    8 fraction of its GPUs that could host a partner, 9-11 model features.
``cluster`` (T x 4), per GPU type: free, holding one job, holding two jobs (each over the type's GPUs), the
    type's share of all GPUs.
``clock`` (6): time (squashed by a day), queue length, running count, fraction of jobs done, fraction
    arrived, phase within the current round (0 without rounds).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from gymnasium import spaces

from ..engine import ClusterEngine
from ..interference import MAX_SHARE, MIN_SHARE, SHARE_STEP

PENDING_FEATURES = 10
RUNNING_FEATURES = 12
CLUSTER_FEATURES = 4
CLOCK_FEATURES = 6
_HOUR = 3600.0
_DAY = 86400.0
_ONE32 = np.float32(1.0)
_MIN_T = round(MIN_SHARE / SHARE_STEP)
_MAX_T = round(MAX_SHARE / SHARE_STEP)
_TINY32 = 2.0**-150  # float32 rounds magnitudes up to this to zero


def _clip_as_float32(v: float) -> float:
    """A float outside [0, 1] (or NaN) that, stored as float32, is what ``clip(float32(v), 0, 1)`` gives:
    NaN stays NaN, a negative tiny enough to round to -0.0 stays -0.0 (clip keeps it), other negatives give
    0.0, values above 1 give 1.0."""
    if v > 1.0:
        return 1.0
    if v < 0.0:
        return -0.0 if v >= -_TINY32 else 0.0
    return v


_SCALAR_ROWS = 4  # changed rows recomputed one by one up to this many, else the whole window at once


class ObservationBuilder:
    """Builds observations for one engine; fixed window sizes."""

    def __init__(self, eng: ClusterEngine, n_pending: int, n_running: int) -> None:
        self.n_pending = n_pending
        self.n_running = n_running
        self.n_types = len(eng.type_names)
        self.bind(eng)

    def bind(self, eng: ClusterEngine) -> None:
        """Attach to a (new) engine of the same scenario."""
        self.eng = eng
        self.model_feat = np.array([p.features for p in eng.profiles], dtype=np.float64).reshape(-1, 3)
        top = eng.speed_mt.max()
        self.best_speed = eng.speed_mt.max(axis=1) / top if top > 0 else np.zeros(len(eng.profiles))
        self.log_g = np.log2(eng.num_gpus + 1.0)
        self.type_total = np.maximum(eng.type_total, 1).astype(np.float64)
        self.type_frac = eng.type_total / eng.num_gpus
        self.inv_type_total = 1.0 / self.type_total
        self._inv_type_total = self.inv_type_total.tolist()
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
        self.solo_iter = eng.solo_time / eng.iterations
        # static per-job values as Python lists, for the one-row path
        self._log_held = self.log_held.tolist()
        self._iterations = eng.iterations.tolist()
        self._req_gpus = eng.req_gpus.tolist()
        # Window rows of each job, kept between steps: a row is valid while the engine's clock and the job's
        # change counter (``eng.version[j]``, bumped with every change of the job's dynamic state) are those
        # it was computed at. Static columns are filled once here.
        self._prow = self.static_pending.copy()
        self._rrow = self.static_running.clip(0.0, 1.0)  # clipped as each step's block is
        self._pkey = np.full(eng.n_jobs, -1, dtype=np.int64)  # per job: version its pending row was computed at
        self._rkey = np.full(eng.n_jobs, -1, dtype=np.int64)  # (-1: not since the clock last moved)
        self._keys_at: tuple[int, float] | None = None  # (engine epoch, time) the keys hold at
        self._pending_at: tuple[int, int, float] | None = None  # (epoch, queue_version, now) pending rows checked at
        self._emit_at: tuple[int, int, int, float] | None = None  # (epoch, queue_version, gpu_version, now) of buf
        # what the action mask needs of each running job, cached with its row: GPUs it holds alone, memory
        # left beside it (+1e-9), whether it can be squeezed / swelled
        J = eng.n_jobs
        self._r_single = np.zeros(J, dtype=np.int64)
        self._r_room = np.zeros(J)
        self._r_squeeze = np.zeros(J, dtype=bool)
        self._r_swell = np.zeros(J, dtype=bool)
        # One float32 buffer holds the four blocks back to back (the "box" layout); emit() writes it in place.
        sizes = (self.n_pending * PENDING_FEATURES, self.n_running * RUNNING_FEATURES,
                 self.n_types * CLUSTER_FEATURES, CLOCK_FEATURES)
        self._ends = tuple(int(x) for x in np.cumsum(sizes))
        self._buf = np.zeros(self._ends[-1], dtype=np.float32)
        self._bind_views()
        self._clus[:, 3] = self.type_frac
        self._rows = [0, 0]  # window rows filled in the buffer (pending, running); rows below them are zero

    _VIEWS = ("_pend", "_run", "_clus", "_clock")

    def _bind_views(self) -> None:
        a, b, c, d = self._ends
        self._pend = self._buf[:a].reshape(self.n_pending, PENDING_FEATURES)
        self._run = self._buf[a:b].reshape(self.n_running, RUNNING_FEATURES)
        self._clus = self._buf[b:c].reshape(self.n_types, CLUSTER_FEATURES)
        self._clock = self._buf[c:d]

    def __getstate__(self) -> dict:
        # views of the buffer would come back from pickling as copies: rebuilt on unpickling
        return {k: v for k, v in self.__dict__.items() if k not in self._VIEWS}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._bind_views()

    def space(self, flat: bool) -> spaces.Space:
        shapes = {
            "pending": (self.n_pending, PENDING_FEATURES),
            "running": (self.n_running, RUNNING_FEATURES),
            "cluster": (self.n_types, CLUSTER_FEATURES),
            "clock": (CLOCK_FEATURES,),
        }
        if flat:
            size = sum(int(np.prod(s)) for s in shapes.values())
            return spaces.Box(0.0, 1.0, (size,), np.float32)
        # Each key is one flat vector (rows laid out job after job): SB3's MultiInputPolicy takes 1-D keys.
        return spaces.Dict({k: spaces.Box(0.0, 1.0, (int(np.prod(s)),), np.float32) for k, s in shapes.items()})

    def build(self, pending: np.ndarray, running: np.ndarray, placeable: np.ndarray) -> dict[str, np.ndarray]:
        """The observation for the current engine state, given the windows and which pending jobs of the window
        can be placed now."""
        self.refresh(pending, running)
        return self.emit(pending, running, placeable, flat=False)

    def refresh(self, pending: np.ndarray, running: np.ndarray) -> None:
        """Bring the cached rows of the window jobs up to date with the engine (only those whose job changed,
        or all of them when the clock moved)."""
        eng = self.eng
        now = eng.now
        if (eng.epoch, now) != self._keys_at:
            self._pkey.fill(-1)
            self._rkey.fill(-1)
            self._keys_at = (eng.epoch, now)
        # a pending job's row changes only with the clock or when it is preempted (the queue changes then)
        pending_at = (eng.epoch, eng.queue_version, now)
        check_pending = pending_at != self._pending_at
        self._pending_at = pending_at
        if check_pending and len(pending):
            self._refresh_window(pending, self._pkey, self._pending_row, self._pending_rows)
        if len(running):
            self._refresh_window(running, self._rkey, self._running_row, self._running_rows)

    def _refresh_window(self, window: np.ndarray, keys: np.ndarray, one: Callable[[int], None],
                        many: Callable[[np.ndarray], None]) -> None:
        versions = self.eng.version[window]
        stale = (versions != keys[window]).nonzero()[0]
        if len(stale) > _SCALAR_ROWS:  # many: one vectorized pass over the window
            many(window)
            keys[window] = versions
        else:
            for i in stale.tolist():
                j = window.item(i)
                one(j)
                keys[j] = versions.item(i)

    def running_mask_inputs(self, running: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For the running window (after :meth:`refresh`): GPUs each job holds alone, memory left beside it
        plus 1e-9, whether it can be squeezed, whether it can be swelled."""
        return self._r_single[running], self._r_room[running], self._r_squeeze[running], self._r_swell[running]

    def _pending_row(self, j: int) -> None:
        """Recompute the dynamic columns of pending job ``j``'s row (the scalar twin of _pending_rows)."""
        eng = self.eng
        waited = eng.now - float(eng.submit[j])
        work = float(eng.remaining[j]) * float(self.solo_iter[j])
        row = self._prow[j]
        row[2] = waited / (waited + _HOUR)
        row[3] = work / (work + _HOUR)
        row[9] = eng.n_preempt[j] > 0

    def _pending_rows(self, j: np.ndarray) -> None:
        eng = self.eng
        waited = eng.now - eng.submit[j]
        work = eng.remaining[j] * self.solo_iter[j]
        rows = self._prow
        rows[j, 2] = waited / (waited + _HOUR)
        rows[j, 3] = work / (work + _HOUR)
        rows[j, 9] = eng.n_preempt[j] > 0

    def _running_row(self, j: int) -> None:
        """Recompute running job ``j``'s row and mask inputs (the scalar twin of _running_rows: the same
        float64 operations, the same float32 rounding, then the same clip)."""
        eng = self.eng
        rate = eng.rate.item(j)  # > 0 for every running job
        elapsed = eng.now - max(eng.last_t.item(j), eng.active_from.item(j))
        rem = eng.remaining.item(j) - rate * max(elapsed, 0.0)
        held = eng.held.item(j)
        shared = eng.held_shared.item(j)
        lo, hi = eng.share_lo.item(j), eng.share_hi.item(j)
        t_left = rem / rate
        row = self._rrow[j]
        values = [self._log_held[held], (lo + hi) * 0.05, 1.0 - rate / eng.solo_rate.item(j),
                  1.0 - rem / self._iterations[j], t_left / (t_left + _HOUR), shared / held,
                  min(held // self._req_gpus[j] - 1, 7) / 7.0]
        for i, v in enumerate(values):
            if not 0.0 <= v <= 1.0:
                values[i] = _clip_as_float32(v)
        row[1:8] = values
        row[8] = _ONE32 - row[6]  # in float32, as the vectorized 1.0 - run[:, 6]; within [0, 1]
        self._r_single[j] = held - shared
        self._r_room[j] = (eng.job_min_mem.item(j) - eng.footprint.item(j)) + 1e-9
        self._r_squeeze[j] = hi > _MIN_T
        self._r_swell[j] = lo < _MAX_T

    def _running_rows(self, j: np.ndarray) -> None:
        eng = self.eng
        r = self.static_running[j]
        rate = eng.rate[j]  # > 0 for every running job
        elapsed = eng.now - np.maximum(eng.last_t[j], eng.active_from[j])
        rem = eng.remaining[j] - rate * np.maximum(elapsed, 0.0)
        held = eng.held[j]
        shared = eng.held_shared[j]
        lo, hi = eng.share_lo[j], eng.share_hi[j]
        t_left = rem / rate
        r[:, 1] = self.log_held[held]
        r[:, 2] = (lo + hi) * 0.05
        r[:, 3] = 1.0 - rate / eng.solo_rate[j]  # 1 - 1/xi
        r[:, 4] = 1.0 - rem / eng.iterations[j]
        r[:, 5] = t_left / (t_left + _HOUR)
        r[:, 6] = shared / held
        r[:, 7] = np.minimum(held // eng.req_gpus[j] - 1, 7) / 7.0
        r[:, 8] = 1.0 - r[:, 6]
        r.clip(0.0, 1.0, out=r)  # float rounding at the edges
        self._rrow[j] = r
        self._r_single[j] = held - shared
        self._r_room[j] = (eng.job_min_mem[j] - eng.footprint[j]) + 1e-9
        self._r_squeeze[j] = hi > _MIN_T
        self._r_swell[j] = lo < _MAX_T

    def emit(self, pending: np.ndarray, running: np.ndarray, placeable: np.ndarray, flat: bool
             ) -> dict[str, np.ndarray] | np.ndarray:
        """The observation from the refreshed rows (see :meth:`refresh`): a ``Dict`` of fresh arrays, or with
        ``flat`` one fresh flat array."""
        eng = self.eng
        now = eng.now
        emit_at = (eng.epoch, eng.queue_version, eng.gpu_version, now)
        if emit_at != self._emit_at:  # else the pending, cluster and clock blocks are those of the last step
            self._emit_at = emit_at
            self._emit_static_blocks(pending, placeable)
        run = self._run
        n = len(running)
        if n:
            run[:n] = self._rrow[running]
        if n < self._rows[1]:
            run[n:self._rows[1]] = 0.0
        self._rows[1] = n
        out = self._buf.copy()
        if flat:
            return out
        a, b, c, _ = self._ends
        return {"pending": out[:a], "running": out[a:b], "cluster": out[b:c], "clock": out[c:]}

    def _emit_static_blocks(self, pending: np.ndarray, placeable: np.ndarray) -> None:
        """The pending, cluster and clock blocks: they change only with the clock, the queue or the GPUs."""
        eng = self.eng
        now = eng.now
        pend = self._pend
        n = len(pending)
        if n:
            pend[:n] = self._prow[pending]
            pend[:n, 8] = placeable
        if n < self._rows[0]:
            pend[n:self._rows[0]] = 0.0
        self._rows[0] = n
        # per type: free, holding one job, holding two (over the type's GPUs), as float64 products of ints
        total, busy, shared = eng.type_total.tolist(), eng.busy_t.tolist(), eng.shared_t.tolist()
        self._clus[:, :3] = [((a - b) * inv, (b - c) * inv, c * inv)
                             for a, b, c, inv in zip(total, busy, shared, self._inv_type_total, strict=True)]
        round_s = eng.config.round_s
        self._clock[:] = (
            now / (now + _DAY),
            eng.num_pending / (eng.num_pending + self.n_pending),
            eng.num_running / (eng.num_running + self.n_running),
            eng.n_done / eng.n_jobs,
            eng._next_arrival / eng.n_jobs,
            (now % round_s) / round_s if round_s else 0.0,
        )

    @staticmethod
    def flatten(obs: dict[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([obs["pending"].ravel(), obs["running"].ravel(), obs["cluster"].ravel(),
                               obs["clock"]]).astype(np.float32)
