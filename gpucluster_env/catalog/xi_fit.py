"""Fitting the interference table and predictor to the measured pairs: regression rows of Gavel's 1-GPU pairs and
of Lucid's RTX 3090 pairs, held-out checks by pair, the per-GPU offsets of ``xi_table.json``
(:func:`build_xi_table`, what ``gpucluster catalog fit-interference`` writes) and whether those offsets carry
from one GPU generation to another (:func:`offset_transfer`, printed by ``gpucluster catalog validate``).

As :mod:`.fit`, nothing here runs when the package is imported for simulation.
"""

from __future__ import annotations

import math

import numpy as np

from .fit import FAMILY_MODEL, GAVEL_GPUS, GAVEL_JOB
from .lucid_pairs import GA102_TYPES, LUCID_MODEL, LUCID_SOURCE, LUCID_TYPE, LucidData, config_of, lucid_model
from .measured import GavelData, job_batch, job_family


def pair_design(gd: GavelData, models: dict, exponent: float) -> tuple[np.ndarray, np.ndarray, list, list]:
    """Regression rows of every measured 1-GPU Gavel pair (demands on the pair's type), ``log max(xi, 1)``,
    the unordered job-type pair of each row and its GPU type."""
    from .demand import REFERENCE_TYPE, demand_on
    from .gpus import GPU_TYPES
    from .xi_model import regression_row

    ref = GPU_TYPES[REFERENCE_TYPE]
    rows, y, pairs, types = [], [], [], []
    for gpu in gd.pairs:
        for (a, b), x in gd.xi(gpu).items():
            pa, pb = models[FAMILY_MODEL[job_family(a)]], models[FAMILY_MODEL[job_family(b)]]
            da, db = (demand_on(q, GPU_TYPES[gpu], ref, exponent) for q in (pa, pb))
            rows.append(regression_row(pa, pb, da, db, job_batch(a) or 1, job_batch(b) or 1))
            y.append(math.log(max(x, 1.0)))
            pairs.append(tuple(sorted((a, b))))
            types.append(gpu)
    return np.array(rows), np.array(y), pairs, types


def lucid_design(ld: LucidData, models: dict) -> tuple[np.ndarray, np.ndarray, list, list]:
    """Regression rows of Lucid's RTX 3090 pairs (:mod:`.lucid_pairs`): each configuration's demand is its measured
    solo ``gpu_util`` on the RTX 3090, its features those of the catalog model it maps to, its batch its own;
    ``log max(xi, 1)``; the unordered *model* pair of each row (held out with all its batch/AMP
    configurations) and ``"RTX3090"``."""
    from .xi_model import regression_row

    rows, y, pairs, types = [], [], [], []
    for (a, b), x in ld.xi.items():
        pa, pb = (models[LUCID_MODEL[lucid_model(k)][0]] for k in (a, b))
        rows.append(regression_row(pa, pb, ld.demand(a), ld.demand(b), config_of(a)[0], config_of(b)[0]))
        y.append(math.log(max(x, 1.0)))
        pairs.append(tuple(sorted((lucid_model(a), lucid_model(b)))))
        types.append(LUCID_TYPE)
    return np.array(rows), np.array(y), pairs, types


def joint_design(gd: GavelData, ld: LucidData | None, models: dict, exponent: float
                 ) -> tuple[np.ndarray, np.ndarray, list, list]:
    """:func:`pair_design` (Gavel) followed by :func:`lucid_design` (when Lucid's files are given)."""
    x, y, pairs, types = pair_design(gd, models, exponent)
    if ld is None:
        return x, y, pairs, types
    xl, yl, pl, tl = lucid_design(ld, models)
    return np.vstack([x, xl]), np.concatenate([y, yl]), pairs + pl, types + tl


def heldout_by_pair(x: np.ndarray, y: np.ndarray, pairs: list, types: list) -> dict[str, dict[str, float]]:
    """Leave-one-pair-out error of the xi regression: each unordered job-type pair is dropped on every type,
    the weights refitted on the rest and the pair's xi (clipped to >= 1) predicted; RMSE and median absolute
    percentage error per GPU type."""
    pred = np.zeros_like(y)
    keys = np.array([f"{a}|{b}" for a, b in pairs])
    for k in sorted(set(keys)):
        out = keys == k
        w, *_ = np.linalg.lstsq(x[~out], y[~out], rcond=None)
        pred[out] = x[out] @ w
    res: dict[str, dict[str, float]] = {}
    t = np.array(types)
    for gpu in sorted(set(types)):
        m = t == gpu
        xp, xt = np.maximum(1.0, np.exp(pred[m])), np.maximum(1.0, np.exp(y[m]))
        res[gpu] = {"rmse": round(float(np.sqrt(np.mean((xp - xt) ** 2))), 4),
                    "mape_median": round(float(np.median(np.abs(xp - xt) / xt)), 4),
                    "pairs": int(m.sum())}
    return res


def _mean_offsets(resid: dict[str, list[float]]) -> dict[str, float]:
    return {k: round(float(np.mean(v)), 4) for k, v in sorted(resid.items())}


def build_xi_table(gd: GavelData, models: dict | None = None, ld: LucidData | None = None) -> dict:
    """The engine's interference table (see :mod:`.xi_model`): measured ratios of Gavel-mapped catalog models,
    the demand exponent (:func:`.demand.fit_exponent`), the pooled least-squares regression of log xi on the
    pair's demands and features (Gavel's pairs and, when ``ld`` is given, Lucid's RTX 3090 pairs), each mapped
    pair's mean residual per architecture group (Gavel's on K80/P100/V100, Lucid's on the GA102 types; an
    offset is never carried to another group: :func:`offset_transfer`), and the held-out-by-pair error."""
    from .demand import REFERENCE_TYPE, demand_on, fit_exponent
    from .gpus import GPU_TYPES
    from .models import MODELS
    from .xi_model import REGRESSION_TERMS, regression_log_xi, regression_row

    models = models or MODELS
    exponent = fit_exponent(gd, {f: models[m] for f, m in FAMILY_MODEL.items()}, GPU_TYPES)
    x, y, pairs, types = joint_design(gd, ld, models, exponent)
    pooled, *_ = np.linalg.lstsq(x, y, rcond=None)
    ref = GPU_TYPES[REFERENCE_TYPE]
    measured: dict[str, dict[str, float]] = {}
    resid: dict[str, list[float]] = {}
    for gpu in gd.pairs:
        xi = gd.xi(gpu)
        table = {}
        for ma, ja in GAVEL_JOB.items():
            for mb, jb in GAVEL_JOB.items():
                if (ja, jb) in xi:
                    table[f"{ma}|{mb}"] = round(xi[(ja, jb)], 4)
                    pa, pb = models[ma], models[mb]
                    da, db = (demand_on(q, GPU_TYPES[gpu], ref, exponent) for q in (pa, pb))
                    pred = regression_log_xi(pooled, regression_row(pa, pb, da, db))
                    resid.setdefault(f"{ma}|{mb}", []).append(math.log(max(xi[(ja, jb)], 1.0)) - pred)
        measured[gpu] = table
    offsets = {"gavel": {"types": list(GAVEL_GPUS), "pairs": _mean_offsets(resid)}}
    about = ("Free-competition interference ratios for the catalog (gpucluster_env.catalog.xi_model). "
             "measured: Gavel simulation_throughputs.json (Narayanan et al., OSDI'20), solo/colocated "
             "steps/s; pooled: least squares of log xi on the pair's demands and features over all "
             "measured 1-GPU pairs of K80/P100/V100")
    if ld is not None:
        xl, yl, _, _ = lucid_design(ld, models)
        ga102: dict[str, list[float]] = {}
        for (a, b), r in zip(ld.xi, yl - np.array([regression_log_xi(pooled, row) for row in xl]), strict=True):
            for ma in LUCID_MODEL[lucid_model(a)]:
                for mb in LUCID_MODEL[lucid_model(b)]:
                    ga102.setdefault(f"{ma}|{mb}", []).append(float(r))
        offsets["ga102"] = {"types": list(GA102_TYPES), "pairs": _mean_offsets(ga102),
                            "rows": {k: len(v) for k, v in sorted(ga102.items())}}
        about += (" and of Lucid's RTX 3090 (GA102) pairs (" + LUCID_SOURCE + "; no row of Lucid's files is "
                  "shipped: only the fitted weights, and per catalog model pair the mean residual over its "
                  "batch/AMP configurations and their count)")
    about += ("; offsets: each mapped pair's mean residual, applied on its group's types only; "
              "demand_exponent: gpucluster_env.catalog.demand; heldout: leave-one-pair-out error.")
    return {
        "about": about,
        "terms": list(REGRESSION_TERMS),
        "demand_exponent": round(exponent, 6),
        "measured": measured,
        "offsets": offsets,
        "pooled": [round(float(v), 6) for v in pooled],
        "heldout": heldout_by_pair(x, y, pairs, types),
    }


def offset_transfer(gd: GavelData, ld: LucidData, models: dict, exponent: float) -> dict[str, dict[str, float]]:
    """Does a pair's offset carry to another GPU generation? Per measured type, the median APE of the joint
    regression alone and with the pair's mean residual on the *other* types added (Gavel's three types among
    themselves; GA102 against the V100's residual of the same model pair, for the pairs both measured).
    Also how the weights carry: fitted on Gavel only and predicting RTX 3090, and fitted on Lucid only and
    predicting each Gavel type; ``xi1`` is the median APE of predicting xi = 1 everywhere."""
    x, y, pairs, types = joint_design(gd, ld, models, exponent)
    t = np.array(types)
    w, *_ = np.linalg.lstsq(x, y, rcond=None)
    keys = [f"{a}|{b}" for gpu in gd.pairs for (a, b) in gd.xi(gpu)] + [f"{a}|{b}" for (a, b) in ld.xi]
    fam = {"ResNet-18": "ResNet18", "LM": "LSTM"}

    def fam_pair(k: str) -> str:
        """``"ResNet-18 (batch size 64)|LM (batch size 20)"`` -> ``"ResNet18|LSTM"`` (Lucid's names)."""
        a, b = (part.split(" (")[0] for part in k.split("|"))
        return f"{fam.get(a, a)}|{fam.get(b, b)}"

    def mdape(pred: np.ndarray, m: np.ndarray) -> float:
        tru = np.maximum(1.0, np.exp(y[m]))
        return round(float(np.median(np.abs(np.maximum(1.0, np.exp(pred)) - tru) / tru)), 4)

    res = y - x @ w
    out: dict[str, dict[str, float]] = {}
    gav = t != LUCID_TYPE
    wg, *_ = np.linalg.lstsq(x[gav], y[gav], rcond=None)
    wl, *_ = np.linalg.lstsq(x[~gav], y[~gav], rcond=None)
    for gpu in sorted(set(types)):
        m = t == gpu
        other: dict[str, list[float]] = {}
        for k, r, g in zip(keys, res, types, strict=True):
            if g == gpu:
                continue
            if gpu == LUCID_TYPE and g == "V100":
                other.setdefault(fam_pair(k), []).append(float(r))
            elif gpu != LUCID_TYPE and g != LUCID_TYPE:
                other.setdefault(k, []).append(float(r))
        ks = [fam_pair(k) if gpu == LUCID_TYPE else k for k, g in zip(keys, types, strict=True) if g == gpu]
        off = np.array([float(np.mean(other[k])) if k in other else 0.0 for k in ks])
        has = np.array([k in other for k in ks])
        mm = np.flatnonzero(m)
        out[gpu] = {"regression": mdape(x[m] @ w, m), "with_other_offsets": mdape(x[m] @ w + off, m),
                    "rows_with_other_offset": int(has.sum()),
                    "regression_on_those": mdape(x[mm[has]] @ w, mm[has]) if has.any() else math.nan,
                    "with_offset_on_those": mdape(x[mm[has]] @ w + off[has], mm[has]) if has.any() else math.nan,
                    "gavel_weights": mdape(x[m] @ wg, m), "lucid_weights": mdape(x[m] @ wl, m),
                    "xi1": mdape(np.zeros(int(m.sum())), m)}
    return out
