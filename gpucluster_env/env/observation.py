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


_SCALAR_ROWS = 8  # changed rows recomputed one by one up to this many, else the whole window at once


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
        self._now, self._epoch = -1.0, -1  # engine time and epoch the keys hold at
        self._rpos: dict[int, int] = {}  # running job -> its position in the window, as of the last sync
        self._emit_at: tuple[int, int, int, float] | None = None  # (epoch, queue_version, gpu_version, now) of buf
        # what the action mask needs of each running job, cached with its row: GPUs it holds alone, memory
        # left beside it (+1e-9), whether it can be squeezed / swelled
        # (columns of one float array, see codec.RunningInputs; a fifth column of ones: it can be preempted)
        self._rin = np.zeros((eng.n_jobs, 5))
        self._rin[:, 4] = 1.0
        self._one_minus_f32: dict[int, float] = {}  # 1 - float32(shared / held) in float32, by shared * 65536 + held
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
        self.sync(pending, running, True)
        return self.emit(pending, placeable, flat=False)

    def sync(self, pending: np.ndarray, running: np.ndarray, windows_changed: bool) -> list[int] | None:
        """Bring the cached rows of the window jobs, and the running block of the observation, up to date with
        the engine. When the clock and the windows are those of the last call (``windows_changed`` False), only
        the rows of the jobs the engine marked as changed (``eng.touched``, which the caller empties) are
        recomputed, and their window positions are returned; otherwise every row whose job changed is, and
        None is returned (the whole running block was rewritten)."""
        eng = self.eng
        now = eng.now
        clock_moved = now != self._now or eng.epoch != self._epoch
        if clock_moved or windows_changed:
            if clock_moved:
                self._pkey.fill(-1)
                self._rkey.fill(-1)
                self._now, self._epoch = now, eng.epoch
            # a pending job's row changes only with the clock or when it is preempted (the queue changes then)
            if len(pending):
                self._refresh_window(pending, self._pkey, self._pending_row, self._pending_rows)
            n = len(running)
            run = self._run
            if n:
                self._refresh_window(running, self._rkey, self._running_row, self._running_rows)
                self._rrow.take(running, 0, out=run[:n])
            if n < self._rows[1]:
                run[n:self._rows[1]] = 0.0
            self._rows[1] = n
            self._rpos = {j: i for i, j in enumerate(running.tolist())}
            return None
        pos: list[int] = []
        if eng.touched:
            rpos, version, rkey, run, rrow = self._rpos, eng.version, self._rkey, self._run, self._rrow
            for j in eng.touched:
                i = rpos.get(j)
                if i is not None:
                    v = version.item(j)
                    if v != rkey.item(j):
                        self._running_row(j)
                        rkey[j] = v
                        run[i] = rrow[j]
                        pos.append(i)
        return pos

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

    def running_mask_inputs(self, running: np.ndarray) -> np.ndarray:
        """For the running window (after :meth:`refresh`), one row per job: GPUs it holds alone, memory left
        beside it plus 1e-9, whether it can be squeezed (1.0) and whether it can be swelled."""
        return self._rin.take(running, 0)

    def _pending_row(self, j: int) -> None:
        """Recompute the dynamic columns of pending job ``j``'s row (the scalar twin of _pending_rows)."""
        eng = self.eng
        waited = eng.now - eng.submit.item(j)
        work = eng.remaining.item(j) * self.solo_iter.item(j)
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
        v6 = shared / held
        v2, v3 = 1.0 - rate / eng.solo_rate.item(j), 1.0 - rem / self._iterations[j]
        v4 = t_left / (t_left + _HOUR)
        values = [self._log_held[held], (lo + hi) * 0.05, v2, v3, v4, v6, min(held // self._req_gpus[j] - 1, 7) / 7.0]
        # the others lie in [0, 1] by construction (held <= GPUs of the cluster, req_gpus <= held, shares <= 10)
        if not (0.0 <= v2 <= 1.0 and 0.0 <= v3 <= 1.0 and 0.0 <= v4 <= 1.0):
            for i, v in enumerate(values):
                if not 0.0 <= v <= 1.0:
                    values[i] = _clip_as_float32(v)
        # column 8 is 1 - column 6 in float32, as the vectorized 1.0 - run[:, 6]
        key = shared * 65536 + held
        c8 = self._one_minus_f32.get(key)
        if c8 is None:
            c8 = self._one_minus_f32[key] = float(_ONE32 - np.float32(v6))
        values.append(c8)
        self._rrow[j, 1:9] = values
        rin = self._rin
        rin[j, 0] = held - shared
        rin[j, 1] = (eng.job_min_mem.item(j) - eng.footprint.item(j)) + 1e-9
        rin[j, 2] = hi > _MIN_T
        rin[j, 3] = lo < _MAX_T

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
        rin = self._rin
        rin[j, 0] = held - shared
        rin[j, 1] = (eng.job_min_mem[j] - eng.footprint[j]) + 1e-9
        rin[j, 2] = hi > _MIN_T
        rin[j, 3] = lo < _MAX_T

    def emit(self, pending: np.ndarray, placeable: np.ndarray, flat: bool) -> dict[str, np.ndarray] | np.ndarray:
        """The observation from the rows brought up to date by :meth:`sync`: a ``Dict`` of fresh arrays, or with
        ``flat`` one fresh flat array."""
        eng = self.eng
        emit_at = (eng.epoch, eng.queue_version, eng.gpu_version, eng.now)
        if emit_at != self._emit_at:  # else the pending, cluster and clock blocks are those of the last step
            self._emit_at = emit_at
            self._emit_static_blocks(pending, placeable)
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
            self._prow.take(pending, 0, out=pend[:n])
            pend[:n, 8] = placeable
        if n < self._rows[0]:
            pend[n:self._rows[0]] = 0.0
        self._rows[0] = n
        # per type: free, holding one job, holding two (over the type's GPUs), as float64 products of ints,
        # written one element at a time (each rounded to float32 as an array assignment would)
        buf = self._buf
        k = self._ends[1]
        total, busy_t, shared_t = eng.type_total, eng.busy_t, eng.shared_t
        for t, inv in enumerate(self._inv_type_total):
            a, b, c = total.item(t), busy_t.item(t), shared_t.item(t)
            buf[k] = (a - b) * inv
            buf[k + 1] = (b - c) * inv
            buf[k + 2] = c * inv
            k += CLUSTER_FEATURES
        k = self._ends[2]
        n_p, n_r = eng.num_pending, eng.num_running
        round_s = eng.config.round_s
        buf[k] = now / (now + _DAY)
        buf[k + 1] = n_p / (n_p + self.n_pending)
        buf[k + 2] = n_r / (n_r + self.n_running)
        buf[k + 3] = eng.n_done / eng.n_jobs
        buf[k + 4] = eng._next_arrival / eng.n_jobs
        buf[k + 5] = (now % round_s) / round_s if round_s else 0.0

    @staticmethod
    def flatten(obs: dict[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([obs["pending"].ravel(), obs["running"].ravel(), obs["cluster"].ravel(),
                               obs["clock"]]).astype(np.float32)
