"""``gpucluster evaluate``: a trained model against reference policies on held-out seeds, with intervals."""

from __future__ import annotations

import argparse
from typing import Any

from gpucluster_env.cli import Subparsers
from gpucluster_env.cli.option_args import add_backend_options


def register(sub: Subparsers) -> None:
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
    p.add_argument("--workers", type=int, default=1,
                   help="episodes at once (processes, or Ray CPUs of a local instance)")
    add_backend_options(p, "the episodes")
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
    from gpucluster_env.task_pool import check_backend

    check_backend(args.workers, args.backend, args.address)
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
    from gpucluster_env.agents.policies import RLPolicy, model_mismatch
    from gpucluster_env.policy import make_policy, registered_policies

    for name in (model, *baselines):
        cls = registered_policies().get(name)
        learned = name.startswith("rl:") or (cls is not None and issubclass(cls, RLPolicy))
        pol = make_policy(name) if learned else None  # loaded once: its shapes are checked on every scenario
        for s in scenarios:
            why = model_mismatch(pol, get_scenario(s)) if pol is not None else None
            if why is None and cls is not None and not cls.applies_to(get_scenario(s)):
                why = cls.not_applicable_because(get_scenario(s))
            if why:
                raise ValueError(f"{name} cannot run on {s}: {why}")
    res = evaluate(model, scenarios, seeds, baselines, args.metric, lower_is_better=lower_is_better(args.metric),
                   workers=args.workers, backend=args.backend, address=args.address)
    if args.json:
        print(dumps(res))
        return 0
    from gpucluster_env.text_tables import make_console

    print_summary(res, args.metric, args.seeds, make_console())
    return 0


def lower_is_better(metric: str) -> bool:
    """Whether a lower ``metric`` is better (the leaderboard's rule, :mod:`gpucluster_env.leaderboard.stats`)."""
    from gpucluster_env.leaderboard.stats import lower_is_better as rule

    return rule(metric)


def print_summary(res: dict[str, Any], metric: str, seeds_text: str, console: Any) -> None:
    """The evaluation as tables that fit ``console``: a mean and its interval where there are enough finished
    seeds (else how many there are), the paired difference to each reference, then the truncated episodes,
    each with the limit that stopped it."""
    from gpucluster_env.agents.evaluate import MIN_SEEDS_FOR_INTERVAL
    from gpucluster_env.text_tables import Col, print_table

    notes: list[str] = []
    for sc, rows in res["summary"].items():
        cols = [Col("policy", "left", key=True), Col("seeds done"), Col("mean"), Col("95% interval", glue=True),
                Col("model's improvement (paired)"), Col("95% interval", glue=True), Col("model wins")]
        table = []
        sign = -1.0 if lower_is_better(metric) else 1.0  # improvement: positive is better, as leaderboard show
        for name, r in rows.items():
            rel = r.get("model_vs_this")
            n = r["finished_seeds"]
            table.append((
                name, f"{n}/{len(r['values'])}", "–" if r["mean"] is None else f"{r['mean']:,.0f}",
                _ci(r, lambda x: f"{x:,.0f}"),
                "" if rel is None else "–" if rel["mean"] is None else f"{sign * rel['mean']:+.1%}",
                "" if rel is None else _ci(rel, lambda x, k=sign: f"{k * x:+.1%}", sign < 0),
                "" if rel is None else f"{rel['wins']}/{rel['paired_seeds']}"))
            for t in r["truncated"]:
                notes.append(f"{sc} · {name} · seed {t['seed']}: truncated ({CAUSES.get(t['cause'], t['cause'])}); "
                             "left out of its mean and of the pairs")
        print_table(console, f"{sc} · {metric} · seeds {seeds_text}", cols, table)
    better = "lower" if lower_is_better(metric) else "higher"
    console.print(f"improvement: the model's paired relative difference to each policy, positive where the model's "
                  f"{metric} is better ({better}), as `leaderboard show` signs it; --json keeps the relative "
                  "difference itself (model_vs_this: negative where the model's is lower)", highlight=False)
    if any(r["ci95"] is None and r["mean"] is not None for rows in res["summary"].values() for r in rows.values()):
        console.print(f"no interval: fewer than {MIN_SEEDS_FOR_INTERVAL} finished seeds (a 95% interval from 2 "
                      "seeds spans most of the axis, below zero for a time); pass more --seeds", highlight=False)
    for line in notes:
        console.print(line, highlight=False)


CAUSES = {"stalled": "stalled: it kept waiting with jobs queued and nothing running",
          "max_steps": "stopped at the environment's step limit",
          "max_episode_steps": "stopped at the model's step limit (the registered ids' max_episode_steps)",
          "max_sim_time_s": "stopped at the simulated-time limit"}
"""A truncated episode's ``truncated_by`` in words."""


def _ci(r: dict[str, Any], fmt: Any, flip: bool = False) -> str:
    """``[lo, hi]`` (``flip``: the bounds of the negated quantity, so still low to high), or ``n/a (k seeds)``
    when there are too few finished seeds for an interval."""
    if r.get("ci95") is None:
        n = r.get("finished_seeds", r.get("paired_seeds", 0))
        return f"n/a ({n} seeds)"
    lo, hi = r["ci95"]
    if flip:
        lo, hi = hi, lo
    return f"[{fmt(lo)}, {fmt(hi)}]"
