"""docs/rl.md's table of RL from scratch against SJF and SRSF: one row per training run, then the median run of
each scenario, from the JSON of `gpucluster evaluate --model RUN --scenario S --seeds ... --baselines sjf,srsf
--json` (one file per run).

    .venv/bin/python docs/_scripts/rl_scratch_table.py EVAL.json [EVAL.json ...]

A row gives the run's average JCT and its paired relative difference to SJF and to SRSF on the same job tables
(mean, 95% t-interval, seeds where the run is better). The median run of a scenario is the one with the median
mean difference to SJF over its training seeds (the issue's target reads that run's interval).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any


def _pct(d: dict[str, Any]) -> str:
    lo, hi = d["ci95"]
    return f"{100 * d['mean']:+.1f}% [{100 * lo:+.1f}, {100 * hi:+.1f}] {d['wins']}/{d['paired_seeds']}"


def rows(files: list[Path]) -> dict[str, list[dict[str, Any]]]:
    """Scenario -> one record per run: name, the run's mean JCT, SJF's and SRSF's, and the paired differences."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in files:
        r = json.loads(f.read_text())
        for sc, t in r["summary"].items():
            m = t[r["model"]]
            out[sc].append({"run": Path(r["model"].removeprefix("rl:")).name, "jct": m["mean"],
                            "truncated": len(m.get("truncated") or []), "sjf": t["sjf"]["mean"],
                            "srsf": t["srsf"]["mean"], "vs_sjf": t["sjf"]["model_vs_this"],
                            "vs_srsf": t["srsf"]["model_vs_this"], "seeds": r["seeds"]})
    return out


def markdown(data: dict[str, list[dict[str, Any]]]) -> str:
    """The table: every run, then each scenario's median run."""
    lines = ["| scenario | run | avg JCT (s) | vs SJF | vs SRSF |", "|---|---|---|---|---|"]
    medians = []
    for sc in sorted(data):
        runs = sorted(data[sc], key=lambda x: x["run"])
        for x in runs:
            lines.append(f"| {sc} | {x['run']} | {x['jct']:,.0f} | {_pct(x['vs_sjf'])} | {_pct(x['vs_srsf'])} |")
        by = sorted(runs, key=lambda x: x["vs_sjf"]["mean"])
        med = by[len(by) // 2]
        medians.append(f"| {sc} | **median of {len(runs)}: {med['run']}** | {med['jct']:,.0f} (SJF {med['sjf']:,.0f}, "
                       f"SRSF {med['srsf']:,.0f}) | **{_pct(med['vs_sjf'])}** | {_pct(med['vs_srsf'])} |")
    return "\n".join(lines + medians)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", type=Path)
    print(markdown(rows(p.parse_args().files)))


if __name__ == "__main__":
    main()
