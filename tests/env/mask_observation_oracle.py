"""A test oracle: the action mask and the observation computed from scratch with plain numpy, block by block.

The environment computes both with one compiled kernel (``gpucluster_env.env.kernel``), once per decision point;
``tests/env/test_env_kernel.py`` checks, bit for bit, that the kernel equals this second, independent
computation. It lives here, beside the tests, because it is a check and nothing in the package runs it: the
package keeps one implementation (the kernel). It reads the same static tables the kernel does
(:class:`~gpucluster_env.env.observation.ObservationBuilder`) and the same memory test
(:func:`gpucluster_env.performance.fits_memory`)."""

from __future__ import annotations

import numpy as np

from gpucluster_env.engine import ClusterEngine
from gpucluster_env.engine.state import SHARE_MIN_UNITS
from gpucluster_env.env.codec import ActionCodec
from gpucluster_env.env.observation import (
    CLOCK_FEATURES,
    CLUSTER_FEATURES,
    KEYS,
    PAIR_FEATURES,
    PENDING_FEATURES,
    RUNNING_FEATURES,
    ObservationBuilder,
)
from gpucluster_env.performance import fits_memory

HOUR = 3600.0
DAY = 86400.0

RunningInputs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""Per running job of the window: GPUs it holds alone, memory left beside it, whether it can be squeezed,
whether it can be swelled."""


def running_mask_inputs(eng: ClusterEngine, running: np.ndarray) -> RunningInputs:
    """What the mask needs of each running job of the window, read from the engine."""
    return (
        eng.held[running] - eng.held_shared[running],  # GPUs of r holding r alone
        eng.job_min_mem[running] - eng.footprint[running],  # memory left beside r
        eng.share_hi[running] > SHARE_MIN_UNITS,
        eng.share_lo[running] < eng.share_units,
    )


def mask(codec: ActionCodec, eng: ClusterEngine, pending: np.ndarray, running: np.ndarray,
         allow: frozenset[str]) -> np.ndarray:
    """Boolean mask of valid actions (``allow`` names the action kinds the env exposes)."""
    m = np.zeros(codec.layout.size, dtype=bool)
    m[0] = True
    place_block(codec, m, eng, pending, allow)
    inputs = running_mask_inputs(eng, running)
    if codec.layout.compact:
        share_block(codec, m, eng, pending, allow)
    else:
        colocate_block(codec, m, eng, pending, running, allow, inputs)
    running_blocks(codec, m, running, allow, inputs)
    codec.fork_block(m, eng, running, allow)
    return m


# Each block writes its part of a mask whose part is all False on entry.
def place_block(codec: ActionCodec, m: np.ndarray, eng: ClusterEngine, pending: np.ndarray,
                allow: frozenset[str]) -> np.ndarray:
    """The ``place`` actions; returns whether each pending job of the window can be placed now on free GPUs
    (some ``place`` action of its row is valid: then its "any" one is)."""
    L = codec.layout
    n_p = len(pending)
    if not (n_p and "place" in allow):
        return np.zeros(n_p, dtype=bool)
    T = L.n_types
    need = eng.req_gpus[pending]
    free_t = eng.free_by_type()
    block = m[L.place_off:L.place_off + n_p * L.place_width].reshape(n_p, L.place_width)
    if T == 1:  # the type's column and the "any" column are the same (every job asks for a GPU or more)
        ok = eng.fits_type[pending, 0] & (free_t[0] >= need)
        block[:] = ok[:, None]
        return ok
    fits = eng.fits_type[pending]  # (n_p, T)
    np.logical_and(fits, free_t >= need[:, None], out=block[:, :T])
    placeable = fits @ free_t >= need  # free GPUs of the types it fits, together ("any"); integers: no BLAS
    block[:, T] = placeable
    return placeable


def share_block(codec: ActionCodec, m: np.ndarray, eng: ClusterEngine, pending: np.ndarray,
                allow: frozenset[str]) -> None:
    """The compact layout's ``share`` actions."""
    L = codec.layout
    if "colocate" not in allow:
        return
    for i, j in enumerate(pending.tolist()):
        ok, free = codec._share_candidates(eng, j)
        m[L.share_off + i] = len(ok) >= 1 and len(ok) + len(free) >= eng.req_gpus[j]


def colocate_block(codec: ActionCodec, m: np.ndarray, eng: ClusterEngine, pending: np.ndarray,
                   running: np.ndarray, allow: frozenset[str], inputs: RunningInputs) -> None:
    """The full layout's ``colocate`` actions."""
    L = codec.layout
    n_p, n_r = len(pending), len(running)
    if not (n_p and n_r and "colocate" in allow):
        return
    need = eng.req_gpus[pending]
    single, room = inputs[0], inputs[1]
    fp = codec.footprints(eng)[pending]  # (n_p, K), inf where s > batch
    block = m[L.colocate_off:L.squeeze_off].reshape(L.n_pending, L.n_running, L.n_accum)[:n_p, :n_r]
    block[...] = fits_memory(fp[:, None, :], room[None, :, None])
    block &= (single[None, :] >= need[:, None])[:, :, None]


def running_blocks(codec: ActionCodec, m: np.ndarray, running: np.ndarray, allow: frozenset[str],
                   inputs: RunningInputs) -> None:
    """``squeeze``, ``swell`` and ``preempt``."""
    L = codec.layout
    n_r = len(running)
    if not n_r:
        return
    if "squeeze" in allow:
        m[L.squeeze_off:L.squeeze_off + n_r] = inputs[2]
    if "swell" in allow:
        m[L.swell_off:L.swell_off + n_r] = inputs[3]
    if "preempt" in allow:
        m[L.preempt_off:L.preempt_off + n_r] = True


def slack_feature(slack_s: np.ndarray | float) -> np.ndarray | float:
    """Deadline slack in seconds squashed to (0, 1), 0.5 at zero slack."""
    return 0.5 + 0.5 * slack_s / (np.abs(slack_s) + HOUR)


def observation(ob: ObservationBuilder, pending: np.ndarray, running: np.ndarray,
                placeable: np.ndarray) -> dict[str, np.ndarray]:
    """The observation for the engine's current state from scratch, given the windows and which pending jobs
    of the window can be placed now."""
    pend = np.zeros((ob.n_pending, PENDING_FEATURES), dtype=np.float32)
    run = np.zeros((ob.n_running, RUNNING_FEATURES), dtype=np.float32)
    pairs = np.zeros((ob.n_pending, ob.n_running, PAIR_FEATURES), dtype=np.float32)
    if len(pending):
        pend[:len(pending)] = pending_rows(ob, pending, placeable)
    if len(running):
        rows, jt = running_rows(ob, running)
        run[:len(running)] = rows
        if len(pending):
            mp = ob.eng.job_model[pending][:, None]
            mr = ob.eng.job_model[running][None, :]
            pairs[:len(pending), :len(running)] = ob.xi_tab[mp, mr, jt[None, :]]
    return {"pending": pend.ravel(), "running": run.ravel(), "pairs": pairs.ravel(),
            "cluster": cluster_rows(ob).ravel(), "clock": clock_row(ob)}


def pending_rows(ob: ObservationBuilder, j: np.ndarray, placeable: np.ndarray) -> np.ndarray:
    """The pending block's rows of the window's jobs ``j``."""
    eng, now = ob.eng, ob.eng.now
    rows = ob.static_pending[j]
    waited = now - eng.submit[j]
    work = eng.remaining[j] * ob.solo_iter[j]
    rows[:, 2] = waited / (waited + HOUR)
    rows[:, 3] = work / (work + HOUR)
    rows[:, 8] = placeable
    rows[:, 9] = eng.n_preempt[j] > 0
    dl = eng.deadline[j]
    has = dl == dl
    rows[:, 10] = has
    rows[:, 11] = np.where(has, slack_feature(np.where(has, dl, 0.0) - now - work), 0.0)
    return rows


def running_rows(ob: ObservationBuilder, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The running block's rows of the window's jobs ``j``, and the GPU type of each one's first GPU."""
    eng, now = ob.eng, ob.eng.now
    r = ob.static_running[j]
    rate = eng.rate[j]  # > 0 for every running job
    elapsed = now - np.maximum(eng.last_t[j], eng.active_from[j])
    rem = eng.remaining[j] - rate * np.maximum(elapsed, 0.0)
    held = eng.held[j]
    shared = eng.held_shared[j]
    lo, hi = eng.share_lo[j], eng.share_hi[j]
    t_left = rem / rate
    r[:, 1] = ob.log_held[held]
    r[:, 2] = (lo + hi) * (0.5 * eng.share_step)  # the mean share in [0, 1] on any share grid
    r[:, 3] = 1.0 - rate / eng.solo_rate[j]  # 1 - 1/xi
    r[:, 4] = 1.0 - rem / eng.iterations[j]
    r[:, 5] = t_left / (t_left + HOUR)
    r[:, 6] = shared / held
    r[:, 7] = np.minimum(held // eng.req_gpus[j] - 1, 7) / 7.0
    r[:, 8] = 1.0 - r[:, 6]
    gpus = [eng.gpus_of(int(x)) for x in j]  # from the engine, not the env's per-job records
    jt = np.array([eng.gpu_type[g[0]] for g in gpus], dtype=np.int64)
    r[:, 12] = jt * ob.inv_types
    r[:, 13] = ob.log_held[[len(np.unique(eng.gpu_node[g])) for g in gpus]]
    r[:, 14] = 1.0 - 1.0 / eng.accum[j]
    dl = eng.deadline[j]
    has = dl == dl
    r[:, 15] = np.where(has, slack_feature(np.where(has, dl, 0.0) - now - t_left), 0.0)
    r.clip(0.0, 1.0, out=r)  # float rounding at the edges
    return r, jt


def cluster_rows(ob: ObservationBuilder) -> np.ndarray:
    """The cluster block: per GPU type, free, holding one job, holding two, the type's share of all GPUs."""
    eng = ob.eng
    clus = np.zeros((ob.n_types, CLUSTER_FEATURES), dtype=np.float32)
    free = eng.type_total - eng.busy_t
    clus[:, 0] = free * ob.inv_type_total
    clus[:, 1] = (eng.busy_t - eng.shared_t) * ob.inv_type_total
    clus[:, 2] = eng.shared_t * ob.inv_type_total
    clus[:, 3] = ob.type_frac
    return clus


def clock_row(ob: ObservationBuilder) -> np.ndarray:
    """The clock block."""
    eng, now = ob.eng, ob.eng.now
    round_s = eng.config.round_s
    clock = np.array([
        now / (now + DAY),
        eng.num_pending / (eng.num_pending + ob.n_pending),
        eng.num_running / (eng.num_running + ob.n_running),
        eng.n_done / eng.n_jobs,
        eng.next_arrival / eng.n_jobs,
        (now % round_s) / round_s if round_s else 0.0,
        now * ob.inv_horizon / (1.0 + now * ob.inv_horizon),
    ], dtype=np.float32)
    assert len(clock) == CLOCK_FEATURES
    return clock


def flatten(obs: dict[str, np.ndarray]) -> np.ndarray:
    """The ``box`` observation of a ``dict`` one."""
    return np.concatenate([obs[k].ravel() for k in KEYS]).astype(np.float32)
