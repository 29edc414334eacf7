"""Castor's pair arithmetic over arrays: Theorem 1 and Algorithm 2's sub-batch choice for many (running,
pending) pairs in one numpy pass (castor §5; sjf-bsbf §V).

Each function works element by element on arrays of any broadcastable shape (or on plain floats), with the
same operations in the same order per element as the scalar formulas, so one pair's answer is the same to
the bit whether it is computed alone or among thousands (numpy's elementwise ``+ - * /`` round like Python
floats; nothing here sums or reduces across pairs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

TIE = 1.0 + 1e-12
"""Algorithm 2's ``<=`` with a relative tolerance: a later (smaller) sub-batch wins ties."""


def theorem1(t_a: Any, t_a_hat: Any, i_a: Any, t_b: Any, t_b_hat: Any, i_b: Any) -> tuple[Any, Any, Any]:
    """Castor Theorem 1 for running job A (``i_a`` iterations left, ``t_a`` s/iteration alone, ``t_a_hat``
    shared) and new job B (``i_b``, ``t_b``, ``t_b_hat``); floats or arrays, element by element. Returns
    ``(share, avg_jct_shared, avg_jct_seq)``, JCTs counted from now; ``share`` is True when starting B now
    (kappa = 0) beats running B after A (eq. 16-23)."""
    t_a, t_a_hat, i_a, t_b, t_b_hat, i_b = (np.asarray(x, dtype=float) for x in (t_a, t_a_hat, i_a, t_b, t_b_hat,
                                                                                i_b))
    with np.errstate(all="ignore"):  # the branch not taken may divide by zero; its value is dropped
        seq = (t_a * i_a + (t_a * i_a + t_b * i_b)) / 2.0
        b_first = t_a_hat * i_a >= t_b_hat * i_b  # B finishes first, A continues alone (eq. 16-17)
        tb_1 = t_b_hat * i_b
        ta_1 = tb_1 + t_a * (i_a - tb_1 / t_a_hat)
        ta_2 = t_a_hat * i_a  # A finishes first, B continues alone (eq. 20-21 at kappa = 0)
        tb_2 = ta_2 + t_b * (i_b - ta_2 / t_b_hat)
        shared = (np.where(b_first, ta_1, ta_2) + np.where(b_first, tb_1, tb_2)) / 2.0
    return shared < seq, shared, seq


@dataclass(frozen=True)
class PairPlan:
    """Algorithm 2's answer for one (running, new) pair: share flag, accumulation s = B/b, pair JCT."""

    share: bool
    accumulation: int
    t: float
    t_shared: float
    t_seq: float


@dataclass
class PairPlans:
    """Algorithm 2's answers for an array of pairs (see :func:`best_plans`); ``found`` is False where a pair
    has no feasible sub-batch, and the other fields are meaningless there."""

    found: np.ndarray
    share: np.ndarray
    accumulation: np.ndarray
    t: np.ndarray
    t_shared: np.ndarray
    t_seq: np.ndarray

    def plan(self, idx: Any) -> PairPlan:
        """One pair's answer as a :class:`PairPlan` (plain Python numbers)."""
        return PairPlan(bool(self.share[idx]), int(self.accumulation[idx]), float(self.t[idx]),
                        float(self.t_shared[idx]), float(self.t_seq[idx]))


def best_plans(
    t_a: np.ndarray, t_a_hat: np.ndarray, i_a: np.ndarray, t_b: np.ndarray, i_b: np.ndarray,
    s_opts: np.ndarray, t_b_hat: np.ndarray, n_opts: np.ndarray,
) -> PairPlans:
    """Castor Algorithm 2 for many pairs at once. The pair arrays broadcast together; ``s_opts`` and
    ``t_b_hat`` carry one more trailing axis, the feasible accumulations in increasing ``s`` (sub-batch B,
    B/2, ..., 1) and B's shared iteration time at each; a pair uses its first ``n_opts`` of them. Each pair
    keeps the configuration with the smallest Theorem-1 JCT (``<=`` within :data:`TIE`: ties go to the later,
    smaller sub-batch)."""
    shape = np.broadcast_shapes(np.shape(t_a), np.shape(t_a_hat), np.shape(i_a), np.shape(t_b), np.shape(i_b),
                                np.shape(n_opts), np.shape(t_b_hat)[:-1])
    found = np.zeros(shape, dtype=bool)
    share = np.zeros(shape, dtype=bool)
    acc = np.zeros(shape, dtype=np.int64)
    t = np.full(shape, np.nan)
    t_sh = np.full(shape, np.nan)
    t_sq = np.full(shape, np.nan)
    for k in range(np.shape(t_b_hat)[-1]):
        sh_k, shared, seq = theorem1(t_a, t_a_hat, i_a, t_b, t_b_hat[..., k], i_b)
        t_k = np.where(sh_k, shared, seq)
        take = (k < n_opts) & (~found | (t_k <= t * TIE))
        found |= take
        share = np.where(take, sh_k, share)
        acc = np.where(take, s_opts[..., k], acc)
        t = np.where(take, t_k, t)
        t_sh = np.where(take, shared, t_sh)
        t_sq = np.where(take, seq, t_sq)
    return PairPlans(found, share, acc, t, t_sh, t_sq)


def best_sub_batch(
    t_a: float, t_a_hat: float, i_a: float, t_b: float, options: list[tuple[int, float]], i_b: float
) -> PairPlan | None:
    """Castor Algorithm 2 for one pair: ``options`` are ``(s, t_b_hat(s))`` for the memory-feasible
    accumulations in increasing ``s`` (:func:`best_plans` on a single pair). None when no sub-batch fits."""
    if not options:
        return None
    s_opts = np.array([[s for s, _ in options]], dtype=np.int64)
    t_hat = np.array([[x for _, x in options]], dtype=float)
    plans = best_plans(np.array([t_a]), np.array([t_a_hat]), np.array([i_a]), np.array([t_b]), np.array([i_b]),
                       s_opts, t_hat, np.array([len(options)]))
    return plans.plan(0)
