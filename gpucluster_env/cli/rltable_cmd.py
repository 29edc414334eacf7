"""``gpucluster rl-table``: the baseline table of docs/rl.md for one scenario (standard algorithms trained over
several seeds with learning curves, and fixed policies, each scored against a reference on the same jobs)."""

from __future__ import annotations

import argparse

from gpucluster_env.cli import Subparsers
from gpucluster_env.cli.option_args import add_backend_options

DESCRIPTION = ("Train each algorithm from scratch on one scenario over several training seeds (learning curves), "
               "play the final models and the fixed policies on held-out seeds, and score each episode by its "
               "average JCT over the reference policy's on the same job table (1.0 = the reference; lower is "
               "better).")


def register(sub: Subparsers) -> None:
    p = sub.add_parser("rl-table", help="baseline table: RL algorithms and fixed policies, normalized scores",
                       description=DESCRIPTION)
    p.add_argument("--scenario", default="tiny")
    p.add_argument("--algos", default="maskable_ppo,ppo,a2c,maskable_ppo:lib,ppo:lib,a2c:lib,dqn:full",
                   help="algorithms, comma-separated ('' for none): ALGO on the job-centric process with the "
                        "project's defaults, ALGO:lib with the library's own, ALGO:full on the full vocabulary")
    p.add_argument("--train-seeds", default="0-2", help="training seeds: 'A-B' or a list")
    p.add_argument("--timesteps", type=int, default=20_000, help="training steps per run")
    p.add_argument("--points", type=int, default=4, help="learning-curve points per run")
    p.add_argument("--curve-seeds", default="200-202", help="seeds each curve point plays")
    p.add_argument("--seeds", default="300-309", help="held-out seeds of the final scores")
    p.add_argument("--policies", default="random,lookahead",
                   help="fixed policies (names, rl:DIR), comma-separated")
    p.add_argument("--reference", default="srsf", help="the policy scores are normalized by")
    p.add_argument("--merge", nargs="+", metavar="JSON", default=None,
                   help="run nothing: merge the JSON results of earlier runs of one scenario over different "
                        "training seeds (e.g. seeds 0-2 and 3-4) into one table, every algorithm summarized again "
                        "over all its seeds")
    p.add_argument("--out", default=None, help="write the whole result as JSON to this file")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON (else a Markdown table)")
    p.add_argument("--workers", type=int, default=1,
                   help="training runs and fixed policies at once (processes, or Ray CPUs of a local instance)")
    add_backend_options(p, "the training runs and fixed policies")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from gpucluster_env.agents.baseline_table import markdown
    from gpucluster_env.task_pool import check_backend

    if args.merge:
        result = _merged(args.merge)
    else:
        check_backend(args.workers, args.backend, args.address)
        result = _run(args)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        from gpucluster_env.cli.jsonout import dumps

        print(dumps(result))
    else:
        print(markdown(result))
    return 0


def _merged(files: list[str]) -> dict:
    """``--merge``: the results read from ``files`` as one table (a bad file: one line naming it)."""
    import json
    from pathlib import Path

    from gpucluster_env.agents.baseline_table import merge_tables

    results = []
    for f in files:
        try:
            results.append(json.loads(Path(f).read_text()))
        except (OSError, ValueError) as e:
            raise ValueError(f"--merge {f}: cannot read an rl-table JSON ({e})") from None
        if not isinstance(results[-1], dict) or not {"config", "algos", "policies"} <= set(results[-1]):
            raise ValueError(f"--merge {f}: not an rl-table result (no config, algos and policies)")
    try:
        return merge_tables(results, files)
    except KeyError as e:
        raise ValueError(f"--merge: a file lacks the field {e}") from None


def _run(args: argparse.Namespace) -> dict:
    """Train and play the table that the arguments describe."""
    from gpucluster_env.agents.baseline_table import TableConfig, run_table, train_config
    from gpucluster_env.cli.evaluate_cmd import parse_seeds
    from gpucluster_env.policy import make_policy
    from gpucluster_env.scenarios import get_scenario

    get_scenario(args.scenario)
    algos = tuple(a.strip() for a in args.algos.split(",") if a.strip())
    for a in algos:
        try:
            train_config(a, args.scenario, 0, 1)
        except ValueError as e:
            raise ValueError(f"--algos: {e}") from None
    policies = tuple(p.strip() for p in args.policies.split(",") if p.strip())
    for name in (*policies, args.reference):
        make_policy(name)  # an unknown name or a bad model directory: one line before anything runs
    cfg = TableConfig(args.scenario, algos, tuple(parse_seeds(args.train_seeds)), args.timesteps, args.points,
                      tuple(parse_seeds(args.curve_seeds)), tuple(parse_seeds(args.seeds)), policies, args.reference)
    return run_table(cfg, workers=args.workers, backend=args.backend, address=args.address)
