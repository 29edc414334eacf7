"""The performance model: the one implementation of each formula of a training job's memory and speed, which
the catalog, the job-table checks, the engine, the environment (its numba kernel included), the agents and trace
annotation all call.

* **Memory fit** (:func:`worker_memory_gb`, :func:`footprint_gb`, :func:`fits_memory`,
  :func:`fit_accumulation`): a worker's footprint ``mem_base + mem_per_sample * B/s`` at micro-batch ``B/s``,
  whether it fits in the room a GPU has left (with :data:`MEM_TOL_GB` of slack), and the smallest
  power-of-two gradient accumulation ``s`` under which it does; :func:`memory_intensity`, the activation share
  of the footprint (an interference feature). :func:`worker_memory_gb` and :func:`fits_memory` are plain
  arithmetic on floats or numpy arrays, and the environment's kernel compiles the same two functions with
  numba, so every caller gets the same bits.
* **Iteration time alone** (Castor eq. 1-3): :func:`compute_time` (eq. 1), :func:`comm_time` (eq. 2) and
  :func:`iteration_time` (eq. 3); :func:`solo_iter_time` composes them for a job alone on one GPU type.
* **Interference under MPS shares** (Castor eq. 4-5 with Gimbal's shares): :func:`apply_shares` turns a pair's
  free-competition ratio (:mod:`gpucluster_env.interference`) into a worker's ratio under shares;
  :func:`xi_table` tabulates every value the engine can need, computed once with that function.
* **A copy's iteration time** (:class:`CopyModel`, :func:`copy_model`, :func:`copy_iter_time`,
  :func:`paced_iter_time`): a gang's constants, then eq. 1-3 given each worker's interference ratio, which slows
  the whole iteration or, in interference scope "compute", the micro-steps only; a synchronous gang runs at the
  pace of its slowest worker, or, with sample stealing (Gimbal's LISS), where every worker finishes together.

    t_comp(b)   = (alpha + beta * b) / speed_k                                   (Castor eq. 1)
    t_comm(n,m) = 0 if n == 1, else alpha_comm * (1 + log2 n) * m + 2 (n-1)/n * M / bw  (eq. 2)
    t_iter      = (s-1) * t_comp(B/s) + (t_comp(B/s)^delta + t_comm^delta)^(1/delta)      (eq. 3)

``bw`` is the intra-node GPU bandwidth of the slowest type involved when the job sits on one node, else the
smaller of that and the cluster's inter-node bandwidth; every extra node adds one ``alpha_comm`` of latency.

Bit-for-bit determinism: these functions are the only place these floats come from, so the same inputs give the
same IEEE operations in the same order wherever the engine, an agent or a script asks.
"""

from __future__ import annotations

import math

import numpy as np

from .workloads import ModelProfile

MEM_TOL_GB = 1e-9
"""Slack of the memory test (a footprint exactly at capacity fits despite rounding)."""


def worker_memory_gb(base_gb: float | np.ndarray, per_sample_gb: float | np.ndarray,
                     micro_batch: float | np.ndarray) -> float | np.ndarray:
    """GPU memory of one worker processing ``micro_batch`` samples per micro-step: a model's fixed part
    (weights, gradients, optimizer state) plus its activations per sample (floats or numpy arrays)."""
    return base_gb + per_sample_gb * micro_batch


def footprint_gb(p: ModelProfile, batch: int, s: int) -> float:
    """GPU memory of one worker of model ``p`` at per-GPU batch ``batch`` and accumulation ``s`` (micro-batch
    ``batch / s``)."""
    return worker_memory_gb(p.mem_base_gb, p.mem_per_sample_gb, batch / s)


def fits_memory(footprint: float | np.ndarray, room_gb: float | np.ndarray,
                tol: float = MEM_TOL_GB) -> bool | np.ndarray:
    """Whether a worker of ``footprint`` GB fits in ``room_gb`` GB (a GPU's memory less its tenant's)."""
    return footprint <= room_gb + tol


def memory_intensity(base_gb: float, per_sample_gb: float, batch: float) -> float:
    """The activation share of a worker's footprint at micro-batch ``batch`` (the memory-intensity feature of
    the interference models), from a model's ``mem_base_gb`` and ``mem_per_sample_gb``."""
    act = per_sample_gb * batch
    return act / (base_gb + act)


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


def compute_time(
    p: ModelProfile, per_gpu_batch: float | np.ndarray, speed: float | np.ndarray, scale: float = 1.0
) -> float | np.ndarray:
    """Compute time of one micro-step of ``per_gpu_batch`` samples (Castor eq. 1) on a GPU of relative
    ``speed``; ``scale``: the measured over the modelled solo time where a measurement exists
    (:meth:`gpucluster_env.catalog.Catalog.solo_scale`; 1.0 changes nothing, bit for bit)."""
    return (p.alpha_s + p.beta_s * per_gpu_batch) * scale / speed


def comm_time(
    model: ModelProfile, n_gpus: int, n_nodes: int, intra_bw_gbps: float, inter_bw_gbps: float
) -> float:
    """All-reduce time of one iteration (Castor eq. 2) for ``n_gpus`` workers over ``n_nodes`` nodes."""
    if n_gpus <= 1:
        return 0.0
    bw = intra_bw_gbps if n_nodes <= 1 else min(intra_bw_gbps, inter_bw_gbps)
    ring = 2.0 * (n_gpus - 1) / n_gpus * (model.grad_mb / 1000.0) / bw
    return model.alpha_comm_s * (1.0 + math.log2(n_gpus)) * max(1, n_nodes) + ring


def iteration_time(t_comp_micro: float, accumulation: int, t_comm: float, delta: float) -> float:
    """Castor eq. 3: ``s-1`` micro-steps of compute, then the last one overlapped with the all-reduce."""
    if t_comm <= 0.0:
        return accumulation * t_comp_micro
    overlap = (t_comp_micro**delta + t_comm**delta) ** (1.0 / delta)
    return (accumulation - 1) * t_comp_micro + overlap


MEM_CONTENTION = 0.1
"""Fraction of a pair's free-competition slowdown ``xi_free - 1`` that MPS shares cannot remove: the
memory-contention term (memory bandwidth, L2 and the copy engines are shared whatever the SM limits). No data
set at hand measures pairs under split shares, so the size is a modelling assumption, chosen small as DESIGN.md
asks: with shares summing to at most 100% a pair that slows its partner 2x at free competition still costs it
10%. Gimbal Fig. 2a (four of five harmful pairs beat running in series at a 60% limit) is the qualitative
target."""


def apply_shares(
    xi_free: np.ndarray | float,
    demand_self: np.ndarray | float,
    share_self: np.ndarray | float,
    share_partner: np.ndarray | float,
    has_partner: np.ndarray | bool = True,
) -> np.ndarray | float:
    """Interference ratio of a worker under MPS active-thread shares (the one implementation; the engine
    tabulates it with :func:`xi_table`).

    A worker of demand ``d`` (the fraction of the GPU's SMs it keeps busy alone) at own share ``p`` uses
    ``u = min(p, d)`` of the GPU; its partner may use up to its share ``q``. The fraction of the worker's
    demand that the partner may contend for is the overlap ``o = max(0, u + q - 1) / d`` (1 at 100% + 100%,
    0 when ``p + q <= 1``). With ``m`` = :data:`MEM_CONTENTION`::

        pressure(p) = 1 + (xi_free - 1) * (m + (1 - m) * o(p)) * has_partner
        xi_raw(p)   = pressure(p) / min(1, p / d)
        xi          = max(xi_raw(p), xi_raw(1))

    ``min(1, p/d)`` is the own cap: alone (no partner) at share ``p`` a job runs at ``min(1, p/d)`` of its
    speed. At 100% + 100% ``xi = xi_free`` (the measured pair). The overlap shrinks as either share falls,
    down to the memory term ``1 + m (xi_free - 1)`` when the shares sum to at most 100%, so squeezing the
    partner speeds a worker beyond free competition (Gimbal §2.2, §4.1). The last line keeps a worker from
    ever running faster by giving up share: lowering ``p`` below ``d`` lowers the cap in proportion but can
    remove contention faster, and then the worker keeps its speed at full own share against the same
    partner share. So, by construction, a worker's speed never falls when its own share rises (``xi_raw``
    restricted to own shares ``<= d`` rises then falls at most once, and ``max`` with its value at ``p = 1``
    is its running maximum from above) and never rises when its partner's share rises (both terms grow
    with ``q``). The price: where ``max`` picks ``xi_raw(1)``, shares summing to at most 100% leave that
    worker more than its cap and the memory term.
    """
    xi_extra = np.asarray(xi_free, dtype=float) - 1.0
    d = np.asarray(demand_self, dtype=float)
    p = np.asarray(share_self, dtype=float)
    q = np.asarray(share_partner, dtype=float)
    has = np.asarray(has_partner)

    def pressure(u: np.ndarray) -> np.ndarray:
        o = np.maximum(0.0, u + q - 1.0) / d
        return 1.0 + xi_extra * (MEM_CONTENTION + (1.0 - MEM_CONTENTION) * o) * has

    out = np.maximum(pressure(np.minimum(p, d)) / np.minimum(1.0, p / d), pressure(d))
    return out if isinstance(out, np.ndarray) and out.ndim else float(out)


def xi_table(xi_free: np.ndarray, demand: np.ndarray, units: int) -> np.ndarray:
    """Every worker interference ratio under MPS shares, indexed ``[type, own model + 1, partner model + 1,
    own share, partner share]`` (shares in steps of the engine's share grid, ``0..units``, the share being
    ``steps / units``: ``k / 10`` on the 10% grid, ``2k / 20``, the same double, on the 5% one; partner model
    0: no partner; own model 0 is padding), computed elementwise by
    :func:`apply_shares` on ``xi_free[type, own, partner]`` (free-competition
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
    k.tcnf = (p.alpha_s + p.beta_s * b) * scale  # as compute_time's numerator
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
    tc = compute_time(p, batch / s, speed, scale)
    return iteration_time(tc, s, comm_time(p, n, n_nodes, intra_bw, inter_bw) * scale, p.delta)
