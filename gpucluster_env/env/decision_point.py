"""What the environment computes at each decision point: the pending and running windows, then the action mask
and the observation buffer, from the compiled kernel (:mod:`gpucluster_env.env.kernel`), the fork block and the
decision rules (:mod:`gpucluster_env.env.rules`). The buffers live on the environment and are filled in place."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the environment calls these functions with itself
    from .cluster_env import GPUClusterEnv

NO_XI_TAB = np.zeros((1, 1, 1, 2))
"""The kernel's slowdown-table argument without observation: only the observation's pairs block reads it."""


def init_buffers(env: GPUClusterEnv, n_pending: int) -> None:
    """The windows, the kernel's state and the mask and observation buffers of a new environment."""
    env._pending_w = np.empty(0, dtype=np.int64)  # the windows (read through env._pending, env._running)
    env._running_w = np.empty(0, dtype=np.int64)
    env._windows_at = None  # (engine epoch, queue_version) of the windows
    # The compiled kernel (see .kernel) writes the observation buffer and the mask; it (and numba) is
    # loaded on first use: a white-box agent's run without observation sends typed actions and needs no mask.
    env._kernel = None  # the compiled kernel (.kernel.observe)
    env._inputs = None  # the kernel's bundles (Tables, State, Out), built per engine state
    env._inputs_of = (None, -1)  # the engine and epoch they were read from
    env._point = 0  # decision points so far: reset and every step (an action, or the clock's advance) move it
    env._mask_at = None  # (engine epoch, decision point) the mask buffer holds
    L = env.layout
    env._buf = np.zeros(env.obs_builder.ends[-1], dtype=np.float32)
    env._mask_arr = np.zeros(L.size, dtype=bool)
    env._mask_arr[0] = True
    env._placeable = np.zeros(n_pending, dtype=bool)
    env._fork_on = "fork" in env.allowed and env.scenario.config.round_s is not None
    env._fork_key = None  # (epoch, queue_version, gpu_version) of the fork block
    env._fork_cache = np.zeros(L.size - L.fork_off, dtype=bool)  # the fork block before the rules


def shortest_pending(env: GPUClusterEnv, n: int) -> np.ndarray:
    """The ``n`` pending jobs with the least estimated remaining work (solo time on the fastest type left),
    least first; ties in queue order."""
    eng = env.engine
    pend = eng.pending_head(eng.num_pending)
    if len(pend) == 0:
        return pend
    left = eng.solo_time[pend] * (eng.remaining[pend] / np.maximum(eng.iterations[pend], 1))
    return pend[np.argsort(left, kind="stable")[:n]]


def refresh_windows(env: GPUClusterEnv) -> None:
    """The pending and running windows of the engine's current state."""
    eng = env.engine
    if env._windows_at != (eng.epoch, eng.queue_version):  # else the same jobs, in the same order
        env._pending_w = (eng.pending_head(env.layout.n_pending) if env.pending_order == "queue"
                          else shortest_pending(env, env.layout.n_pending))
        env._running_w = eng.running_head(env.layout.n_running)
        env._windows_at = (eng.epoch, eng.queue_version)


def run_kernel(env: GPUClusterEnv, obs: bool) -> None:
    """Mask and (if ``obs``) observation buffer of the current decision point, from the engine: the compiled
    kernel (:mod:`.kernel`, loaded on first use), then the fork block and the decision rules."""
    eng = env.engine
    if env._inputs_of[0] is not eng or env._inputs_of[1] != eng.epoch:  # new arrays (a new engine or reset)
        from gpucluster_env.env import kernel, kernel_inputs  # numba: loaded on first use

        env._kernel = kernel.observe
        xi_tab = env.obs_builder.xi_tab if env.observation_mode != "none" else NO_XI_TAB
        env._inputs = kernel_inputs.kernel_inputs(eng, env.obs_builder, env.layout, env.allowed,
                                                  env.codec._footprints(eng), xi_tab, env._buf,
                                                  env._mask_arr, env._placeable)
        env._inputs_of = (eng, eng.epoch)
    tables, state, out = env._inputs
    env._kernel(tables, state, out, env._pending, env._running, eng.now, eng.num_pending,
                eng.num_running, eng.n_done, eng.next_arrival, obs)
    L = env.layout
    if env._fork_on:
        key = (eng.epoch, eng.queue_version, eng.gpu_version)
        if key != env._fork_key:  # the fork block depends on the running window and the free GPUs
            env._mask_arr[L.fork_off:] = False
            env.codec._fork_block(env._mask_arr, eng, env._running, env.allowed)
            env._fork_cache[:] = env._mask_arr[L.fork_off:]
            env._fork_key = key
        else:
            env._mask_arr[L.fork_off:] = env._fork_cache
    env.rules.restrict(env._mask_arr, L, env._pending, env._running, eng.now)
    if eng.config.topology_rule:
        env.codec.restrict_topology(env._mask_arr, eng, env._pending, env._running, env.obs_builder.xi_tab)
    env._mask_at = (eng.epoch, env._point)
