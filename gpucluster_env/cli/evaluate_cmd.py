"""``gpucluster evaluate``: a trained model against reference policies on held-out seeds, with intervals."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="evaluate a trained model against reference policies",
                       description="Run a trained model (a directory written by `gpucluster train`, or a "
                                   "registered rl-* policy) and reference policies on held-out seeds; print the "
                                   "mean metric with 95% intervals and the paired difference to each reference.")
    p.add_argument("--model", required=True, help="directory written by `gpucluster train`, or a policy name")
    p.add_argument("--scenario", default="castor-philly", help="scenario(s), comma-separated")
    p.add_argument("--seeds", default="100-109", help="seeds: 'A-B' (inclusive) or a comma-separated list")
    p.add_argument("--baselines", default="sjf-ffs,castor", help="reference policies, comma-separated")
    p.add_argument("--metric", default="avg_jct_s")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.set_defaults(func=run)


MAX_SEEDS = 10_000
"""The most seeds ``--seeds`` may name."""


def parse_seeds(text: str) -> list[int]:
    """``"100-109"`` or ``"1,2,5"`` -> seeds."""
    bad = ValueError(f"--seeds {text!r}: expected A-B (A <= B) or a comma-separated list of integers")
    try:
        if "-" in text and "," not in text:
            a, b = (int(x) for x in text.split("-", 1))
            if a > b:
                raise bad
            count = b - a + 1
        else:
            seeds = [int(x) for x in text.split(",") if x.strip()]
            a, b, count = min(seeds, default=0), max(seeds, default=0), len(seeds)
    except ValueError:
        raise bad from None
    if not (0 <= a and b < 2**32):
        raise ValueError(f"--seeds {text!r}: a seed is an integer from 0 to {2**32 - 1}")
    if count > MAX_SEEDS:
        raise ValueError(f"--seeds {text!r}: at most {MAX_SEEDS:,} seeds")
    if "-" in text and "," not in text:
        return list(range(a, b + 1))
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds {text!r}: a seed is listed twice (it would count twice)")
    return seeds


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gpucluster_env.agents.evaluate import evaluate
    from gpucluster_env.cli.jsonout import dumps
    from gpucluster_env.scenarios import get_scenario

    seeds = parse_seeds(args.seeds)
    if not seeds:
        raise ValueError("--seeds names no seed")
    scenarios = [s.strip() for s in args.scenario.split(",") if s.strip()]
    for s in scenarios:
        get_scenario(s)
    model = f"rl:{args.model}" if Path(args.model).is_dir() else args.model
    baselines = [b.strip() for b in args.baselines.split(",") if b.strip()]
    from gpucluster_env.leaderboard.cells import engine_metric_names

    if args.metric not in engine_metric_names():
        raise ValueError(f"--metric {args.metric!r}: not an episode metric; known: "
                         f"{', '.join(sorted(engine_metric_names()))}")
    res = evaluate(model, scenarios, seeds, baselines, args.metric)
    if args.json:
        print(dumps(res))
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for sc, rows in res["summary"].items():
        t = Table(title=f"{sc} · {args.metric} · seeds {args.seeds}")
        for col in ("policy", "mean", "95% interval", "model vs this (paired)", "model wins"):
            t.add_column(col, justify="left" if col == "policy" else "right")
        for name, r in rows.items():
            rel = r.get("model_vs_this")
            t.add_row(name, f"{r['mean']:,.0f}", f"[{r['ci95'][0]:,.0f}, {r['ci95'][1]:,.0f}]",
                      f"{rel['mean']:+.1%} [{rel['ci95'][0]:+.1%}, {rel['ci95'][1]:+.1%}]" if rel else "",
                      f"{rel['wins']}/{len(seeds)}" if rel else "")
        console.print(t)
    return 0
