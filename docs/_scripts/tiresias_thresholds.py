"""Why Tiresias beats SJF on ``sjfbsbf-philly`` (claim sjfbsbf-t3-sjf-tires; docs/causes/tiresias-configuration.md,
"Why Tiresias beats SJF: the 16 GPU-hour line").

The experiment of docs/reproduction.md's threshold sweep and "Why Tiresias beats SJF here", one episode at a time,
with ``restart_s = 30`` as the claims board runs the scenario: per seed, ``sjf`` once, ``srsf`` once (a reference:
shortest remaining time first with the true run times, the order an oracle would give), and ``tiresias`` with its
two queues split at each threshold of :data:`THRESHOLDS_H` (GPU-hours of attained service; 16 is Pollux's, our
default; ``inf`` never demotes, preemptive FIFO), nothing else changed. Prints per seed set:

1. **The workload's line**: the share of jobs whose GPU-time alone (GPUs x time alone) exceeds 16 GPU-hours,
   their share of the GPU-time, their models, and the largest job below the line and the smallest above it.
2. **The sweep**: per threshold, Tiresias' mean average JCT (h), its preemptions an episode, SJF's paired
   improvement over it (mean of the per-seed (JCT_tiresias - JCT_sjf) / JCT_tiresias, 95% Student-t interval,
   seeds where SJF is ahead: the paper's direction) and Tiresias' mean JCT over SJF's.

    .venv/bin/python docs/_scripts/tiresias_thresholds.py --seeds 0-9 --workers 2          # development seeds
    .venv/bin/python docs/_scripts/tiresias_thresholds.py --replicate --workers 2          # 100-139 and 200-239

``--seeds`` takes development seeds only: the held-out ones (100-179, 200-279) are refused there. ``--replicate``
runs the same experiment, unchanged, on the claims board's two held-out seed sets (``--held-out`` picks one).
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from multiprocessing import Pool
from typing import Any

import numpy as np
from held_out import add_replicate_options, parse_seeds, seed_sets
from scipy import stats

from gpucluster_env.policy import make_policy, run_episode

SCENARIO = "sjfbsbf-philly"
RESTART_S = 30.0
"""The claims board's preemption cost (leaderboard/boards/claims.toml)."""
THRESHOLDS_H: tuple[float, ...] = (1.0, 4.0, 16.0, 64.0, math.inf)
"""Tiresias' queue split (GPU-hours of attained service), docs/reproduction.md's sweep; 16 is the default."""
LINE_H = 16.0


def workload(env: Any) -> dict[str, Any]:
    """Each job's GPU-time alone (GPU-hours) and model, from the finished episode's engine."""
    eng = env.unwrapped.engine
    st = eng.state
    return {"gpu_h": (np.asarray(eng.solo_time, float) * np.asarray(eng.req_gpus, float) / 3600.0).tolist(),
            "models": [st.model_names[int(k)] for k in st.job_model]}


def one(policy: str, seed: int, opts: dict[str, Any], extra: Any = None) -> dict[str, Any]:
    return run_episode(SCENARIO, make_policy(policy, **opts), seed, scenario_options={"restart_s": RESTART_S},
                       extra=extra)


def seed_runs(seed: int) -> dict[str, Any]:
    """sjf (with the workload), srsf and Tiresias at every threshold on one seed."""
    sjf = one("sjf", seed, {}, extra=workload)
    out: dict[str, Any] = {"sjf": sjf["avg_jct_s"] / 3600.0, "srsf": one("srsf", seed, {})["avg_jct_s"] / 3600.0,
                           "gpu_h": sjf["gpu_h"], "models": sjf["models"]}
    for h in THRESHOLDS_H:
        r = one("tiresias", seed, {"thresholds": [1e300 if math.isinf(h) else h * 3600.0]})
        out[h] = (r["avg_jct_s"] / 3600.0, int(r["preemptions"]))
    return out


def paired(ours: np.ndarray, theirs: np.ndarray) -> tuple[str, bool]:
    """Mean per-seed improvement of ``ours`` over ``theirs`` (%), its 95% t interval and seeds ours wins; and
    whether the interval lies above zero."""
    imp = (theirs - ours) / theirs * 100.0
    m = float(imp.mean())
    half = float(stats.t.ppf(0.975, len(imp) - 1) * imp.std(ddof=1) / math.sqrt(len(imp))) if len(imp) > 1 else 0
    return f"{m:+.1f}% [{m - half:+.1f}, {m + half:+.1f}] {int((imp > 0).sum())}/{len(imp)}", m - half > 0


def experiment(seeds: list[int], label: str, workers: int) -> None:
    if workers > 1:
        with Pool(workers) as pool:
            rows = pool.map(seed_runs, seeds)
    else:
        rows = [seed_runs(s) for s in seeds]
    sjf = np.array([r["sjf"] for r in rows])
    srsf = np.array([r["srsf"] for r in rows])
    frac, share, below, above = [], [], [], []
    models: Counter[str] = Counter()
    for r in rows:
        gt = np.array(r["gpu_h"])
        big = gt > LINE_H
        frac.append(big.mean())
        share.append(gt[big].sum() / gt.sum())
        models.update(m for m, b in zip(r["models"], big, strict=True) if b)
        below.append(gt[~big].max())
        if big.any():
            above.append(gt[big].min())
    print(f"## {SCENARIO}, restart_s = {RESTART_S:g} (seeds {label}, n = {len(seeds)}): sjf {sjf.mean():.3f} h, "
          f"srsf (oracle reference) {srsf.mean():.3f} h")
    print(f"jobs above {LINE_H:g} GPU-hours alone: {100 * np.mean(frac):.1f}% of the jobs, "
          f"{100 * np.mean(share):.0f}% of the GPU-time (seed range {100 * min(share):.0f}-{100 * max(share):.0f}%); "
          f"their models: {dict(models)}; largest job below the line {np.mean(below):.1f} GPU-h "
          f"(max {max(below):.1f}), smallest above {np.mean(above):.1f} (min {min(above):.1f}; "
          f"seeds with a job above: {len(above)}/{len(rows)})\n")
    print("| Tiresias threshold (GPU-h) | Tiresias avg JCT (h) | preemptions | sjf vs Tiresias | SJF ahead "
          "(interval above 0) | Tiresias / sjf |")
    print("|---|---|---|---|---|---|")
    for h in THRESHOLDS_H:
        tir = np.array([r[h][0] for r in rows])
        pre = np.mean([r[h][1] for r in rows])
        cell, ahead = paired(sjf, tir)
        name = "∞" if math.isinf(h) else f"{h:g}" + (" (default)" if h == LINE_H else "")
        print(f"| {name} | {tir.mean():.3f} | {pre:.0f} | {cell} | {'yes' if ahead else 'no'} | "
              f"{tir.mean() / sjf.mean():.2f} |", flush=True)
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0-9", help="development seeds (default 0-9)")
    add_replicate_options(ap, "the same experiment")
    ap.add_argument("--workers", type=int, default=1, help="processes over seeds (default 1)")
    args = ap.parse_args()
    sets = seed_sets(ap, args)
    for label in sets:
        experiment(parse_seeds(label), label, args.workers)


if __name__ == "__main__":
    main()
