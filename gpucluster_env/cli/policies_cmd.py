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

    rows = [{"name": n, "kind": POLICIES[n].kind, "description": POLICIES[n].description, "paper": POLICIES[n].paper}
            for n in policy_names()]
    if args.json:
        print(json.dumps(rows))
        return 0
    from gpucluster_env.text_tables import Col, make_console, print_table

    cols = [Col("name", "left", key=True), Col("kind", "left"), Col("description (paper)", "left", text=True)]
    console = make_console()
    print_table(console, "policies", cols,
                [(r["name"], r["kind"], f"{r['description']} ({r['paper']})" if r["paper"] else r["description"])
                 for r in rows], show_lines=True)
    from gpucluster_env.policy import POLICY_KINDS

    for k, v in POLICY_KINDS.items():  # the console folds each at the terminal's width
        console.print(f"{k}: {v}", highlight=False, markup=False)
    return 0
