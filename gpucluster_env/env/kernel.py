"""The per-step observation and action mask, compiled with numba.

One call computes, from the engine's arrays, everything the environment hands the agent after a step: the four
observation blocks (:mod:`gpucluster_env.env.observation` documents every feature) into one float32 buffer, and
the ``place``, ``share`` or ``colocate``, ``squeeze``, ``swell`` and ``preempt`` blocks of the action mask
(:mod:`gpucluster_env.env.codec` documents the layout). The ``fork`` block, which needs the engine's placement
rule, and the decision rules of :mod:`gpucluster_env.env.rules` are left to the caller.

Every value is computed from scratch each step with the same float64 operations as the numpy reference
(:meth:`ObservationBuilder.build <gpucluster_env.env.observation.ObservationBuilder.build>` and
:meth:`ActionCodec.mask <gpucluster_env.env.codec.ActionCodec.mask>`), then rounded to float32 and clipped the
same way, so both give the same bits; the tests compare them at every step of random episodes.

This module imports numba, so the environment imports it only when it is built (``import gpucluster_env`` stays
light). Compiled code is cached on disk next to this file where that is writable.
"""

from __future__ import annotations

import numba
import numpy as np

from ..engine.state import SHARE_MIN_UNITS
from ..performance import fits_memory
from .observation import CLUSTER_FEATURES, PAIR_FEATURES, PENDING_FEATURES, RUNNING_FEATURES

# Fields of the int64 ``layout`` vector passed to the kernel.
(L_N, L_M, L_K, L_T, L_PLACE, L_COLOC, L_SQUEEZE, L_SWELL, L_PREEMPT, L_ALLOW_PLACE, L_ALLOW_COLOC, L_ALLOW_SQUEEZE,
 L_ALLOW_SWELL, L_ALLOW_PREEMPT, L_OBS, L_PW, L_SHARE, L_COMPACT, L_SIZE) = range(19)


def layout_vector(n_pending: int, n_running: int, n_accum: int, n_types: int, offsets: tuple[int, int, int, int, int],
                  allow: frozenset[str], observe: bool, place_width: int, share_off: int, compact: bool
                  ) -> np.ndarray:
    """The kernel's ``layout`` argument: window sizes, mask offsets (place, colocate, squeeze, swell, preempt),
    which action kinds the environment exposes, whether to write the observation buffer, the number of
    place columns per pending slot, the share block's offset and whether the layout is the compact one (a
    share block, no colocate block)."""
    v = np.zeros(L_SIZE, dtype=np.int64)
    v[L_N], v[L_M], v[L_K], v[L_T], v[L_PW] = n_pending, n_running, n_accum, n_types, place_width
    v[L_SHARE], v[L_COMPACT] = share_off, compact
    v[L_PLACE:L_PREEMPT + 1] = offsets
    for i, kind in enumerate(("place", "colocate", "squeeze", "swell", "preempt")):
        v[L_ALLOW_PLACE + i] = kind in allow
    v[L_OBS] = observe
    return v


_fits_memory = numba.njit(cache=True, error_model="numpy", inline="always")(fits_memory)
"""The memory test, :func:`gpucluster_env.performance.fits_memory` itself, compiled."""


@numba.njit(cache=True, error_model="numpy", boundscheck=False)
def _clip01(x: np.float32) -> np.float32:
    # as numpy's clip of a float32 to [0, 1]: NaN and -0.0 stay as they are
    if x < 0:
        return np.float32(0.0)
    if x > 1:
        return np.float32(1.0)
    return x


@numba.njit(cache=True, error_model="numpy", boundscheck=False)
def observe(layout, pending, running, now, round_s, num_pending, num_running, n_done, next_arrival,
            submit, remaining, n_preempt, rate, last_t, active_from, held, held_shared, share_lo, share_hi,
            share_units, share_half_step, solo_rate, iterations, req_gpus, job_min_mem, footprint, type_total,
            busy_t, shared_t, fits_type,
            deadline, accum, job_model, job_type, job_nodes, xi_tab, inv_types, inv_horizon,
            slot_job, gpu_type, type_mem,
            static_pending, static_running, solo_iter, log_held, footprints, inv_type_total, type_frac,
            buf, mask, placeable):  # pragma: no cover - compiled; its twin in numpy is tested against it
    """Write the observation into ``buf`` (when ``layout[L_OBS]``) and the mask blocks into ``mask``; fill
    ``placeable`` (per pending window slot: some free-GPU placement is valid). ``share_units``: the engine's
    share steps in a whole GPU (``share_lo`` / ``share_hi`` count steps, one step the least share);
    ``share_half_step``: half a step as a fraction of the GPU, so ``(lo + hi) * share_half_step`` is the mean
    share in [0, 1] whatever the grid."""
    N, M, K, T, W = layout[L_N], layout[L_M], layout[L_K], layout[L_T], layout[L_PW]
    n_p, n_r = pending.shape[0], running.shape[0]
    n_jobs = submit.shape[0]
    # ---- mask: place
    off = layout[L_PLACE]
    for i in range(N * W):
        mask[off + i] = False
    for i in range(N):
        placeable[i] = False
    if layout[L_ALLOW_PLACE]:
        for i in range(n_p):
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
    # ---- mask: share (compact layout): shared GPUs job j fits beside, with free GPUs of types it fits
    if layout[L_COMPACT]:
        off = layout[L_SHARE]
        for i in range(N):
            mask[off + i] = False
        if layout[L_ALLOW_COLOC]:
            G = slot_job.shape[0]
            for i in range(n_p):
                j = pending[i]
                fp = footprints[j, 0]
                n_ok = 0
                n_free = 0
                for g in range(G):
                    a = slot_job[g, 0]
                    t = gpu_type[g]
                    if a < 0:
                        if fits_type[j, t]:
                            n_free += 1
                    elif slot_job[g, 1] < 0 and _fits_memory(fp, type_mem[t] - footprint[a]):
                        n_ok += 1
                mask[off + i] = n_ok >= 1 and n_ok + n_free >= req_gpus[j]
    # ---- mask: colocate (full layout)
    off = layout[L_COLOC]
    if not layout[L_COMPACT]:
        for i in range(N * M * K):
            mask[off + i] = False
    if layout[L_ALLOW_COLOC] and not layout[L_COMPACT]:
        for r in range(n_r):
            p = running[r]
            single = held[p] - held_shared[p]
            room = job_min_mem[p] - footprint[p]
            for i in range(n_p):
                j = pending[i]
                if req_gpus[j] <= single:
                    base = off + (i * M + r) * K
                    for k in range(K):
                        mask[base + k] = _fits_memory(footprints[j, k], room)
    # ---- mask: squeeze, swell, preempt
    for kind in range(3):
        off = layout[L_SQUEEZE + kind]
        allowed = layout[L_ALLOW_SQUEEZE + kind]
        for r in range(M):
            v = False
            if allowed and r < n_r:
                j = running[r]
                if kind == 0:
                    v = share_hi[j] > SHARE_MIN_UNITS
                elif kind == 1:
                    v = share_lo[j] < share_units
                else:
                    v = True
            mask[off + r] = v
    if not layout[L_OBS]:
        return
    # ---- observation: pending block
    for i in range(N):
        base = i * PENDING_FEATURES
        if i < n_p:
            j = pending[i]
            for c in range(PENDING_FEATURES):
                buf[base + c] = static_pending[j, c]
            waited = now - submit[j]
            work = remaining[j] * solo_iter[j]
            buf[base + 2] = np.float32(waited / (waited + 3600.0))
            buf[base + 3] = np.float32(work / (work + 3600.0))
            buf[base + 8] = np.float32(1.0) if placeable[i] else np.float32(0.0)
            buf[base + 9] = np.float32(1.0) if n_preempt[j] > 0 else np.float32(0.0)
            dl = deadline[j]
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
    # ---- running block
    start = N * PENDING_FEATURES
    for r in range(M):
        base = start + r * RUNNING_FEATURES
        if r < n_r:
            j = running[r]
            rt = rate[j]  # > 0 for every running job
            elapsed = now - max(last_t[j], active_from[j])
            rem = remaining[j] - rt * max(elapsed, 0.0)
            h = held[j]
            sh = held_shared[j]
            t_left = rem / rt
            buf[base] = static_running[j, 0]
            buf[base + 1] = _clip01(np.float32(log_held[h]))
            buf[base + 2] = _clip01(np.float32((share_lo[j] + share_hi[j]) * share_half_step))
            buf[base + 3] = _clip01(np.float32(1.0 - rt / solo_rate[j]))
            buf[base + 4] = _clip01(np.float32(1.0 - rem / iterations[j]))
            buf[base + 5] = _clip01(np.float32(t_left / (t_left + 3600.0)))
            v6 = np.float32(sh / h)
            buf[base + 6] = _clip01(v6)
            buf[base + 7] = _clip01(np.float32(min(h // req_gpus[j] - 1, 7) / 7.0))
            buf[base + 8] = _clip01(np.float32(1.0) - v6)
            for c in range(9, 12):
                buf[base + c] = static_running[j, c]
            buf[base + 12] = _clip01(np.float32(job_type[j] * inv_types))
            buf[base + 13] = _clip01(np.float32(log_held[job_nodes[j]]))
            buf[base + 14] = _clip01(np.float32(1.0 - 1.0 / accum[j]))
            dl = deadline[j]
            if dl == dl:
                sl = dl - now - t_left
                buf[base + 15] = _clip01(np.float32(0.5 + 0.5 * sl / (abs(sl) + 3600.0)))
            else:
                buf[base + 15] = np.float32(0.0)
        else:
            for c in range(RUNNING_FEATURES):
                buf[base + c] = 0.0
    # ---- pairs block: predicted slowdowns of pending slot i and running slot r on r's GPU type
    start = start + M * RUNNING_FEATURES
    for i in range(N):
        for r in range(M):
            b = start + (i * M + r) * PAIR_FEATURES
            if i < n_p and r < n_r:
                p = running[r]
                ma, mb, t = job_model[pending[i]], job_model[p], job_type[p]
                for c in range(PAIR_FEATURES):
                    buf[b + c] = np.float32(xi_tab[ma, mb, t, c])
            else:
                for c in range(PAIR_FEATURES):
                    buf[b + c] = 0.0
    # ---- cluster block: per type free, holding one job, holding two (over the type's GPUs), share of all GPUs
    base = start + N * M * PAIR_FEATURES
    for t in range(T):
        b = base + t * CLUSTER_FEATURES
        buf[b] = np.float32((type_total[t] - busy_t[t]) * inv_type_total[t])
        buf[b + 1] = np.float32((busy_t[t] - shared_t[t]) * inv_type_total[t])
        buf[b + 2] = np.float32(shared_t[t] * inv_type_total[t])
        buf[b + 3] = np.float32(type_frac[t])
    # ---- clock block
    b = base + T * CLUSTER_FEATURES
    buf[b] = np.float32(now / (now + 86400.0))
    buf[b + 1] = np.float32(num_pending / (num_pending + N))
    buf[b + 2] = np.float32(num_running / (num_running + M))
    buf[b + 3] = np.float32(n_done / n_jobs)
    buf[b + 4] = np.float32(next_arrival / n_jobs)
    buf[b + 5] = np.float32((now % round_s) / round_s) if round_s > 0 else np.float32(0.0)
    buf[b + 6] = np.float32(now * inv_horizon / (1.0 + now * inv_horizon))
