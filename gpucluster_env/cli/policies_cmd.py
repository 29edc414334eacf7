"""``gpucluster policies``: the registered policies with one-line descriptions and their papers."""

from __future__ import annotations

import argparse
import json

from gpucluster_env.cli import Subparsers


def register(sub: Subparsers) -> None:
    p = sub.add_parser("policies", help="list policies, or one policy's options",
                       description="List the registered scheduling policies, or, given a NAME (a registered name or "
                                   "module:Class), that policy's options: each one's type, range and default, as "
                                   "--policy-option and a board's policy options take them.")
    p.add_argument("name", nargs="?", help="a policy whose options to list")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def options(name: str, as_json: bool) -> int:
    """Print policy ``name``'s options (name, what it accepts, default)."""
    import inspect

    from gpucluster_env.policy import option_settings

    rows = [{"option": o, "accepts": setting.accepts(), "required": default is inspect.Parameter.empty,
             "default": None if default is inspect.Parameter.empty else default}
            for o, (setting, default) in option_settings(name).items()]
    if as_json:
        print(json.dumps({"policy": name, "options": rows}, default=repr))
        return 0
    if not rows:
        print(f"{name} takes no options")
        return 0
    from gpucluster_env.text_tables import Col, make_console, print_table

    cols = [Col("option", "left", key=True), Col("accepts", "left", text=True), Col("default", "left")]
    print_table(make_console(), f"{name}: options (--policy-option KEY=VALUE)", cols,
                [(r["option"], r["accepts"], "(required)" if r["required"] else repr(r["default"])) for r in rows])
    return 0


def run(args: argparse.Namespace) -> int:
    from gpucluster_env.policy import POLICIES, policy_names

    if args.name is not None:
        return options(args.name, args.json)
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
