"""The engine's performance model: the one implementation of each formula the engine, the agents, trace
annotation and the reproduction scripts evaluate.

* **Memory fit** (:func:`footprint_gb`, :func:`fits_memory`, :func:`fit_accumulation`): a worker's footprint at
  per-GPU batch ``B/s`` and the smallest power-of-two gradient accumulation ``s`` under which it fits beside
  what a GPU already holds.
* **Per-worker interference under MPS shares** (:func:`xi_table`): every value of
  :func:`gpucluster_env.interference.apply_shares` the engine can need (GPU type x own model x partner model x
  own share x partner share), computed once with that function, so a lookup *is* the formula's value.
* **A copy's constants** (:class:`CopyModel`, :func:`copy_model`): everything the iteration time of one gang
  (a job's copy on fixed GPUs at a fixed accumulation) needs that partners and shares cannot change.
* **Iteration time** (:func:`copy_iter_time`, :func:`paced_iter_time`): Castor eq. 1-3 for one copy given each
  worker's interference ratio, which slows the whole iteration (eq. 4-5: the micro-steps and the all-reduce)
  or, in interference scope "compute", the micro-steps only; a synchronous gang runs at the pace of its
  slowest worker, or, with sample stealing (Gimbal's LISS), at the pace where every worker finishes
  together. :func:`solo_iter_time` is the same model, in the same rounding order, for a job alone on one GPU
  type (the engine's solo times, trace annotation, offered load).

Eq. 2 (all-reduce time) and eq. 3 (overlap of the last micro-step with the all-reduce) themselves live in
:mod:`gpucluster_env.workloads` (:func:`~gpucluster_env.workloads.comm_time`,
:func:`~gpucluster_env.workloads.iteration_time`), in the model layer, because the catalog's calibration needs
them too; everything here calls them.

Bit-for-bit determinism: these functions are the only place the engine's floats come from, so the same inputs
give the same IEEE operations in the same order wherever the engine, an agent or a script asks.
"""

from __future__ import annotations

import numpy as np

from ..interference import apply_shares
from ..workloads import ModelProfile, comm_time, iteration_time

MEM_TOL_GB = 1e-9
"""Slack of the memory test (a footprint exactly at capacity fits despite rounding)."""


def footprint_gb(p: ModelProfile, batch: int, s: int) -> float:
    """GPU memory of one worker of model ``p`` at per-GPU batch ``batch`` and accumulation ``s`` (micro-batch
    ``batch / s``)."""
    return p.mem_base_gb + p.mem_per_sample_gb * (batch / s)


def fits_memory(footprint: float, room_gb: float, tol: float = MEM_TOL_GB) -> bool:
    """Whether a worker of ``footprint`` GB fits in ``room_gb`` GB (a GPU's memory less its tenant's)."""
    return footprint <= room_gb + tol


def fit_accumulation(p: ModelProfile, batch: int, room_gb: float, tol: float = MEM_TOL_GB) -> int | None:
    """Smallest power-of-two accumulation ``s <= batch`` under which a worker of ``p`` at per-GPU batch
    ``batch`` fits in ``room_gb`` GB; None when none does."""
    s = 1
    while s <= batch:
        if fits_memory(footprint_gb(p, batch, s), room_gb, tol):
            return s
        s *= 2
    return None


def accumulations(p: ModelProfile, batch: int, room_gb: float) -> list[int]:
    """Every power-of-two accumulation ``s <= batch`` that fits in ``room_gb`` (the footprint falls with
    ``s``, so: from :func:`fit_accumulation` up)."""
    s = fit_accumulation(p, batch, room_gb)
    out: list[int] = []
    while s is not None and s <= batch:
        out.append(s)
        s *= 2
    return out


def xi_table(xi_free: np.ndarray, demand: np.ndarray, units: int) -> np.ndarray:
    """Every worker interference ratio under MPS shares, indexed ``[type, own model + 1, partner model + 1,
    own share, partner share]`` (shares in steps of the engine's share grid, ``0..units``, the share being
    ``steps / units``: ``k / 10`` on the 10% grid, ``2k / 20``, the same double, on the 5% one; partner model
    0: no partner; own model 0 is padding), computed elementwise by
    :func:`~gpucluster_env.interference.apply_shares` on ``xi_free[type, own, partner]`` (free-competition
    ratios) and ``demand[type, own]`` (GPU demand). The engine's only source of worker ratios."""
    nt, nm = xi_free.shape[0], xi_free.shape[1]
    t_ = np.arange(nt).reshape(nt, 1, 1, 1, 1)
    m1 = np.arange(nm + 1).reshape(1, nm + 1, 1, 1, 1)
    pm1 = np.arange(nm + 1).reshape(1, 1, nm + 1, 1, 1)
    shares = np.arange(units + 1) / units  # correctly rounded: steps summing to ``units`` give 1.0
    m = np.maximum(m1 - 1, 0)
    has = pm1 > 0
    xi0 = xi_free[t_, m, np.where(has, pm1 - 1, 0)]
    with np.errstate(divide="ignore", invalid="ignore"):  # own share 0 never occurs
        return apply_shares(xi0, demand[t_, m], shares.reshape(1, 1, 1, -1, 1), shares.reshape(1, 1, 1, 1, -1),
                            has)


class CopyModel:
    """The constants of one copy's iteration time: a gang of ``n`` workers of a model at per-GPU batch
    ``batch`` and accumulation ``s`` on GPUs with per-worker speeds ``spd``, over ``n_nodes`` nodes.

    ``homog``: one GPU type (then ``t`` is it and ``speed`` its speed as a Python float; ``t`` is -1
    otherwise). ``tcnf`` = ``alpha + beta * B/s`` (numerator of the micro-step's compute time, a Python
    float); for ``n > 1`` ``steal_num`` = ``n alpha + beta (B/s) n`` (LISS numerator) and ``comm`` (eq. 2;
    0 for one worker). ``comm_xi``: interference also multiplies the all-reduce (``interference_scope ==
    "iteration"``). ``min_mem``: smallest GPU memory; ``solo_iter``: the iteration time with every worker
    at xi = 1."""

    __slots__ = ("n", "s", "t", "homog", "stealing", "comm_xi", "speed", "tcnf", "steal_num", "alpha", "spd",
                 "comm", "delta", "n_nodes", "min_mem", "solo_iter")

    n: int
    s: int
    t: int
    homog: bool
    stealing: bool
    comm_xi: bool
    speed: float
    tcnf: float
    steal_num: float
    alpha: float
    spd: np.ndarray
    comm: float
    delta: float
    n_nodes: int
    min_mem: float
    solo_iter: float


def copy_model(
    p: ModelProfile, batch: int, s: int, spd: np.ndarray, t: int, n_nodes: int, intra_bw: float,
    inter_bw: float, min_mem: float, stealing: bool, comm_xi: bool = True, scale: float = 1.0,
) -> CopyModel:
    """The :class:`CopyModel` of a copy of model ``p`` (per-GPU batch ``batch``, accumulation ``s``) whose
    workers have speeds ``spd`` (a float64 array, one per GPU); ``t``: the one GPU type of the copy, or -1 when
    mixed; ``intra_bw``: the slowest intra-node bandwidth of its GPU types; ``min_mem``: the smallest GPU
    memory; ``comm_xi``: whether interference multiplies the all-reduce too (Castor eq. 4-5); ``scale``: the
    measured over the modelled solo time of the gang (:meth:`gpucluster_env.catalog.Catalog.solo_scale`), which
    multiplies the compute and all-reduce terms alike (eq. 3 is homogeneous of degree 1; 1.0 changes nothing,
    bit for bit)."""
    k = CopyModel()
    n = len(spd)
    k.n, k.s, k.t, k.homog, k.stealing, k.comm_xi = n, s, t, t >= 0, stealing, comm_xi
    k.n_nodes, k.min_mem, k.delta, k.alpha = n_nodes, min_mem, p.delta, p.alpha_s * scale
    k.spd = spd
    b = batch / s
    k.tcnf = (p.alpha_s + p.beta_s * b) * scale  # as solo_iter_time's numerator
    k.steal_num = (n * p.alpha_s + p.beta_s * b * n) * scale
    k.speed = float(spd[0]) if t >= 0 else float("nan")
    k.comm = comm_time(p, n, n_nodes, intra_bw, inter_bw) * scale
    k.solo_iter = copy_iter_time(k, 1.0)
    return k


def copy_iter_time(k: CopyModel, xi: np.ndarray | float) -> float:
    """Iteration time of the copy ``k`` when each worker ``i`` is slowed by its interference ratio ``xi_i``
    (one per worker, or one for all): Castor eq. 1-3 and 4-5.

    Worker ``i`` computes at ``v_i = speed_i / xi_i``; the micro-step takes ``(alpha + beta B/s) / min v``
    (the slowest worker paces the gang), or with LISS (``k.stealing``) the per-worker batches ``b_i`` make
    ``(alpha + beta b_i) / v_i`` equal with ``sum b_i = n B/s`` -- no worker takes fewer than 0 samples, and
    an empty one still pays its fixed alpha, so never below ``alpha / min v``. The all-reduce is multiplied by
    ``max xi_i`` when ``k.comm_xi`` (interference scope "iteration"), then eq. 3. For one GPU type without
    LISS this is exactly eq. 4-5, ``t_iter(xi = 1) * max xi`` (eq. 3 is homogeneous of degree 1), up to
    rounding."""
    if type(xi) is float and not (k.stealing and k.n > 1):
        vmin = k.speed / xi if k.homog else float((k.spd / xi).min())
        return paced_iter_time(k, vmin, xi if k.comm_xi else 1.0)
    xa = np.asarray(xi, dtype=float)
    v = k.spd / xa
    vmin = float(v.min())
    xc = float(xa.max()) if k.comm_xi else 1.0
    if k.stealing and k.n > 1:
        tc = max(k.steal_num / float(v.sum()), k.alpha / vmin)
        return float(iteration_time(tc, k.s, k.comm * xc, k.delta))
    return paced_iter_time(k, vmin, xc)


def paced_iter_time(k: CopyModel, vmin: float, xcomm: float) -> float:
    """Iteration time of the copy ``k`` paced by its slowest worker, which computes at ``vmin`` (speed / xi),
    with the all-reduce multiplied by ``xcomm``: ``(alpha + beta B/s) / vmin`` per micro-step, then eq. 3.
    One worker: ``s (alpha + beta B/s) / vmin``, the same order as :func:`solo_iter_time`. For one GPU type,
    ``vmin = speed / max xi`` exactly (division rounds monotonically), which the engine's hot path uses."""
    return float(iteration_time(k.tcnf / vmin, k.s, k.comm * xcomm, k.delta))


def solo_iter_time(
    p: ModelProfile, batch: int, s: int, speed: float, n: int, n_nodes: int, intra_bw: float, inter_bw: float,
    scale: float = 1.0,
) -> float:
    """Iteration time of a job of model ``p`` alone on ``n`` GPUs of one type (relative ``speed``) over
    ``n_nodes`` nodes at accumulation ``s``: eq. 1 (``t_comp(B/s)``), eq. 2 and eq. 3, both terms multiplied by
    ``scale`` (measured over modelled, :func:`copy_model`)."""
    tc = (p.alpha_s + p.beta_s * (batch / s)) * scale / speed  # ModelProfile.t_comp, scaled
    return iteration_time(tc, s, comm_time(p, n, n_nodes, intra_bw, inter_bw) * scale, p.delta)
