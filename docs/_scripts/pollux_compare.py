"""Pollux's own workloads in this simulator, for the side-by-side check with Pollux's simulator (docs/pollux.md).

``python docs/_scripts/pollux_compare.py WORKLOAD.csv [...] --policy pollux --policy tiresias``
runs each of Pollux's ``workload-*.csv`` files (``petuum/adaptdl`` branch ``osdi21-artifact``,
``simulator/workloads/``; also ``traces/philly/pollux_workloads/`` of the project's data) on Pollux's cluster,
16 nodes x 4 T4 over 50 Gbps (Pollux §5.3), with Pollux's 30-s restart delay (its simulator's
``rescale_time``) and a decision point every 60 s (its scheduling interval), and prints each episode's average
JCT and makespan. The jobs are :func:`~gpucluster_env.traces.pollux.pollux_workload_jobs`: elastic for Pollux
(starting on one GPU, as in its simulator), at their ``num_replicas`` GPUs for the others (Tiresias).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
from gpucluster_env.traces.pollux import POLLUX_EPOCHS, POLLUX_GPU, POLLUX_INTER_NODE_GBS, POLLUX_NODE_GPUS

from gpucluster_env.config import EngineConfig
from gpucluster_env.hardware import ClusterSpec, NodeSpec
from gpucluster_env.policy import make_policy, run_episode
from gpucluster_env.scenarios import Scenario

POLLUX_NODES = 16
POLLUX_RESTART_S = 30.0
"""Pollux's simulator: a job whose allocation changes makes no progress for 30 s (``Job.reallocate``)."""
POLLUX_TICK_S = 60.0


@dataclass(frozen=True)
class WorkloadScenario(Scenario):
    """A scenario whose job table is given (one of Pollux's workload files, attached by
    :func:`workload_scenario`), the same for every seed."""

    def build_jobs(self, seed: int, catalog: Any = None) -> tuple[pd.DataFrame, str]:
        return self.__dict__["_jobs"].copy(), f"Pollux workload {self.name}"


ELASTIC_POLICIES = ("pollux",)
"""Policies that get the elastic job table (jobs start on one GPU and may grow); the others run every job at its
``num_replicas`` GPUs, as Pollux's simulator runs Tiresias."""


def workload_scenario(path: Path, elastic: bool = False) -> WorkloadScenario:
    """Pollux's cluster and settings with the jobs of workload file ``path`` (elastic or not)."""
    from gpucluster_env.traces.pollux import pollux_workload_jobs

    from gpucluster_env.catalog import default_catalog

    jobs = pollux_workload_jobs(path, default_catalog(), elastic=elastic)
    cluster = ClusterSpec(tuple(NodeSpec(POLLUX_GPU, POLLUX_NODE_GPUS) for _ in range(POLLUX_NODES)),
                          inter_node_bw_gbps=POLLUX_INTER_NODE_GBS, name="pollux-16xT4")
    config = replace(EngineConfig(), restart_s=POLLUX_RESTART_S, restart_on_allocation=True, tick_s=POLLUX_TICK_S)
    sc = WorkloadScenario(name=Path(path).stem, description="Pollux workload file", paper="Pollux §5.3",
                          cluster=cluster, models=tuple(sorted(POLLUX_EPOCHS)), trace="philly",
                          num_jobs=len(jobs), annotate="pollux-time", config=config)
    object.__setattr__(sc, "_jobs", jobs)
    return sc


def run(path: Path, policy: str, seed: int = 0, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """One episode of ``policy`` on workload file ``path``: the run's metrics (``avg_jct_s``, ``makespan_s``,
    ...)."""
    sc = workload_scenario(path, elastic=policy in ELASTIC_POLICIES)
    return run_episode(sc, make_policy(policy, **(options or {})), seed)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring); one JSON object per run on stdout."""
    p = argparse.ArgumentParser(prog="python docs/_scripts/pollux_compare.py",
                                description=__doc__.splitlines()[0])
    p.add_argument("workloads", nargs="+", type=Path)
    p.add_argument("--policy", action="append", default=None, help="policy name (repeatable; default pollux)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--option", action="append", default=[], metavar="KEY=INT", help="policy option (integers)")
    args = p.parse_args(argv)
    options: dict[str, Any] = {}
    for kv in args.option:
        key, _, v = kv.partition("=")
        if not v.lstrip("-").isdigit():
            print(f"--option {kv}: expected KEY=INTEGER", file=sys.stderr)
            return 2
        options[key] = int(v)
    for path in args.workloads:
        for pol in args.policy or ["pollux"]:
            try:
                res = run(path, pol, args.seed, options if pol == "pollux" else None)
            except (OSError, ValueError) as e:  # each names the file
                print(f"pollux_compare: {e}", file=sys.stderr)
                return 2
            keep = ("avg_jct_s", "makespan_s", "jobs_done", "steps", "wall_s")
            print(json.dumps({"workload": path.stem, "policy": pol, **{k: res.get(k) for k in keep}}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
