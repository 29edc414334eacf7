"""The environment's decision point as an object (:class:`DecisionPoint`): the pending and running windows of the
engine's current state, then the action mask and the observation buffer, from the compiled kernel
(:mod:`gpucluster_env.env.kernel`), the fork block and the decision rules (:mod:`gpucluster_env.env.rules`).

It owns its state (the windows, the kernel's bundles, the mask and observation buffers, the fork block's cache)
and computes each at most once per decision point; the environment tells it when a new point begins
(:meth:`DecisionPoint.advance`) and reads the results through its methods. What it reads of the environment is
public: the layout, observation builder, codec, rules and settings of the episode."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # the environment hands itself to its decision point
    from gpucluster_env.engine import ClusterEngine

    from .cluster_env import GPUClusterEnv

NO_XI_TAB = np.zeros((1, 1, 1, 2))
"""The kernel's slowdown-table argument without observation: only the observation's pairs block reads it."""


def shortest_pending(eng: ClusterEngine, n: int) -> np.ndarray:
    """The ``n`` pending jobs with the least estimated remaining work (solo time on the fastest type left),
    least first; ties in queue order."""
    pend = eng.pending_head(eng.num_pending)
    if len(pend) == 0:
        return pend
    left = eng.solo_time[pend] * (eng.remaining[pend] / np.maximum(eng.iterations[pend], 1))
    return pend[np.argsort(left, kind="stable")[:n]]


class DecisionPoint:
    """The windows, mask and observation buffer of the environment ``env``'s current decision point."""

    def __init__(self, env: GPUClusterEnv) -> None:
        self.env = env
        self.count = 0
        """Decision points so far: reset and every step (an action, or the clock's advance) move it."""
        self._pending = np.empty(0, dtype=np.int64)
        self._running = np.empty(0, dtype=np.int64)
        self._windows_at: tuple[int, int] | None = None  # (engine epoch, queue_version) of the windows
        # The compiled kernel (see .kernel) writes the observation buffer and the mask; it (and numba) is
        # loaded on first use: a white-box agent's run without observation sends typed actions and needs no mask.
        self._kernel: Any = None  # .kernel.observe
        self._inputs: Any = None  # the kernel's bundles (Tables, State, Out), built per engine state
        self._inputs_of: tuple[Any, int] = (None, -1)  # the engine and epoch they were read from
        self._mask_at: tuple[int, int] | None = None  # (engine epoch, decision point) the mask buffer holds
        L = env.layout
        self.buf = np.zeros(env.obs_builder.ends[-1], dtype=np.float32)
        """The observation buffer the kernel writes (the flat observation of the last :meth:`observe`)."""
        self.mask_buf = np.zeros(L.size, dtype=bool)
        """The action mask the kernel writes (read it through :meth:`mask`, which brings it up to date)."""
        self.mask_buf[0] = True
        self._placeable = np.zeros(L.n_pending, dtype=bool)
        self._fork_on = "fork" in env.allowed and env.scenario.config.round_s is not None
        self._fork_key: tuple[int, int, int] | None = None  # (epoch, queue_version, gpu_version) of the fork block
        self._fork_cache = np.zeros(L.size - L.fork_off, dtype=bool)  # the fork block before the rules

    @property
    def forks(self) -> bool:
        """Whether the fork block of the mask is live (``fork`` allowed on a round-based scenario)."""
        return self._fork_on

    def advance(self) -> None:
        """A new decision point begins (reset, or a step's action or clock advance)."""
        self.count += 1

    def new_episode(self) -> None:
        """Forget what depended on the last episode's engine (the fork block's cache key)."""
        self._fork_key = None

    def windows(self) -> tuple[np.ndarray, np.ndarray]:
        """The pending and running windows (jobs by slot) of the engine's current state, worked out when first
        read at a state."""
        env, eng = self.env, self.env.engine
        if self._windows_at != (eng.epoch, eng.queue_version):  # else the same jobs, in the same order
            self._pending = (eng.pending_head(env.layout.n_pending) if env.pending_order == "queue"
                             else shortest_pending(eng, env.layout.n_pending))
            self._running = eng.running_head(env.layout.n_running)
            self._windows_at = (eng.epoch, eng.queue_version)
        return self._pending, self._running

    def mask(self) -> np.ndarray:
        """The action mask of the current decision point (the buffer itself), computed at most once there."""
        if self._mask_at != (self.env.engine.epoch, self.count):
            self.run_kernel(False)
        return self.mask_buf

    def observe(self) -> np.ndarray:
        """The flat observation of the current decision point (the buffer itself), the mask computed with it."""
        self.run_kernel(True)
        return self.buf

    def run_kernel(self, obs: bool) -> None:
        """Mask and (if ``obs``) observation buffer of the current decision point, from the engine: the compiled
        kernel (:mod:`.kernel`, loaded on first use), then the fork block and the decision rules."""
        env, eng = self.env, self.env.engine
        pending, running = self.windows()
        if self._inputs_of[0] is not eng or self._inputs_of[1] != eng.epoch:  # new arrays (new engine or reset)
            from gpucluster_env.env import kernel, kernel_inputs  # numba: loaded on first use

            self._kernel = kernel.observe
            xi_tab = env.obs_builder.xi_tab if env.observation_mode != "none" else NO_XI_TAB
            self._inputs = kernel_inputs.kernel_inputs(eng, env.obs_builder, env.layout, env.allowed,
                                                       env.codec.footprints(eng), xi_tab, self.buf,
                                                       self.mask_buf, self._placeable)
            self._inputs_of = (eng, eng.epoch)
        tables, state, out = self._inputs
        self._kernel(tables, state, out, pending, running, eng.now, eng.num_pending,
                     eng.num_running, eng.n_done, eng.next_arrival, obs)
        L, m = env.layout, self.mask_buf
        if self._fork_on:
            key = (eng.epoch, eng.queue_version, eng.gpu_version)
            if key != self._fork_key:  # the fork block depends on the running window and the free GPUs
                m[L.fork_off:] = False
                env.codec.fork_block(m, eng, running, env.allowed)
                self._fork_cache[:] = m[L.fork_off:]
                self._fork_key = key
            else:
                m[L.fork_off:] = self._fork_cache
        env.rules.restrict(m, L, pending, running, eng.now)
        if eng.config.topology_rule:
            env.codec.restrict_topology(m, eng, pending, running, env.obs_builder.xi_tab)
        self._mask_at = (eng.epoch, self.count)

    def __getstate__(self) -> dict[str, Any]:
        """For pickle and deepcopy: the kernel's bundles are numba structs, rebuilt from the engine on first use."""
        state = self.__dict__.copy()
        state["_inputs"], state["_inputs_of"] = None, (None, -1)
        return state
