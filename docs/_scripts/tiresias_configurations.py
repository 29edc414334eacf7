"""Castor / SJF-BSBF / SJF against Tiresias under the Tiresias configurations of the public simulators
(docs/causes/tiresias-configuration.md).

For each scenario (castor-philly, castor-venus, sjfbsbf-philly, with ``restart_s = 30`` as the claims board
runs them) and each seed, runs ``castor`` and ``sjf`` once and ``tiresias`` under every configuration of
:data:`CONFIGS`, one episode at a time, and prints per scenario and configuration the mean average JCT (h),
the preemptions per episode, and the paired improvement of castor and of sjf over that Tiresias (positive:
castor / sjf lower; mean over seeds of the per-seed improvement, 95% t interval, seeds in the paper's
direction).

    .venv/bin/python docs/_scripts/tiresias_configurations.py --seeds 0-9
    .venv/bin/python docs/_scripts/tiresias_configurations.py --replicate   # held-out seeds 100-139

``--seeds`` takes development seeds only: the held-out ones (100-139, 200-239) are refused there.
``--replicate`` runs the same experiment, unchanged, on the held-out seeds 100-139 (with ``--configs`` to run
only some of the configurations of :data:`CONFIGS`, by their position, e.g. ``0,3,4,5``).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np
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

HELD_OUT = set(range(100, 140)) | set(range(200, 240))


def parse_seeds(text: str) -> list[int]:
    """``A-B`` or ``A,B,C`` as a list of seeds."""
    if "-" in text:
        lo, hi = (int(x) for x in text.split("-"))
        return list(range(lo, hi + 1))
    return [int(x) for x in text.split(",")]


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--replicate", action="store_true", help="the same experiment on the held-out seeds 100-139")
    ap.add_argument("--configs", default=None, help="positions in CONFIGS to run, e.g. 0,3,4,5 (default all)")
    args = ap.parse_args()
    if args.replicate:
        args.seeds = "100-139"
        seeds = list(range(100, 140))
    else:
        seeds = parse_seeds(args.seeds)
        if HELD_OUT & set(seeds):
            raise SystemExit("held-out seeds (100-139, 200-239) are read only with --replicate")
    names = list(CONFIGS)
    if args.configs is not None:
        names = [names[int(i)] for i in args.configs.split(",")]
    for sc in args.scenarios.split(","):
        castor = np.array([jct_h(sc, "castor", s, {}, RESTART_S)[0] for s in seeds])
        sjf = np.array([jct_h(sc, "sjf", s, {}, RESTART_S)[0] for s in seeds])
        print(f"## {sc} (seeds {args.seeds}): castor {castor.mean():.3f} h, sjf {sjf.mean():.3f} h")
        print("| tiresias configuration | tiresias avg JCT (h) | preemptions | castor vs tiresias | sjf vs tiresias |")
        print("|---|---|---|---|---|")
        for name in names:
            opts, restart = CONFIGS[name]
            runs = [jct_h(sc, "tiresias", s, opts, restart) for s in seeds]
            tir = np.array([r[0] for r in runs])
            pre = np.mean([r[1] for r in runs])
            print(f"| {name} | {tir.mean():.3f} | {pre:.0f} | {paired(castor, tir)} | {paired(sjf, tir)} |",
                  flush=True)
        print()


if __name__ == "__main__":
    main()
