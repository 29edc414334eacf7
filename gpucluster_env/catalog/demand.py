"""Each model's GPU demand per GPU type: the fraction of the type's compute and memory bandwidth it keeps busy
running alone (used by the MPS-share model and by the interference regression of :mod:`.xi_model`).

A model's ``gpu_demand`` is its demand on the reference type (V100); for the Gavel families it was fitted on
Gavel's measured colocated throughputs (twice the median throughput its partners lose), for the others it is
estimated (:mod:`.models`). On type ``g`` the same kernels meet a GPU with

    C_g(p) = 1 / (ci_p F_V100 / F_g + (1 - ci_p) B_V100 / B_g)

times the V100's capacity for this model (a roofline mix: ``ci_p`` the model's compute intensity, ``F`` the
effective FP32 TFLOPS of :func:`.gpus.effective_fp32_tflops`, ``B`` the memory bandwidth), and fill

    demand_g(p) = clip(gpu_demand_p * C_g(p) ** -k, DEMAND_FLOOR, 1)

of it. ``k`` is fitted (:func:`fit_exponent`) to the demand Gavel measured per family on K80 and P100 relative to
V100: the same family takes a larger share of a smaller GPU (median over families 0.99 on K80, 0.91 on P100,
0.58 on V100). Every demand here is estimated except the reference values of the Gavel families.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..hardware import GPUType
from ..workloads import ModelProfile
from .gpus import effective_fp32_tflops
from .measured import GavelData, job_family

REFERENCE_TYPE = "V100"
DEMAND_FLOOR = 0.05
"""The smallest demand a model is given on any type."""


def capacity_ratio(p: ModelProfile, g: GPUType, ref: GPUType) -> float:
    """``C_g(p)``: the capacity of ``g`` for ``p``'s work relative to ``ref`` (see the module docstring)."""
    return capacity_ratio_ci(float(p.features[0]), g, ref)


def capacity_ratio_ci(ci: float, g: GPUType, ref: GPUType) -> float:
    """``C_g`` of work of compute intensity ``ci`` (see the module docstring)."""
    return 1.0 / (ci * effective_fp32_tflops(ref) / effective_fp32_tflops(g)
                  + (1.0 - ci) * ref.mem_bw_gbps / g.mem_bw_gbps)


def reference_demand(measured: float, ci: float, gpu_type: str, exponent: float) -> float:
    """The reference (V100) demand that :func:`demand_on` turns into a demand ``measured`` on ``gpu_type``:
    ``measured * C_g^k`` (``k`` the demand exponent, the shipped table's:
    :func:`.xi_model.shipped_demand_exponent`), for models whose demand was measured on another type (Lucid's
    RTX 3090 ``gpu_util``, :data:`.lucid.LUCID_DEMAND`)."""
    from .gpus import GPU_TYPES

    return float(measured * capacity_ratio_ci(ci, GPU_TYPES[gpu_type], GPU_TYPES[REFERENCE_TYPE]) ** exponent)


def demand_on(p: ModelProfile, g: GPUType, ref: GPUType, exponent: float) -> float:
    """``demand_g(p)`` in ``[DEMAND_FLOOR, 1]`` (see the module docstring)."""
    d = p.gpu_demand * capacity_ratio(p, g, ref) ** -exponent
    return float(min(1.0, max(DEMAND_FLOOR, d)))


def measured_family_demand(gd: GavelData) -> dict[str, dict[str, float]]:
    """Gavel's demand of each family per GPU type: twice the median over its colocated partners of the
    throughput fraction the partner loses, ``1 - 1 / xi_partner`` (``gpu -> family -> demand``)."""
    out: dict[str, dict[str, float]] = {}
    for gpu in gd.pairs:
        lost: dict[str, list[float]] = {}
        for (_a, b), x in gd.xi(gpu).items():
            lost.setdefault(job_family(b), []).append(1.0 - 1.0 / max(x, 1.0))
        out[gpu] = {f: 2.0 * float(np.median(v)) for f, v in lost.items()}
    return out


def fit_exponent(gd: GavelData, family_model: Mapping[str, ModelProfile],
                 gpu_types: Mapping[str, GPUType]) -> float:
    """``k``: least squares through the origin of ``log(d_g / d_V100)`` on ``-log C_g`` over the Gavel
    families on K80 and P100 (demands above 1 clipped to 1, as the model clips them)."""
    meas = measured_family_demand(gd)
    ref = gpu_types[REFERENCE_TYPE]
    xs, ys = [], []
    for gpu in sorted(meas):
        if gpu == REFERENCE_TYPE:
            continue
        for fam, d in meas[gpu].items():
            base = meas[REFERENCE_TYPE].get(fam)
            if fam not in family_model or not base:
                continue
            xs.append(-math.log(capacity_ratio(family_model[fam], gpu_types[gpu], ref)))
            ys.append(math.log(min(d, 1.0) / min(base, 1.0)))
    if not xs:
        raise ValueError("fit_exponent: no family measured on both the reference type and another type")
    x, y = np.array(xs), np.array(ys)
    return float(x @ y / (x @ x))
