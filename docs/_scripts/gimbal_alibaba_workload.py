"""How heavy ``gimbal-alibaba``'s 300 jobs are against Gavel's published 17.6 h (docs/causes/gimbal-alibaba.md).

Builds the scenario's job tables (no simulation) and prints, per development seed:

* the span of the 300 arrivals (h);
* the solo GPU-work (sum of traced run time x GPUs, GPU-hours) with the GPU counts Gimbal's Table 2 recipe
  assigns (``traces/gimbal_mix.py``: the large class, mean 3.54 GPUs, goes to the 56 longest jobs), with
  the same class counts assigned regardless of duration (expected value: mean GPUs x sum of run times), and
  with the PAI trace's own GPU requests (rounded up);
* the two lower bounds on an unpacked makespan (the work over 32 GPUs; the latest arrival plus run alone);
* the factor every duration would have to shrink by for the work bound to equal 17.6 h.

Then the whole 6,000-job PAI window: its run-time quantiles, the work bound of every window of 300
consecutive jobs (expected Table 2 GPU counts) and how many fit in 17.6 h, the arrival spans of those
windows, and the same for the Alibaba 2023 (openb) pods the paper's reference [49] published, with
``--openb``. Scenario options (``--option KEY=VALUE``, e.g. ``max_duration_h=1000``) build the tables as
that variant instead, for the role of a setting; the scenario's defaults are not changed.

    .venv/bin/python docs/_scripts/gimbal_alibaba_workload.py --seeds 0-9
    .venv/bin/python docs/_scripts/gimbal_alibaba_workload.py --seeds 0-9 --option max_duration_h=1000

Only development seeds: the held-out ones (100-179, 200-279) are refused.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import pandas as pd
from gpucluster_env.traces.gimbal_mix import TABLE2, class_counts
from gpucluster_env.traces.trace_sources import full_trace
from gymnasium.utils import seeding
from held_out import HELD_OUT, parse_seeds

from gpucluster_env.scenarios import get_scenario


def episode_jobs(sc: Any, seed: int) -> Any:
    """The job table an episode of ``seed`` runs: the env draws the trace's seed from its own generator
    (``ClusterEnv.reset``), so it is not ``build_jobs(seed)``."""
    return sc.build_jobs(int(seeding.np_random(seed)[0].integers(0, 2**31 - 1)))[0]
GPUS = 32
PAPER_MAKESPAN_H = 17.6
N_JOBS = 300


def parse_options(items: list[str]) -> dict[str, object]:
    """``KEY=VALUE`` scenario options (numbers as floats, else strings)."""
    out: dict[str, object] = {}
    for item in items:
        key, value = item.split("=", 1)
        try:
            out[key] = float(value)
        except ValueError:
            out[key] = value
    return out


def expected_table2_work_h(durations_s: np.ndarray) -> float:
    """Expected solo GPU-hours of a 300-job window under Table 2's recipe: the 56 longest jobs at the large
    class's 3.54 GPUs, the rest at the small and medium classes' pooled mean."""
    table = TABLE2["alibaba"]
    counts = class_counts(len(durations_s), table)
    d = np.sort(np.asarray(durations_s, float))[::-1]
    n_large = counts["large"]
    rest_mean = (counts["small"] * table["small"][1] + counts["medium"] * table["medium"][1]) / (
        counts["small"] + counts["medium"])
    return float((d[:n_large].sum() * table["large"][1] + d[n_large:].sum() * rest_mean) / 3600.0)


def per_seed(seeds: list[int], options: dict[str, object]) -> None:
    """The per-seed table (module docstring)."""
    sc = get_scenario("gimbal-alibaba", **options)
    raw_all, _ = full_trace(sc)
    own = pd.Series(raw_all["num_gpus"].to_numpy(np.int64), index=raw_all["job_id"].astype(str).to_numpy())
    mean_gpus = sum(c * g for c, g in TABLE2["alibaba"].values()) / sum(c for c, _ in TABLE2["alibaba"].values())
    print(f"gimbal-alibaba {options or ''}: per seed (h; work in GPU-hours; bounds = unpacked makespan bounds)")
    print("| seed | span | mean run | max run | work T2 | work T2 / 32 | work classes at random / 32 "
          "| work trace GPUs / 32 | last arrival + run | shrink for 17.6 h |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for seed in seeds:
        df = episode_jobs(sc, seed)
        dur_h = df["duration_s"].to_numpy(float) / 3600.0
        gpus = df["num_gpus"].to_numpy(float)
        work = float((dur_h * gpus).sum())
        rand_work = float(dur_h.sum() * mean_gpus)
        trace_gpus = np.minimum(own.reindex(df["job_id"].astype(str)).to_numpy(float), GPUS)
        trace_work = float((dur_h * trace_gpus).sum())
        one_job = float((df["submit_s"].to_numpy(float) / 3600.0 + dur_h).max())
        span = float(df["submit_s"].max() - df["submit_s"].min()) / 3600.0
        row = (span, dur_h.mean(), dur_h.max(), work, work / GPUS, rand_work / GPUS, trace_work / GPUS, one_job,
               work / GPUS / PAPER_MAKESPAN_H)
        rows.append(row)
        print(f"| {seed} | " + " | ".join(f"{v:.2f}" for v in row) + " |")
    m = np.mean(np.array(rows), axis=0)
    print("| mean | " + " | ".join(f"{v:.2f}" for v in m) + " |")
    need = PAPER_MAKESPAN_H * GPUS / (N_JOBS * mean_gpus)
    print(f"\nTable 2's mean GPUs per job {mean_gpus:.3f}: 300 jobs fit an unpacked 17.6 h on 32 GPUs only if "
          f"their mean run time is at most {need:.3f} h ({need * 3600:.0f} s) with GPU counts independent of "
          f"run time")


def windows(trace: str, label: str) -> None:
    """Every window of 300 consecutive jobs of the scenario's trace (after max_duration_h): work bound, spans."""
    sc = get_scenario("gimbal-alibaba", trace=trace)
    raw, note = full_trace(sc)
    full = raw.sort_values("submit_s", kind="stable")
    d_all = full["duration_s"].to_numpy(float)
    kept = full[d_all <= PAPER_MAKESPAN_H * 3600.0]
    d = kept["duration_s"].to_numpy(float)
    s = kept["submit_s"].to_numpy(float)
    print(f"\n{label}: {note}")
    print(f"  {len(full)} jobs, {len(kept)} of at most 17.6 h; the whole file's arrivals span "
          f"{(s.max() - s.min()) / 3600:.1f} h")
    q = np.quantile(d_all / 3600.0, [0.5, 0.75, 0.9, 0.95, 0.99])
    print(f"  run time (h), all jobs: mean {d_all.mean() / 3600:.3f}, median {q[0]:.3f}, p75 {q[1]:.3f}, "
          f"p90 {q[2]:.3f}, p95 {q[3]:.3f}, p99 {q[4]:.3f}, max {d_all.max() / 3600:.1f}; "
          f"kept (<= 17.6 h): mean {d.mean() / 3600:.3f} h")
    own = kept["num_gpus"].to_numpy(float)
    print(f"  trace's own GPUs per job (rounded up), kept jobs: mean {own.mean():.2f}, "
          f"1 GPU {np.mean(own <= 1):.0%}; GPU-work weighted by run time: mean "
          f"{(own * d).sum() / d.sum():.2f} GPUs")
    starts = range(len(kept) - N_JOBS + 1)
    bound = np.array([expected_table2_work_h(d[i:i + N_JOBS]) / GPUS for i in starts])
    spans = np.array([(s[i + N_JOBS - 1] - s[i]) / 3600.0 for i in starts])
    q = np.quantile(bound, [0.0, 0.1, 0.5, 0.9, 1.0])
    print(f"  300-job windows ({len(bound)}): work bound with Table 2 GPUs (h) min {q[0]:.1f}, p10 {q[1]:.1f}, "
          f"median {q[2]:.1f}, p90 {q[3]:.1f}, max {q[4]:.1f}; at most 17.6 h: {np.mean(bound <= 17.6):.1%} "
          f"of windows; at most 17.6 x 1.3 h: {np.mean(bound <= 17.6 * 1.3):.1%}")
    q = np.quantile(spans, [0.0, 0.5, 1.0])
    print(f"  arrival spans (h): min {q[0]:.2f}, median {q[1]:.2f}, max {q[2]:.2f}; windows spanning at most "
          f"17.6 h: {np.mean(spans <= 17.6):.1%}; both fitting: {np.mean((spans <= 17.6) & (bound <= 17.6)):.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0-9", help="development seeds, A-B or A,B,C (default 0-9)")
    ap.add_argument("--option", action="append", default=[], help="scenario option KEY=VALUE (repeatable)")
    ap.add_argument("--openb", action="store_true", help="also the Alibaba 2023 (openb) pods' windows")
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)
    if bad := sorted(set(seeds) & HELD_OUT):
        raise SystemExit(f"held-out seeds {bad} are not for investigation")
    per_seed(seeds, parse_options(args.option))
    windows("alibaba", "PAI 2020 window")
    if args.openb:
        windows("alibaba-gpu", "Alibaba 2023 (openb, gimbal ref. [49])")


if __name__ == "__main__":
    main()
