"""A metric of your own, computed outside the engine: Jain's fairness index of the jobs' slowdowns.

Every episode ends with the engine's job table (one row per job: submit, start, finish, JCT, time alone, GPUs,
preemptions); a metric that the engine does not compute can be read off it. ``run_episode``'s ``extra`` hook
adds it beside the engine's metrics of each episode. Run it: ``python slowdown_fairness.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from gpucluster_env.policy import run_episode


def slowdown_fairness(jobs: pd.DataFrame) -> float:
    """Jain's fairness index of the finished jobs' slowdowns (JCT over the job's time alone on the fastest GPU
    type it fits, on the fewest nodes): ``(sum x)^2 / (n sum x^2)``, 1.0 when every job is slowed down alike,
    down to 1/n when one job takes all the waiting. NaN when no job finished."""
    done = jobs["finish_s"].notna()
    x = (jobs.loc[done, "jct_s"] / jobs.loc[done, "solo_s"]).to_numpy(float)
    if len(x) == 0:
        return float("nan")
    return float(x.sum() ** 2 / (len(x) * (x**2).sum()))


def with_fairness(env: Any) -> dict[str, float]:
    """The ``extra`` hook of :func:`run_episode`: called on the finished environment, its entries are added to
    the episode's result."""
    return {"slowdown_fairness": slowdown_fairness(env.unwrapped.engine.job_table())}


def measure(policies: tuple[str, ...] = ("fifo", "sjf", "srsf"), scenario: str = "tiny",
            seeds: tuple[int, ...] = (0, 1, 2)) -> dict[str, list[dict[str, Any]]]:
    """Each policy's episode results (the engine's metrics plus ``slowdown_fairness``) on the same seeds."""
    return {p: [run_episode(scenario, p, seed, extra=with_fairness) for seed in seeds] for p in policies}


if __name__ == "__main__":
    for policy, results in measure().items():
        fairness = np.mean([r["slowdown_fairness"] for r in results])
        jct = np.mean([r["avg_jct_s"] for r in results])
        print(f"{policy:6} slowdown fairness {fairness:.3f}   avg JCT {jct:,.0f} s")
