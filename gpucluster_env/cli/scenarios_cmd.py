"""``gpucluster scenarios``: the registered scenarios."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scenarios", help="list scenarios", description="List the registered scenarios.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gpucluster_env.registration import env_id
    from gpucluster_env.scenarios import SCENARIOS

    rows = []
    for s in SCENARIOS.values():
        rows.append({
            "name": s.name, "env_id": env_id(s.name), "paper": s.paper, "gpus": s.cluster.num_gpus,
            "gpu_types": s.cluster.gpus_by_type(), "jobs": s.num_jobs, "trace": s.trace,
            "round_s": s.config.round_s, "description": s.description,
        })
    if args.json:
        print(json.dumps(rows))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title="scenarios")
    for col in ("name", "env id", "paper", "GPUs", "jobs", "trace", "description"):
        t.add_column(col)
    for r in rows:
        types = ", ".join(f"{n} {k}" for k, n in r["gpu_types"].items())
        t.add_row(r["name"], r["env_id"], r["paper"], f"{r['gpus']} ({types})", str(r["jobs"]), r["trace"],
                  r["description"])
    Console().print(t)
    return 0
