"""``gpucluster policies``: the registered policies with one-line descriptions and their papers."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("policies", help="list policies", description="List the registered scheduling policies.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gpucluster_env.policy import POLICIES, policy_names

    rows = [{"name": n, "description": POLICIES[n].description, "paper": POLICIES[n].paper}
            for n in policy_names()]
    if args.json:
        print(json.dumps(rows))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="policies")
    for col in ("name", "description", "paper"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["name"], r["description"], r["paper"])
    Console().print(t)
    return 0
