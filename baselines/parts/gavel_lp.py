"""Gavel's allocation policies (Narayanan et al., OSDI'20) as pure functions: throughputs in, time fractions out.

An allocation ``X[j, k]`` is the fraction of time job ``j`` should spend on GPUs of type ``k`` (Gavel §3.1):
``0 <= X``, ``sum_k X[j, k] <= 1`` and ``sum_j gpus_j X[j, k] <= capacity_k``. Each policy here is one linear
program solved with HiGHS (scipy's bindings, called directly: :mod:`.gavel_highs`), its constraint matrix built
sparse (``scipy.sparse``), so thousands of jobs cost milliseconds to seconds.

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
  column with each member's colocated throughput (:func:`packed_max_min_fairness`, :func:`packed_min_makespan`).

Jobs that are alike (same throughputs, GPU count and demand) are solved as one class (exact by symmetry), as
Gavel's own packed policy groups jobs by job type; that is what lets every pair of 2,048 jobs be considered.

Throughputs ``T[j, k]`` are steps per second of job ``j``'s whole gang on ``gpus_j`` GPUs of type ``k`` (0: the
job cannot run there).
"""

from __future__ import annotations

import numpy as np
from gpucluster_env.baselines.parts import gavel_highs
from gpucluster_env.baselines.parts.gavel_lp_inputs import RateLP, check_inputs
from gpucluster_env.baselines.parts.gavel_warm import WarmStart


def _pair_shares(pr: np.ndarray, pt: np.ndarray, m: np.ndarray, best: np.ndarray) -> np.ndarray:
    """Each pair column's time share per member (P x 2): a job of class a spends 1/m_a of its class pair's time
    in it (2/m_a when both members are of class a); raises ``best`` (each class's best throughput) in place to
    what the classes reach in pairs."""
    share = np.zeros((len(pr), 2))
    if len(pr):
        same = pr[:, 0] == pr[:, 1]
        share[:, 0] = np.where(same, 2.0, 1.0) / m[pr[:, 0]]
        share[:, 1] = np.where(same, 0.0, 1.0 / m[pr[:, 1]])
        np.maximum.at(best, pr[:, 0], pt[:, 0, :].max(axis=1))
        np.maximum.at(best, pr[:, 1], pt[:, 1, :].max(axis=1))
    return share


def _solve(t: np.ndarray, g: np.ndarray, c: np.ndarray, d: np.ndarray, m: np.ndarray, pr: np.ndarray,
           pt: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """The LP over job classes: rows of ``t``/``g``/``d`` are classes of ``m`` identical jobs, ``x`` a class's
    per-job fractions, pair columns ``pr`` (class a <= b) with per-member throughputs ``pt`` (P x 2 x types)
    hold the classes' total pair time."""
    n, nk = t.shape
    npair = len(pr)
    ns = n * nk
    nvar = ns + npair * nk + 1
    zcol = nvar - 1
    best = t.max(axis=1)
    share = _pair_shares(pr, pt, m, best)
    served = (d > 0) & (best > 0)
    if not served.any():
        return 0.0, np.zeros((n, nk)), np.zeros((npair, nk))
    # demand rows scaled: z' - sum (tput / (d_j B)) col <= 0 with z = z' B, so coefficients lie in [0, 1]
    scale = np.zeros(n)
    scale[served] = 1.0 / d[served]
    bmax = float((best * scale).max())
    scale /= bmax
    srv = np.flatnonzero(served)
    ub = np.ones(nvar)
    ub[:ns] = np.where(t > 0, 1.0, 0.0).ravel()
    if npair:
        a_ub = _pair_columns(t, g, m, pr, pt, share, scale, srv)
        pp = np.repeat(np.arange(npair), nk)
        pk = np.tile(np.arange(nk), npair)
        cnt = np.where(pr[:, 0] == pr[:, 1], m[pr[:, 0]] * (m[pr[:, 0]] - 1) / 2.0, m[pr[:, 0]] * m[pr[:, 1]])
        ub[ns:zcol] = np.where((pt[pp, 0, pk] > 0) & (pt[pp, 1, pk] > 0), cnt[pp], 0.0)
    else:
        a_ub = _single_columns(t, scale, m * g, srv)
    b_ub = np.concatenate([np.zeros(n), np.ones(n), c])
    ub[zcol] = np.inf
    cost = np.zeros(nvar)
    cost[zcol] = -1.0
    x, why = gavel_highs.minimize(cost, a_ub, b_ub, ub, solver="ipm")  # as linprog(method="highs-ipm"), same bits
    if x is None:
        raise RuntimeError(f"Gavel LP failed: {why}")
    v = np.maximum(x, 0.0) + 0.0  # + 0.0: no negative zeros
    return float(x[zcol] * bmax), np.minimum(v[:ns], 1.0).reshape(n, nk), v[ns:zcol].reshape(npair, nk)


def _pair_columns(t: np.ndarray, g: np.ndarray, m: np.ndarray, pr: np.ndarray, pt: np.ndarray, share: np.ndarray,
                  scale: np.ndarray, srv: np.ndarray) -> gavel_highs.Columns:
    """The matrix of :func:`_solve` with pair columns: epigraph rows ``j``, time rows ``n + j``, capacity rows
    ``2n + k``; columns ``(j, k)``, then ``(pair, k)``, then ``z``."""
    n, nk = t.shape
    npair = len(pr)
    ns = n * nk
    jj = np.repeat(np.arange(n), nk)
    kk = np.tile(np.arange(nk), n)
    pp = np.repeat(np.arange(npair), nk)
    pk = np.tile(np.arange(nk), npair)
    pcol = ns + np.arange(npair * nk)
    a0, a1 = pr[pp, 0], pr[pp, 1]
    rows = np.concatenate([jj, a0, a1, srv,                       # epigraph rows j
                           n + jj, n + a0, n + a1,                # time rows n + j
                           2 * n + kk, 2 * n + pk])               # capacity rows 2n + k
    cols = np.concatenate([np.arange(ns), pcol, pcol, np.full(len(srv), ns + npair * nk),
                           np.arange(ns), pcol, pcol, np.arange(ns), pcol])
    vals = np.concatenate([-t[jj, kk] * scale[jj], -pt[pp, 0, pk] * share[pp, 0] * scale[a0],
                           -pt[pp, 1, pk] * share[pp, 1] * scale[a1], np.ones(len(srv)),
                           np.ones(ns), share[pp, 0], share[pp, 1], m[jj] * g[jj], g[a0]])
    keep = vals != 0
    # no place is named twice (a pair within one class has its second share 0, dropped), so these are scipy's CSC
    return gavel_highs.columns(rows[keep], cols[keep], vals[keep], (2 * n + nk, ns + npair * nk + 1))


def _single_columns(t: np.ndarray, scale: np.ndarray, gpus_held: np.ndarray, srv: np.ndarray) -> gavel_highs.Columns:
    """The matrix of :func:`_solve` without pair columns, column by column as :func:`.gavel_highs.columns` gives
    it (the same arrays: a test compares them), built in place: column ``(j, k)`` holds ``-t[j, k] scale[j]`` in
    epigraph row ``j`` (left out where 0), 1 in time row ``n + j`` and ``gpus_held[j]`` in capacity row ``2n + k``;
    the last column (``z``) holds 1 in the epigraph rows of the served classes ``srv``."""
    n, nk = t.shape
    ep = -t * scale[:, None]
    rows = np.empty((n, nk, 3), dtype=np.int32)
    rows[:, :, 0] = np.arange(n, dtype=np.int32)[:, None]
    rows[:, :, 1] = rows[:, :, 0] + n
    rows[:, :, 2] = 2 * n + np.arange(nk, dtype=np.int32)[None, :]
    vals = np.empty((n, nk, 3))
    vals[:, :, 0] = ep
    vals[:, :, 1] = 1.0
    vals[:, :, 2] = gpus_held[:, None]
    keep = np.ones((n, nk, 3), dtype=bool)
    keep[:, :, 0] = ep != 0
    indptr = np.zeros(n * nk + 2, dtype=np.int32)
    np.cumsum(keep.sum(axis=2).ravel(), out=indptr[1:-1])
    indptr[-1] = indptr[-2] + len(srv)
    return gavel_highs.Columns(indptr, np.concatenate([rows[keep], srv.astype(np.int32)]),
                               np.concatenate([vals[keep], np.ones(len(srv))]), (2 * n + nk, n * nk + 1))


def _classes(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Jobs grouped by identical rows: (index of each class's first job, each job's class, class sizes), classes
    in the rows' lexicographic order (first column first): what ``np.unique(axis=0, return_index=True,
    return_inverse=True, return_counts=True)`` gives, from one stable ``lexsort`` (a third of its time)."""
    key = np.column_stack([np.asarray(a, dtype=float).reshape(len(columns[0]), -1) for a in columns])
    n = len(key)
    if n == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp), np.zeros(0)
    order = np.lexsort(key.T[::-1])  # stable: equal rows keep their order, so a class's first job comes first
    ordered = key[order]
    starts_class = np.empty(n, dtype=bool)
    starts_class[0] = True
    starts_class[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    starts = np.flatnonzero(starts_class)
    inv = np.empty(n, dtype=np.intp)
    inv[order] = np.cumsum(starts_class) - 1
    return order[starts], inv, np.diff(np.append(starts, n)).astype(float)


def max_scaled_rate(
    throughputs: np.ndarray,
    gpus: np.ndarray,
    capacity: np.ndarray,
    demand: np.ndarray,
    job_class: np.ndarray | None = None,
    class_pair_throughputs: np.ndarray | None = None,
) -> RateLP:
    """Maximize ``z`` subject to every job with ``demand_j > 0`` and some positive throughput reaching
    ``thr_j(X) >= z * demand_j`` under Gavel's constraints (module docstring).

    Jobs with identical throughputs, GPU count, demand (and class) are solved as one class: by symmetry some
    optimum gives them all the same fractions, so this is exact and keeps the LP as small as the number of
    distinct jobs. With ``class_pair_throughputs`` (C x C x types: the throughput of a job of class ``a`` while it
    shares GPUs with one of class ``b``; 0: they cannot pair) every two jobs asking the same GPU count may also
    run as a pair: one column per class pair and type, its time counted against both members' budgets and its
    GPUs once against the capacity (Gavel's packed policies over all pairs of jobs)."""
    t, g, c = check_inputs(throughputs, gpus, capacity)
    n, nk = t.shape
    d = np.asarray(demand, dtype=float).reshape(-1)
    if len(d) != n:
        raise ValueError(f"demand: expected {n} values (one per job), got {len(d)}")
    if (d < 0).any() or not np.isfinite(d).all():
        raise ValueError("demand: must be finite and >= 0")
    jc = np.zeros(n, dtype=np.int64) if job_class is None else np.asarray(job_class, dtype=np.int64)
    if jc.shape != (n,) or (jc < 0).any():
        raise ValueError(f"job_class: expected {n} class ids >= 0")
    if class_pair_throughputs is None:
        return _single_rate(t, g, c, d, jc)
    first, cls, mult = _classes(t, g, d, jc)
    cp = np.asarray(class_pair_throughputs, dtype=float)
    nc = int(jc.max()) + 1
    if cp.ndim != 3 or cp.shape[0] < nc or cp.shape[1] < nc or cp.shape[2] != nk:
        raise ValueError(f"class_pair_throughputs: expected shape (classes, classes, {nk}), got {cp.shape}")
    uc = jc[first]
    a, b = np.triu_indices(len(first))
    ok = (g[first[a]] == g[first[b]]) & ((a != b) | (mult[a] > 1))
    ok &= ((cp[uc[a], uc[b]] > 0) & (cp[uc[b], uc[a]] > 0)).any(axis=1)
    a, b = a[ok], b[ok]
    pr = np.column_stack([a, b])
    pt = np.stack([cp[uc[a], uc[b]], cp[uc[b], uc[a]]], axis=1)
    z, xc, y = _solve(t[first], g[first], c, d[first], mult, pr, pt)
    return RateLP(z, xc[cls], jc[first][pr] if len(pr) else pr, y)


def _single_rate(t: np.ndarray, g: np.ndarray, c: np.ndarray, d: np.ndarray, jc: np.ndarray | None = None
                 ) -> RateLP:
    """:func:`max_scaled_rate` without pairs, on inputs already checked (finish-time fairness' bisection solves
    many with the same throughputs)."""
    first, cls, mult = _classes(t, g, d, np.zeros(len(t), dtype=np.int64) if jc is None else jc)
    z, xc, y = _solve(t[first], g[first], c, d[first], mult, np.zeros((0, 2), dtype=np.int64),
                      np.zeros((0, 2, t.shape[1])))
    return RateLP(z, xc[cls], np.zeros((0, 2), dtype=np.int64), y)


def equal_share_throughputs(throughputs: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Each job's throughput if every job got ``capacity_k / sum(capacity)`` of its time on each type (Gavel's
    normalisation for max-min fairness: the share of a cluster split equally, whatever the job count)."""
    t = np.asarray(throughputs, dtype=float)
    c = np.asarray(capacity, dtype=float)
    total = c.sum()
    if total <= 0:
        raise ValueError("capacity: the cluster has no GPUs")
    w = c / total
    out = np.zeros(t.shape[:-1])
    for k in range(t.shape[-1]):  # type by type, in a fixed order: no BLAS product, whose rounding depends on the CPU
        out += t[..., k] * w[k]
    return out


def isolated_throughputs(throughputs: np.ndarray, gpus: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Each job's throughput on its isolated ``1/n`` share of every type (``capacity_k / (n gpus_j)`` of its time,
    scaled down when that sums over 1): finish-time fairness' reference (Themis, Gavel §4.2)."""
    t, g, c = check_inputs(throughputs, gpus, capacity)
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
    t, g, c = check_inputs(throughputs, gpus, capacity)
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
    t, g, c = check_inputs(throughputs, gpus, capacity)
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

    solved = {hi: _single_rate(t, g, c, demand(hi))}
    known = [(solved[hi].z, demand(hi)[lv])]
    while hi - lo > rel_tol * hi:
        mid = 0.5 * (lo + hi)
        d = demand(mid)
        ok = _implied_feasible(known, d[lv])
        if ok is None:
            solved[mid] = _single_rate(t, g, c, d)
            known.append((solved[mid].z, d[lv]))
            ok = solved[mid].z >= 1.0 - 1e-9
        if ok:
            hi = mid
        else:
            lo = mid
    best = solved[hi] if hi in solved else _single_rate(t, g, c, demand(hi))
    return hi, best.x


def _implied_feasible(known: list[tuple[float, np.ndarray]], d: np.ndarray, margin: float = 1e-6) -> bool | None:
    """Whether demands ``d`` are feasible (scale ``z >= 1``), when an LP already solved settles it, else None.
    An allocation reaching ``z_s * d_s`` reaches ``z_s min(d_s / d) * d``, so ``z(d) >= z_s min(d_s / d)``; and
    ``z(d) <= z_s max(d_s / d)`` likewise. ``margin`` keeps the answer clear of the solver's tolerance, so the
    bisection takes the same steps as solving every LP would (finish-time fairness' answer is the same bits)."""
    for z, ds in known:
        r = ds / d
        if z * r.min() >= 1.0 + margin:
            return True
        if z * r.max() <= 1.0 - margin:
            return False
    return None


def packed_max_min_fairness(
    throughputs: np.ndarray,
    gpus: np.ndarray,
    capacity: np.ndarray,
    job_class: np.ndarray,
    class_pair_throughputs: np.ndarray,
    weights: np.ndarray | None = None,
) -> RateLP:
    """Gavel's max-min fairness with space sharing: single columns and one column per pair of job classes and
    type (:func:`max_scaled_rate`), each job's throughput summed over both, normalised by its equal-share
    throughput alone. ``job_class``: each job's class (its model); ``class_pair_throughputs[a, b, k]``: a
    class-``a`` job's throughput on type ``k`` beside a class-``b`` job (each job's own GPU count is implied:
    give jobs with different counts different classes when their packed throughputs differ)."""
    t, g, c = check_inputs(throughputs, gpus, capacity)
    w = np.ones(len(t)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(t),) or (w <= 0).any():
        raise ValueError(f"weights: expected {len(t)} positive priority weights")
    demand = w * equal_share_throughputs(t, c) / g
    return max_scaled_rate(t, g, c, demand, job_class, class_pair_throughputs)


def packed_min_makespan(
    throughputs: np.ndarray,
    gpus: np.ndarray,
    capacity: np.ndarray,
    remaining: np.ndarray,
    pair_throughputs: np.ndarray,
    job_class: np.ndarray | None = None,
    grouped: bool = False,
    warm: WarmStart | None = None,
) -> tuple[float, RateLP]:
    """Gavel's minimize-total-duration policy with space sharing: the allocation over single jobs and pairs of
    jobs finishing every job's ``remaining`` steps soonest, and that makespan (s; ``inf`` as
    :func:`min_makespan`). ``pair_throughputs[a, b, k]``: job ``a``'s throughput on type ``k`` while it shares
    GPUs with job ``b`` (0: they cannot pair; pairs need equal GPU counts): one column per job pair and type.
    With ``job_class``, ``pair_throughputs[a, b, k]`` is job ``a``'s beside a job of class ``b`` (jobs x classes x
    types: a partner matters only by its class), solved by :func:`.gavel_partner_lp.packed_rate` with jobs x
    partner classes columns: the same optimum, found much faster for many jobs, though where the optimum is not
    unique the solver may return another of them (``grouped``: its LP over groups of alike jobs where that reaches
    the same optimum; ``warm``: from the previous LP's basis, :mod:`.gavel_warm`). ``RateLP.pairs`` are pairs of
    job indices either way."""
    from gpucluster_env.baselines.parts.gavel_partner_lp import packed_rate

    t, g, c = check_inputs(throughputs, gpus, capacity)
    rem = np.asarray(remaining, dtype=float)
    pt = np.asarray(pair_throughputs, dtype=float)
    n = len(t)
    if job_class is None:
        if pt.shape != (n, n, t.shape[1]):
            raise ValueError(f"pair_throughputs: expected shape ({n}, {n}, {t.shape[1]}), got {pt.shape}")
        r = max_scaled_rate(t, g, c, rem, np.arange(n), pt)
    else:
        r = packed_rate(t, g, c, rem, job_class, pt, grouped, warm)
    runnable = t.max(axis=1) > 0
    if r.z <= 0 or ((rem > 0) & ~runnable).any():
        return float("inf"), r
    return 1.0 / r.z, r
