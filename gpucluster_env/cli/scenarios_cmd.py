"""``gpucluster scenarios``: the registered scenarios; ``gpucluster scenarios show NAME|FILE [--toml]``: one of
them in full, or as a TOML scenario file to start your own from."""

from __future__ import annotations

import argparse
import json

from gpucluster_env.cli import Subparsers


def register(sub: Subparsers) -> None:
    p = sub.add_parser("scenarios", help="list scenarios, or show one (as TOML)",
                       description="List the registered scenarios, or show one.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)
    actions = p.add_subparsers(dest="scenarios_command", metavar="ACTION")
    q = actions.add_parser("show", help="one scenario in full (--toml: as a scenario file that loads back)")
    q.add_argument("name", help="a scenario name or a scenario file PATH.toml")
    q.add_argument("--toml", action="store_true", help="print it as a TOML scenario file (--scenario FILE.toml)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=show)


def show(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from gpucluster_env.scenario_files import scenario_to_toml
    from gpucluster_env.scenarios import get_scenario

    sc = get_scenario(args.name)
    if args.toml:
        print(scenario_to_toml(sc), end="")
        return 0
    row = {k: v for k, v in asdict(sc).items() if k not in ("cluster", "config")}
    row.update(cluster=sc.cluster.to_spec(), gpus=sc.cluster.num_gpus, engine=asdict(sc.config))
    if args.json:
        print(json.dumps(row))
        return 0
    from gpucluster_env.text_tables import make_console, print_field

    console = make_console()
    for k, v in row.items():
        print_field(console, f"{k}:", str(v), 17)
    return 0


def run(args: argparse.Namespace) -> int:
    from gpucluster_env.registration import env_id, jobs_env_id
    from gpucluster_env.scenarios import SCENARIOS

    rows = []
    for s in SCENARIOS.values():
        rows.append({
            "name": s.name, "env_id": env_id(s.name), "jobs_env_id": jobs_env_id(s.name), "paper": s.paper,
            "gpus": s.cluster.num_gpus,
            "gpu_types": s.cluster.gpus_by_type(), "jobs": s.num_jobs, "trace": s.trace,
            "round_s": s.config.round_s, "description": s.description,
        })
    if args.json:
        print(json.dumps(rows))
        return 0
    from gpucluster_env.text_tables import Col, make_console, print_table

    cols = [Col("name", "left", key=True), Col("GPUs", "left", text=True), Col("jobs"),
            Col("description (trace · paper)", "left", text=True)]
    table = []
    for r in rows:
        types = ", ".join(f"{n} {k}" for k, n in r["gpu_types"].items())
        about = " · ".join(x for x in (f"trace {r['trace']}", r["paper"]) if x)
        table.append((r["name"], f"{r['gpus']} ({types})", f"{r['jobs']:,}", f"{r['description']} ({about})"))
    print_table(make_console(), "scenarios", cols, table, show_lines=True,
                caption=(f"Gymnasium ids: {rows[0]['env_id']} (full vocabulary) and {rows[0]['jobs_env_id']} "
                         "(job-centric), one of each per scenario (scenarios --json)") if rows else None)
    return 0
