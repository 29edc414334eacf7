"""Gavel's packed LP (Narayanan et al., OSDI'20 §3.1) over distinct jobs, with one column per job, partner class
and GPU type instead of one per pair of jobs.

Gavel's packed policies give every pair of jobs that may share GPUs its own time fraction on each type: with
``n`` jobs that all differ (minimize-makespan: every job's steps left differ) that is about ``n^2 / 2`` columns
per type -- a million at 2,048 jobs. But a job's throughput beside a partner depends on the partner only through
the partner's *class* (model, batch and GPU count: what sets the interference), so the LP needs only

* ``u[j, B, k]``: the time job ``j`` spends on type-``k`` GPUs beside some job of class ``B``,

with each job's throughput ``sum_k T[j, k] x[j, k] + sum_{B, k} P[j, B, k] u[j, B, k]``, its time ``sum x + sum u
<= 1``, a type's GPUs ``sum_j g_j x[j, k] + sum g_j u[j, B, k] / 2 <= c_k`` (each pair's time is counted once per
member), and two conditions that make the ``u`` a set of job pairs:

* classes ``A != B``: ``sum_{j in A} u[j, B, k] = sum_{i in B} u[i, A, k]`` (both sides count the same pair time);
  then a non-negative ``y[j, i, k]`` with those row and column sums exists (a transportation problem with equal
  totals; :func:`_transport` builds one);
* within a class ``A``: ``2 u[j, A, k] <= S[A, k] = sum_{i in A} u[i, A, k]`` (no job is paired with itself more
  than with all the others); then a symmetric ``y`` with zero diagonal and those row sums exists
  (:func:`_within` builds one).

Conversely every pair allocation gives such ``u``, so this LP has the same optimum as Gavel's pair LP, with
``n x (partner classes) x types`` columns (Gavel's own job-type packing formulation has the same columns but
forces equal ``u`` within a class). The job pairs it returns are the transport plans above: at most about one
pair per job and partner class.

Groups (``grouped=True``, the policies' ``pair_lp="groups"``). No allocation gives job ``j`` a rate above its best
column all the time, so ``z <= min_j best_j / d_j`` (``best_j``: its largest throughput alone or beside any
class). Jobs of one class with the same throughputs form a group ``G`` with demand ``D_G = sum d_j``; the same
LP with one row per group (time ``D_G / max d_j``, within-class rows ``2 (max d_j / D_G) u - S <= 0``) has
allocations that split into the LP over jobs' (job ``j`` gets ``d_j / D_G`` of the group's throughput, within its
time and within-class shares), so where its ``z`` reaches that bound it is an optimum of the LP over jobs; else
the LP over jobs is solved. On a loaded month the bound is the optimum at every LP captured (the slowest job
alone decides, the other jobs' rows are loose), and thousands of jobs make tens of groups. The group's time goes
to its jobs as a vertex of the LP over jobs would give it (:func:`_corner`: most jobs in one column), or evenly
(:func:`_even`) where that breaks a row.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from gpucluster_env.baselines.parts import gavel_highs
from gpucluster_env.baselines.parts.gavel_lp_inputs import RateLP, check_inputs
from gpucluster_env.baselines.parts.gavel_warm import WarmStart, code

TOL = 1e-9
"""Time fractions at or below this are read as zero when pairs are built from the solution."""

BOUND_RTOL = 1e-7
"""How far below the bound on every allocation's ``z`` (relatively) the grouped LP's may fall and still count as
reaching it (HiGHS' own feasibility tolerance is 1e-7)."""


class Rows(NamedTuple):
    """What a row of the LP stands for when it is not one job (a group of alike jobs, :func:`_grouped`): its
    time (``sum x + sum u <= time``, each column at most ``time``), its jobs, and the coefficient of its
    within-class ``u`` in ``coef u - S <= 0`` (2 for one job)."""

    time: np.ndarray
    members: np.ndarray
    within: np.ndarray


def _partner_columns(g: np.ndarray, cls: np.ndarray, pt: np.ndarray, members: np.ndarray) -> tuple[np.ndarray, ...]:
    """The ``u`` columns worth having: (row, partner class, type) where the row's jobs gain beside that class,
    some job of that class gains beside the row's class, the GPU counts match and (within a class) the class has
    two jobs (``members``: each row's jobs)."""
    n, nc, nk = pt.shape
    back = np.zeros((nc, nc, nk))
    np.maximum.at(back, cls, pt)  # back[B, A, k]: best of a class-B job beside class A on type k
    cnt = np.bincount(cls, weights=members, minlength=nc)
    gcls = np.zeros(nc)
    gcls[cls] = g
    ok = (pt > 0) & (back[:, cls, :].transpose(1, 0, 2) > 0) & (gcls[None, :, None] == g[:, None, None])
    ok[np.arange(n), cls, :] &= (cnt[cls] >= 2)[:, None]
    return np.nonzero(ok)


def _solve(t: np.ndarray, g: np.ndarray, c: np.ndarray, d: np.ndarray, cls: np.ndarray, pt: np.ndarray,
           spec: Rows | None = None, zscale: float | None = None, warm: WarmStart | None = None
           ) -> tuple[float, np.ndarray, tuple[np.ndarray, ...], np.ndarray]:
    """The LP of the module docstring: (z, x, u's (row, class, type) indices, u). ``spec``: what each row stands
    for (default: one job); ``zscale``: the rates are divided by ``zscale`` times the demand (default: the
    largest demanded rate a job can reach, so every coefficient is at most 1); ``warm``: :mod:`.gavel_warm`."""
    import scipy.sparse as sp  # here, not at the top: importing scipy costs time a run needs only for an LP

    n, nk = t.shape
    spec = Rows(np.ones(n), np.ones(n), np.full(n, 2.0)) if spec is None else spec
    uj, ub, uk = _partner_columns(g, cls, pt, spec.members)
    nu = len(uj)
    same = ub == cls[uj]
    skey, sinv = np.unique(ub[same] * nk + uk[same], return_inverse=True)  # one S per (class, type) paired within
    lo, hi = np.minimum(cls[uj], ub), np.maximum(cls[uj], ub)
    bkey, binv = np.unique((lo[~same] * pt.shape[1] + hi[~same]) * nk + uk[~same], return_inverse=True)
    ns, ncol_s = n * nk, len(skey)
    ucol = ns + np.arange(nu)
    scol = ns + nu + np.arange(ncol_s)
    zcol = ns + nu + ncol_s
    best = t.max(axis=1)
    np.maximum.at(best, uj, pt[uj, ub, uk])
    served = (d > 0) & (best > 0)
    if not served.any():
        return 0.0, np.zeros((n, nk)), (uj, ub, uk), np.zeros(nu)
    scale = np.zeros(n)
    scale[served] = 1.0 / d[served]
    bmax = float((best * scale).max()) if zscale is None else zscale
    scale /= bmax
    jj, kk = np.repeat(np.arange(n), nk), np.tile(np.arange(nk), n)
    srv = np.flatnonzero(served)
    wj = np.flatnonzero(same)
    r_within = 2 * n + nk + np.arange(len(wj))  # 2 u[j, A, k] - S[A, k] <= 0, one row per such column
    rows = np.concatenate([jj, uj, srv, n + jj, n + uj, 2 * n + kk, 2 * n + uk, r_within, r_within])
    cols = np.concatenate([np.arange(ns), ucol, np.full(len(srv), zcol), np.arange(ns), ucol, np.arange(ns), ucol,
                           ucol[wj], scol[sinv]])
    vals = np.concatenate([-t[jj, kk] * scale[jj], -pt[uj, ub, uk] * scale[uj], np.ones(len(srv)), np.ones(ns),
                           np.ones(nu), g[jj], 0.5 * g[uj], spec.within[uj[wj]], np.full(len(wj), -1.0)])
    nub = 2 * n + nk + len(wj)
    a_ub = sp.csr_array((vals, (rows, cols)), shape=(nub, zcol + 1))
    b_ub = np.concatenate([np.zeros(n), spec.time, c, np.zeros(len(wj))])
    # equalities: balance of class pairs A < B (+ A's side, - B's side), and S[A, k] = sum of u[j, A, k]
    side = np.where(cls[uj[~same]] == lo[~same], 1.0, -1.0)
    erows = np.concatenate([binv, len(bkey) + np.arange(ncol_s), len(bkey) + sinv])
    ecols = np.concatenate([ucol[~same], scol, ucol[wj]])
    evals = np.concatenate([side, np.ones(ncol_s), -np.ones(len(wj))])
    neq = len(bkey) + ncol_s
    a_eq = sp.csr_array((evals, (erows, ecols)), shape=(neq, zcol + 1)) if neq else None
    ub_ = np.ones(zcol + 1)
    ub_[:ns] = np.where(t[jj, kk] > 0, spec.time[jj], 0.0)
    ub_[ns:ns + nu] = spec.time[uj]
    ub_[ns + nu:] = np.inf
    cost = np.where(np.arange(zcol + 1) == zcol, -1.0, 0.0)
    # as linprog(method="highs"), same bits
    x, why = gavel_highs.minimize(cost, a_ub, b_ub, ub_, a_eq, np.zeros(neq) if neq else None, solver=None, warm=warm,
                                  names=_names(warm, n, nk, pt.shape[1], (uj, ub, uk), wj, skey, bkey))
    if x is None:
        raise RuntimeError(f"Gavel packed LP failed: {why}")
    v = np.maximum(x, 0.0) + 0.0  # + 0.0: no negative zeros
    return float(x[zcol] * bmax), np.minimum(v[:ns].reshape(n, nk), spec.time[:, None]), (uj, ub, uk), v[ns:ns + nu]


def _names(warm: WarmStart | None, n: int, nk: int, nc: int, ucols: tuple[np.ndarray, ...], wj: np.ndarray,
           skey: np.ndarray, bkey: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The codes of :func:`_solve`'s columns (x, u, S, z) and rows (epigraph, time, capacity, within-class, class
    pair balance, S) by job id and stable class id (:mod:`.gavel_warm`), in the LP's order; None without
    ``warm``. The LP's rows must be jobs (one id each)."""
    if warm is None:
        return None
    jid, cid = warm.jobs, warm.classes
    uj, ub, uk = ucols
    ks = np.arange(nk)
    sa, sk = skey // nk, skey % nk
    ba, bb, bk = bkey // nk // nc, bkey // nk % nc, bkey % nk
    cols = [code(0, np.repeat(jid, nk), 0, np.tile(ks, n)), code(1, jid[uj], cid[ub], uk), code(2, 0, cid[sa], sk),
            code(3, 0, 0, np.zeros(1, dtype=np.int64))]
    rows = [code(0, jid, 0, 0), code(1, jid, 0, 0), code(2, 0, 0, ks), code(3, jid[uj[wj]], cid[ub[wj]], uk[wj]),
            code(4, np.minimum(cid[ba], cid[bb]), np.maximum(cid[ba], cid[bb]), bk), code(5, 0, cid[sa], sk)]
    return np.concatenate(cols), np.concatenate(rows)


def _grouped(t: np.ndarray, g: np.ndarray, c: np.ndarray, d: np.ndarray, cls: np.ndarray, pt: np.ndarray
             ) -> tuple[float, np.ndarray, tuple[np.ndarray, ...], np.ndarray] | None:
    """The LP over groups of alike jobs, each group's time split among its jobs in proportion to their steps
    left (module docstring, "Groups"), when it reaches the bound no allocation can pass: (z, x, u's (job, class,
    type) indices, u) as :func:`_solve`; None when it falls short or the jobs hardly group."""
    best = np.maximum(t.max(axis=1), pt.max(axis=(1, 2)) if pt.size else 0.0)
    sidx = np.flatnonzero((d > 0) & (best > 0))
    if len(sidx) < 2:
        return None
    bound = float((best[sidx] / d[sidx]).min())  # a job's rate is at most its best column all the time
    _, first, inv = np.unique(np.column_stack([cls[sidx], t[sidx]]), axis=0, return_index=True,
                              return_inverse=True)
    inv = inv.reshape(-1)
    ng = len(first)
    if ng > len(sidx) // 2:
        return None
    ds = d[sidx]
    dsum = np.bincount(inv, weights=ds, minlength=ng)
    dmax = np.zeros(ng)
    np.maximum.at(dmax, inv, ds)
    members = np.bincount(inv, minlength=ng)
    rep = sidx[first]
    rows = Rows(dsum / dmax, members.astype(float), 2.0 * dmax / dsum)
    z, xg, (gj, gb, gk), ug = _solve(t[rep], g[rep], c, dsum, cls[rep], pt[rep], rows, zscale=bound)
    if not z >= bound * (1.0 - BOUND_RTOL):
        return None
    order = np.argsort(inv, kind="stable")  # the served jobs group by group
    groups = np.split(sidx[order], np.cumsum(members)[:-1])
    out = _corner(t, pt, d, groups, rep, xg, (gj, gb, gk), ug, cls)
    if out is None:
        out = _even(t, d, groups, xg, (gj, gb, gk), ug)
    return (z, *out)


def _even(t: np.ndarray, d: np.ndarray, groups: list[np.ndarray], xg: np.ndarray, gcols: tuple[np.ndarray, ...],
          ug: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...], np.ndarray]:
    """Each group's columns split among its jobs in proportion to their steps left: (x, u's (job, class, type)
    indices, u); every row of the LP over jobs holds (module docstring, "Groups")."""
    gj, gb, gk = gcols
    x = np.zeros_like(t)
    cols: list[np.ndarray] = []
    jobs: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    for grp, members in enumerate(groups):
        share = d[members] / d[members].sum()
        x[members] = xg[grp] * share[:, None]
        for i in np.flatnonzero((gj == grp) & (ug > 0)).tolist():
            cols.append(np.full(len(members), i))
            jobs.append(members)
            vals.append(ug[i] * share)
    col = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    uj = np.concatenate(jobs) if jobs else np.zeros(0, dtype=np.int64)
    return x, (uj, gb[col], gk[col]), (np.concatenate(vals) if vals else np.zeros(0))


def _corner(t: np.ndarray, pt: np.ndarray, d: np.ndarray, groups: list[np.ndarray], rep: np.ndarray,
            xg: np.ndarray, gcols: tuple[np.ndarray, ...], ug: np.ndarray, cls: np.ndarray
            ) -> tuple[np.ndarray, tuple[np.ndarray, ...], np.ndarray] | None:
    """Each group's columns handed to its jobs whole where they can be, as at a vertex of the LP over jobs: the
    jobs by steps left (most first) and the single and cross-class columns by rate (fastest first) laid end to end
    by their parts of the group's demand and of those columns' throughput (north-west corner), so each job gets
    its part of it from one column or two; within-class pair time split evenly (:func:`_even`). (x, u's (job,
    class, type) indices, u), or None where a job's time or a within-class pair time would break a row of the LP
    over jobs."""
    gj, gb, gk = gcols
    n, nk = t.shape
    x = np.zeros((n, nk))
    parts: list[tuple[np.ndarray, ...]] = []
    for grp, members in enumerate(groups):
        jobs = members[np.argsort(-d[members], kind="stable")]
        kx = np.flatnonzero(xg[grp] > TOL)
        ui = np.flatnonzero((gj == grp) & (ug > TOL))
        inside = gb[ui] == cls[rep[grp]]  # within the class: split evenly (its row bounds every share)
        share = d[members] / d[members].sum()
        for i in ui[inside].tolist():
            parts.append((members, np.full(len(members), i), ug[i] * share))
        ui = ui[~inside]
        rate = np.concatenate([t[rep[grp], kx], pt[rep[grp], gb[ui], gk[ui]]])
        val = np.concatenate([xg[grp, kx], ug[ui]])
        ident = np.concatenate([-1 - kx, ui])  # < 0: the single column of type -1 - ident
        o = np.argsort(-rate, kind="stable")
        rate, val, ident = rate[o], val[o], ident[o]
        w = float((rate * val).sum())
        if not len(rate) or w <= 0:
            continue
        cw, cs = np.cumsum(rate * val) / w, np.cumsum(d[jobs]) / d[jobs].sum()
        cw[-1] = cs[-1] = 1.0
        cuts = np.unique(np.concatenate([[0.0], cw, cs]))
        mid = 0.5 * (cuts[:-1] + cuts[1:])
        ji = np.minimum(np.searchsorted(cs, mid), len(jobs) - 1)
        ci = np.minimum(np.searchsorted(cw, mid), len(rate) - 1)
        parts.append((jobs[ji], ident[ci], np.diff(cuts) * w / rate[ci]))
    if not parts:
        return None
    job, ident, tm = (np.concatenate(p) for p in zip(*parts, strict=True))
    single = ident < 0
    np.add.at(x, (job[single], -1 - ident[single]), tm[single])
    col, uj, u = ident[~single], job[~single], tm[~single]
    busy = x.sum(axis=1) + np.bincount(uj, weights=u, minlength=n)
    within = gb[col] == cls[uj]
    total = np.zeros((cls.max() + 1, nk))
    np.add.at(total, (gb[col[within]], gk[col[within]]), u[within])
    if (busy > 1.0 + TOL).any() or (2 * u[within] > total[gb[col[within]], gk[col[within]]] + TOL).any():
        return None
    return x, (uj, gb[col], gk[col]), u


def _transport(left: list[tuple[int, float]], right: list[tuple[int, float]]) -> list[tuple[int, int, float]]:
    """Job pairs with time ``y`` whose sums per job are the given times (north-west corner rule): ``left`` and
    ``right`` (job, time) lists of two classes with (nearly) equal totals."""
    out: list[tuple[int, int, float]] = []
    i = j = 0
    ra = left[0][1] if left else 0.0
    rb = right[0][1] if right else 0.0
    while i < len(left) and j < len(right):
        m = min(ra, rb)
        if m > TOL:
            out.append((left[i][0], right[j][0], m))
        ra -= m
        rb -= m
        if ra <= rb:
            i += 1
            ra = left[i][1] if i < len(left) else 0.0
        else:
            j += 1
            rb = right[j][1] if j < len(right) else 0.0
    return out


def _within(jobs: list[tuple[int, float]]) -> list[tuple[int, int, float]]:
    """Job pairs within one class whose times per job are the given ones, no job with itself: the times laid
    end to end around a circle of length ``S``, each point paired with the point ``S / 2`` ahead (a job's time is at
    most ``S / 2``, so it never meets itself but at a boundary within tolerance, which is dropped)."""
    total = sum(u for _, u in jobs)
    if total <= TOL:
        return []
    half = total / 2.0
    ends = np.cumsum([u for _, u in jobs])
    cuts = np.unique(np.concatenate([[0.0], ends[ends < half], ends[ends > half] - half, [half]]))
    out: list[tuple[int, int, float]] = []
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        mid = 0.5 * (a + b)
        p = jobs[min(int(np.searchsorted(ends, mid, side="right")), len(jobs) - 1)][0]
        q = jobs[min(int(np.searchsorted(ends, mid + half, side="right")), len(jobs) - 1)][0]
        if b - a > TOL and p != q:
            out.append((p, q, float(b - a)))
    return out


def _pairs(cls: np.ndarray, nk: int, cols: tuple[np.ndarray, ...], u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The job pairs realizing the partner-class times ``u`` (module docstring): (P x 2 jobs, P x types)."""
    uj, ub, uk = cols
    on = np.flatnonzero(u > TOL)
    by: dict[tuple[int, int, int], list[tuple[int, float]]] = {}
    for i in on.tolist():
        by.setdefault((int(cls[uj[i]]), int(ub[i]), int(uk[i])), []).append((int(uj[i]), float(u[i])))
    y: dict[tuple[int, int], np.ndarray] = {}
    for (a, b, k), side in sorted(by.items()):
        if a > b:
            continue
        plan = _within(side) if a == b else _transport(side, by.get((b, a, k), []))
        for p, q, v in plan:
            key = (min(p, q), max(p, q))
            y.setdefault(key, np.zeros(nk))[k] += v
    keys = sorted(y)
    return (np.array(keys, dtype=np.int64).reshape(len(keys), 2),
            np.array([y[key] for key in keys]).reshape(len(keys), nk))


def packed_rate(throughputs: np.ndarray, gpus: np.ndarray, capacity: np.ndarray, demand: np.ndarray,
                job_class: np.ndarray, partner_throughputs: np.ndarray, grouped: bool = False,
                warm: WarmStart | None = None) -> RateLP:
    """Maximize ``z`` such that every job with ``demand_j > 0`` and some positive throughput reaches
    ``thr_j >= z * demand_j``, single jobs and pairs of jobs sharing GPUs (module docstring).

    ``job_class``: each job's class (jobs of one class must ask the same GPU count; pairs need equal counts);
    ``partner_throughputs[j, B, k]``: job ``j``'s throughput on type ``k`` beside a job of class ``B`` (0: they do
    not pair there; a pair runs where both members have a positive entry). ``grouped``: first the LP over groups
    of alike jobs, kept where it reaches the bound no allocation passes (module docstring, "Groups"). ``warm``
    (labelled with this LP's job ids and class keys, :meth:`.gavel_warm.WarmStart.label`): the LP over jobs starts
    from the previous LP's basis (the same optimum ``z``; where it is not unique, maybe another allocation)."""
    t, g, c = check_inputs(throughputs, gpus, capacity)
    n, nk = t.shape
    d = np.asarray(demand, dtype=float).reshape(-1)
    if len(d) != n or (d < 0).any() or not np.isfinite(d).all():
        raise ValueError(f"demand: expected {n} finite values >= 0 (one per job)")
    cls = np.asarray(job_class, dtype=np.int64).reshape(-1)
    if cls.shape != (n,) or (cls < 0).any():
        raise ValueError(f"job_class: expected {n} class ids >= 0")
    pt = np.asarray(partner_throughputs, dtype=float)
    nc = int(cls.max()) + 1 if n else 0
    if pt.ndim != 3 or pt.shape[0] != n or pt.shape[1] < nc or pt.shape[2] != nk:
        raise ValueError(f"partner_throughputs: expected shape ({n}, classes, {nk}), got {pt.shape}")
    if (pt < 0).any() or not np.isfinite(pt).all():
        raise ValueError("partner_throughputs: must be finite and >= 0")
    gc = np.full(pt.shape[1], -1.0)
    gc[cls] = g
    if (gc[cls] != g).any():
        raise ValueError("job_class: jobs of one class must ask the same GPU count")
    out = _grouped(t, g, c, d, cls, pt) if grouped else None
    z, x, cols, u = _solve(t, g, c, d, cls, pt, warm=warm) if out is None else out
    pairs, y = _pairs(cls, nk, cols, u)
    return RateLP(z, x, pairs, y)
