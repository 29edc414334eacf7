"""``gpucluster train-advantage``: fit the rollout-advantage policy (gpucluster_env.agents.advantage_train)."""

from __future__ import annotations

import argparse
from typing import Any

from gpucluster_env.cli import Subparsers
from gpucluster_env.cli.option_args import add_backend_options


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "train-advantage", help="train the rollout-advantage policy (SRSF corrected by a learned model)",
        description="Label decision points with the search expert's rollouts, fit an XGBoost model of each "
                    "candidate action's advantage over SRSF's, then label the states the model itself visits "
                    "and refit (--rounds). Writes OUT/model.json and OUT/meta.json; play it with --policy "
                    "rl:OUT. See docs/rl.md.")
    p.add_argument("--scenario", default="castor-philly,sjfbsbf-philly,castor-venus",
                   help="comma-separated scenarios to train on")
    p.add_argument("--out", required=True, help="output folder (model.json, meta.json, rounds/)")
    p.add_argument("--episodes", type=int, default=80, help="training seeds per scenario, played each round")
    p.add_argument("--seed", type=int, default=0, help="the first training seed")
    p.add_argument("--rounds", type=int, default=0, help="rounds that play the learned model after the expert's")
    p.add_argument("--horizon-s", type=float, default=3600.0, help="simulated seconds each labelling rollout runs")
    p.add_argument("--starts", type=int, default=3, help="pending jobs tried as starts at a decision point")
    p.add_argument("--trees", type=int, default=600, help="boosting rounds of the XGBoost regressor")
    p.add_argument("--threshold", type=float, default=0.0,
                   help="least predicted gain (job-hours) for leaving SRSF's action, saved with the model")
    p.add_argument("--workers", type=int, default=2, help="labelling processes (or Ray CPUs of a local instance)")
    add_backend_options(p, "the labelling episodes")
    p.add_argument("--see-arrivals", action="store_true",
                   help="label with rollouts that see the trace's arrivals within the horizon (default: they see "
                        "only the jobs already submitted, as the model does)")
    p.add_argument("--no-progress", action="store_true", help="print no line per labelled episode")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import os

    from gpucluster_env.agents.advantage_train import AdvantageConfig, train_advantage
    from gpucluster_env.cli.train_cmd import command_line
    from gpucluster_env.scenarios import get_scenario
    from gpucluster_env.task_pool import check_backend

    scenarios = tuple(s.strip() for s in args.scenario.split(",") if s.strip())
    for s in scenarios:
        get_scenario(s)  # fail fast on a bad name
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise ValueError(f"--out {args.out}: exists and is not a folder")
    check_backend(args.workers, args.backend, args.address)
    cfg = AdvantageConfig(out=args.out, scenarios=scenarios, episodes=args.episodes, rounds=args.rounds,
                          seed=args.seed, horizon_s=args.horizon_s, starts=args.starts, trees=args.trees,
                          threshold=args.threshold, workers=args.workers, see_arrivals=args.see_arrivals)
    out = train_advantage(cfg, command_line(args, "train-advantage"), say=None if args.no_progress else _say,
                          backend=args.backend, address=args.address)
    print(summary(out))
    return 0


def _say(info: dict[str, Any]) -> None:
    print(f"labelled {info['scenario']} seed {info['seed']}: {info['points']} decision points, "
          f"avg JCT {info['avg_jct_s']:,.0f} s, {info['cpu_s']} CPU s", flush=True)


def summary(out: Any) -> str:
    """The closing lines: rounds, labels, time, and where the model is."""
    import json

    meta = json.loads((out / "meta.json").read_text())
    lines = []
    for r in meta["rounds"]:
        jct = [e["avg_jct_s"] for e in r["episodes"]]
        lines.append(f"round {r['round']} ({r['actor']}): {len(jct)} episodes, {r['labels']:,} labels "
                     f"({r['labels_total']:,} in all), mean avg JCT {sum(jct) / len(jct):,.0f} s, "
                     f"done at {r['wall_s']:,.0f} s")
    lines.append(f"model: {out / 'model.json'} (metadata: {out / 'meta.json'}); {meta['wall_s']:,.0f} s in all")
    lines.append(f"next: gpucluster evaluate --model {out} --scenario {meta['config']['scenarios'][0]} "
                 "--baselines srsf")
    return "\n".join(lines)
