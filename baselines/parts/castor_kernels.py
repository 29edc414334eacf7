"""Castor's Theorem 1 for one (running A, new B) pair, and the pass that picks the pairs worth Algorithm 2,
compiled with numba (:mod:`.castor_pairs` gives them their array interface).

:func:`pair_jct` is the theorem's one implementation: :func:`.castor_pairs.theorem1` runs it element by element
over arrays, and :func:`sharing_pairs` inside its pass over every (pending job, partner) of a decision. Only the
branch that applies is computed, with the same ``+ - * /`` in the same order as the paper's equations below, so
a pair's answer is the same whichever way it is asked (IEEE operations round alike compiled or not; nothing
here is fused or reordered: no fast-math).

This module imports numba, so it is imported only when Castor decides. Compiled code is cached on disk next to
this file where that is writable.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_JIT = {"cache": True, "error_model": "numpy", "boundscheck": False}

MAY_SHARE_SLACK = 1.0 + 1e-9
"""How much of the sequential JCT rounding may hide in :func:`may_share` (each term's error is a few ulps)."""


@numba.njit(cache=True, error_model="numpy", inline="always")
def pair_jct(t_a: float, t_a_hat: float, i_a: float, t_b: float, t_b_hat: float, i_b: float
             ) -> tuple[bool, float, float]:
    """Castor Theorem 1 for running job A (``i_a`` iterations left, ``t_a`` s/iteration alone, ``t_a_hat``
    shared) and new job B (``i_b``, ``t_b``, ``t_b_hat``): ``(share, avg_jct_shared, avg_jct_seq)``, JCTs
    counted from now; ``share`` when starting B now (kappa = 0) beats running B after A (eq. 16-23)."""
    seq = (t_a * i_a + (t_a * i_a + t_b * i_b)) / 2.0
    tb_1 = t_b_hat * i_b
    ta_2 = t_a_hat * i_a
    if ta_2 >= tb_1:  # B finishes first, A continues alone (eq. 16-17)
        shared = (tb_1 + t_a * (i_a - tb_1 / t_a_hat) + tb_1) / 2.0
    else:  # A finishes first, B continues alone (eq. 20-21 at kappa = 0)
        shared = (ta_2 + (ta_2 + t_b * (i_b - ta_2 / t_b_hat))) / 2.0
    return shared < seq, shared, seq


@numba.njit(**_JIT)
def theorem1_flat(t_a: np.ndarray, t_a_hat: np.ndarray, i_a: np.ndarray, t_b: np.ndarray, t_b_hat: np.ndarray,
                  i_b: np.ndarray, share: np.ndarray, shared: np.ndarray, seq: np.ndarray) -> None:
    """:func:`pair_jct` for every element of equally long 1-D arrays, into ``share``, ``shared``, ``seq``."""
    for e in range(len(t_a)):
        share[e], shared[e], seq[e] = pair_jct(t_a[e], t_a_hat[e], i_a[e], t_b[e], t_b_hat[e], i_b[e])


@numba.njit(cache=True, error_model="numpy", inline="always")
def may_share(t_a: float, t_a_hat: float, i_a: float, t_b: float, i_b: float, t_b_hat_min: float) -> bool:
    """Whether a pair may share at some sub-batch, from B's fastest shared iteration time ``t_b_hat_min``:
    False only where no sub-batch can pass Theorem 1, so pairs found False can be skipped. Over the reals the
    shared JCT of Theorem 1 does not decrease as ``t_b_hat`` grows when ``t_a_hat >= t_a`` (case 1:
    d/d(t_b_hat i_b) = 1 - t_a/(2 t_a_hat) > 0; case 2: d/dt_b_hat = t_b t_a_hat i_a / t_b_hat^2 >= 0; the
    cases meet continuously), so sharing at any sub-batch needs ``shared(t_b_hat_min) < seq``; the test allows
    :data:`MAY_SHARE_SLACK`, and passes every pair with ``t_a_hat < t_a``, a NaN or an infinite sequential
    JCT."""
    _, shared, seq = pair_jct(t_a, t_a_hat, i_a, t_b, t_b_hat_min, i_b)
    return not (shared >= seq * MAY_SHARE_SLACK) or not (t_a_hat >= t_a) or not math.isfinite(seq)


@numba.njit(**_JIT)
def sharing_pairs(ix: np.ndarray, t: np.ndarray, t_min: np.ndarray, n_opts: np.ndarray, i_a: np.ndarray,
                  i_b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs of a decision worth Algorithm 2: ``ix[r, c]`` is the term-store row of pending job ``r``
    beside partner ``c`` (store arrays ``t`` = ``(t_a, t_a_hat, t_b)``, ``t_min``, ``n_opts``), ``i_a`` the
    partners' iterations left, ``i_b`` the jobs'. A pair is kept when it has sub-batches (none when the
    partner has no iterations left or an infinite ``t_a``) and :func:`may_share`. Returns its ``r``, ``c``
    (row-major order) and number of sub-batches."""
    n_rows, n_cols = ix.shape
    rs = np.empty(n_rows * n_cols, dtype=np.int64)
    cs = np.empty(n_rows * n_cols, dtype=np.int64)
    ks = np.empty(n_rows * n_cols, dtype=np.int64)
    m = 0
    for r in range(n_rows):
        for c in range(n_cols):
            row = ix[r, c]
            t_a = t[row, 0]
            if not (i_a[c] > 0 and math.isfinite(t_a)) or n_opts[row] <= 0:
                continue
            if may_share(t_a, t[row, 1], i_a[c], t[row, 2], i_b[r], t_min[row]):
                rs[m], cs[m], ks[m] = r, c, n_opts[row]
                m += 1
    return rs[:m], cs[:m], ks[:m]
