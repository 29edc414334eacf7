"""Why Hadar's median JCT on ``hadar-philly`` is far behind Gavel's (docs/causes/hadar-median-jct.md).

Runs one policy (or a counterfactual variant of Hadar) on seeds of ``hadar-philly`` one episode at a time and
prints, per seed and on the mean: the median, mean and makespan (h), GPU occupancy, the median JCT per Hadar
GPU-time class (§IV-A: Small 0-1, Medium 1-10, Large 10-50, XLarge 50+ GPU-hours, here of each job's time alone
on its fastest GPU type times its GPUs), and the GPUs busy and jobs
queued at hours 1, 3, 6 and 12 (read from the engine's event log).

    .venv/bin/python docs/_scripts/hadar_median_jct.py hadar gavel --seeds 0-4
    .venv/bin/python docs/_scripts/hadar_median_jct.py hadar:normalize=false tiresias:thresholds=3600,order=start
    .venv/bin/python docs/_scripts/hadar_median_jct.py --replicate --workers 2   # held-out 100-139 and 200-239
    .venv/bin/python docs/_scripts/hadar_median_jct.py --replicate --held-out 200-239

A policy argument is ``NAME[:KEY=VALUE,...]`` with the policy's own options, or one of the counterfactual
Hadar variants of :data:`VARIANTS` (``hadar-...``), which change one rule of the allocator for the experiment.

Nothing is read from the held-out seeds (100-139, 200-239) unless ``--replicate`` is given. ``--replicate`` runs
the isolating experiment unchanged (Gavel and the Hadar variants of :data:`REPLICATE`) on the claims board's two
held-out seed sets, 100-139 and 200-239 (``--held-out`` picks one; ``--workers N`` runs the seeds in N processes,
the same episodes), and prints one table per set: per variant the mean median JCT, mean JCT and makespan (h)
with 95% Student-t intervals, the Small and Medium class medians, the seeds where the Medium jobs' median is
below the Small jobs' (the longest-first signature), and the median against Gavel's (mean of Gavel / variant,
95% t, seeds the variant is ahead).
"""

from __future__ import annotations

import argparse
import ast
import math
from collections.abc import Callable
from multiprocessing import Pool
from typing import Any

import numpy as np
from gpucluster_env.baselines.hadar import Hadar
from gpucluster_env.traces.annotate import hadar_class
from held_out import REPLICATED_SETS, add_replicate_options, parse_seeds
from scipy import stats

from gpucluster_env.policy import make_policy, run_episode

CLASSES = ("Small", "Medium", "Large", "XLarge")
PROBE_H = (1.0, 3.0, 6.0, 12.0)


class HadarFromNow(Hadar):
    """Counterfactual: the queue ordered by each job's utility counted from now instead of from its arrival
    (its effective throughput over its remaining run alone: the same for every job when normalized), so the
    time a job has already waited no longer lowers its place. Isolates the waiting time's part in the order."""

    name = "hadar-fromnow"

    def _density(self, now: float, workers: np.ndarray, left: np.ndarray, arrival: np.ndarray,
                 iters: np.ndarray, unit: np.ndarray, best: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):  # not now + run - now: its rounding breaks ties
            util = iters / np.maximum(left / best, 1e-9) / unit
            return np.where(best > 0, util / workers, 0.0)


VARIANTS: dict[str, Callable[..., Hadar]] = {"hadar-fromnow": HadarFromNow}


def parse_policy(arg: str) -> tuple[str, dict[str, Any]]:
    """``NAME[:KEY=VALUE,...]`` as a name and options (values as Python literals, else strings)."""
    name, _, rest = arg.partition(":")
    opts: dict[str, Any] = {}
    for part in filter(None, _split(rest)):
        key, _, val = part.partition("=")
        low = val.lower()
        if low in ("true", "false"):
            opts[key] = low == "true"
            continue
        try:
            opts[key] = ast.literal_eval(val)
        except (ValueError, SyntaxError):
            opts[key] = val
        if key == "thresholds" and not isinstance(opts[key], list):
            opts[key] = [float(opts[key])]
    return name, opts


def _split(text: str) -> list[str]:
    """Split on commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [*out, cur]


def _busy_and_queued(env: Any) -> dict[str, list[float]]:
    """GPUs held and jobs queued (arrived, unfinished, not running) at each hour of :data:`PROBE_H`."""
    eng = env.engine.state if hasattr(env.engine, "state") else env.engine
    recs = eng.log.records
    held: dict[int, int] = {}
    busy, queued = [], []
    finished = 0
    probes = [h * 3600.0 for h in PROBE_H]
    pi = 0
    for t, kind, j, extra in [*recs, (math.inf, "end", -1, None)]:
        while pi < len(probes) and t > probes[pi]:
            busy.append(float(sum(held.values())))
            queued.append(float(eng.n_jobs - finished - len(held)))
            pi += 1
        if kind == "start":
            held[j] = len(extra["gpus"])
        elif kind in ("preempt", "finish"):
            held.pop(j, None)
            finished += kind == "finish"
    return {"busy": busy, "queued": queued}


def _extra(env: Any) -> dict[str, Any]:
    eng = env.engine.state if hasattr(env.engine, "state") else env.engine
    jct = np.asarray(eng.finish_t - eng.submit, float)
    size = hadar_class(eng.req_gpus * eng.solo_time / 3600.0)
    per = {c: (float(np.median(jct[size == k])) / 3600 if (size == k).any() else float("nan"), int((size == k).sum()))
           for k, c in enumerate(CLASSES)}
    return {"per_class": per, **_busy_and_queued(env)}


def run(arg: str, seed: int) -> dict[str, Any]:
    """One episode of ``arg`` (a policy argument) on ``hadar-philly`` seed ``seed``, with :func:`_extra`."""
    name, opts = parse_policy(arg)
    pol = VARIANTS[name](**opts) if name in VARIANTS else make_policy(name, **opts)
    return run_episode("hadar-philly", pol, seed, extra=_extra)


REPLICATE = ("gavel", "hadar:run_cost=false", "hadar", "hadar-fromnow", "hadar:order=slot")
"""The isolating experiment's rows (docs/causes/hadar-median-jct.md), run unchanged on the held-out seeds."""


def t_ci(x: np.ndarray) -> str:
    """Mean of ``x`` with its 95% Student-t interval."""
    m = float(x.mean())
    half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return f"{m:.2f} [{m - half:.2f}, {m + half:.2f}]"


def _run_job(job: tuple[str, int]) -> dict[str, Any]:
    return run(*job)


def replicate(seeds: list[int], workers: int = 1) -> None:
    """The isolating experiment on the held-out ``seeds``, one table."""
    jobs = [(arg, s) for arg in REPLICATE for s in seeds]
    if workers > 1:
        with Pool(workers) as pool:
            flat = pool.map(_run_job, jobs)
    else:
        flat = [_run_job(j) for j in jobs]
    res = {arg: flat[i * len(seeds):(i + 1) * len(seeds)] for i, arg in enumerate(REPLICATE)}

    def col(arg: str, key: str) -> np.ndarray:
        return np.array([r[key] for r in res[arg]], float) / 3600

    def cls(arg: str, c: str) -> np.ndarray:
        return np.array([r["per_class"][c][0] for r in res[arg]], float)

    gavel = col("gavel", "median_jct_s")
    print(f"\n## hadar-philly, seeds {seeds[0]}-{seeds[-1]} (n = {len(seeds)}), means in hours, 95% t intervals\n")
    print("| policy | median JCT | mean JCT | makespan | Small median | Medium median | seeds Medium before Small "
          "| Gavel median / this median | seeds median below Gavel's |")
    print("|---|---|---|---|---|---|---|---|---|")
    for arg in REPLICATE:
        med = col(arg, "median_jct_s")
        small, medium = cls(arg, "Small"), cls(arg, "Medium")
        ok = ~np.isnan(medium)
        ratio = "–" if arg == "gavel" else t_ci(gavel / med)
        ahead = "–" if arg == "gavel" else f"{int((med < gavel).sum())}/{len(seeds)}"
        print(f"| {arg} | {t_ci(med)} | {t_ci(col(arg, 'avg_jct_s'))} | {t_ci(col(arg, 'makespan_s'))} | "
              f"{np.nanmean(small):.2f} | {np.nanmean(medium):.2f} | "
              f"{int((medium[ok] < small[ok]).sum())}/{int(ok.sum())} | {ratio} | {ahead} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("policies", nargs="*", help="NAME[:KEY=VALUE,...] or a variant of VARIANTS")
    ap.add_argument("--seeds", default="0-4", help="development seeds only (0-9), e.g. 0-4")
    add_replicate_options(ap, "the isolating experiment")
    ap.add_argument("--workers", type=int, default=1, help="with --replicate: processes over episodes")
    args = ap.parse_args()
    if args.held_out and not args.replicate:
        ap.error("--held-out goes with --replicate")
    if args.replicate:
        for label in [args.held_out] if args.held_out else REPLICATED_SETS:
            replicate(parse_seeds(label), args.workers)
        return
    if not args.policies:
        ap.error("give at least one policy (or --replicate)")
    seeds = parse_seeds(args.seeds)
    if any(s >= 100 for s in seeds):
        raise SystemExit("held-out seeds (100+) are not for investigation")
    for arg in args.policies:
        rows = [run(arg, s) for s in seeds]
        print(f"\n## {arg}  (seeds {args.seeds})")
        print("seed  median_h  mean_h  makespan_h  occup  " + "  ".join(f"{c[:2]}(n)" for c in CLASSES)
              + "  busyGPUs@" + "/".join(f"{h:g}h" for h in PROBE_H) + "  queued@same")
        for s, r in zip(seeds, rows, strict=True):
            cls = "  ".join(f"{r['per_class'][c][0]:5.1f}({r['per_class'][c][1]})" for c in CLASSES)
            print(f"{s:4d}  {r['median_jct_s'] / 3600:8.2f}  {r['avg_jct_s'] / 3600:6.2f}  "
                  f"{r['makespan_s'] / 3600:10.1f}  {r['gpu_occupancy']:.2f}  {cls}  "
                  + "/".join(f"{b:.0f}" for b in r["busy"]) + "  " + "/".join(f"{q:.0f}" for q in r["queued"]))
        mean = {k: float(np.mean([r[k] for r in rows])) / 3600 for k in ("median_jct_s", "avg_jct_s", "makespan_s")}
        print(f"mean  {mean['median_jct_s']:8.2f}  {mean['avg_jct_s']:6.2f}  {mean['makespan_s']:10.1f}")


if __name__ == "__main__":
    main()
