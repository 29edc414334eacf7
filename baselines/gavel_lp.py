"""Gavel's allocation policies (Narayanan et al., OSDI'20) as pure functions: throughputs in, time fractions out.

An allocation ``X[j, k]`` is the fraction of time job ``j`` should spend on GPUs of type ``k`` (Gavel §3.1):
``0 <= X``, ``sum_k X[j, k] <= 1`` and ``sum_j gpus_j X[j, k] <= capacity_k``. Each policy here is one linear
program solved with scipy's HiGHS, its constraint matrix built sparse (``scipy.sparse``), so thousands of jobs
cost milliseconds to seconds.

Every objective below has the same shape: find the largest ``z`` such that each job's effective throughput
``sum_k T[j, k] X[j, k]`` (plus, with space sharing, its throughput in packed pairs) is at least ``z * d_j`` for
a per-job demand ``d`` -- :func:`max_scaled_rate` solves it once, for

* **max-min fairness** (heterogeneity-aware LAS, Gavel §4.1): ``d_j = w_j * p_j / gpus_j`` where ``p_j`` is the
  job's throughput under the equal-share allocation (every job ``capacity_k / sum(capacity)`` of each type,
  Gavel's normalisation) and ``w_j`` its priority weight: maximizing ``min_j thr_j * gpus_j / (w_j p_j)``;
* **minimize makespan** (Gavel §4.2, "minimize total duration"): ``d_j`` = steps left; ``z = 1 / makespan``
  (Gavel bisects on the makespan with one feasibility LP per step; ``thr_j >= rem_j / T`` with ``z = 1/T`` is
  linear, so one LP gives the exact optimum);
* **finish-time fairness** (Themis' rho as in Gavel §4.2): ``rho_j = (t_j + rem_j / thr_j) / (iso_j + rem_j /
  iso_thr_j)``; for a fixed ``rho`` the demands ``rem_j / (rho D_j - t_j)`` are feasible iff ``z >= 1``, so
  :func:`finish_time_fairness` bisects on ``rho`` (``z`` grows with ``rho``);
* **space sharing** (Gavel §3.1, "packed" policies): pairs of jobs run together on the same GPUs get a combined
  column with each member's colocated throughput (:func:`packed_max_min_fairness`); candidate pairs come from
  :func:`candidate_pairs`.

Throughputs ``T[j, k]`` are steps per second of job ``j``'s whole gang on ``gpus_j`` GPUs of type ``k`` (0: the
job cannot run there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog


@dataclass(frozen=True)
class RateLP:
    """The solution of one :func:`max_scaled_rate` program: the scale ``z`` every served job's demand reached,
    the single-job fractions ``x`` (jobs x types) and the pair fractions ``y`` (pairs x types; empty without
    pairs)."""

    z: float
    x: np.ndarray
    y: np.ndarray


def _check(throughputs: np.ndarray, gpus: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, ...]:
    t = np.asarray(throughputs, dtype=float)
    if t.ndim != 2:
        raise ValueError(f"throughputs: expected a (jobs, types) matrix, got shape {t.shape}")
    g = np.asarray(gpus, dtype=float).reshape(-1)
    c = np.asarray(capacity, dtype=float).reshape(-1)
    if len(g) != t.shape[0]:
        raise ValueError(f"gpus: expected {t.shape[0]} values (one per job), got {len(g)}")
    if len(c) != t.shape[1]:
        raise ValueError(f"capacity: expected {t.shape[1]} values (one per GPU type), got {len(c)}")
    if (t < 0).any() or not np.isfinite(t).all():
        raise ValueError("throughputs: must be finite and >= 0")
    if (g <= 0).any():
        raise ValueError("gpus: every job asks for at least one GPU")
    if (c < 0).any():
        raise ValueError("capacity: must be >= 0")
    return t, g, c


def max_scaled_rate(
    throughputs: np.ndarray,
    gpus: np.ndarray,
    capacity: np.ndarray,
    demand: np.ndarray,
    pairs: np.ndarray | None = None,
    pair_throughputs: np.ndarray | None = None,
) -> RateLP:
    """Maximize ``z`` subject to every job with ``demand_j > 0`` and some positive throughput reaching
    ``thr_j(X) >= z * demand_j`` under Gavel's constraints (module docstring).

    ``pairs`` (P x 2 job indices, both asking for the same GPU count) with ``pair_throughputs`` (P x 2 x types:
    each member's throughput while the pair shares the GPUs) add one column per pair and type: the pair's time
    counts against both members' time budget and its GPUs once against the capacity."""
    t, g, c = _check(throughputs, gpus, capacity)
    n, nk = t.shape
    d = np.asarray(demand, dtype=float).reshape(-1)
    if len(d) != n:
        raise ValueError(f"demand: expected {n} values (one per job), got {len(d)}")
    if (d < 0).any() or not np.isfinite(d).all():
        raise ValueError("demand: must be finite and >= 0")
    pr = np.zeros((0, 2), dtype=np.int64) if pairs is None else np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    npair = len(pr)
    pt = np.zeros((0, 2, nk)) if pairs is None else np.asarray(pair_throughputs, dtype=float)
    if pt.shape != (npair, 2, nk):
        raise ValueError(f"pair_throughputs: expected shape {(npair, 2, nk)}, got {pt.shape}")
    if npair and ((pr < 0).any() or (pr >= n).any() or (pr[:, 0] == pr[:, 1]).any()):
        raise ValueError("pairs: each pair names two different jobs by index")
    if npair and (g[pr[:, 0]] != g[pr[:, 1]]).any():
        raise ValueError("pairs: both jobs of a pair must ask for the same number of GPUs")
    # columns: single (j, k) then pair (p, k); flattened row-major
    ns = n * nk
    jj = np.repeat(np.arange(n), nk)
    kk = np.tile(np.arange(nk), n)
    pp = np.repeat(np.arange(npair), nk)
    pk = np.tile(np.arange(nk), npair)
    nvar = ns + npair * nk + 1
    zcol = nvar - 1
    best = t.max(axis=1)
    if npair:
        np.maximum.at(best, pr[:, 0], pt[:, 0, :].max(axis=1))
        np.maximum.at(best, pr[:, 1], pt[:, 1, :].max(axis=1))
    served = (d > 0) & (best > 0)
    if not served.any():
        return RateLP(0.0, np.zeros((n, nk)), np.zeros((npair, nk)))
    # demand rows scaled: z' - sum (tput / (d_j B)) col <= 0 with z = z' B, so coefficients lie in [0, 1]
    scale = np.zeros(n)
    scale[served] = 1.0 / d[served]
    bmax = float((best * scale).max())
    scale /= bmax
    # epigraph rows (one per job) -- single columns, then each pair member
    e_rows = [jj, pr[pp, 0], pr[pp, 1]]
    e_cols = [np.arange(ns), ns + np.arange(npair * nk), ns + np.arange(npair * nk)]
    e_vals = [-t[jj, kk] * scale[jj], -pt[pp, 0, pk] * scale[pr[pp, 0]], -pt[pp, 1, pk] * scale[pr[pp, 1]]]
    srv = np.flatnonzero(served)
    e_rows.append(srv)
    e_cols.append(np.full(len(srv), zcol))
    e_vals.append(np.ones(len(srv)))
    # time rows: n + j
    t_rows = [n + jj, n + pr[pp, 0], n + pr[pp, 1]]
    t_cols = [np.arange(ns), ns + np.arange(npair * nk), ns + np.arange(npair * nk)]
    # capacity rows: 2n + k
    c_rows = [2 * n + kk, 2 * n + pk]
    c_cols = [np.arange(ns), ns + np.arange(npair * nk)]
    c_vals = [g[jj], g[pr[pp, 0]]]
    rows = np.concatenate(e_rows + t_rows + c_rows)
    cols = np.concatenate(e_cols + t_cols + c_cols)
    vals = np.concatenate(e_vals + [np.ones(len(a)) for a in t_rows] + c_vals)
    keep = vals != 0
    a_ub = sp.csr_array((vals[keep], (rows[keep], cols[keep])), shape=(2 * n + nk, nvar))
    b_ub = np.concatenate([np.zeros(n), np.ones(n), c])
    ub = np.ones(nvar)
    ub[:ns] = np.where(t[jj, kk] > 0, 1.0, 0.0)
    if npair:
        ub[ns:zcol] = np.where((pt[pp, 0, pk] > 0) & (pt[pp, 1, pk] > 0), 1.0, 0.0)
    ub[zcol] = np.inf
    cost = np.zeros(nvar)
    cost[zcol] = -1.0
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=np.column_stack([np.zeros(nvar), ub]), method="highs")
    if res.status != 0:
        raise RuntimeError(f"Gavel LP failed: {res.message}")
    v = np.clip(res.x, 0.0, 1.0) + 0.0  # + 0.0: no negative zeros
    return RateLP(float(res.x[zcol] * bmax), v[:ns].reshape(n, nk), v[ns:zcol].reshape(npair, nk))


def equal_share_throughputs(throughputs: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Each job's throughput if every job got ``capacity_k / sum(capacity)`` of its time on each type (Gavel's
    normalisation for max-min fairness: the share of a cluster split equally, whatever the job count)."""
    t = np.asarray(throughputs, dtype=float)
    c = np.asarray(capacity, dtype=float)
    total = c.sum()
    if total <= 0:
        raise ValueError("capacity: the cluster has no GPUs")
    return t @ (c / total)


def isolated_throughputs(throughputs: np.ndarray, gpus: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Each job's throughput on its isolated ``1/n`` share of every type (``capacity_k / (n gpus_j)`` of its time,
    scaled down when that sums over 1): finish-time fairness' reference (Themis, Gavel §4.2)."""
    t, g, c = _check(throughputs, gpus, capacity)
    n = len(t)
    x = (c[None, :] / n) / g[:, None]
    x = x / np.maximum(x.sum(axis=1), 1.0)[:, None]
    return (t * x).sum(axis=1)


def max_min_fairness(
    throughputs: np.ndarray,
    gpus: np.ndarray,
    capacity: np.ndarray,
    weights: np.ndarray | None = None,
    heterogeneity_aware: bool = True,
) -> RateLP:
    """Gavel's max-min fairness (LAS): maximize the least ``thr_j gpus_j / (w_j p_j)`` (module docstring).
    ``heterogeneity_aware=False`` is Gavel's plain LAS (every throughput taken as 1)."""
    t, g, c = _check(throughputs, gpus, capacity)
    if not heterogeneity_aware:
        t = (t > 0).astype(float)
    w = np.ones(len(t)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(t),) or (w <= 0).any():
        raise ValueError(f"weights: expected {len(t)} positive priority weights")
    demand = w * equal_share_throughputs(t, c) / g
    return max_scaled_rate(t, g, c, demand)


def min_makespan(throughputs: np.ndarray, gpus: np.ndarray, capacity: np.ndarray,
                 remaining: np.ndarray) -> tuple[float, np.ndarray]:
    """Gavel's minimize-total-duration policy: the allocation finishing every job's ``remaining`` steps soonest
    at constant rates, and that makespan (s; ``inf`` when some job with steps left can run nowhere)."""
    rem = np.asarray(remaining, dtype=float)
    lp = max_scaled_rate(throughputs, gpus, capacity, rem)
    runnable = np.asarray(throughputs, dtype=float).max(axis=1) > 0
    if lp.z <= 0 or ((rem > 0) & ~runnable).any():
        return float("inf"), lp.x
    return 1.0 / lp.z, lp.x


def finish_time_fairness(
    throughputs: np.ndarray,
    gpus: np.ndarray,
    capacity: np.ndarray,
    remaining: np.ndarray,
    since_start: np.ndarray,
    isolated_time: np.ndarray,
    rel_tol: float = 1e-4,
) -> tuple[float, np.ndarray]:
    """Gavel's finish-time fairness: minimize the largest ``rho_j = (t_j + rem_j / thr_j) / (iso_j + rem_j /
    iso_thr_j)``. ``since_start``: time since each job arrived; ``isolated_time``: the time its steps done so far
    would have taken on its isolated share. Returns the optimal ``rho`` (within ``rel_tol``) and the allocation."""
    t, g, c = _check(throughputs, gpus, capacity)
    rem = np.asarray(remaining, dtype=float)
    t0 = np.asarray(since_start, dtype=float)
    iso_done = np.asarray(isolated_time, dtype=float)
    live = (rem > 0) & (t.max(axis=1) > 0)
    if not live.any():
        return 0.0, np.zeros(t.shape)
    iso = isolated_throughputs(t, g, c)
    dref = iso_done + rem / np.where(iso > 0, iso, np.inf)
    lv = np.flatnonzero(live)
    lo = float(((t0[lv] + rem[lv] / t[lv].max(axis=1)) / dref[lv]).max())
    hi = float(((t0[lv] + rem[lv] / iso[lv]) / dref[lv]).max())

    def demand(rho: float) -> np.ndarray:
        d = np.zeros(len(t))
        d[lv] = rem[lv] / np.maximum(rho * dref[lv] - t0[lv], 1e-12)
        return d

    best = max_scaled_rate(t, g, c, demand(hi))
    while hi - lo > rel_tol * hi:
        mid = 0.5 * (lo + hi)
        lp = max_scaled_rate(t, g, c, demand(mid))
        if lp.z >= 1.0 - 1e-9:
            hi, best = mid, lp
        else:
            lo = mid
    return hi, best.x


def candidate_pairs(
    job_type: np.ndarray,
    gpus: np.ndarray,
    type_gain: np.ndarray,
    max_partners: int | None = 8,
    min_gain: float = 1.0,
) -> np.ndarray:
    """The pairs of jobs a packed policy considers (P x 2, ``i < j``): both ask for the same GPU count and their
    types' packing gain ``type_gain[a, b]`` (the sum of both members' colocated throughputs, each as a fraction
    of its throughput alone, at the best GPU type) exceeds ``min_gain``. ``max_partners=None`` keeps every such
    pair (Gavel's simulator: every pair of same-size jobs); otherwise each job keeps its ``max_partners`` best
    partners (ties to the jobs following it in job order, cyclically), which keeps the LP linear in the job count."""
    jt = np.asarray(job_type, dtype=np.int64)
    g = np.asarray(gpus)
    gain = np.asarray(type_gain, dtype=float)
    n = len(jt)
    out: set[tuple[int, int]] = set()
    idx = np.arange(n)
    for j in range(n):
        ok = (gain[jt[j], jt] > min_gain) & (g == g[j])
        ok[j] = False
        cand = np.flatnonzero(ok)
        if max_partners is not None and len(cand) > max_partners:
            order = np.lexsort(((idx[cand] - j) % n, -gain[jt[j], jt[cand]]))[:max_partners]
            cand = cand[order]
        for i in cand.tolist():
            out.add((min(i, j), max(i, j)))
    return np.array(sorted(out), dtype=np.int64).reshape(-1, 2)


def packed_max_min_fairness(
    throughputs: np.ndarray,
    gpus: np.ndarray,
    capacity: np.ndarray,
    pairs: np.ndarray,
    pair_throughputs: np.ndarray,
    weights: np.ndarray | None = None,
) -> RateLP:
    """Gavel's max-min fairness with space sharing: single columns and one column per candidate pair and type,
    each job's throughput summed over the columns it is in, normalised by its equal-share throughput alone."""
    t, g, c = _check(throughputs, gpus, capacity)
    w = np.ones(len(t)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(t),) or (w <= 0).any():
        raise ValueError(f"weights: expected {len(t)} positive priority weights")
    demand = w * equal_share_throughputs(t, c) / g
    return max_scaled_rate(t, g, c, demand, pairs, pair_throughputs)
