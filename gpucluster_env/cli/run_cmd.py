"""``gpucluster run``: one scenario x one policy (or all) x one seed; prints the metrics."""

from __future__ import annotations

import argparse
import math

COLUMNS = (
    ("policy", "policy", "{}"),
    ("avg_jct_s", "avg JCT s", "{:,.0f}"),
    ("median_jct_s", "median JCT s", "{:,.0f}"),
    ("p95_jct_s", "p95 JCT s", "{:,.0f}"),
    ("avg_queue_s", "avg queue s", "{:,.0f}"),
    ("makespan_s", "makespan s", "{:,.0f}"),
    ("gpu_utilization", "GPU util", "{:.1%}"),
    ("sharing_utilization", "shared", "{:.1%}"),
    ("colocations", "coloc", "{}"),
    ("preemptions", "preempt", "{}"),
    ("wall_s", "wall s", "{:.2f}"),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run one scenario with one policy (or all) for one seed",
                       description="Run one scenario with a policy for one seed and print the episode metrics.")
    p.add_argument("--scenario", default="tiny", help="scenario name (see `gpucluster scenarios`)")
    p.add_argument("--policy", default="fifo", help="policy name (see `gpucluster policies`), or 'all'")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="scenario override, e.g. num_jobs=480 or load=2.0 (repeatable)")
    p.add_argument("--policy-option", action="append", metavar="KEY=VALUE",
                   help="argument of the policy's constructor, e.g. thresholds=[3600] for tiresias (repeatable; "
                        "values are JSON, else strings)")
    p.add_argument("--record", metavar="FILE", help="write the episode as a replay file (JSON lines)")
    p.add_argument("--json", action="store_true", help="print one JSON object (a list with --policy all)")
    p.set_defaults(func=run)


def _fmt(fmt: str, v: object) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "–"
    return fmt.format(v)


def run(args: argparse.Namespace) -> int:
    from gpucluster_env.baselines import make_policy, policy_names
    from gpucluster_env.cli.jsonout import dumps
    from gpucluster_env.cli.options import parse_options
    from gpucluster_env.leaderboard.runner import run_episode
    from gpucluster_env.scenarios import get_scenario

    options = parse_options(args.option)
    get_scenario(args.scenario, **options)  # fail fast on a bad name or option
    popts = parse_options(args.policy_option, "--policy-option")
    from gpucluster_env.baselines import POLICIES

    names = [n for n in policy_names() if POLICIES[n].applies_to(args.scenario)] if args.policy == "all" \
        else [args.policy]
    if args.record and len(names) > 1:
        raise ValueError("--record needs a single --policy")
    if popts and len(names) > 1:
        raise ValueError("--policy-option needs a single --policy")
    results = []
    for name in names:
        pol = make_policy(name, **popts)
        results.append(run_episode(args.scenario, pol, args.seed, scenario_options=options, record=args.record))
    if args.json:
        print(dumps(results[0] if len(results) == 1 else results))
        return 0
    from rich.console import Console
    from rich.table import Table

    first = results[0]
    table = Table(title=f"{first['scenario']} · seed {args.seed} · {first['jobs']} jobs")
    for _, title, _ in COLUMNS:
        table.add_column(title, justify="left" if title == "policy" else "right")
    for r in results:
        table.add_row(*[_fmt(fmt, r[key]) for key, _, fmt in COLUMNS])
    console = Console(width=None if Console().is_terminal else 150)
    console.print(table)
    console.print(f"trace: {first['trace']}")
    if args.record:
        console.print(f"replay written to {args.record}")
    return 0
