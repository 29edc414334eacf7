"""Castor / SJF-BSBF / SJF against Tiresias under the Tiresias configurations of the public simulators
(docs/causes/tiresias-configuration.md).

For each scenario (castor-philly, castor-venus, sjfbsbf-philly, with ``restart_s = 30`` as the claims board
runs them) and each seed, runs ``castor`` and ``sjf`` once and ``tiresias`` under every configuration of
:data:`CONFIGS`, one episode at a time, and prints per scenario and configuration the mean average JCT (h),
the preemptions per episode, and the paired improvement of castor and of sjf over that Tiresias (positive:
castor / sjf lower; mean over seeds of the per-seed improvement, 95% t interval, seeds in the paper's
direction).

    .venv/bin/python docs/_scripts/tiresias_configurations.py --seeds 0-9
    .venv/bin/python docs/_scripts/tiresias_configurations.py --replicate --workers 2   # 100-139 and 200-239
    .venv/bin/python docs/_scripts/tiresias_configurations.py --replicate --held-out 200-239

``--seeds`` takes development seeds only: the held-out ones (100-179, 200-279) are refused there.
``--replicate`` runs the same experiment, unchanged, on the claims board's two held-out seed sets, 100-139 and
200-239 (``--held-out`` picks one; ``--configs`` runs only some of the configurations of :data:`CONFIGS`, by
their position, e.g. ``0,3,4,5``). ``--workers N`` runs the seeds in N processes (the same episodes, the same
figures).
"""

from __future__ import annotations

import argparse
import math
from multiprocessing import Pool
from typing import Any

import numpy as np
from held_out import add_replicate_options, parse_seeds, seed_sets
from scipy import stats

from gpucluster_env.policy import make_policy, run_episode

SCENARIOS = ("castor-philly", "castor-venus", "sjfbsbf-philly")
RESTART_S = 30.0
"""The claims board's preemption cost (leaderboard/claims.toml)."""

CONFIGS: dict[str, tuple[dict[str, Any], float]] = {
    "pollux (default)": ({}, RESTART_S),
    "lucid 5h, 40s": ({"thresholds": [18_000.0]}, 40.0),
    "lucid 5h, 60s": ({"thresholds": [18_000.0]}, 60.0),
    "tiresias-sim 3q": ({"thresholds": [3_250.0, 7_200.0]}, RESTART_S),
    "testbed 700s": ({"thresholds": [700.0], "service": "time", "starve_factor": 1.0}, RESTART_S),
    "testbed as run (fifo)": ({"thresholds": [1e300]}, RESTART_S),
}
"""Tiresias options and restart cost (s) per configuration: Pollux's artifact (2 queues, 16 GPU-hours, 30 s);
Lucid's (2 queues, 18,000 GPU-s, 40 s per preemption for jobs of up to 8 GPUs, 60 s above, bracketed);
Tiresias' own simulator (3 queues, 3,250 and 7,200 GPU-s); the authors' testbed scheduler as written (2 queues,
700 s of time run, starvation factor 1) and as its placement loop runs (jobs walked in arrival order: FIFO,
preempting later arrivals)."""


def jct_h(scenario: str, policy: str, seed: int, opts: dict[str, Any], restart_s: float) -> tuple[float, int]:
    """Average JCT (h) and preemptions of one episode."""
    res = run_episode(scenario, make_policy(policy, **opts), seed, scenario_options={"restart_s": restart_s})
    return res["avg_jct_s"] / 3600.0, int(res["preemptions"])


def paired(ours: np.ndarray, theirs: np.ndarray) -> str:
    """Mean per-seed improvement of ``ours`` over ``theirs`` (%), its 95% t interval, and seeds ours wins."""
    imp = (theirs - ours) / theirs * 100.0
    m = float(imp.mean())
    half = float(stats.t.ppf(0.975, len(imp) - 1) * imp.std(ddof=1) / math.sqrt(len(imp))) if len(imp) > 1 else 0
    return f"{m:+.1f}% [{m - half:+.1f}, {m + half:+.1f}] {int((imp > 0).sum())}/{len(imp)}"


def seed_runs(job: tuple[str, int, tuple[str, ...]]) -> dict[str, tuple[float, int]]:
    """castor, sjf and Tiresias under each named configuration on one scenario and seed."""
    sc, seed, names = job
    out = {p: jct_h(sc, p, seed, {}, RESTART_S) for p in ("castor", "sjf")}
    for name in names:
        opts, restart = CONFIGS[name]
        out[name] = jct_h(sc, "tiresias", seed, opts, restart)
    return out


def experiment(scenarios: list[str], seeds: list[int], label: str, names: list[str], workers: int) -> None:
    """The tables of the module docstring for ``seeds`` (named ``label``)."""
    for sc in scenarios:
        jobs = [(sc, s, tuple(names)) for s in seeds]
        if workers > 1:
            with Pool(workers) as pool:
                rows = pool.map(seed_runs, jobs)
        else:
            rows = [seed_runs(j) for j in jobs]
        castor = np.array([r["castor"][0] for r in rows])
        sjf = np.array([r["sjf"][0] for r in rows])
        print(f"## {sc} (seeds {label}, n = {len(seeds)}): castor {castor.mean():.3f} h, sjf {sjf.mean():.3f} h")
        print("| tiresias configuration | tiresias avg JCT (h) | preemptions | castor vs tiresias | sjf vs tiresias "
              "| tiresias / sjf |")
        print("|---|---|---|---|---|---|")
        for name in names:
            tir = np.array([r[name][0] for r in rows])
            pre = np.mean([r[name][1] for r in rows])
            print(f"| {name} | {tir.mean():.3f} | {pre:.0f} | {paired(castor, tir)} | {paired(sjf, tir)} "
                  f"| {tir.mean() / sjf.mean():.2f} |", flush=True)
        print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    add_replicate_options(ap, "the same experiment")
    ap.add_argument("--configs", default=None, help="positions in CONFIGS to run, e.g. 0,3,4,5 (default all)")
    ap.add_argument("--workers", type=int, default=1, help="processes over seeds (default 1)")
    args = ap.parse_args()
    sets = seed_sets(ap, args)
    names = list(CONFIGS)
    if args.configs is not None:
        names = [names[int(i)] for i in args.configs.split(",")]
    for label in sets:
        experiment(args.scenarios.split(","), parse_seeds(label), label, names, args.workers)


if __name__ == "__main__":
    main()
