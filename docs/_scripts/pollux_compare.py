"""Pollux's own workloads in this simulator, for the side-by-side check with Pollux's simulator (docs/pollux.md).

``python docs/_scripts/pollux_compare.py WORKLOAD.csv [...] --policy pollux --policy tiresias``
runs each of Pollux's ``workload-*.csv`` files (``petuum/adaptdl`` branch ``osdi21-artifact``,
``simulator/workloads/``; also ``traces/philly/pollux_workloads/`` of the project's data) on Pollux's cluster,
16 nodes x 4 T4 over 50 Gbps (Pollux §5.3), with Pollux's 30-s restart delay (its simulator's
``rescale_time``) and a decision point every 60 s (its scheduling interval), and prints each episode's average
JCT and makespan. The jobs are :func:`~gpucluster_env.traces.pollux_workloads.pollux_workload_jobs`: elastic for Pollux
(starting on one GPU at Pollux's initial batch, as in its simulator; ``pollux`` re-tunes their batch and the
engine charges its statistical efficiency), at their ``num_replicas`` GPUs for the others (Tiresias).
``--measured-throughput`` runs both on Pollux's measured T4 step times (:func:`measured_catalog`) instead of
the catalog's T4 model.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
from gpucluster_env.traces.pollux_workloads import POLLUX_EPOCHS, POLLUX_GPU, POLLUX_INTER_NODE_GBS, POLLUX_NODE_GPUS

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


def measured_catalog(jobs: pd.DataFrame, max_gpus: int = 64) -> Any:
    """The default catalog with Pollux's measured T4 step times (``profiles/pollux/<app>/placements.csv`` and
    ``scalability.csv``, :func:`~gpucluster_env.traces.pollux_workloads.pollux_step_time`) as measured solo times for
    every configuration the jobs of ``jobs`` start at and ``pollux`` may re-tune them to (its batch candidates
    on 1 to ``max_gpus`` GPUs), wherever on the cluster's nodes: the throughput of Pollux's simulator on both
    sides instead of the catalog's fitted T4 model."""
    from gpucluster_env.baselines.pollux import batch_candidates
    from gpucluster_env.traces.pollux_workloads import POLLUX_MAX_LOCAL, pollux_step_time

    from gpucluster_env.catalog import default_catalog
    from gpucluster_env.catalog.solo import MeasuredSolo, solo_key

    configs = {(str(m), int(b), int(n)) for m, b, n in zip(jobs["model"], jobs["batch_size"], jobs["num_gpus"],
                                                          strict=True)}
    for app in sorted(set(jobs["model"]) - {"ncf"}):
        cand = batch_candidates(app, max_gpus)
        configs |= {(app, int(b), r) for r in range(1, max_gpus + 1) for b in cand[r].tolist() if b > 0}
    table = {solo_key(m, b, n): n / pollux_step_time(m, n, b, max_local=POLLUX_MAX_LOCAL.get(m), spread=True)
             for m, b, n in sorted(configs)}
    return default_catalog().with_solo(MeasuredSolo({"consolidated": {POLLUX_GPU: table}}, placement_blind=True))


def workload_scenario(path: Path, elastic: bool = False, measured: bool = False) -> WorkloadScenario:
    """Pollux's cluster and settings with the jobs of workload file ``path`` (elastic or not); ``measured``:
    with :func:`measured_catalog` (attached as ``_catalog``; :func:`run` passes it to the environment)."""
    from gpucluster_env.traces.pollux_workloads import pollux_workload_jobs

    from gpucluster_env.catalog import default_catalog

    catalog = default_catalog()
    if measured:
        catalog = measured_catalog(pollux_workload_jobs(path, catalog, elastic=elastic))
    jobs = pollux_workload_jobs(path, catalog, elastic=elastic)
    cluster = ClusterSpec(tuple(NodeSpec(POLLUX_GPU, POLLUX_NODE_GPUS) for _ in range(POLLUX_NODES)),
                          inter_node_bw_gbps=POLLUX_INTER_NODE_GBS, name="pollux-16xT4")
    config = replace(EngineConfig(), restart_s=POLLUX_RESTART_S, restart_on_allocation=True, tick_s=POLLUX_TICK_S)
    sc = WorkloadScenario(name=Path(path).stem, description="Pollux workload file", paper="Pollux §5.3",
                          cluster=cluster, models=tuple(sorted(POLLUX_EPOCHS)), trace="philly",
                          num_jobs=len(jobs), annotate="pollux-time", config=config)
    object.__setattr__(sc, "_jobs", jobs)
    object.__setattr__(sc, "_catalog", catalog)
    return sc


def run(path: Path, policy: str, seed: int = 0, options: dict[str, Any] | None = None,
        measured: bool = False) -> dict[str, Any]:
    """One episode of ``policy`` on workload file ``path``: the run's metrics (``avg_jct_s``, ``makespan_s``,
    ...); ``measured``: on Pollux's measured throughput (:func:`measured_catalog`)."""
    sc = workload_scenario(path, elastic=policy in ELASTIC_POLICIES, measured=measured)
    kwargs = {"catalog": sc.__dict__["_catalog"]} if measured else None
    return run_episode(sc, make_policy(policy, **(options or {})), seed, env_kwargs=kwargs)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring); one JSON object per run on stdout."""
    p = argparse.ArgumentParser(prog="python docs/_scripts/pollux_compare.py",
                                description=__doc__.splitlines()[0])
    p.add_argument("workloads", nargs="+", type=Path)
    p.add_argument("--policy", action="append", default=None, help="policy name (repeatable; default pollux)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--option", action="append", default=[], metavar="KEY=INT", help="policy option (integers)")
    p.add_argument("--measured-throughput", action="store_true",
                   help="Pollux's measured T4 step times instead of the catalog's T4 model (both policies)")
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
                res = run(path, pol, args.seed, options if pol == "pollux" else None, args.measured_throughput)
            except (OSError, ValueError) as e:  # each names the file
                print(f"pollux_compare: {e}", file=sys.stderr)
                return 2
            keep = ("avg_jct_s", "makespan_s", "jobs_done", "steps", "wall_s")
            print(json.dumps({"workload": path.stem, "policy": pol, **{k: res.get(k) for k in keep}}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
