"""Compare the catalog with the public measurements (``gpucluster catalog validate``).

Per GPU type: relative error of solo throughput (catalog ``speed / t_comp(B)`` vs Gavel's solo steps/s on
K80/P100/V100 for every Gavel job type whose family is in the catalog, and vs Pollux's T4 single-GPU step
times), relative error of multi-GPU scaling efficiency (Castor eq. 2-3 vs Gavel's 2/4/8-GPU consolidated
steps/s and ElasticFlow's A100/T4 throughput vs GPU count), RMSE of the engine's xi against Gavel's measured
pairs and against Lucid's RTX 3090 pair at the configuration standing for each catalog model
(:func:`.lucid.catalog_key`), the xi regression held out by pair (Gavel's and Lucid's), how it and the pair
offsets carry across GPU generations (:func:`.xi_fit.offset_transfer`), and the saved predictor's held-out figures
(stored with it by ``fit-interference``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..performance import comm_time, compute_time, iteration_time
from . import Catalog, default_catalog
from .comm_fit import fit_all
from .fit import ELASTICFLOW_A100, FAMILY_MODEL, GAVEL_JOB, POLLUX_T4
from .lucid_pairs import LUCID_TYPE, LucidData, catalog_key, load_lucid
from .measured import (
    GavelData,
    job_batch,
    job_family,
    load_elasticflow,
    load_gavel,
    load_pollux_single,
    require_data_dir,
)
from .models import SINGLE_NODE_ALPHA_COMM
from .xi_fit import heldout_by_pair, joint_design, offset_transfer
from .xi_model import MeasuredInterference, shipped_demand_exponent


def _rel(pred: float, true: float) -> float:
    return abs(pred - true) / true


def _scaling(cat: Catalog, model: str, gpu: str, batch: float, n: int) -> float:
    """Scaling efficiency tput(n) / (n tput(1)) of the catalog model on one node of ``gpu``."""
    p = cat.model(model)
    g = cat.gpu_type(gpu)
    t1 = float(compute_time(p, batch, cat.model_speed(p, gpu)))
    tc = comm_time(p, n, 1, g.intra_node_bw_gbps, g.intra_node_bw_gbps)
    return t1 / iteration_time(t1, 1, tc, p.delta)


def _speed_errors(cat: Catalog, gd: GavelData, root: Path) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Relative errors of the catalog's solo throughput (Gavel's 1-GPU rows, Pollux's T4 rows) and of its
    multi-GPU scaling (Gavel's rows on more GPUs, ElasticFlow's A100/T4 rows at one global batch), per GPU type."""
    solo: dict[str, list[float]] = {}
    scaling: dict[str, list[float]] = {}
    for gpu in gd.solo:
        for (job, n), tput in gd.solo[gpu].items():
            model = FAMILY_MODEL[job_family(job)]
            p = cat.model(model)
            bs = float(job_batch(job) or 1)
            if n == 1:
                pred = cat.model_speed(p, gpu) / float(p.alpha_s + p.beta_s * bs)
                solo.setdefault(gpu, []).append(_rel(pred, tput))
            elif (job, 1) in gd.solo[gpu] and tput > 0:
                true = tput / (n * gd.solo[gpu][(job, 1)])
                scaling.setdefault(gpu, []).append(_rel(_scaling(cat, model, gpu, bs, n), true))
    for model in POLLUX_T4:
        p = cat.model(model)
        for b, t in load_pollux_single(model, root):
            pred = cat.model_speed(p, "T4") / float(p.alpha_s + p.beta_s * b)
            solo.setdefault("T4", []).append(_rel(pred, 1.0 / t))
    for model, (fa, ft) in ELASTICFLOW_A100.items():
        for gpu, fname in (("A100", fa), ("T4", ft)):
            for gbs, row in load_elasticflow(gpu, fname, root).items():
                if 1 not in row:
                    continue
                for n, tput in row.items():
                    if n in (2, 4, 8) and gbs % n == 0:
                        true = tput / row[1]  # same global batch, per-GPU batch gbs/n
                        p = cat.model(model)
                        g = cat.gpu_type(gpu)
                        t_b = float(compute_time(p, gbs / n, 1.0))
                        tc = comm_time(p, n, 1, g.intra_node_bw_gbps, g.intra_node_bw_gbps)
                        pred = float(compute_time(p, gbs, 1.0)) / iteration_time(t_b, 1, tc, p.delta)
                        scaling.setdefault(gpu, []).append(_rel(pred, true))
    return solo, scaling


def _engine_xi_rmse(cat: Catalog, gd: GavelData, ld: LucidData) -> dict[str, float]:
    """RMSE of the engine's interference ratio against Gavel's measured pairs per GPU type, and against Lucid's
    RTX 3090 pairs (the configurations that stand for two catalog models)."""
    engine_xi: dict[str, float] = {}
    for gpu in gd.pairs:
        xi = gd.xi(gpu)
        err = []
        for ma, ja in GAVEL_JOB.items():
            for mb, jb in GAVEL_JOB.items():
                if (ja, jb) in xi:
                    pred = cat.interference.pair_xi(cat.model(ma), cat.model(mb), gpu)[0]
                    err.append(pred - max(1.0, xi[(ja, jb)]))
        engine_xi[gpu] = float(np.sqrt(np.mean(np.square(err))))
    ga102 = []
    for ma in cat.models:
        for mb in cat.models:
            ka, kb = catalog_key(ma), catalog_key(mb)
            if ka and kb and (ka, kb) in ld.xi:  # the configurations that stand for the two catalog models
                pred = cat.interference.pair_xi(cat.model(ma), cat.model(mb), LUCID_TYPE)[0]
                ga102.append((pred, max(1.0, ld.xi[(ka, kb)])))
    if ga102:
        p_, t_ = np.array(ga102).T
        engine_xi[LUCID_TYPE] = float(np.sqrt(np.mean((p_ - t_) ** 2)))
    return engine_xi


def validate(cat: Catalog | None = None) -> dict[str, Any]:
    """The validation figures as a JSON-able dict (see the module docstring)."""
    cat = cat or default_catalog()
    root = require_data_dir()
    gd = load_gavel(root / "profiles" / "gavel" / "simulation_throughputs.json")
    solo, scaling = _speed_errors(cat, gd, root)
    ld = load_lucid(root)
    engine_xi = _engine_xi_rmse(cat, gd, ld)
    ev, ev_model = _predictor_eval("evaluation"), _predictor_eval("evaluation_by_model")
    inter = cat.interference
    exponent = inter.demand_exponent if isinstance(inter, MeasuredInterference) else shipped_demand_exponent()
    heldout = heldout_by_pair(*joint_design(gd, ld, dict(cat.models), exponent))
    transfer = offset_transfer(gd, ld, dict(cat.models), exponent)
    comm = fit_all(dict(cat.models), SINGLE_NODE_ALPHA_COMM, root)
    for m, rec in comm["models"].items():
        rec["catalog_alpha_comm_s"] = cat.model(m).alpha_comm_s
    types = sorted(set(solo) | set(scaling) | set(engine_xi))
    stat = lambda d, f: {g: round(float(f(d[g])), 4) for g in types if g in d}  # noqa: E731
    return {
        "solo_tput_median_rel_err": stat(solo, np.median),
        "solo_tput_max_rel_err": stat(solo, np.max),
        "solo_tput_points": {g: len(v) for g, v in solo.items()},
        "scaling_median_rel_err": stat(scaling, np.median),
        "scaling_max_rel_err": stat(scaling, np.max),
        "xi_rmse": {g: round(v, 4) for g, v in engine_xi.items()},
        "predictor_rmse": {g: round(v["rmse"], 4) for g, v in ev.items()},
        "predictor_mape_median": {g: round(v["mape_median"], 4) for g, v in ev.items()},
        "predictor_decision_agreement": {g: round(v["decision_agreement"], 4) for g, v in ev.items()},
        "predictor_by_model_rmse": {g: round(v["rmse"], 4) for g, v in ev_model.items()},
        "predictor_by_model_mape_median": {g: round(v["mape_median"], 4) for g, v in ev_model.items()},
        "castor_reported_rmse": [0.06, 0.07],
        "comm_fit": comm,
        "xi_heldout_rmse": {g: v["rmse"] for g, v in heldout.items()},
        "xi_heldout_mape_median": {g: v["mape_median"] for g, v in heldout.items()},
        "xi_heldout_xi1_mape_median": {g: v["xi1"] for g, v in transfer.items()},
        "xi_transfer": transfer,
        "demand_exponent": exponent,
    }


def _predictor_eval(field: str) -> dict[str, dict[str, Any]]:
    """The saved predictor's held-out figures (``evaluation``: by pair; ``evaluation_by_model``)."""
    from .xi_model import package_json

    saved = package_json("xi_predictor.json")
    return (saved or {}).get(field, {})


def format_report(rep: dict[str, Any]) -> str:
    """A plain-text table of :func:`validate`'s figures, one row per GPU type."""
    types = sorted(set(rep["solo_tput_median_rel_err"]) | set(rep["xi_rmse"])
                   | set(rep["scaling_median_rel_err"]) | set(rep["predictor_rmse"]))
    head = (f"{'GPU':6} {'solo med':>9} {'solo max':>9} {'scal med':>9} {'scal max':>9} {'xi RMSE':>8} "
            f"{'pred RMSE':>9} {'pred MdAPE':>10} {'decisions':>9}")
    lines = [head]

    def f(key: str, g: str, pct: bool = True) -> str:
        v = rep[key].get(g)
        return "-" if v is None else (f"{100 * v:.1f}%" if pct else f"{v:.3f}")

    for g in types:
        lines.append(f"{g:6} {f('solo_tput_median_rel_err', g):>9} {f('solo_tput_max_rel_err', g):>9} "
                     f"{f('scaling_median_rel_err', g):>9} {f('scaling_max_rel_err', g):>9} "
                     f"{f('xi_rmse', g, False):>8} {f('predictor_rmse', g, False):>9} "
                     f"{f('predictor_mape_median', g):>10} {f('predictor_decision_agreement', g):>9}")
    lines.append("Castor reports predictor RMSE 0.06 / 0.07 (job 0 / job 1) on its own testbed.")
    if "xi_heldout_rmse" in rep:
        lines.append("Engine xi regression on demands, held out by pair (refit without the pair, predict it): "
                     + ", ".join(f"{g} RMSE {rep['xi_heldout_rmse'][g]:.3f} / median APE "
                                 f"{100 * rep['xi_heldout_mape_median'][g]:.1f}%" for g in rep["xi_heldout_rmse"])
                     + f"; demand exponent k = {rep['demand_exponent']:.3f}")
    if "xi_transfer" in rep:
        lines.append("Across generations (median APE): " + ", ".join(
            f"{g} regression {100 * v['regression']:.1f}% (xi = 1: {100 * v['xi1']:.1f}%; Gavel-only weights "
            f"{100 * v['gavel_weights']:.1f}%, Lucid-only {100 * v['lucid_weights']:.1f}%; with another "
            f"generation's pair offsets {100 * v['with_offset_on_those']:.1f}% against "
            f"{100 * v['regression_on_those']:.1f}% on the {v['rows_with_other_offset']} rows that have one)"
            for g, v in rep["xi_transfer"].items()))
    if "comm_fit" in rep:
        lines += ["", format_comm(rep["comm_fit"])]
    return "\n".join(lines)


def format_comm(table: dict[str, Any]) -> str:
    """A plain-text table of the multi-node all-reduce fit (:func:`.comm_fit.fit_all`), one row per model."""
    lines = [f"All-reduce latency alpha_comm (Castor eq. 2) fitted on multi-node sync times "
             f"(T4, {table['intra_bw_gbps']:g} GB/s in a node, {table['inter_bw_gbps']:g} GB/s between):",
             f"{'model':12} {'alpha ms':>9} {'catalog ms':>10} {'1-node ms':>9} {'rows':>5} {'nodes':>6} "
             f"{'GPUs':>6} {'med err':>8} {'max err':>8} {'1-node med':>10}"]
    for m, r in table["models"].items():
        cat = r.get("catalog_alpha_comm_s")
        nodes, gpus = "{}-{}".format(*r["nodes"]), "{}-{}".format(*r["gpus"])
        lines.append(
            f"{m:12} {1e3 * r['alpha_comm_s']:9.3f} {'-' if cat is None else f'{1e3 * cat:.3f}':>10} "
            f"{1e3 * r['single_node_alpha_comm_s']:9.3f} {r['rows']:5d} {nodes:>6} "
            f"{gpus:>6} {100 * r['median_abs_rel_err']:7.1f}% "
            f"{100 * r['max_abs_rel_err']:7.1f}% {100 * r['median_abs_rel_err_single_node']:9.1f}%")
    lines.append("rows: median sync_time per (GPUs, nodes) of Pollux scalability.csv and multi-node "
                 "placements.csv; " + ", ".join(f"{a} uses {b}" for a, b in table["same_architecture"].items()))
    return "\n".join(lines)
