"""``gpucluster catalog validate`` for a reader: the figures of
:func:`gpucluster_env.catalog.validate.validate` as tables that fit the terminal, a verdict per check (its worst
GPU type or model against a stated target) and a legend of every column (docs/glossary.md has them too)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpucluster_env.text_tables import Col, make_console, print_indented, print_table


@dataclass(frozen=True)
class Check:
    """One check of the catalog: a figure per GPU type (or model), the worst of which gets a verdict."""

    key: str
    """The figure's key in the report (a dict per GPU type)."""
    name: str
    compares: str
    ok: float
    """Target: the worst value is ``ok`` when at or below this (at or above for ``higher_is_better``)."""
    loose: float
    """Still usable (``loose``) up to this; beyond it ``off``."""
    pct: bool = True
    higher_is_better: bool = False

    def verdict(self, value: float) -> str:
        """``ok``, ``loose`` or ``off`` for ``value``."""
        if self.higher_is_better:
            return "ok" if value >= self.ok else "loose" if value >= self.loose else "off"
        return "ok" if value <= self.ok else "loose" if value <= self.loose else "off"

    def fmt(self, value: float) -> str:
        """``value`` as shown (a percentage or a ratio)."""
        return f"{100 * value:.1f}%" if self.pct else f"{value:.3f}"

    def target(self) -> str:
        """The targets in words."""
        sign = "≥" if self.higher_is_better else "≤"
        return f"ok {sign} {self.fmt(self.ok)}, loose {sign} {self.fmt(self.loose)}"


CHECKS = (
    Check("solo_tput_median_rel_err", "solo throughput",
          "catalog steps/s of one job alone vs Gavel (K80/P100/V100) and Pollux (T4): median relative error",
          0.10, 0.25),
    Check("scaling_median_rel_err", "multi-GPU scaling",
          "catalog scaling efficiency on 2-8 GPUs vs Gavel and ElasticFlow: median relative error", 0.10, 0.25),
    Check("xi_rmse", "engine ξ", "the engine's interference ratio ξ vs Gavel's measured pairs: RMSE", 0.10, 0.30,
          pct=False),
    Check("predictor_rmse", "predictor RMSE",
          "Castor's XGBoost ξ predictor on held-out pairs: RMSE (Castor reports 0.06 / 0.07)", 0.10, 0.30,
          pct=False),
    Check("predictor_mape_median", "predictor MdAPE",
          "the same predictor: median absolute percentage error", 0.10, 0.25),
    Check("predictor_decision_agreement", "share decisions",
          "share-or-not decisions taken with the predicted ξ that match those taken with the measured ξ",
          0.90, 0.80, higher_is_better=True),
    Check("xi_heldout_mape_median", "ξ held out by pair",
          "the engine's ξ regression refitted without a pair, predicting it: median absolute percentage error",
          0.15, 0.30),
)

PER_GPU = (
    ("solo_tput_median_rel_err", "solo med", True), ("solo_tput_max_rel_err", "solo max", True),
    ("scaling_median_rel_err", "scal med", True), ("scaling_max_rel_err", "scal max", True),
    ("xi_rmse", "ξ RMSE", False), ("predictor_rmse", "pred RMSE", False),
    ("predictor_mape_median", "pred MdAPE", True), ("predictor_decision_agreement", "decisions", True),
)
"""The per-GPU table: report key, column header, shown as a percentage."""

LEGEND = (
    "solo med / solo max: median / largest relative error of the catalog's solo throughput (one job alone on one "
    "GPU) against the measurements.",
    "scal med / scal max: the same for the scaling efficiency of one job on 2-8 GPUs of a node.",
    "ξ RMSE: root-mean-square error of the engine's interference ratio ξ (a job's slowdown when it shares a GPU) "
    "against Gavel's measured pairs.",
    "pred RMSE / pred MdAPE: held-out RMSE and median absolute percentage error of Castor's XGBoost ξ predictor "
    "(what the observation and Castor see).",
    "decisions: share of held-out pairs where sharing-or-not decided on the predicted ξ matches the decision on the "
    "measured ξ.",
    "– : no measurement of that kind on that GPU type. Verdicts: ok meets the target, loose is usable with care, "
    "off is outside it. Abbreviations: docs/glossary.md.",
)


def _worst(values: dict[str, float], check: Check) -> tuple[str, float] | None:
    pick: Callable[..., Any] = min if check.higher_is_better else max
    items = [(g, v) for g, v in values.items() if v is not None]
    return pick(items, key=lambda gv: gv[1]) if items else None


def verdicts(rep: dict[str, Any]) -> list[tuple[Check, str, float, str]]:
    """(check, worst GPU type, its value, verdict) for every check the report has figures for."""
    out = []
    for c in CHECKS:
        worst = _worst(rep.get(c.key) or {}, c)
        if worst is not None:
            out.append((c, worst[0], worst[1], c.verdict(worst[1])))
    return out


def print_report(rep: dict[str, Any]) -> None:
    """The report on the console: per-GPU figures, the comm fit, the verdicts, the legend."""
    console = make_console()
    types = sorted(set().union(*(rep.get(k) or {} for k, _, _ in PER_GPU)))
    cols = [Col("GPU", "left", key=True)] + [Col(h) for _, h, _ in PER_GPU]
    rows = []
    for g in types:
        row = [g]
        for key, _, pct in PER_GPU:
            v = (rep.get(key) or {}).get(g)
            row.append("–" if v is None else f"{100 * v:.1f}%" if pct else f"{v:.3f}")
        rows.append(row)
    print_table(console, "catalog vs measurements, per GPU type", cols, rows)
    if "xi_heldout_rmse" in rep:
        console.print("Engine ξ regression on demands, held out by pair (refit without the pair, predict it): "
                      + ", ".join(f"{g} RMSE {rep['xi_heldout_rmse'][g]:.3f} / MdAPE "
                                  f"{100 * rep['xi_heldout_mape_median'][g]:.1f}%" for g in rep["xi_heldout_rmse"])
                      + f"; demand exponent k = {rep['demand_exponent']:.3f}", highlight=False)
    by_model = rep.get("predictor_by_model_mape_median") or {}
    if by_model:
        console.print("Castor's predictor held out by model (every pair of one model left out, as for a model "
                      "never measured on its GPU): " + ", ".join(
                          f"{g} RMSE {rep['predictor_by_model_rmse'][g]:.3f} / MdAPE {100 * v:.1f}%"
                          for g, v in by_model.items()), highlight=False)
    if "comm_fit" in rep:
        print_comm(console, rep["comm_fit"])
    vs = verdicts(rep)
    print_table(console, "verdicts (worst GPU type of each check)",
                [Col("check", "left", key=True), Col("worst", "left"), Col("value"), Col("target", "left"),
                 Col("verdict", "left")],
                [(c.name, g, c.fmt(v), c.target(), verdict) for c, g, v, verdict in vs])
    n_ok = sum(v == "ok" for *_, v in vs)
    console.print(f"verdict: {n_ok} of {len(vs)} checks ok"
                  + (f"; loose: {', '.join(c.name for c, *_, v in vs if v == 'loose')}" if any(
                      v == "loose" for *_, v in vs) else "")
                  + (f"; off: {', '.join(c.name for c, *_, v in vs if v == 'off')}" if any(
                      v == "off" for *_, v in vs) else ""), highlight=False)
    console.print("checks:", highlight=False)
    for c, *_ in vs:
        print_indented(console, f"{c.name}: {c.compares}")
    console.print("legend:", highlight=False)
    for line in LEGEND:
        print_indented(console, line)


def print_comm(console: Any, table: dict[str, Any]) -> None:
    """The multi-node all-reduce fit (:func:`gpucluster_env.catalog.comm_fit.fit_all`), one row per model."""
    cols = [Col("model", "left", key=True), Col("alpha ms"), Col("catalog ms"), Col("1-node ms"), Col("rows"),
            Col("nodes"), Col("GPUs"), Col("med err"), Col("max err"), Col("1-node med err")]
    rows = []
    for m, r in table["models"].items():
        cat = r.get("catalog_alpha_comm_s")
        rows.append((m, f"{1e3 * r['alpha_comm_s']:.3f}", "–" if cat is None else f"{1e3 * cat:.3f}",
                     f"{1e3 * r['single_node_alpha_comm_s']:.3f}", str(r["rows"]), "{}-{}".format(*r["nodes"]),
                     "{}-{}".format(*r["gpus"]), f"{100 * r['median_abs_rel_err']:.1f}%",
                     f"{100 * r['max_abs_rel_err']:.1f}%", f"{100 * r['median_abs_rel_err_single_node']:.1f}%"))
    print_table(console, "all-reduce latency fit (Castor eq. 2)", cols, rows,
                caption=f"alpha_comm fitted on multi-node sync times: T4, {table['intra_bw_gbps']:g} GB/s in a "
                        f"node, {table['inter_bw_gbps']:g} GB/s between; "
                        "rows: median sync_time per (GPUs, nodes) of Pollux scalability.csv and multi-node "
                        "placements.csv; " + ", ".join(f"{a} uses {b}" for a, b in table["same_architecture"].items()))
