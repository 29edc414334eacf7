"""The per-step observation and action mask, compiled with numba.

One call computes, from the engine's arrays, everything the environment hands the agent after a step: the four
observation blocks (:mod:`gpucluster_env.env.observation` documents every feature) into one float32 buffer, and
the ``place``, ``share`` or ``colocate``, ``squeeze``, ``swell`` and ``preempt`` blocks of the action mask
(:mod:`gpucluster_env.env.codec` documents the layout). The ``fork`` block, which needs the engine's placement
rule, and the decision rules of :mod:`gpucluster_env.env.rules` are left to the caller.

Its inputs come in three named bundles (:mod:`gpucluster_env.env.kernel_inputs`): the episode's fixed tables,
the engine's state arrays and the outputs. A call is ``observe(tables, state, out, pending, running, now,
num_pending, num_running, n_done, next_arrival, write_obs)``: the bundles, the two windows and the engine's
counters at this decision point. Each block of the mask and of the observation is one compiled function.

Every value is computed from scratch each call, then rounded to float32 and clipped; the tests compare every
bit of it, at every step of random episodes, with a plain numpy oracle that does the same float64 operations
(``tests/env/mask_observation_oracle.py``, a test helper: the package itself has this one implementation).

This module imports numba, so the environment imports it only when it is built (``import gpucluster_env`` stays
light). Compiled code is cached on disk next to this file where that is writable.
"""

from __future__ import annotations

import numba
import numpy as np

from gpucluster_env.engine.state import SHARE_MIN_UNITS
from gpucluster_env.env.kernel_inputs import (
    L_ALLOW_COLOC,
    L_ALLOW_PLACE,
    L_ALLOW_SQUEEZE,
    L_COLOC,
    L_COMPACT,
    L_K,
    L_M,
    L_N,
    L_PLACE,
    L_PW,
    L_SHARE,
    L_SQUEEZE,
    L_T,
)
from gpucluster_env.env.observation import CLUSTER_FEATURES, PAIR_FEATURES, PENDING_FEATURES, RUNNING_FEATURES
from gpucluster_env.performance import fits_memory

_JIT = {"cache": True, "error_model": "numpy", "boundscheck": False}

_fits_memory = numba.njit(cache=True, error_model="numpy", inline="always")(fits_memory)
"""The memory test, :func:`gpucluster_env.performance.fits_memory` itself, compiled."""


@numba.njit(**_JIT)
def _clip01(x: np.float32) -> np.float32:
    # as numpy's clip of a float32 to [0, 1]: NaN and -0.0 stay as they are
    if x < 0:
        return np.float32(0.0)
    if x > 1:
        return np.float32(1.0)
    return x


@numba.njit(**_JIT)
def observe(tables, state, out, pending, running, now, num_pending, num_running, n_done, next_arrival,
            write_obs):  # pragma: no cover - compiled; its twin in numpy is tested against it
    """Write the mask blocks into ``out.mask`` and ``out.placeable`` and, when ``write_obs``, the observation
    into ``out.buf``, for the windows ``pending`` and ``running`` (job ids) at time ``now`` with the engine's
    counters ``num_pending``, ``num_running``, ``n_done`` and ``next_arrival``."""
    _mask_place(tables, state, out, pending)
    if tables.layout[L_COMPACT]:
        _mask_share(tables, state, out, pending)
    else:
        _mask_colocate(tables, state, out, pending, running)
    _mask_running(tables, state, out, running)
    if not write_obs:
        return
    _obs_pending(tables, state, out, pending, now)
    _obs_running(tables, state, out, running, now)
    _obs_pairs(tables, state, out, pending, running)
    _obs_cluster_clock(tables, state, out, now, num_pending, num_running, n_done, next_arrival)


@numba.njit(**_JIT)
def _mask_place(tb, st, out, pending):  # pragma: no cover - compiled
    """The ``place`` block and ``out.placeable``: free GPUs of a type the job fits, enough of them."""
    layout, mask, placeable = tb.layout, out.mask, out.placeable
    N, T, W, off = layout[L_N], layout[L_T], layout[L_PW], layout[L_PLACE]
    req_gpus, fits_type, type_total, busy_t = tb.req_gpus, tb.fits_type, tb.type_total, st.busy_t
    for i in range(N * W):
        mask[off + i] = False
    for i in range(N):
        placeable[i] = False
    if not layout[L_ALLOW_PLACE]:
        return
    for i in range(pending.shape[0]):
        j = pending[i]
        need = req_gpus[j]
        row = off + i * W
        if T == 1:
            ok = fits_type[j, 0] and type_total[0] - busy_t[0] >= need
            mask[row] = ok
            if W == 2:
                mask[row + 1] = ok
            placeable[i] = ok
        else:
            total = 0
            for t in range(T):
                free = type_total[t] - busy_t[t]
                if fits_type[j, t]:
                    total += free
                    mask[row + t] = free >= need
            mask[row + T] = total >= need
            placeable[i] = total >= need


@numba.njit(**_JIT)
def _mask_share(tb, st, out, pending):  # pragma: no cover - compiled
    """The compact layout's ``share`` block: shared GPUs job j fits beside, with free GPUs of types it fits."""
    layout, mask = tb.layout, out.mask
    off = layout[L_SHARE]
    for i in range(layout[L_N]):
        mask[off + i] = False
    if not layout[L_ALLOW_COLOC]:
        return
    slot_job, gpu_type, type_mem, fits_type = st.slot_job, tb.gpu_type, tb.type_mem, tb.fits_type
    footprints, footprint = tb.footprints, st.footprint
    for i in range(pending.shape[0]):
        j = pending[i]
        fp = footprints[j, 0]
        n_ok = 0
        n_free = 0
        for g in range(slot_job.shape[0]):
            a = slot_job[g, 0]
            t = gpu_type[g]
            if a < 0:
                if fits_type[j, t]:
                    n_free += 1
            elif slot_job[g, 1] < 0 and _fits_memory(fp, type_mem[t] - footprint[a]):
                n_ok += 1
        mask[off + i] = n_ok >= 1 and n_ok + n_free >= tb.req_gpus[j]


@numba.njit(**_JIT)
def _mask_colocate(tb, st, out, pending, running):  # pragma: no cover - compiled
    """The full layout's ``colocate`` block: job i beside running job r at each accumulation."""
    layout, mask = tb.layout, out.mask
    M, K, off = layout[L_M], layout[L_K], layout[L_COLOC]
    for i in range(layout[L_N] * M * K):
        mask[off + i] = False
    if not layout[L_ALLOW_COLOC]:
        return
    for r in range(running.shape[0]):
        p = running[r]
        single = st.held[p] - st.held_shared[p]
        room = st.job_min_mem[p] - st.footprint[p]
        for i in range(pending.shape[0]):
            j = pending[i]
            if tb.req_gpus[j] <= single:
                base = off + (i * M + r) * K
                for k in range(K):
                    mask[base + k] = _fits_memory(tb.footprints[j, k], room)


@numba.njit(**_JIT)
def _mask_running(tb, st, out, running):  # pragma: no cover - compiled
    """The ``squeeze``, ``swell`` and ``preempt`` blocks."""
    layout, mask = tb.layout, out.mask
    n_r = running.shape[0]
    for kind in range(3):
        off = layout[L_SQUEEZE + kind]
        allowed = layout[L_ALLOW_SQUEEZE + kind]
        for r in range(layout[L_M]):
            v = False
            if allowed and r < n_r:
                j = running[r]
                if kind == 0:
                    v = st.share_hi[j] > SHARE_MIN_UNITS
                elif kind == 1:
                    v = st.share_lo[j] < tb.share_units
                else:
                    v = True
            mask[off + r] = v


@numba.njit(**_JIT)
def _obs_pending(tb, st, out, pending, now):  # pragma: no cover - compiled
    """The observation's pending block."""
    buf, static_pending = out.buf, tb.static_pending
    for i in range(tb.layout[L_N]):
        base = i * PENDING_FEATURES
        if i < pending.shape[0]:
            j = pending[i]
            for c in range(PENDING_FEATURES):
                buf[base + c] = static_pending[j, c]
            waited = now - tb.submit[j]
            work = st.remaining[j] * tb.solo_iter[j]
            buf[base + 2] = np.float32(waited / (waited + 3600.0))
            buf[base + 3] = np.float32(work / (work + 3600.0))
            buf[base + 8] = np.float32(1.0) if out.placeable[i] else np.float32(0.0)
            buf[base + 9] = np.float32(1.0) if st.n_preempt[j] > 0 else np.float32(0.0)
            dl = tb.deadline[j]
            if dl == dl:
                sl = dl - now - work
                buf[base + 10] = np.float32(1.0)
                buf[base + 11] = np.float32(0.5 + 0.5 * sl / (abs(sl) + 3600.0))
            else:
                buf[base + 10] = np.float32(0.0)
                buf[base + 11] = np.float32(0.0)
        else:
            for c in range(PENDING_FEATURES):
                buf[base + c] = 0.0


@numba.njit(**_JIT)
def _obs_running(tb, st, out, running, now):  # pragma: no cover - compiled
    """The observation's running block."""
    buf, static_running, log_held = out.buf, tb.static_running, tb.log_held
    start = tb.layout[L_N] * PENDING_FEATURES
    for r in range(tb.layout[L_M]):
        base = start + r * RUNNING_FEATURES
        if r >= running.shape[0]:
            for c in range(RUNNING_FEATURES):
                buf[base + c] = 0.0
            continue
        j = running[r]
        rt = st.rate[j]  # > 0 for every running job
        elapsed = now - max(st.last_t[j], st.active_from[j])
        rem = st.remaining[j] - rt * max(elapsed, 0.0)
        h = st.held[j]
        t_left = rem / rt
        buf[base] = static_running[j, 0]
        buf[base + 1] = _clip01(np.float32(log_held[h]))
        buf[base + 2] = _clip01(np.float32((st.share_lo[j] + st.share_hi[j]) * tb.share_half_step))
        buf[base + 3] = _clip01(np.float32(1.0 - rt / st.solo_rate[j]))
        buf[base + 4] = _clip01(np.float32(1.0 - rem / tb.iterations[j]))
        buf[base + 5] = _clip01(np.float32(t_left / (t_left + 3600.0)))
        v6 = np.float32(st.held_shared[j] / h)
        buf[base + 6] = _clip01(v6)
        buf[base + 7] = _clip01(np.float32(min(h // tb.req_gpus[j] - 1, 7) / 7.0))
        buf[base + 8] = _clip01(np.float32(1.0) - v6)
        for c in range(9, 12):
            buf[base + c] = static_running[j, c]
        buf[base + 12] = _clip01(np.float32(st.job_type[j] * tb.inv_types))
        buf[base + 13] = _clip01(np.float32(log_held[st.job_nodes[j]]))
        buf[base + 14] = _clip01(np.float32(1.0 - 1.0 / st.accum[j]))
        dl = tb.deadline[j]
        if dl == dl:
            sl = dl - now - t_left
            buf[base + 15] = _clip01(np.float32(0.5 + 0.5 * sl / (abs(sl) + 3600.0)))
        else:
            buf[base + 15] = np.float32(0.0)


@numba.njit(**_JIT)
def _obs_pairs(tb, st, out, pending, running):  # pragma: no cover - compiled
    """The pairs block: predicted slowdowns of pending slot i and running slot r on r's GPU type."""
    buf, xi_tab, job_model = out.buf, tb.xi_tab, tb.job_model
    N, M = tb.layout[L_N], tb.layout[L_M]
    start = N * PENDING_FEATURES + M * RUNNING_FEATURES
    for i in range(N):
        for r in range(M):
            b = start + (i * M + r) * PAIR_FEATURES
            if i < pending.shape[0] and r < running.shape[0]:
                p = running[r]
                ma, mb, t = job_model[pending[i]], job_model[p], st.job_type[p]
                for c in range(PAIR_FEATURES):
                    buf[b + c] = np.float32(xi_tab[ma, mb, t, c])
            else:
                for c in range(PAIR_FEATURES):
                    buf[b + c] = 0.0


@numba.njit(**_JIT)
def _obs_cluster_clock(tb, st, out, now, num_pending, num_running, n_done,
                       next_arrival):  # pragma: no cover - compiled
    """The cluster block (per type: free, holding one job, holding two, over the type's GPUs; its share of all
    GPUs) and the clock block."""
    buf, layout = out.buf, tb.layout
    N, M, T = layout[L_N], layout[L_M], layout[L_T]
    base = N * PENDING_FEATURES + M * RUNNING_FEATURES + N * M * PAIR_FEATURES
    for t in range(T):
        b = base + t * CLUSTER_FEATURES
        buf[b] = np.float32((tb.type_total[t] - st.busy_t[t]) * tb.inv_type_total[t])
        buf[b + 1] = np.float32((st.busy_t[t] - st.shared_t[t]) * tb.inv_type_total[t])
        buf[b + 2] = np.float32(st.shared_t[t] * tb.inv_type_total[t])
        buf[b + 3] = np.float32(tb.type_frac[t])
    b = base + T * CLUSTER_FEATURES
    n_jobs = tb.submit.shape[0]
    round_s, inv_horizon = tb.round_s, tb.inv_horizon
    buf[b] = np.float32(now / (now + 86400.0))
    buf[b + 1] = np.float32(num_pending / (num_pending + N))
    buf[b + 2] = np.float32(num_running / (num_running + M))
    buf[b + 3] = np.float32(n_done / n_jobs)
    buf[b + 4] = np.float32(next_arrival / n_jobs)
    buf[b + 5] = np.float32((now % round_s) / round_s) if round_s > 0 else np.float32(0.0)
    buf[b + 6] = np.float32(now * inv_horizon / (1.0 + now * inv_horizon))
