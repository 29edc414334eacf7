"""Castor's pair arithmetic over arrays: Theorem 1 and Algorithm 2's sub-batch choice for many (running,
pending) pairs in one numpy pass (castor §5; sjf-bsbf §V).

Each function works element by element on arrays of any broadcastable shape (or on plain floats), with the
same operations in the same order per element as the scalar formulas, so one pair's answer is the same to
the bit whether it is computed alone or among thousands (numpy's elementwise ``+ - * /`` round like Python
floats; nothing here sums or reduces across pairs).
"""

from __future__ import annotations

import math
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


def may_share(t_a: Any, t_a_hat: Any, i_a: Any, t_b: Any, i_b: Any, t_b_hat_min: Any) -> np.ndarray:
    """Whether a pair may share at some sub-batch, from B's fastest shared iteration time ``t_b_hat_min``:
    False only where no sub-batch can pass Theorem 1, so pairs found False can be skipped. Over the reals the
    shared JCT of Theorem 1 does not decrease as ``t_b_hat`` grows when ``t_a_hat >= t_a`` (case 1:
    d/d(t_b_hat i_b) = 1 - t_a/(2 t_a_hat) > 0; case 2: d/dt_b_hat = t_b t_a_hat i_a / t_b_hat^2 >= 0; the
    cases meet continuously), so sharing at any sub-batch needs ``shared(t_b_hat_min) < seq``; the test allows
    1e-9 of rounding (each term's error is a few ulps of the sequential JCT), and passes every pair with
    ``t_a_hat < t_a``, a NaN or an infinite sequential JCT."""
    _, shared, seq = theorem1(t_a, t_a_hat, i_a, t_b, t_b_hat_min, i_b)
    return _may(shared, seq, t_a, t_a_hat)


def _may(shared: Any, seq: Any, t_a: Any, t_a_hat: Any) -> np.ndarray:
    """:func:`may_share`'s test on Theorem 1's JCTs at B's fastest sub-batch."""
    return ~(shared >= seq * (1.0 + 1e-9)) | ~(np.asarray(t_a_hat) >= t_a) | ~np.isfinite(seq)


@dataclass
class PairPlans:
    """Algorithm 2's answers for a list of pairs (see :func:`best_plans`)."""

    share: np.ndarray
    accumulation: np.ndarray
    t: np.ndarray
    t_shared: np.ndarray
    t_seq: np.ndarray

    def plan(self, i: int) -> PairPlan:
        """Pair ``i``'s answer as a :class:`PairPlan` (plain Python numbers)."""
        return PairPlan(bool(self.share[i]), int(self.accumulation[i]), float(self.t[i]), float(self.t_shared[i]),
                        float(self.t_seq[i]))

    def subset(self, keep: np.ndarray) -> PairPlans:
        """The answers of the pairs ``keep`` (a mask or indices) selects, in order."""
        return PairPlans(self.share[keep], self.accumulation[keep], self.t[keep], self.t_shared[keep],
                         self.t_seq[keep])


def no_plans() -> tuple[np.ndarray, np.ndarray, PairPlans]:
    """No pair rows, no pair columns, no plans (when no pair may share)."""
    none = np.zeros(0, dtype=np.int64)
    return none, none, PairPlans(np.zeros(0, dtype=bool), none, np.zeros(0), np.zeros(0), np.zeros(0))


def best_plans(
    t_a: np.ndarray, t_a_hat: np.ndarray, i_a: np.ndarray, t_b: np.ndarray, i_b: np.ndarray,
    s_opts: np.ndarray, t_b_hat: np.ndarray, n_opts: np.ndarray,
) -> PairPlans:
    """Castor Algorithm 2 for ``m`` pairs at once: ``t_a, t_a_hat, i_a, t_b, i_b, n_opts`` have one entry per
    pair, ``s_opts`` and ``t_b_hat`` one row ``(m, options)``: the feasible accumulations in increasing ``s``
    (sub-batch B, B/2, ..., 1) and B's shared iteration time at each; pair ``i`` uses its first ``n_opts[i] >=
    1`` of them. Each pair keeps the configuration with the smallest Theorem-1 JCT (``<=`` within
    :data:`TIE`: ties go to the later, smaller sub-batch)."""
    return _pick(*theorem1(t_a[:, None], t_a_hat[:, None], i_a[:, None], t_b[:, None], t_b_hat, i_b[:, None]),
                 s_opts, n_opts)


def plans_may_share(
    t_a: np.ndarray, t_a_hat: np.ndarray, i_a: np.ndarray, t_b: np.ndarray, i_b: np.ndarray,
    s_opts: np.ndarray, t_b_hat: np.ndarray, n_opts: np.ndarray, k_min: np.ndarray,
) -> tuple[np.ndarray, PairPlans]:
    """:func:`best_plans` and, from the same Theorem-1 pass, :func:`may_share` of each pair with ``n_opts``
    above 0 (False where it is 0): ``k_min`` is the column of B's fastest option (the one
    :attr:`TermStore.t_min` holds), whose JCTs :func:`may_share` computes (the same operations on the same
    numbers, so the same bits)."""
    share_k, shared_k, seq = theorem1(t_a[:, None], t_a_hat[:, None], i_a[:, None], t_b[:, None], t_b_hat,
                                      i_b[:, None])
    may = (n_opts > 0) & _may(shared_k[np.arange(len(t_a)), k_min], seq[:, 0], t_a, t_a_hat)
    return may, _pick(share_k, shared_k, seq, s_opts, n_opts)


def _pick(share_k: np.ndarray, shared_k: np.ndarray, seq: np.ndarray, s_opts: np.ndarray, n_opts: np.ndarray
          ) -> PairPlans:
    """Algorithm 2's choice among each pair's first ``n_opts`` options from Theorem 1's answers at every
    option (:func:`best_plans`): a later option wins when its JCT is at most :data:`TIE` times the best
    one's so far (a NaN JCT never wins, so the options past ``n_opts`` are set to NaN)."""
    t_k = np.where(share_k, shared_k, seq)
    rows = np.arange(len(t_k))
    best = np.zeros(len(t_k), dtype=np.int64)
    width = min(t_k.shape[1], int(n_opts.max(initial=0)))  # past every pair's options: no change
    if width > 1:
        live = np.where(np.arange(width) < n_opts[:, None], t_k[:, :width], math.nan)
        cur = live[:, 0]
        for k in range(1, width):
            take = live[:, k] <= cur * TIE
            best[take] = k
            cur = np.where(take, live[:, k], cur)
    return PairPlans(share_k[rows, best], s_opts[rows, best], t_k[rows, best], shared_k[rows, best], seq[:, 0])


def best_sub_batch(
    t_a: float, t_a_hat: float, i_a: float, t_b: float, options: list[tuple[int, float]], i_b: float
) -> PairPlan | None:
    """Castor Algorithm 2 for one pair: ``options`` are ``(s, t_b_hat(s))`` for the memory-feasible
    accumulations in increasing ``s`` (:func:`best_plans` on a single pair). None when no sub-batch fits."""
    if not options:
        return None
    s_opts = np.array([[s for s, _ in options]], dtype=np.int64)
    t_hat = np.array([[x for _, x in options]], dtype=float)
    one = [np.array([x], dtype=float) for x in (t_a, t_a_hat, i_a, t_b, i_b)]
    return best_plans(*one, s_opts, t_hat, np.array([len(options)])).plan(0)


class TermStore:
    """Pair terms ``(t_a, t_a_hat, t_b, (s, ...), (t_b_hat(s), ...))`` kept as rows of growing arrays, so a
    decision gathers the rows of its pairs with one index per array. Row 0 stands for "no terms" (the pair
    cannot share: ``n_opts`` 0). Rows are never freed: the pair classes that index them are kept for the
    episode (:class:`.castor_terms.PairTermCache`)."""

    def __init__(self) -> None:
        self.t = np.full((64, 3), math.nan)
        """``t_a, t_a_hat, t_b`` per row."""
        self.n_opts = np.zeros(64, dtype=np.int64)
        self.s_opts = np.zeros((64, 1), dtype=np.int64)
        self.t_hat = np.full((64, 1), math.nan)
        self.t_min = np.full(64, math.nan)
        """The fastest ``t_b_hat`` of each row (for :func:`may_share`)."""
        self.k_min = np.zeros(64, dtype=np.int64)
        """The column of :attr:`t_min` in :attr:`t_hat` (for :func:`plans_may_share`)."""
        self._lo, self._hi = np.full(64, -math.inf), np.full(64, math.inf)
        self._fresh: list[int] = []  # rows whose window is not yet found
        self._used = 1

    def add(self, terms: tuple[Any, ...] | None) -> int:
        """Store ``terms`` (None: row 0) and return its row."""
        if terms is None:
            return 0
        t_a, t_a_hat, t_b, s_opts, t_hat = terms
        i, self._used = self._used, self._used + 1
        if i == len(self.t):
            self._grow(2 * i, self.s_opts.shape[1])
        if len(s_opts) > self.s_opts.shape[1]:
            self._grow(len(self.t), len(s_opts))
        k = len(s_opts)
        self.t[i] = (t_a, t_a_hat, t_b)
        self.n_opts[i] = k
        self.s_opts[i], self.t_hat[i] = 0, math.nan
        self.s_opts[i, :k], self.t_hat[i, :k] = s_opts, t_hat
        self.t_min[i] = t_min = np.fmin.reduce(self.t_hat[i, :k])
        at = np.flatnonzero(self.t_hat[i, :k] == t_min)
        self.k_min[i] = at[0] if len(at) else 0  # all NaN: t_min is NaN, as column 0 is
        self._fresh.append(i)
        return i

    def windows(self) -> tuple[np.ndarray, np.ndarray]:
        """Each row's :func:`rejected_window` ``(lo, hi)``, as ratios of ``i_b / i_a``, in two arrays (row 0
        and rows whose ``t_a`` is not finite or that have no sub-batch, none of whose pairs is planned:
        ``(-inf, inf)``); the windows of rows added since the last call found in one pass."""
        if self._fresh:
            i = np.array(self._fresh, dtype=np.int64)
            self._fresh = []
            t = self.t[i]
            lo, hi = rejected_window(t[:, 0], t[:, 1], t[:, 2], self.t_min[i])
            none = (self.n_opts[i] == 0) | ~np.isfinite(t[:, 0])
            self._lo[i] = np.where(none, -math.inf, lo)
            self._hi[i] = np.where(none, math.inf, hi)
        return self._lo, self._hi

    def terms(self, i: int) -> tuple[Any, ...] | None:
        """Row ``i`` back as a terms tuple (None for row 0)."""
        if i == 0:
            return None
        k = int(self.n_opts[i])
        return (*self.t[i].tolist(), tuple(self.s_opts[i, :k].tolist()), tuple(self.t_hat[i, :k].tolist()))

    def _grow(self, rows: int, width: int) -> None:
        n, w = self.t.shape[0], self.s_opts.shape[1]
        self.t = np.concatenate([self.t, np.full((rows - n, 3), math.nan)])
        self.n_opts = np.concatenate([self.n_opts, np.zeros(rows - n, dtype=np.int64)])
        self.t_min = np.concatenate([self.t_min, np.full(rows - n, math.nan)])
        self.k_min = np.concatenate([self.k_min, np.zeros(rows - n, dtype=np.int64)])
        self._lo = np.concatenate([self._lo, np.full(rows - n, -math.inf)])
        self._hi = np.concatenate([self._hi, np.full(rows - n, math.inf)])
        s_opts, t_hat = np.zeros((rows, width), dtype=np.int64), np.full((rows, width), math.nan)
        s_opts[:n, :w], t_hat[:n, :w] = self.s_opts, self.t_hat
        self.s_opts, self.t_hat = s_opts, t_hat


WINDOW_TOL = 1e-6
"""How far above the sequential JCT (relative) Theorem 1's shared JCT must be at both ends of a
:func:`rejected_window` for the window to stand: a thousand times :func:`may_share`'s own 1e-9."""

MAX_SLOWDOWN = 1e4
"""The largest ``t_a_hat / t_a`` a window is proven for (it bounds Theorem 1's rounding, see
:func:`rejected_window`); a pair slowed more has no window."""

MAX_RATIO = 1e15
"""Where a window's upper end is cut (a job with more than this many iterations left per iteration of its
partner's is never in a window)."""

ROUNDING = 1e-9
"""How much wider than the window a :func:`rejected_window` proves it on (relative), so that the ends scaled
by the partner's iterations left, rounded, stay within what is proven."""


def rejected_window(t_a: np.ndarray, t_a_hat: np.ndarray, t_b: np.ndarray, t_b_hat_min: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """For pairs with these terms (the arguments of :func:`may_share` but the iterations left, arrays of one
    shape), a closed interval ``[lo, hi]`` of the ratio ``i_b / i_a`` (B's iterations left over A's) on which
    :func:`may_share` is False for certain: a pair with ``lo i_a <= i_b <= hi i_a`` (computed in floats)
    need not be asked. Empty (``lo > hi``) where none is proven.

    Why it holds: over the reals Theorem 1's ``shared`` and ``seq`` are homogeneous of degree 1 in ``(i_a,
    i_b)``, so take ``i_a = 1``. At B's fastest sub-batch ``f(i) = shared - (1 + tol) seq`` is piecewise
    linear in ``i_b = i``: slope ``(t_b_hat (2 - t_a / t_a_hat) - t_b (1 + tol)) / 2`` while B finishes
    first, ``-tol t_b / 2`` after, and ``f(0) = -(1/2 + tol) t_a < 0``. The ends are the roots of those two
    lines at ``tol = 2`` :data:`WINDOW_TOL`, and stand only where Theorem 1, computed, puts ``shared >= (1 +``
    :data:`WINDOW_TOL` ``) seq`` at both, widened by :data:`ROUNDING`. Then ``f`` rises somewhere, so its
    first slope is the larger: ``f`` is concave, and ``f >= 0`` on the whole (widened) window. Every term of
    Theorem 1 is at most ``(t_a_hat / t_a + 2) seq`` (<= :data:`MAX_SLOWDOWN` ``+ 2``), so its few float
    operations err by under ``1e-11 seq``: on the window the computed ``shared`` exceeds ``seq (1 + 1e-9)``,
    :func:`may_share`'s rejection (``t_a_hat >= t_a`` and every term finite are asked here too)."""
    tol = 2.0 * WINDOW_TOL
    with np.errstate(all="ignore"):  # terms without a window may divide by zero or overflow; they are dropped
        lo = t_a * (1.0 + 2.0 * tol) / (t_b_hat_min * (2.0 - t_a / t_a_hat) - t_b * (1.0 + tol))
        plateau = (2.0 * t_a_hat - t_b * t_a_hat / t_b_hat_min - 2.0 * t_a) / 2.0
        hi = np.minimum(2.0 * (plateau - tol * t_a) / (tol * t_b), MAX_RATIO)
        ok = (t_a > 0) & np.isfinite(t_a) & (t_a_hat >= t_a) & (t_a_hat <= MAX_SLOWDOWN * t_a) & \
            np.isfinite(t_b) & (t_b >= 0) & (t_b_hat_min > 0) & np.isfinite(t_b_hat_min) & (lo > 0) & (lo <= hi)
        one = np.ones_like(t_a)
        for end in (lo * (1.0 - ROUNDING), hi * (1.0 + ROUNDING)):
            _, shared, seq = theorem1(t_a, t_a_hat, one, t_b, t_b_hat_min, end)
            ok &= (shared >= seq * (1.0 + WINDOW_TOL)) & np.isfinite(seq)
    return np.where(ok, lo, math.inf), np.where(ok, hi, -math.inf)


def outside_windows(shape: np.ndarray, i_b: np.ndarray, lo: np.ndarray, hi: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The pairs ``(r, c)`` of jobs ``r`` (of shape index ``shape[r]``, ``i_b[r]`` iterations left) and columns
    ``c`` whose ``i_b`` lies outside the cell's window ``[lo[shape[r], c], hi[shape[r], c]]`` (NaN: outside),
    in increasing ``r`` then ``c``: the answer of comparing every job with every column, asked only of the
    jobs outside the intersection of their shape's windows (most often none)."""
    return outside_pairs(shape, i_b, lo, hi, outside_jobs(shape, i_b, lo, hi))


def outside_jobs(shape: np.ndarray, i_b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The jobs (increasing) outside the intersection of their shape's windows (:func:`outside_windows`): the
    only ones with a pair outside a window."""
    if lo.shape[1] == 0:
        return np.zeros(0, dtype=np.int64)
    lo_all, hi_all = np.maximum.reduce(lo, axis=1), np.minimum.reduce(hi, axis=1)  # lo.max(1), hi.min(1)
    return (~((lo_all[shape] <= i_b) & (i_b <= hi_all[shape]))).nonzero()[0]


def outside_pairs(shape: np.ndarray, i_b: np.ndarray, lo: np.ndarray, hi: np.ndarray, some: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`outside_windows`' pairs of the jobs ``some`` (increasing; any part of :func:`outside_jobs`, whose
    pairs are the same in any part: each job's are its own)."""
    if len(some) == 0:
        none = np.zeros(0, dtype=np.int64)
        return none, none
    k, x = shape[some], i_b[some][:, None]
    r, c = (~((lo[k] <= x) & (x <= hi[k]))).nonzero()
    return some[r], c

