"""``gpucluster run``: one scenario (a name, a TOML file, or a trace file on a cluster given inline) x one
policy (or all) x one seed; prints the metrics, and says so when the episode was cut short."""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from gpucluster_env.cli import Subparsers
from gpucluster_env.traces.trace_options import format_option

COLUMNS = (
    ("policy", "policy", "{}"),
    ("avg_jct_s", "avg JCT s", "{:,.0f}"),
    ("median_jct_s", "median JCT s", "{:,.0f}"),
    ("p95_jct_s", "p95 JCT s", "{:,.0f}"),
    ("avg_queue_s", "avg queue s", "{:,.0f}"),
    ("makespan_s", "makespan s", "{:,.0f}"),
    ("gpu_occupancy", "GPU occ", "{:.1%}"),
    ("sm_activity_est", "SM est", "{:.1%}"),
    ("sharing_utilization", "shared", "{:.1%}"),
    ("sharing_benefit", "SB mean", "{:.2f}"),
    ("sharing_benefit_median", "SB med", "{:.2f}"),
    ("colocations", "coloc", "{}"),
    ("preemptions", "preempt", "{}"),
    ("wall_s", "wall s", "{:.2f}"),
)
DEFAULT_MAX_SIM_DAYS = 1000.0
DEFAULT_MAX_STEPS = 20_000_000


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "run", help="run one scenario with one policy (or all) for one seed",
        description="Run one scenario with a policy for one seed and print the episode metrics. The scenario is a "
                    "name, a scenario file (.toml), or your own trace file on your own cluster: "
                    "--trace jobs.csv --cluster V100:9x4,P100:9x4,K80:9x4.")
    p.add_argument("--scenario", default="tiny",
                   help="scenario name (see `gpucluster scenarios`) or a scenario file PATH.toml")
    p.add_argument("--trace", metavar="FILE",
                   help="run the jobs of this trace file (format sniffed, or --trace-format); the cluster is "
                        "--cluster, else the scenario's")
    p.add_argument("--trace-format", **format_option("--trace"))
    p.add_argument("--columns", metavar="FIELD=COLUMN[:UNIT],...",
                   help="read --trace as any CSV by naming its columns: submit_s, num_gpus, duration_s (required), "
                        "job_id, model; units s, ms, min, h for the times, e.g. submit_s=arrival:min,num_gpus=gpus,"
                        "duration_s=runtime:h,model=arch (a model column runs each job as that model)")
    p.add_argument("--cluster", metavar="SPEC",
                   help="the cluster, e.g. V100:9x4,P100:9x4,K80:9x4 (TYPE:NODESxGPUS per group; net=GBPS sets "
                        "the inter-node bandwidth, default 12.5)")
    p.add_argument("--annotate", metavar="RECIPE",
                   help="how --trace jobs become training jobs: uniform (models drawn from --models), hadar-class, "
                        "trace (the file's own models, Gavel), file-models (the file's model column), pollux, "
                        "pollux-lucid, pollux-time (default: trace for Gavel files, file-models for a file with a "
                        "model column, else uniform)")
    p.add_argument("--models", metavar="M1,M2", help="models for --trace jobs (default: Pollux's six)")
    p.add_argument("--window", help="how --trace jobs are sampled: all (default), busiest, random, hours:A-B")
    p.add_argument("--jobs", type=int, metavar="N", help="number of --trace jobs (default: all)")
    p.add_argument("--policy", default="fifo", help="policy name (see `gpucluster policies`), or 'all'")
    p.add_argument("--seed", type=int, default=0, help="episode seed (0 to 2**32-1)")
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="scenario override, e.g. num_jobs=480, load=2.0, all_at_zero=true (repeatable; typed and "
                        "checked against the option's declared type and range)")
    p.add_argument("--policy-option", action="append", metavar="KEY=VALUE",
                   help="argument of the policy's constructor, e.g. thresholds=[3600] for tiresias (repeatable; "
                        "typed by the constructor's declaration)")
    p.add_argument("--max-sim-days", type=float, default=DEFAULT_MAX_SIM_DAYS,
                   help="stop (truncate) the episode after this much simulated time "
                        f"(default {DEFAULT_MAX_SIM_DAYS:g})")
    p.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS,
                   help=f"stop (truncate) the episode after this many env steps (default {DEFAULT_MAX_STEPS:,})")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (it shows only on a terminal)")
    p.add_argument("--record", metavar="FILE",
                   help="write the episode as a record for `gpucluster replay` (JSON lines; .gz compresses)")
    p.add_argument("--json", action="store_true", help="print one JSON object (a list with --policy all)")
    p.set_defaults(func=run)


def _fmt(fmt: str, v: object) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "–"
    return fmt.format(v)


def scenario_from_args(args: argparse.Namespace) -> Any:
    """The scenario ``run`` plays: ``--scenario`` (name or file), or ``--trace`` on ``--cluster``, with the
    typed ``--option`` overrides applied."""
    from gpucluster_env.cli.option_args import parse_options
    from gpucluster_env.scenarios import get_scenario
    from gpucluster_env.settings import SettingError

    if args.trace is None:
        for flag in ("trace_format", "columns", "annotate", "models", "window", "jobs"):
            if getattr(args, flag) is not None:
                raise SettingError(f"--{flag.replace('_', '-')} goes with --trace FILE")
    sc = get_scenario(args.scenario)
    options = parse_options(args.option, scenario=sc.name)
    if args.cluster is not None:
        from gpucluster_env.catalog.gpus import GPU_TYPES
        from gpucluster_env.hardware import parse_cluster_spec

        try:
            options["cluster"] = parse_cluster_spec(args.cluster, GPU_TYPES)
        except ValueError as e:
            raise SettingError(f"--cluster: {e}") from None
    if args.trace is not None:
        fields, gpus = _trace_options(args)
        for key, flag in (("num_jobs", "jobs"), ("window", "window"), ("annotate", "annotate"), ("models", "models")):
            if key in options and getattr(args, flag) is not None:
                raise SettingError(f"--option {key}=... and --{flag} say the same thing: give one")
        options = {**fields, **options}  # an --option the user gave wins over what --trace derives
        out = sc.with_options(**options)
        args.spread_note = spread_note(args.trace, gpus, out.cluster)  # said after the run (errors come first)
        return out
    return sc.with_options(**options) if options else sc


def spread_note(trace: str, gpus: Any, cluster: Any) -> str | None:
    """How many of the trace's multi-GPU jobs ask for more GPUs than a node of the cluster holds, as a line for
    stderr (None where none does): a trace's durations are taken as measured where the job ran (its gang
    consolidated), and the engine runs a gang spread over nodes slower (docs/traces.md); most of them spread
    is a warning."""
    import numpy as np

    per_node = max(n.count for n in cluster.nodes)
    gangs = np.asarray(gpus)[np.asarray(gpus) > 1]
    spread = int((gangs > per_node).sum())
    if not spread:
        return None
    what = "warning" if spread > len(gangs) / 2 else "note"
    return (f"gpucluster run: {what}: {spread:,} of the {len(gangs):,} multi-GPU jobs of {trace} ask for more than "
            f"the {per_node} GPUs a node holds here: their durations are read as measured on a consolidated "
            "placement, and spread over nodes they run slower (the communication model; docs/traces.md)")


def _trace_options(args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    """The scenario fields for ``--trace FILE`` (the file read once here, so a bad file fails now with its
    row and field, and the job count is the file's own unless ``--jobs`` says otherwise), and its jobs' GPU
    counts."""
    from pathlib import Path

    from gpucluster_env.scenarios import POLLUX_MODELS, own_models
    from gpucluster_env.settings import SettingError
    from gpucluster_env.traces.registry import guess_format, load_file
    from gpucluster_env.traces.samplers import SampleReport, usable_jobs

    if args.columns is not None and args.trace_format is not None:
        raise SettingError("--columns reads --trace as a CSV of your columns: give it without --trace-format")
    if args.columns is not None:
        fmt, df = None, load_file(args.trace, columns=args.columns)[0]
    else:
        fmt = args.trace_format or guess_format(args.trace)
        df, _ = load_file(args.trace, fmt)
    usable = len(usable_jobs(df, SampleReport("all")))
    if usable == 0:
        raise SettingError(f"{args.trace}: no job with a positive duration or number of iterations")
    if args.jobs is not None and not (1 <= args.jobs <= usable):
        raise SettingError(f"--jobs {args.jobs}: {args.trace} has {usable} usable jobs; ask for 1 to {usable}")
    annotate = args.annotate or ("trace" if fmt and (fmt.startswith("gavel") or fmt == "pollux-workload")
                                 else "file-models" if "model" in df.columns else "uniform")
    models = (tuple(m.strip() for m in args.models.split(",")) if args.models
              else own_models("file", annotate) or POLLUX_MODELS)
    return {"name": Path(args.trace).name, "description": f"trace file {args.trace}", "paper": "",
            "trace": "file", "trace_file": str(args.trace), "trace_format": fmt,
            "trace_columns": args.columns, "num_jobs": args.jobs or usable,
            "window": args.window or "all", "annotate": annotate, "models": models, "mix": None,
            "all_at_zero": False, "deadlines": False}, df["num_gpus"].to_numpy()


def _check_bounds(args: argparse.Namespace) -> None:
    """``--seed``, ``--max-sim-days`` and ``--max-steps`` within their ranges, else a one-line ``SettingError``."""
    from gpucluster_env.env.limits import ENV_LIMITS
    from gpucluster_env.settings import SettingError

    if not (0 <= args.seed < 2**32):
        raise SettingError(f"--seed {args.seed}: must be an integer from 0 to {2**32 - 1}")
    if not (0 < args.max_sim_days <= 1e6):
        raise SettingError(f"--max-sim-days {args.max_sim_days:g}: must be a number of days in (0, 1e6]")
    if not (1 <= args.max_steps <= ENV_LIMITS["max_steps"].high):  # type: ignore[operator]
        raise SettingError(f"--max-steps {args.max_steps}: must be from 1 to {ENV_LIMITS['max_steps'].high:.0e}")


def run(args: argparse.Namespace) -> int:
    from gpucluster_env.cli.jsonout import dumps
    from gpucluster_env.cli.option_args import parse_policy_options
    from gpucluster_env.cli.run_progress import EpisodeLimits, ProgressPolicy
    from gpucluster_env.policy import make_policy, policy_names, run_episode
    from gpucluster_env.settings import SettingError

    _check_bounds(args)
    sc = scenario_from_args(args)
    from gpucluster_env.policy import POLICIES

    names = [n for n in policy_names() if POLICIES[n].applies_to(sc)] if args.policy == "all" else [args.policy]
    left_out = ({n: POLICIES[n].not_applicable_because(sc) for n in policy_names() if n not in names}
                if args.policy == "all" else {})
    if args.policy.startswith("rl") and args.policy != "rl:":  # a trained model: its shapes against the env
        from gpucluster_env.agents.policies import model_mismatch

        why = model_mismatch(args.policy, sc)
        if why:
            raise SettingError(f"--policy {args.policy} cannot run on {sc.name}: {why}")
    if args.record is not None and len(names) > 1:
        raise SettingError("--record needs a single --policy")
    inputs = (args.trace, args.scenario if os.path.isfile(args.scenario) else None, sc.trace_file)
    scratch = _scratch_record(args.record, inputs) if args.record is not None else None
    if args.policy_option and len(names) > 1:
        raise SettingError("--policy-option needs a single --policy")
    popts = parse_policy_options(args.policy_option, names[0]) if len(names) == 1 else {}
    limits = EpisodeLimits(args.max_sim_days * 86400.0, args.max_steps)
    results = []
    try:
        for name in names:
            pol = ProgressPolicy(make_policy(name, **popts), limits, show=not args.no_progress and not args.json)
            try:
                results.append(run_episode(sc, pol, args.seed,  # type: ignore[arg-type]
                                           wrap=_recording(scratch) if scratch else None))
            finally:
                pol.close()
            results[-1]["limits"] = limits.describe(results[-1].get("truncated_by"), sc.num_jobs, sc.config.tick_s)
            results[-1]["jobs_asked"] = sc.num_jobs
    except BaseException:
        if scratch:
            shutil.rmtree(scratch.parent, ignore_errors=True)
        raise
    failed = _deliver_record(scratch, args.record) if scratch else None
    if args.json:
        print(dumps(results[0] if len(results) == 1 else results))
        for name, why in left_out.items():
            print(f"gpucluster run: note: --policy all left out {name}: {why}", file=sys.stderr)
    else:
        _print_table(results, args, sc, record_written=scratch is not None and failed is None)
        from gpucluster_env.text_tables import make_console

        for name, why in left_out.items():
            make_console().print(f"left out: {name} ({why})", highlight=False, markup=False)
    if getattr(args, "spread_note", None):
        print(args.spread_note, file=sys.stderr)
    if failed:
        raise failed  # after the results: a record that cannot be written loses nothing else
    return 0


def _recording(path: Path) -> Any:
    """The replay recorder (imported only for ``--record``: ~30 ms of start-up a plain run does not need)."""
    from gpucluster_env.replay.recorder import recording

    return recording(path)


def _scratch_record(target: str, inputs: tuple[str | None, ...]) -> Path:
    """Where the episode's record is written first (a private temporary folder), once ``target`` is known
    to be a possible output, so a target that fails at the end (a full disk, ``/dev/full``) costs neither the
    results nor the record."""
    import tempfile

    from gpucluster_env.atomic_write import check_output

    check_output(target, inputs)  # a folder, a socket or an input (trace, scenario file): refused now, not after
    return Path(tempfile.mkdtemp(prefix="gpucluster-record-")) / ("record.jsonl.gz" if target.endswith(".gz")
                                                                   else "record.jsonl")


def _deliver_record(scratch: Path, target: str) -> OSError | None:
    """Copy the record from ``scratch`` to ``target`` (atomically; a device or pipe written into) and remove
    the scratch copy; on failure keep it and return the error naming both."""
    from gpucluster_env.atomic_write import OutputError, atomic_output

    try:
        with atomic_output(target) as out, open(scratch, "rb") as src:
            shutil.copyfileobj(src, out)
    except OutputError as e:
        return OutputError(f"{e}; the record is kept at {scratch}")
    shutil.rmtree(scratch.parent, ignore_errors=True)
    return None


def _print_table(results: list[dict[str, Any]], args: argparse.Namespace, sc: Any, record_written: bool) -> None:
    from gpucluster_env.text_tables import Col, make_console, print_table

    first = results[0]
    cut = [r for r in results if r["truncated"]]
    title = f"{first['scenario']} · seed {args.seed} · {first['jobs']} jobs"
    if cut:
        title += " · TRUNCATED: " + ", ".join(f"{r['policy']} finished {r['jobs_done']} of {r['jobs']}" for r in cut)
    cols = [Col(head, justify="left" if key == "policy" else "right", key=key == "policy") for key, head, _ in COLUMNS]
    rows = []
    for r in results:
        row = [_fmt(fmt, r[key]) for key, _, fmt in COLUMNS]
        if r["truncated"]:
            row[0] += " (truncated)"
        rows.append(row)
    console = make_console()
    print_table(console, title, cols, rows)
    console.print(f"trace: {first['trace']}")
    console.print("columns explained in docs/glossary.md", highlight=False)
    if first["jobs"] < sc.num_jobs:
        console.print(f"note: the trace gave {first['jobs']:,} jobs of the {sc.num_jobs:,} asked (num_jobs)")
    if cut:
        for r in cut:
            console.print(f"truncated: {r['policy']} stopped at {r['limits']}; its metrics cover only the "
                          f"{r['jobs_done']} jobs finished by then", highlight=False)
    if record_written:
        console.print(f"replay written to {args.record}")
