"""Why Pollux queues its jobs longer than Tiresias at light load (claim sjfbsbf-f6a-pollux-tiresias;
docs/causes/pollux-light-load.md).

On ``sjfbsbf-philly`` with 120 jobs and ``restart_s = 30`` (the claims board's ``sjfbsbf-120``), runs per seed
``tiresias`` and ``pollux`` as the board runs them, then ``pollux`` under counterfactuals that change one thing
each, one episode at a time, and prints per variant the mean average JCT and queueing (h), the mean wait from
arrival to first start (s), the preemptions per episode, Pollux's paired improvement over Tiresias (positive:
Pollux lower; mean over seeds of the per-seed improvement, 95% t interval, seeds in the paper's direction) and
how much of the board's Pollux-Tiresias gap the change closes (the paired JCT difference to the board's Pollux,
h, 95% t interval, and as a share of the mean gap). Then, for the board's Pollux, where its searches meet the
jobs: the share of jobs whose first search is at their own arrival (age 0), and of those the share not started
there although as many GPUs as they ask for were free.

    .venv/bin/python docs/_scripts/pollux_light_load.py --seeds 0-19
    .venv/bin/python docs/_scripts/pollux_light_load.py --seeds 0-9 --full-search   # adds Pollux's 100 x 100
    .venv/bin/python docs/_scripts/pollux_light_load.py --replicate                 # held-out seeds 100-139

Without ``--replicate`` only development seeds: the held-out ones (100-139, 200-239) are refused.
``--replicate`` runs the same experiment, unchanged, on the held-out seeds 100-139 (``--seeds`` then picks
others among 100-139 and 200-239, e.g. ``--replicate --seeds 200-239``; ``--variants`` keeps only some of
:data:`VARIANTS`, by position, e.g. ``0,1``).
"""

from __future__ import annotations

import argparse
import math
from typing import Any, ClassVar

import numpy as np
from gpucluster_env.baselines.pollux import Pollux
from scipy import stats

from gpucluster_env.engine.metrics import job_table
from gpucluster_env.policy import make_policy, run_episode

SCENARIO = "sjfbsbf-philly"
SETTING = {"restart_s": 30.0, "num_jobs": 120}
"""The claims board's ``sjfbsbf-120`` (leaderboard/claims.toml)."""
TICK = {"tick_s": 60.0}
"""A decision point every 60 s: Pollux's scheduling interval, as Pollux's simulator steps it."""
HELD_OUT = set(range(100, 140)) | set(range(200, 240))


class TracedPollux(Pollux):
    """The project's ``pollux`` unchanged, noting at each search the time, the free GPUs and the pending jobs."""

    name: ClassVar[str] = "pollux"

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.trace: list[tuple[float, int, list[int]]] = []

    def _search(self, view: Any, jobs: list[int]) -> np.ndarray:
        busy = sum(len(view.gpus_of(j)) for j in view.running_jobs().tolist())
        self.trace.append((view.now, int(view.num_gpus - busy), view.pending_jobs().tolist()))
        return super()._search(view, jobs)


class FirstStartFree(Pollux):
    """Counterfactual: no restart penalty on a job's first start (Pollux's factor ``max(age - restarts x 30, 0)
    / (age + 30)`` is 0 for a job searched at its own arrival, so starting it adds nothing to the fitness)."""

    name: ClassVar[str] = "pollux"

    def _scorer(self, view: Any, jobs: list[int], space: Any) -> Any:
        s = super()._scorer(view, jobs, space)
        s.penalty = np.where(self.max_seen[jobs] == 0, 1.0, s.penalty)
        return s


VARIANTS: dict[str, tuple[Any, dict[str, Any], dict[str, float]]] = {
    "pollux (claims board)": (TracedPollux, {}, {}),
    "pollux, tick_s=60": (Pollux, {}, TICK),
    "pollux, first start unpenalised": (FirstStartFree, {}, {}),
    "pollux, tick_s=60, first start unpenalised": (FirstStartFree, {}, TICK),
}
"""Pollux class, its options and the scenario options each variant adds to :data:`SETTING`."""
FULL_SEARCH = ("pollux, tick_s=60, 100 x 100", (Pollux, {"population": 100, "generations": 100}, TICK))
"""Pollux's own search size (population 100, 100 generations), with the 60-s decision points."""


def parse_seeds(text: str) -> list[int]:
    """``A-B`` or ``A,B,C`` as a list of seeds."""
    if "-" in text:
        lo, hi = (int(x) for x in text.split("-"))
        return list(range(lo, hi + 1))
    return [int(x) for x in text.split(",")]


def episode(policy: Any, seed: int, extra: dict[str, float]) -> dict[str, Any]:
    """One episode of the setting (plus ``extra`` scenario options) with its per-job table under ``jobs``."""
    return run_episode(SCENARIO, policy, seed, scenario_options={**SETTING, **extra},
                       extra=lambda env: {"jobs": job_table(env.unwrapped.engine)})


def first_wait(res: dict[str, Any]) -> float:
    """Mean time (s) from a job's arrival to its first start."""
    jt = res["jobs"]
    return float((jt.start_s - jt.submit_s).mean())


def age_zero(pol: TracedPollux, res: dict[str, Any]) -> tuple[float, float]:
    """Share of jobs whose first search is at their arrival, and of those the share not started there though
    the free GPUs were at least their request."""
    jt = res["jobs"]
    times = np.array([t for t, _, _ in pol.trace])
    at0 = missed = 0
    for j, (sub, start, req) in enumerate(zip(jt.submit_s, jt.start_s, jt.num_gpus, strict=True)):
        k = int(np.searchsorted(times, sub - 1e-9))
        if k == len(times) or abs(times[k] - sub) > 1e-6 or j not in pol.trace[k][2]:
            continue
        at0 += 1
        missed += bool(abs(start - sub) > 1e-6 and pol.trace[k][1] >= req)
    return at0 / len(jt), missed / max(at0, 1)


def interval(x: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% t interval."""
    m = float(x.mean())
    half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else 0.0
    return m, m - half, m + half


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--full-search", action="store_true", help="add Pollux's 100 x 100 search (about 17 s a run)")
    ap.add_argument("--replicate", action="store_true", help="the same experiment on the held-out seeds 100-139")
    ap.add_argument("--variants", default=None, help="positions in VARIANTS to run, e.g. 0,1 (default all)")
    args = ap.parse_args()
    if args.replicate:
        args.seeds = args.seeds if args.seeds != "0-19" else "100-139"
        seeds = parse_seeds(args.seeds)
        if not set(seeds) <= HELD_OUT:
            raise SystemExit("--replicate reads the held-out seeds (100-139, 200-239) only")
    else:
        seeds = parse_seeds(args.seeds)
        if HELD_OUT & set(seeds):
            raise SystemExit("held-out seeds (100-139, 200-239) are read only with --replicate")
    variants = dict(VARIANTS)
    if args.variants is not None:
        keep = [list(VARIANTS)[int(i)] for i in args.variants.split(",")]
        variants = {k: v for k, v in VARIANTS.items() if k in keep}
    if args.full_search:
        variants[FULL_SEARCH[0]] = FULL_SEARCH[1]
    rows: dict[str, list[dict[str, Any]]] = {"tiresias (claims board)": [], "tiresias, tick_s=60": []}
    rows.update({name: [] for name in variants})
    zero: list[tuple[float, float]] = []
    for seed in seeds:
        rows["tiresias (claims board)"].append(episode(make_policy("tiresias"), seed, {}))
        rows["tiresias, tick_s=60"].append(episode(make_policy("tiresias"), seed, TICK))
        for name, (cls, opts, extra) in variants.items():
            pol = cls(**opts)
            rows[name].append(episode(pol, seed, extra))
            if isinstance(pol, TracedPollux):
                zero.append(age_zero(pol, rows[name][-1]))
        print(f"seed {seed}: " + ", ".join(f"{n} {r[-1]['avg_jct_s']:.0f} s" for n, r in rows.items()),
              flush=True)

    def col(name: str, key: str) -> np.ndarray:
        return np.array([r[key] for r in rows[name]], dtype=float)

    tir, board = col("tiresias (claims board)", "avg_jct_s"), col("pollux (claims board)", "avg_jct_s")
    gap = float((board - tir).mean())
    print(f"\n## {SCENARIO}, num_jobs=120, restart_s=30 (seeds {args.seeds}); board gap pollux - tiresias "
          f"{gap / 3600:+.3f} h\n")
    print("| variant | avg JCT (h) | avg queue (h) | arrival to first start (s) | preemptions | "
          "pollux vs tiresias | gap closed (h) | share of gap |")
    print("|---|---|---|---|---|---|---|---|")
    for name in rows:
        jct = col(name, "avg_jct_s")
        queue, pre = col(name, "avg_queue_s"), col(name, "preemptions")
        wait = np.mean([first_wait(r) for r in rows[name]])
        if name.startswith("tiresias"):
            vs = closed = share = "–"
        else:
            m, lo, hi = interval((tir - jct) / tir * 100.0)
            vs = f"{m:+.1f}% [{lo:+.1f}, {hi:+.1f}] {int((jct < tir).sum())}/{len(jct)}"
            m, lo, hi = interval((board - jct) / 3600.0)
            closed = f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]" if name != "pollux (claims board)" else "–"
            share = f"{m * 3600 / gap * 100:.0f}%" if name != "pollux (claims board)" else "–"
        print(f"| {name} | {jct.mean() / 3600:.3f} | {queue.mean() / 3600:.3f} | {wait:.0f} | {pre.mean():.1f} | "
              f"{vs} | {closed} | {share} |")
    at0, missed = np.array(zero).T
    print(f"\nBoard's pollux: {at0.mean():.0%} of jobs are first searched at their own arrival (age 0; per seed "
          f"{at0.min():.0%}-{at0.max():.0%}); {missed.mean():.0%} of those are not started there although the free "
          f"GPUs cover their request (per seed {missed.min():.0%}-{missed.max():.0%}).")


if __name__ == "__main__":
    main()
