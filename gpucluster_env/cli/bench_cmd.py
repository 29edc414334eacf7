"""``gpucluster bench``: speed and memory of the engine and the environment, measured here and now.

* Env steps per second of one environment under uniformly random masked actions on ``castor-philly``,
  observation and mask included (measured first, so the FIFO run's garbage is not in its process), then the
  same for the job-centric env (``jobs_env_*``), with the steps an episode takes in each.
* FIFO through the standard runner on ``philly-scale`` (80,000 jobs on 2,490 GPUs by default): jobs simulated
  per second, wall time, engine decision points per second.
* Replay frame rendering (``replay_frame_ms``): median milliseconds to draw one frame of the replay of a
  500-job ``castor-philly`` episode (128 GPUs); see :mod:`gpucluster_env.replay.bench`.
* ``sb3_train_steps_per_s``: MaskablePPO timesteps per second in the shipped training configuration with 2
  subprocess envs on castor-philly and sjfbsbf-philly (``--train-steps``; 0 skips it), and
  ``sb3_train_steps_per_s_inprocess`` with the 2 envs in the training process (``gpucluster train --vec dummy``).
* Allocation decision times (``gavel_decision_s_2048``, ``gavel_makespan_decision_s_256``,
  ``gavel_packed_decision_s_256``, ``hadar_decision_s_2048`` ...): one decision of Gavel's LPs (max-min
  fairness, minimize makespan, packed max-min fairness) and of Hadar's allocator at 32, 256 and 2,048 active
  jobs on n/4 GPUs of each of three types; see :mod:`gpucluster_env.leaderboard.decision_speed`
  (``--decision-sizes``; none skips them). ``pollux_decision_s_160`` (and ``_100x100``): one allocation search
  of ``pollux`` over 160 jobs on 16 x 4 GPUs at its default size and at Pollux's own (100 x 100).
* Gavel's LPs on jobs that all differ (``gavel_distinct_decision_s_256``, ``gavel_ftf_distinct_decision_s_256``,
  ``gavel_packed_makespan_distinct_decision_s_2048`` ...; ``--distinct-sizes``, default 32 and 256): max-min
  fairness, minimize makespan, finish-time fairness and both packed LPs, one decision each, as compared with
  Gavel's own LPs in docs/gavel.md.
* Per-policy whole runs (``policy_speed``): every reference policy on ``--policy-scenario`` with
  ``--policy-jobs`` jobs (1,000 by default; ``1000,10000`` adds a month-scale run), wall time including the
  environment's build, decision points per second, and both as ratios to FIFO's in the same process; see
  :mod:`gpucluster_env.leaderboard.policy_speed` (``--policy-jobs ''`` skips them).
* Peak resident memory of the process.
"""

from __future__ import annotations

import argparse
import gc
import resource
import time
from typing import Any

from gpucluster_env.cli import Subparsers


def register(sub: Subparsers) -> None:
    p = sub.add_parser("bench", help="measure simulator and environment speed",
                       description="Measure engine and environment speed and peak memory; prints figures.")
    p.add_argument("--jobs", type=int, default=80_000, help="jobs in the FIFO run (default 80000)")
    p.add_argument("--fifo-scenario", default="philly-scale")
    p.add_argument("--env-scenario", default="castor-philly")
    p.add_argument("--env-steps", type=int, default=20_000, help="random-action env steps to time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train-steps", type=int, default=8192, help="MaskablePPO timesteps to time (0: skip)")
    p.add_argument("--decision-sizes", default="32,256,2048",
                   help="active-job counts for the Gavel/Hadar decision times, comma-separated ('' skips)")
    p.add_argument("--distinct-sizes", default="32,256",
                   help="active-job counts for every Gavel LP on jobs that all differ, comma-separated, e.g. "
                        "32,256,2048 ('' skips; default 32,256)")
    p.add_argument("--policy-jobs", default="1000",
                   help="job counts for the per-policy whole runs, comma-separated, e.g. 1000,10000 ('' skips; "
                        "default 1000)")
    p.add_argument("--policy-scenario", default="sjfbsbf-philly",
                   help="scenario of the per-policy runs (default sjfbsbf-philly: 64 GPUs, Philly's busiest period)")
    p.add_argument("--policies", default="reference",
                   help="policies of the per-policy runs, comma-separated (default: every reference policy)")
    p.add_argument("--growth-jobs", default="",
                   help="job counts at which every policy (--policies) runs as its own `gpucluster run` process, "
                        "whole-process CPU and memory, e.g. 1000,4000,16000 (default '': skipped)")
    p.add_argument("--growth-scenario", default="philly-loaded",
                   help="scenario of the growth runs (default philly-loaded: 320 GPUs, queues form)")
    p.add_argument("--growth-timeout", type=float, default=600.0,
                   help="seconds of wall time after which a growth run is stopped and marked so (default 600)")
    p.add_argument("--growth-scale-cluster", action="store_true",
                   help="run each growth size on the scenario's cluster scaled by that size over the largest, so "
                        "jobs per GPU stay about the same (default: the scenario's cluster at every size)")
    p.add_argument("--growth-fifo-every", type=int, default=4, metavar="K",
                   help="run FIFO again after every K policies and after the last, each policy's ratio then over "
                        "the FIFO runs just before and after it, so a machine's changing load cancels (default 4; "
                        "0: FIFO once, first)")
    p.add_argument("--growth-plot", metavar="PNG", default=None,
                   help="draw the growth runs' CPU against jobs, log-log, into this PNG (needs matplotlib)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench_fifo(scenario: str, jobs: int, seed: int) -> dict[str, float]:
    """FIFO through :func:`run_episode` (exactly how policies are scored)."""
    from gpucluster_env.policy import run_episode

    if jobs < 1:
        raise ValueError(f"--jobs must be positive, got {jobs}")
    t0 = time.perf_counter()
    r = run_episode(scenario, "fifo", seed, scenario_options={"num_jobs": jobs})
    wall = time.perf_counter() - t0
    return {
        "fifo_scenario": scenario,
        "fifo_trace": r["trace"],
        "fifo_jobs": r["jobs"],
        "fifo_wall_s": wall,
        "fifo_sim_wall_s": r["wall_s"],
        "fifo_jobs_per_s": r["jobs"] / wall,
        "fifo_80k_wall_s": wall if r["jobs"] >= 80_000 else None,
        "engine_decisions_per_s": r["decisions"] / r["wall_s"],
        "fifo_avg_jct_s": r["avg_jct_s"],
    }


def bench_env(scenario: str, steps: int, seed: int, jobs: bool = False) -> dict[str, float]:
    """Steps per second of one env under uniformly random masked actions (resets included when episodes end):
    the full vocabulary's env (``env_*`` figures) or, with ``jobs``, the job-centric one (``jobs_env_*``);
    ``*_steps_per_episode`` is steps over finished episodes (the job-centric process takes fewer steps)."""
    import numpy as np

    from gpucluster_env.env import GPUClusterEnv
    from gpucluster_env.env.jobs_env import JobsEnv

    if steps < 1:
        raise ValueError(f"--env-steps must be positive, got {steps}")
    env = JobsEnv(scenario) if jobs else GPUClusterEnv(scenario)
    env.reset(seed=seed)
    # one uniform draw per step, made up front: the agent's own cost stays out of the env's figure
    u = np.random.default_rng(seed).random(steps).tolist()
    done = 0
    t0 = time.perf_counter()
    for x in u:
        valid = np.flatnonzero(env.action_masks())
        _, _, term, trunc, _ = env.step(int(valid[int(x * len(valid))]))
        if term or trunc:
            done += 1
            env.reset()
    wall = time.perf_counter() - t0
    key = "jobs_env" if jobs else "env"
    return {f"{key}_scenario": scenario, f"{key}_steps": steps, f"{key}_steps_per_s": steps / wall,
            f"{key}_episodes": done, f"{key}_steps_per_episode": steps / done if done else float("nan")}


def _sizes(text: str, flag: str = "--decision-sizes") -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"{flag}: expected comma-separated job counts, got {text!r}") from None
    if any(not (4 <= n <= MAX_DECISION_SIZE) for n in sizes):
        raise ValueError(f"{flag}: each job count must be from 4 to {MAX_DECISION_SIZE:,}, got {text!r}")
    return sizes


MAX_DECISION_SIZE = 100_000
BENCH_RANGES: dict[str, tuple[int, int]] = {"jobs": (1, 1_000_000), "env_steps": (1, 100_000_000),
                                           "train_steps": (0, 100_000_000), "seed": (0, 2**32 - 1)}
"""The accepted range of each numeric ``bench`` argument (inclusive), checked before anything is timed."""


def _job_counts(text: str, flag: str) -> tuple[int, ...]:
    """A comma-separated list of job counts, each from 1 to 1,000,000 (empty: none), or a one-line error naming
    ``flag``."""
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"{flag}: expected comma-separated job counts, got {text!r}") from None
    if any(not (1 <= n <= 1_000_000) for n in sizes):
        raise ValueError(f"{flag}: each job count must be from 1 to 1,000,000, got {text!r}")
    return sizes


def _policy_args(args: argparse.Namespace) -> tuple[tuple[int, ...], list[str] | None]:
    """``--policy-jobs`` as job counts and ``--policies`` as names (None: the reference policies)."""
    from gpucluster_env.policy import registered_policies

    sizes = _job_counts(args.policy_jobs, "--policy-jobs")
    if args.policies == "reference":
        return sizes, None
    names = [x.strip() for x in args.policies.split(",") if x.strip()]
    unknown = [n for n in names if n not in registered_policies()]
    if unknown or not names:
        raise ValueError(f"--policies: unknown policy {', '.join(unknown) or repr(args.policies)}; "
                         "see `gpucluster policies`")
    return sizes, names


def _growth_sizes(args: argparse.Namespace) -> tuple[int, ...]:
    """``--growth-jobs`` as job counts (empty: no growth runs)."""
    return _job_counts(args.growth_jobs, "--growth-jobs")


def _growth(args: argparse.Namespace, policies: list[str] | None, console: Any, out: dict[str, object]) -> None:
    """The growth runs (:mod:`gpucluster_env.leaderboard.policy_growth`) into ``out``, and their plot."""
    sizes = _growth_sizes(args)
    if not sizes:
        return
    from pathlib import Path

    from gpucluster_env.leaderboard.policy_growth import excess_growth, growth_runs, plot_growth
    from gpucluster_env.leaderboard.policy_speed import reference_policies

    with console.status("growth runs …", spinner="dots") as status:
        rows = growth_runs(sizes, policies or reference_policies(), args.growth_scenario, args.seed,
                           args.growth_timeout, progress=lambda text: status.update(f"growth: {text} …"),
                           scale_cluster=args.growth_scale_cluster, fifo_every=args.growth_fifo_every)
    out["policy_growth"] = rows
    out["policy_excess_growth"] = excess_growth(rows)
    if args.growth_plot:
        out["growth_plot"] = str(plot_growth(rows, Path(args.growth_plot), args.growth_scenario))


def check_bench_args(args: argparse.Namespace) -> None:
    """Refuse, before the first measurement, an argument out of :data:`BENCH_RANGES` or an unknown scenario
    (one line naming the flag)."""
    from gpucluster_env.scenarios import get_scenario

    _policy_args(args)

    for key, (low, high) in BENCH_RANGES.items():
        v = getattr(args, key)
        if not (low <= v <= high):
            raise ValueError(f"--{key.replace('_', '-')} {v}: must be from {low:,} to {high:,}")
    _growth_sizes(args)
    if args.growth_fifo_every < 0:
        raise ValueError(f"--growth-fifo-every {args.growth_fifo_every}: must be 0 or more")
    if not args.growth_timeout > 0:
        raise ValueError(f"--growth-timeout {args.growth_timeout}: must be positive")
    if args.growth_plot is not None and not args.growth_plot.lower().endswith(".png"):
        raise ValueError(f"--growth-plot {args.growth_plot}: must name a .png file")
    for flag, name in (("--env-scenario", args.env_scenario), ("--fifo-scenario", args.fifo_scenario),
                       ("--policy-scenario", args.policy_scenario), ("--growth-scenario", args.growth_scenario)):
        try:
            get_scenario(name)
        except ValueError as e:
            raise ValueError(f"{flag}: {e}") from None


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from gpucluster_env.cli.jsonout import dumps

    check_bench_args(args)
    sizes = _sizes(args.decision_sizes)
    distinct = _sizes(args.distinct_sizes, "--distinct-sizes")
    console = Console(stderr=True)
    out: dict[str, object] = {}
    with console.status(f"random actions on {args.env_scenario}, {args.env_steps} steps …", spinner="dots"):
        out.update(bench_env(args.env_scenario, args.env_steps, args.seed))
    gc.collect()
    with console.status(f"random job actions on {args.env_scenario}, {args.env_steps} steps …", spinner="dots"):
        out.update(bench_env(args.env_scenario, args.env_steps, args.seed, jobs=True))
    gc.collect()
    with console.status(f"FIFO on {args.fifo_scenario}, {args.jobs} jobs …", spinner="dots"):
        out.update(bench_fifo(args.fifo_scenario, args.jobs, args.seed))
    from gpucluster_env.replay.bench import frame_benchmark

    with console.status("replay frames of a 500-job castor-philly episode …", spinner="dots"):
        out.update(frame_benchmark())
    if args.train_steps > 0:
        from gpucluster_env.agents.train import measure_train_speed

        with console.status(f"MaskablePPO, 2 subprocess envs, {args.train_steps} steps …", spinner="dots"):
            out["sb3_train_steps_per_s"] = measure_train_speed(args.train_steps)
        with console.status(f"MaskablePPO, 2 envs in one process, {args.train_steps} steps …", spinner="dots"):
            out["sb3_train_steps_per_s_inprocess"] = measure_train_speed(args.train_steps, vec="dummy")
    if sizes:
        from gpucluster_env.leaderboard.decision_speed import decision_times, pollux_decision_times

        with console.status(f"Gavel and Hadar decisions at {', '.join(map(str, sizes))} jobs …", spinner="dots"):
            out.update(decision_times(sizes))
        with console.status("Pollux's allocation search at 160 jobs …", spinner="dots"):
            out.update(pollux_decision_times())
    if distinct:
        from gpucluster_env.leaderboard.decision_speed import distinct_decision_times

        with console.status(f"Gavel's LPs on distinct jobs at {', '.join(map(str, distinct))} …", spinner="dots"):
            out.update(distinct_decision_times(distinct))
    policy_jobs, policies = _policy_args(args)
    if policy_jobs:
        from gpucluster_env.leaderboard.policy_speed import policy_speeds

        with console.status(f"each policy on {args.policy_scenario} at {args.policy_jobs} jobs …", spinner="dots"):
            out["policy_speed"] = policy_speeds(policy_jobs, policies, args.policy_scenario, args.seed)
    out["peak_rss_mb"] = _peak_rss_mb()
    _growth(args, policies, console, out)
    if args.json:
        print(dumps(out))
        return 0
    _print_figures(out, args.policy_scenario)
    return 0


def _print_figures(out: dict[str, object], policy_scenario: str) -> None:
    """The figures as a table at the terminal's width (a long key wrapped after an underscore), then the
    policies' whole runs."""
    from gpucluster_env.text_tables import Col, make_console, print_table

    speeds = out.pop("policy_speed", [])
    growth, excess = out.pop("policy_growth", []), out.pop("policy_excess_growth", [])
    console = make_console()
    values = {k: _figure(v) for k, v in out.items()}
    room = max(12, console.width - max(map(len, values.values()), default=0) - 10)  # borders, padding, slack
    print_table(console, "gpucluster bench", [Col("figure", "left", key=True), Col("value")],
                [(wrap_key(k, room), v) for k, v in values.items()])
    if speeds:
        _print_policy_speeds(console, speeds, policy_scenario)  # type: ignore[arg-type]
    if growth:
        from gpucluster_env.cli.bench_growth import print_growth

        print_growth(console, growth, excess)  # type: ignore[arg-type]


def wrap_key(key: str, width: int) -> str:
    """``key`` in lines of at most ``width`` characters, broken after an underscore, never inside a word."""
    import re

    lines, line = [], ""
    for part in re.split(r"(?<=_)", key):
        if line and len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    return "\n".join([*lines, line])


def _figure(v: object) -> str:
    """A bench figure as table text: numbers with thousands separators, ``–`` where the figure was not measured
    (e.g. the 80,000-job wall time of a run with fewer jobs)."""
    if v is None:
        return "–"
    return f"{v:,.2f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)


def _print_policy_speeds(console: object, rows: list[dict[str, object]], scenario: str) -> None:
    from gpucluster_env.text_tables import Col, print_table

    cols = [Col("policy", "left", key=True), Col("jobs"), Col("wall s"), Col("decisions/s"), Col("x FIFO wall"),
            Col("x FIFO dec/s")]
    body = [(r["policy"], f"{r['jobs']:,}", "–", "–", "–", f"skipped: {r['skipped']}") if "skipped" in r else
            (r["policy"], f"{r['jobs']:,}", f"{r['wall_s']:,.2f}", f"{r['decisions_per_s']:,.0f}",
             f"{r['x_fifo_wall']:.2f}", f"{r['x_fifo_decisions_per_s']:.2f}") for r in rows]
    print_table(console, f"whole runs on {scenario}", cols, body)
