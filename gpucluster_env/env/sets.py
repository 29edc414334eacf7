"""The cluster-independent view (``GPUClusterEnv(observation="sets")``): an observation and an action space whose
shapes do not depend on the number of GPU types, so one model acts on every scenario and on a user's cluster.

The default observation's ``cluster`` block has one row per GPU type and the compact action space has
``T + 1`` place columns per pending slot (1 on a one-type cluster), so both grow with ``T``. This view pads the
per-type parts to :data:`MAX_TYPES` rows with a presence flag and masks the columns of absent types:

``pending`` (N x 12), ``running`` (M x 16), ``pairs`` (N x M x 2), ``clock`` (7): as the default observation
    (:mod:`gpucluster_env.env.observation`).
``types`` (K x 5), K = :data:`MAX_TYPES`, one row per GPU type of the cluster, in the cluster's order, zero rows
    after them: the four ``cluster`` features (free, holding one job, holding two jobs, share of all GPUs) and
    1 for a present type.
``job_types`` (N x K x 2), pending slot i on GPU type t: the speed of its model on t relative to the cluster's
    fastest (type, model) pair, and 1 when ``place(i, t)`` is allowed now (0 for empty slots and absent types).
``hint`` (A, only with ``hint="srsf"``): 1 at the int action (below) a base heuristic takes now, 0 elsewhere
    (:mod:`.hints`); absent by default.

Actions (``Discrete(1 + N (K + 1) + N + 4 M)``)::

    0                     wait
    place(i, t)  N x K    pending slot i on GPU type t (t < T; the columns t >= T, and all of them on a one-type
                          cluster where the place rule has no type to choose, are always masked)
    place(i, any) N       pending slot i by the engine's placement rule (any type)
    share(i)     N        as the compact layout's
    squeeze(r), swell(r), preempt(r), fork(r)   4 x M

Every int maps to one action of the compact layout (or none: masked), so the decision process, the masks and
the rules are the default env's, and an episode played in either view with the same decisions is the same.
A network over this view can still be tied to the slot counts; :mod:`gpucluster_env.agents.sets_policy` scores
elements with shared weights, so it is not tied to their order either.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from .codec import ActionLayout

MAX_TYPES = 8
"""GPU types the view has rows for (registered scenarios have at most 5: hadare-testbed)."""
TYPE_FEATURES = 5
JOB_TYPE_FEATURES = 2


class SetsView:
    """Maps the compact layout of one cluster (``T`` GPU types) to the padded, type-count-free view."""

    def __init__(self, layout: ActionLayout, n_types: int, hint: str | None = None) -> None:
        if not layout.compact:
            raise ValueError("observation='sets' needs action_layout='compact'")
        if n_types > MAX_TYPES:
            raise ValueError(f"observation='sets' supports clusters of up to {MAX_TYPES} GPU types; this one has "
                             f"{n_types}")
        self.layout = layout
        self.n_types = n_types
        N, M, K = layout.n_pending, layout.n_running, MAX_TYPES
        self.place_width = K + 1
        self.share_off = 1 + N * self.place_width
        self.running_off = self.share_off + N
        self.size = self.running_off + 4 * M
        to_layout = np.full(self.size, -1, dtype=np.int64)
        to_layout[0] = 0
        W = layout.place_width
        for i in range(N):
            base = 1 + i * self.place_width
            if W > 1:
                to_layout[base:base + n_types] = layout.place_off + i * W + np.arange(n_types)
            to_layout[base + K] = layout.place_off + i * W + W - 1  # "any" (the only column on one type)
        to_layout[self.share_off:self.running_off] = layout.share_off + np.arange(N)
        to_layout[self.running_off:] = layout.squeeze_off + np.arange(4 * M)  # squeeze, swell, preempt, fork
        self.to_layout = to_layout
        self.from_layout = np.full(layout.size, -1, dtype=np.int64)
        valid = np.flatnonzero(to_layout >= 0)
        self.from_layout[to_layout[valid]] = valid
        self.present = (np.arange(K) < n_types).astype(np.float32)
        self.hint = hint
        self._hint_source: Any = None  # made on first use (and again after pickling)

    def __getstate__(self) -> dict[str, Any]:
        """For pickle and deepcopy: the hint source (a reference policy bound to an engine) is made again."""
        state = self.__dict__.copy()
        state["_hint_source"] = None
        return state

    def hint_vector(self, env: Any) -> np.ndarray:
        """The ``hint`` entry: 1 at the view's int of the action the hint's heuristic takes now (none where it
        has no equivalent action in the view; :mod:`.hints`)."""
        from .hints import make_hint_source

        if self._hint_source is None:
            self._hint_source = make_hint_source(self.hint)
        out = np.zeros(self.size, dtype=np.float32)
        a = self._hint_source(env)
        if a is not None and self.from_layout[a] >= 0:
            out[self.from_layout[a]] = 1.0
        return out

    def space(self) -> spaces.Dict:
        """The observation space (each key one flat vector, as the default ``Dict``)."""
        from .observation import CLOCK_FEATURES, PAIR_FEATURES, PENDING_FEATURES, RUNNING_FEATURES

        L, K = self.layout, MAX_TYPES
        sizes = {"pending": L.n_pending * PENDING_FEATURES, "running": L.n_running * RUNNING_FEATURES,
                 "pairs": L.n_pending * L.n_running * PAIR_FEATURES, "types": K * TYPE_FEATURES,
                 "job_types": L.n_pending * K * JOB_TYPE_FEATURES, "clock": CLOCK_FEATURES}
        if self.hint is not None:
            sizes["hint"] = self.size
        return spaces.Dict({k: spaces.Box(0.0, 1.0, (n,), np.float32) for k, n in sizes.items()})

    def mask(self, layout_mask: np.ndarray) -> np.ndarray:
        """The view's action mask from the layout's."""
        out = np.zeros(self.size, dtype=bool)
        ok = self.to_layout >= 0
        out[ok] = layout_mask[self.to_layout[ok]]
        return out

    def observe(self, obs: dict[str, np.ndarray], layout_mask: np.ndarray, speed: np.ndarray,
                pending_models: np.ndarray) -> dict[str, np.ndarray]:
        """The view's observation from the default one (``obs``), the layout's mask, the relative speed table
        ``(models, T)`` and the models of the jobs in the pending window."""
        from .observation import CLUSTER_FEATURES

        L, K, T = self.layout, MAX_TYPES, self.n_types
        types = np.zeros((K, TYPE_FEATURES), dtype=np.float32)
        types[:T, :CLUSTER_FEATURES] = obs["cluster"].reshape(T, CLUSTER_FEATURES)
        types[:, CLUSTER_FEATURES] = self.present
        jt = np.zeros((L.n_pending, K, JOB_TYPE_FEATURES), dtype=np.float32)
        n = len(pending_models)
        if n:
            jt[:n, :T, 0] = speed[pending_models]
            if L.place_width > 1:
                cols = L.place_off + np.arange(n)[:, None] * L.place_width + np.arange(T)[None, :]
                jt[:n, :T, 1] = layout_mask[cols]
            else:  # one type: "any" is that type
                jt[:n, 0, 1] = layout_mask[L.place_off + np.arange(n)]
        return {"pending": obs["pending"], "running": obs["running"], "pairs": obs["pairs"],
                "types": types.ravel(), "job_types": jt.ravel(), "clock": obs["clock"]}
