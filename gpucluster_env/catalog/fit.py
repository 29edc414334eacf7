"""Fitting the catalog's numbers to the public measurements (see :mod:`.measured` and :mod:`.lucid_pairs` for the
sources).

These functions are what the numbers in :mod:`.models` and :mod:`.gpus` were computed with (``python -m
gpucluster_env.catalog.fit`` prints them), and what ``gpucluster catalog validate`` re-runs to compare the
catalog with the files; the interference fit is in :mod:`.xi_fit`. Nothing here runs when the package is
imported for simulation.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .measured import GAVEL_TYPES, GavelData, job_batch, job_family, load_elasticflow, load_gavel, load_pollux_single

GAVEL_JOB: dict[str, str] = {
    "resnet18": "ResNet-18 (batch size 64)",
    "cifar10": "ResNet-18 (batch size 128)",
    "resnet50": "ResNet-50 (batch size 64)",
    "imagenet": "ResNet-50 (batch size 64)",
    "transformer": "Transformer (batch size 64)",
    "lm": "LM (batch size 20)",
    "recommendation": "Recommendation (batch size 2048)",
    "cyclegan": "CycleGAN",
    "a3c": "A3C",
}
"""Catalog models whose architecture Gavel measured, and the Gavel job type (default batch) they map to.
``cifar10`` is Pollux's ResNet-18 on CIFAR-10 (Gavel's ResNet-18 is also CIFAR-10); ``imagenet`` is Pollux's
ResNet-50 on ImageNet (as Gavel's ResNet-50)."""

POLLUX_T4: tuple[str, ...] = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
"""Models with Pollux T4 step times."""

ELASTICFLOW_A100: dict[str, tuple[str, str]] = {
    "bert": ("bert", "bert"),
    "deepspeech2": ("deepspeech2", "deepspeech2"),
    "imagenet": ("resnet50", "imagenet"),
}
"""Catalog model -> (ElasticFlow A100 file, ElasticFlow T4 file) for the same architecture on both types."""


def linear_fit_rel(b: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """Least squares ``t ~ alpha + beta*b`` in relative error (rows weighted by 1/t); alpha >= 0, beta > 0."""
    b = np.asarray(b, float)
    t = np.asarray(t, float)
    w = 1.0 / t
    a_mat = np.c_[np.ones_like(b), b] * w[:, None]
    (alpha, beta), *_ = np.linalg.lstsq(a_mat, t * w, rcond=None)
    if alpha < 0 or beta <= 0:  # fall back to proportional, or constant-plus-tiny-slope
        if np.ptp(b) > 0 and beta > 0:
            alpha, beta = 0.0, float(np.sum(w * w * t * b) / np.sum(w * w * b * b))
        else:
            alpha, beta = float(np.mean(t)) * 0.99, float(np.mean(t)) * 0.01 / max(float(np.mean(b)), 1.0)
    return float(alpha), float(beta)


def gavel_family_rows(gd: GavelData, family: str, gpu: str) -> list[tuple[int, float]]:
    """``(batch, step_time_s)`` of a Gavel family's 1-GPU job types on ``gpu`` (batch 1 for batchless)."""
    out = []
    for (job, n), tput in gd.solo[gpu].items():
        if n == 1 and job_family(job) == family and tput > 0:
            out.append((job_batch(job) or 1, 1.0 / tput))
    return sorted(out)


GAVEL_GPUS: tuple[str, ...] = tuple(GAVEL_TYPES.values())
"""The catalog types Gavel measured (K80, P100, V100)."""


def fit_gavel_joint(gd: GavelData, family: str) -> tuple[float, float, dict[str, float]]:
    """Castor eq. 1 ``alpha, beta`` (s on V100) and per-type speeds (K80, P100; V100 = 1) of a Gavel family,
    fitted jointly to its solo steps/s on all three types: ``tput_k(B) = speed_k / (alpha + beta B)``,
    least absolute deviations in log space (a median fit: Gavel's K80 ResNet-18 runs faster at batch 32 than
    at 16, which no affine step time follows, and one such point should not bend the rest). This is the
    engine's own formula -- one ``alpha, beta`` per model and one speed per (model, type) -- so the fit is
    what the engine can reproduce; fitting ``alpha, beta`` on V100 alone and a speed ratio per type cannot
    follow the K80's different batch dependence (median error 13% against 4% here)."""
    from scipy.optimize import minimize

    data = {g: gavel_family_rows(gd, family, g) for g in GAVEL_GPUS}
    v100 = data["V100"]
    if len(v100) == 1:  # batchless: alpha 0, beta the V100 step time, speeds the measured ratios
        beta = v100[0][1]
        return 0.0, float(beta), {g: float(beta / data[g][0][1]) for g in ("K80", "P100")}
    b = np.concatenate([[r[0] for r in data[g]] for g in GAVEL_GPUS]).astype(float)
    log_t = np.log(np.concatenate([[r[1] for r in data[g]] for g in GAVEL_GPUS]))
    which = np.concatenate([[i] * len(data[g]) for i, g in enumerate(GAVEL_GPUS)])

    def loss(theta: np.ndarray) -> float:
        alpha, beta, s_k80, s_p100 = np.exp(theta)
        speed = np.array([s_k80, s_p100, 1.0])[which]
        return float(np.sum(np.abs(np.log(alpha + beta * b) - np.log(speed) - log_t)))

    a0, b0 = linear_fit_rel(np.array([r[0] for r in v100], float), np.array([r[1] for r in v100], float))
    r0 = [float(np.median([t / (a0 + b0 * bb) for bb, t in data[g]])) for g in ("K80", "P100")]
    best = None
    for shift in (-2.0, 0.0, 1.0):  # alpha starts at a few scales: the L1 surface has flat stretches
        th0 = np.log([max(a0, 1e-4) * math.exp(shift), b0, 1.0 / r0[0], 1.0 / r0[1]])
        res = minimize(loss, th0, method="Nelder-Mead",
                       options={"maxiter": 8000, "xatol": 1e-9, "fatol": 1e-12})
        if best is None or res.fun < best.fun:
            best = res
    alpha, beta, s_k80, s_p100 = (float(v) for v in np.exp(best.x))
    return alpha, beta, {"K80": s_k80, "P100": s_p100}


def fit_gavel_compute(gd: GavelData, family: str) -> tuple[float, float]:
    """Castor eq. 1 ``alpha, beta`` (s on V100) of a Gavel family (:func:`fit_gavel_joint`)."""
    alpha, beta, _ = fit_gavel_joint(gd, family)
    return alpha, beta


def gavel_speed(gd: GavelData, family: str, gpu: str) -> float:
    """Speed of ``family`` on ``gpu`` relative to V100 (:func:`fit_gavel_joint`)."""
    return 1.0 if gpu == "V100" else fit_gavel_joint(gd, family)[2][gpu]


def fit_pollux_t4(model: str, root: Path | None = None) -> tuple[float, float]:
    """``alpha, beta`` (s on T4) from Pollux's single-GPU step times."""
    rows = load_pollux_single(model, root)
    b = np.array([r[0] for r in rows], float)
    t = np.array([r[1] for r in rows], float)
    return linear_fit_rel(b, t)


def t4_speed_cross(gd: GavelData, model: str, root: Path | None = None) -> float:
    """T4 speed relative to V100 for a model both Gavel (V100) and Pollux (T4) measured: median over Pollux's
    single-GPU batch sizes inside Gavel's batch range of ``t_V100(B) / t_T4(B)``."""
    family = job_family(GAVEL_JOB[model])
    alpha, beta = fit_gavel_compute(gd, family)
    bs = [r[0] for r in gavel_family_rows(gd, family, "V100")]
    rows = [(b, t) for b, t in load_pollux_single(model, root) if min(bs) <= b <= max(bs)]
    return float(np.median([(alpha + beta * b) / t for b, t in rows]))


def elasticflow_samples_per_s(gpu: str, file_model: str, n_gpus: int = 1, root: Path | None = None) -> float:
    """Median over global batch sizes of samples/s on ``n_gpus`` GPUs in an ElasticFlow file."""
    table = load_elasticflow(gpu, file_model, root)
    vals = [gbs * row[n_gpus] for gbs, row in table.items() if n_gpus in row]
    return float(np.median(vals)) if vals else math.nan


def a100_over_t4(model: str, root: Path | None = None) -> float:
    """ElasticFlow's single-GPU samples/s on A100 over T4 for the same architecture."""
    fa, ft = ELASTICFLOW_A100[model]
    return elasticflow_samples_per_s("A100", fa, 1, root) / elasticflow_samples_per_s("T4", ft, 1, root)


def summary(root: Path | None = None) -> dict[str, dict[str, float]]:
    """Every fitted number the catalog uses, by model: alpha/beta on V100 and per-type speeds."""
    gd = load_gavel(root / "profiles" / "gavel" / "simulation_throughputs.json" if root else None)
    out: dict[str, dict[str, float]] = {}
    for model, job in GAVEL_JOB.items():
        a, b, speeds = fit_gavel_joint(gd, job_family(job))
        out[model] = {"alpha_s": a, "beta_s": b, **speeds}
    cross = {m: t4_speed_cross(gd, m, root) for m in ("cifar10", "imagenet")}
    t4_generic = float(np.median(list(cross.values())))
    for m in POLLUX_T4:
        a4, b4 = fit_pollux_t4(m, root)
        s4 = cross.get(m, t4_generic)
        rec = out.setdefault(m, {})
        rec["T4"] = s4
        if m not in GAVEL_JOB:
            rec["alpha_s"], rec["beta_s"] = a4 * s4, b4 * s4
        if m in ELASTICFLOW_A100:
            rec["A100"] = s4 * a100_over_t4(m, root)
    return out


if __name__ == "__main__":  # pragma: no cover - prints the fitted numbers
    for name, rec in summary().items():
        print(name, {k: round(v, 6) for k, v in rec.items()})


def generic_speeds(per_model: dict[str, dict[str, float]]) -> dict[str, float]:
    """A measured GPU type's generic speed: the median over measured model families of the per-model speeds
    (``imagenet``/``cifar10`` count once, as the ResNet-50/ResNet-18 families; BERT's A100/T4 ratio is left
    out, see the A100's declaration in :mod:`.gpus`), for every declared type ``per_model`` has speeds on."""
    from .demand import REFERENCE_TYPE
    from .gpus import GPU_TYPES

    skip = {"imagenet", "cifar10"}
    out = {REFERENCE_TYPE: 1.0}
    for gpu in (g for g in GPU_TYPES if g != REFERENCE_TYPE and any(g in rec for rec in per_model.values())):
        vals = [rec[gpu] for m, rec in per_model.items()
                if gpu in rec and (m not in skip or gpu in ("T4", "A100"))
                and not (m == "bert" and gpu == "A100")]
        out[gpu] = float(np.median(vals))
    return out


def fit_hadare_constants(measured_speed: dict[str, float]) -> tuple[float, float]:
    """Fit HadarE's initial estimate ``speed = exp(c) * PMI^gamma * pcie_scaling`` (hadar-hadare §V-A) to the
    measured types' generic speeds; returns ``(c, gamma)``."""
    from .gpus import GPU_TYPES, performance_memory_index

    x = np.log([performance_memory_index(GPU_TYPES[g]) for g in measured_speed])
    y = np.log(list(measured_speed.values()))
    gamma, c = np.polyfit(x, y, 1)
    return float(c), float(gamma)


FAMILY_MODEL: dict[str, str] = {
    "ResNet-18": "resnet18", "ResNet-50": "resnet50", "Transformer": "transformer", "LM": "lm",
    "Recommendation": "recommendation", "CycleGAN": "cyclegan", "A3C": "a3c",
}
"""Gavel family -> the catalog model whose features describe it."""


def fit_gavel_comm(gd: GavelData, model: str) -> tuple[float, float]:
    """Castor eq. 2-3 communication terms ``(alpha_comm_s, delta)`` of a Gavel-mapped catalog model, fitted
    (least absolute deviations of log scaling efficiency, Nelder-Mead) to Gavel's consolidated 2/4/8-GPU
    steps/s on K80/P100/V100 (efficiency ``tput_n / (n tput_1)`` at the same per-GPU batch). ``grad_mb``
    stays the physical gradient size and the bandwidths the types' specs; returns the catalog's
    ``(alpha_comm_s, delta)`` unchanged when Gavel has no multi-GPU rows for the family."""
    import dataclasses

    from scipy.optimize import minimize

    from ..performance import comm_time, compute_time, iteration_time
    from . import default_catalog

    cat = default_catalog()
    p = cat.model(model)
    fam = job_family(GAVEL_JOB[model])
    pts = [(g, float(job_batch(j) or 1), n, t / (n * gd.solo[g][(j, 1)]))
           for g in GAVEL_GPUS for (j, n), t in gd.solo[g].items()
           if job_family(j) == fam and n > 1 and t > 0 and (j, 1) in gd.solo[g]]
    if not pts:
        return p.alpha_comm_s, p.delta

    def loss(theta: np.ndarray) -> float:
        q = dataclasses.replace(p, alpha_comm_s=float(np.exp(theta[0])), delta=1.0 + float(np.exp(theta[1])))
        err = 0.0
        for g, b, n, true in pts:
            t1 = float(compute_time(q, b, cat.model_speed(q, g)))
            bw = cat.gpu_type(g).intra_node_bw_gbps
            err += abs(math.log(t1 / iteration_time(t1, 1, comm_time(q, n, 1, bw, bw), q.delta) / true))
        return err

    best = min((minimize(loss, np.array([math.log(a), 0.0]), method="Nelder-Mead", options={"maxiter": 4000})
                for a in (0.002, 0.02, 0.1)), key=lambda r: r.fun)
    return float(np.exp(best.x[0])), 1.0 + float(np.exp(best.x[1]))
