"""What an engine change moved: the results of an earlier engine, kept as a small snapshot, beside the current
records in docs/results/reproduction.md.

An engine change that moves results on purpose (engine v2: eq. 4-5, the MPS share model, per-type demand, ...)
keeps the previous engine's cell means as a snapshot (``docs/_scripts/snapshots/engine_v1.json``), written from
that engine's results folders with

    python docs/_scripts/engine_change.py DIR [DIR ...] --label "engine v1 (76b46ed)" --out FILE

and :func:`render_change` puts the before and after figures and the papers' orderings side by side.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from gpucluster_env.leaderboard.stats import improvement, improvement_ci
from render_reproduction import MAIN, POLICIES, Results, _opts_label, load_rows

from gpucluster_env.atomic_write import write_bytes_atomic

SNAPSHOT_FORMAT = "gpucluster-engine-snapshot"
SNAPSHOT_METRICS = ("avg_jct_s", "avg_queue_s", "makespan_s")
DEFAULT_SNAPSHOT = Path(__file__).parent / "snapshots" / "engine_v1.json"

ENGINE_CHANGES: list[str] = [
    "**Interference on the whole iteration (Castor eq. 4-5, `t_hat = t_iter * xi`).** Engine v1 slowed only the "
    "compute term, so a colocated 32-GPU ImageNet job at xi = 2 slowed 1.16x instead of 2x, and sharing looked "
    "almost free for large gangs. It moves every policy that colocates (sjf-ffs, castor, castor-oracle); the "
    "ablation table below runs the current engine with v1's rule to show how much of the move is this change.",
    "**All-reduce latency fitted on multi-node runs** (`gpucluster catalog fit-comm`, Pollux's scalability and "
    "placement measurements, 66 multi-node rows per model). v1 extrapolated a constant fitted on one node (ImageNet "
    "23 ms -> 3.1 ms, BERT 2 ms -> 33 ms, YOLOv3 2 ms -> 25 ms). Every multi-GPU job's iteration time, hence its solo "
    "time and, on sjfbsbf-philly (pollux-time recipe), its work, changes: this moves every policy, FIFO included.",
    "**Demand per GPU type and xi from the pair's combined demand** for pairs Gavel did not measure (A6000 and RTX "
    "2080 Ti are unmeasured types): the ground-truth xi of the Pollux models' pairs on these GPUs changes.",
    "**The XGBoost predictor refitted** (its communication feature follows the new all-reduce constants): castor's "
    "decisions change a little (its validation RMSE moves by at most 0.002 on K80, P100 and V100).",
    "**MPS shares that relieve the partner** (squeezing one job speeds the other beyond free competition, Gimbal "
    "§2.2/§4.1): no policy on these boards changes shares, so nothing here moves by it.",
    "**Sharing benefit (eq. 24) priced at the job's own solo accumulation**, with its median beside the mean: the "
    "metric only, no episode moves by it.",
    "**One rounding order** for single- and multi-GPU copies (v1 kept two for bit-identity): last-digit differences "
    "that can flip a tie.",
]
"""One line per engine change between the snapshot's engine and the current one: what it changes and why
(rendered above the before/after tables)."""

ORDERINGS = (
    ("Tiresias worse than SJF", "sjf", "tiresias"),
    ("SJF-FFS better than SJF", "sjf-ffs", "sjf"),
    ("Castor better than SJF-FFS", "castor", "sjf-ffs"),
    ("Castor better than SJF", "castor", "sjf"),
)
"""The papers' pairwise orderings (name, better policy, worse policy) compared before and after."""


def _cell_label(row: dict[str, Any]) -> str:
    xi = row.get("xi")
    return "|".join([row["scenario"], row["options"], "" if xi is None else repr(float(xi)), row.get("popts", ""),
                     row["policy"]])


def snapshot(rows: list[dict[str, Any]], label: str) -> dict[str, Any]:
    """The per-seed metrics of ``rows`` (records as :func:`~.reproduce.record_row` gives them), keyed by cell
    (scenario, options, injected xi, policy options, policy), with ``label`` naming the engine they came from."""
    cells: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        c = cells.setdefault(_cell_label(r), {})
        c.setdefault("seed", []).append(int(r["seed"]))
        for k in SNAPSHOT_METRICS:
            v = r.get(k)
            c.setdefault(k, []).append(None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v))
    return {"format": SNAPSHOT_FORMAT, "label": label, "cells": dict(sorted(cells.items()))}


def load_snapshot(path: str | Path) -> dict[str, Any]:
    """A snapshot written by :func:`snapshot`; a one-line ``ValueError`` naming the file otherwise."""
    p = Path(path)
    try:
        snap = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{p}: cannot read the engine snapshot ({e})") from None
    if not isinstance(snap, dict) or snap.get("format") != SNAPSHOT_FORMAT or not isinstance(snap.get("cells"), dict):
        raise ValueError(f"{p}: not a {SNAPSHOT_FORMAT} file")
    return snap


def _before(snap: dict[str, Any], sc: str, opts: str, policy: str, key: str = "avg_jct_s") -> dict[int, float]:
    c = snap["cells"].get("|".join([sc, opts, "", "", policy]), {})
    return {s: v for s, v in zip(c.get("seed", []), c.get(key, []), strict=True) if v is not None}


def _after(res: Results, sc: str, opts: str, policy: str, key: str = "avg_jct_s") -> dict[int, float]:
    return {int(r["seed"]): float(r[key]) for r in res.sel(sc, policy, opts)
            if r.get(key) is not None and r[key] == r[key]}


def _mean(d: dict[int, float]) -> float:
    return float(np.mean(list(d.values()))) if d else float("nan")


def _h(x: float) -> str:
    return "–" if x != x else f"{x / 3600:.2f}"


def _gap(by_seed: list[dict[int, float]]) -> tuple[float, float, float] | None:
    """Paired improvement of the first policy over the second (mean, 95% CI), over their common seeds."""
    seeds = sorted(set(by_seed[0]) & set(by_seed[1]))
    if len(seeds) < 2:
        return None
    x, y = (np.array([d[s] for s in seeds], float) for d in by_seed)
    lo, hi = improvement_ci(x, y)
    return improvement(x, y), lo, hi


def _gap_text(g: tuple[float, float, float] | None) -> str:
    if g is None:
        return "–"
    m, lo, hi = g
    verdict = "holds" if m > 0 else "does not hold"
    sure = "" if (lo > 0 or hi < 0) else ", CI includes 0"
    return f"{verdict}: {100 * m:+.1f}% [{100 * lo:+.1f}, {100 * hi:+.1f}]{sure}"


def render_change(snap: dict[str, Any], res: Results, reasons: list[str]) -> list[str]:
    """The section of docs/results/reproduction.md comparing the snapshot's engine with the current one: average JCT per
    policy before and after on the papers' settings, each ordering's paired gap before and after, and
    ``reasons`` (one line per engine change: what it changes and why)."""
    out = [f"## What the engine change moved: {snap['label']} against the current engine\n",
           "Average JCT (h) per policy, means over the seeds both engines ran, and each ordering's paired gap "
           "(the better policy's average-JCT improvement over the worse one, 95% bootstrap interval over seeds). "
           "The earlier engine's figures are its records' means kept in `docs/_scripts/snapshots/`.\n",
           "Changes, and why each was made:\n"]
    out += [f"- {r}" for r in reasons] + [""]
    for sc, o in MAIN:
        opts = _opts_label(o)
        out.append(f"### {sc}{' (' + opts + ')' if opts else ''}\n")
        out.append("| policy | JCT before (h) | JCT after (h) | change |")
        out.append("|---|---|---|---|")
        for p in POLICIES:
            b, a = _mean(_before(snap, sc, opts, p)), _mean(_after(res, sc, opts, p))
            ch = "–" if not (b == b and a == a and b) else f"{100 * (a - b) / b:+.1f}%"
            out.append(f"| {p} | {_h(b)} | {_h(a)} | {ch} |")
        out.append("")
        out.append("| ordering | before | after |")
        out.append("|---|---|---|")
        for name, good, bad in ORDERINGS:
            gb = _gap([_before(snap, sc, opts, good), _before(snap, sc, opts, bad)])
            ga = _gap([_after(res, sc, opts, good), _after(res, sc, opts, bad)])
            out.append(f"| {name} | {_gap_text(gb)} | {_gap_text(ga)} |")
        out.append("")
    return out + render_ablation(snap, res)


ABLATION_OPTS = "interference_scope=compute"
"""The board cells that run the current engine with engine v1's rule for colocated slowdowns (compute term only)."""


def render_ablation(snap: dict[str, Any], res: Results) -> list[str]:
    """Castor's lead over SJF-FFS and SJF-FFS's over SJF under the earlier engine, the current engine with the
    colocated slowdown on the compute term only (:data:`ABLATION_OPTS`), and the current engine: how much of the
    move comes from Castor eq. 4-5 and how much from the rest of the change."""
    scs = sorted({r["scenario"] for r in res.rows if r["options"] == ABLATION_OPTS})
    if not scs:
        return []
    out = ["### Eq. 4-5 alone: the current engine with xi on the compute term only\n",
           "The same cells run three ways: the earlier engine, the current engine with "
           f"`--option {ABLATION_OPTS}` (engine v1's rule for the colocated slowdown, every other change kept), "
           "and the current engine. Paired gaps as above.\n",
           "| scenario | ordering | earlier engine | current, compute-only xi | current |", "|---|---|---|---|---|"]
    for sc in scs:
        for name, good, bad in ORDERINGS[1:3]:
            gb = _gap([_before(snap, sc, "", good), _before(snap, sc, "", bad)])
            gc = _gap([_after(res, sc, ABLATION_OPTS, good), _after(res, sc, ABLATION_OPTS, bad)])
            ga = _gap([_after(res, sc, "", good), _after(res, sc, "", bad)])
            out.append(f"| {sc} | {name} | {_gap_text(gb)} | {_gap_text(gc)} | {_gap_text(ga)} |")
    out.append("")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Write an engine snapshot (per-cell metrics) from results folders.")
    ap.add_argument("results", nargs="+", help="results folders made by `gpucluster leaderboard run`")
    ap.add_argument("--label", required=True, help="which engine the records came from, e.g. 'engine v1 (76b46ed)'")
    ap.add_argument("--out", default=str(DEFAULT_SNAPSHOT))
    args = ap.parse_args(argv)
    rows = load_rows(args.results)
    if not rows:
        ap.error("no current records in " + ", ".join(args.results))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(args.out, (json.dumps(snapshot(rows, args.label), indent=0, sort_keys=True) + "\n").encode())
    print(f"wrote {args.out} ({len(rows)} records)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
