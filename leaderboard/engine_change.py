"""What an engine change moved: the results of an earlier engine, kept as a small snapshot, beside the current
records in docs/reproduction.md.

An engine change that moves results on purpose (engine v2: eq. 4-5, the MPS share model, per-type demand, ...)
keeps the previous engine's cell means as a snapshot (``leaderboard/snapshots/engine_v1.json``), written from
that engine's results folders with

    python -m gpucluster_env.leaderboard.engine_change DIR [DIR ...] --label "engine v1 (76b46ed)" --out FILE

and :func:`render_change` puts the before and after figures and the papers' orderings side by side.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .reproduce import MAIN, POLICIES, Results, _opts_label, load_rows
from .stats import improvement, improvement_ci

SNAPSHOT_FORMAT = "gpucluster-engine-snapshot"
SNAPSHOT_METRICS = ("avg_jct_s", "avg_queue_s", "makespan_s")
DEFAULT_SNAPSHOT = Path(__file__).parent / "snapshots" / "engine_v1.json"

ENGINE_CHANGES: list[str] = []
"""One line per engine change between the snapshot's engine and the current one: what it changes and why
(filled in by the change that moves results; rendered above the before/after tables)."""

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
    """The section of docs/reproduction.md comparing the snapshot's engine with the current one: average JCT per
    policy before and after on the papers' settings, each ordering's paired gap before and after, and
    ``reasons`` (one line per engine change: what it changes and why)."""
    out = [f"## What the engine change moved: {snap['label']} against the current engine\n",
           "Average JCT (h) per policy, means over the seeds both engines ran, and each ordering's paired gap "
           "(the better policy's average-JCT improvement over the worse one, 95% bootstrap interval over seeds). "
           "The earlier engine's figures are its records' means kept in `leaderboard/snapshots/`.\n",
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
    Path(args.out).write_text(json.dumps(snapshot(rows, args.label), indent=0, sort_keys=True) + "\n")
    print(f"wrote {args.out} ({len(rows)} records)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
