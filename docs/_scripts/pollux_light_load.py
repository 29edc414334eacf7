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

What the 60-s grid leaves (variants 4-10, measured against ``pollux, tick_s=60``: the paired JCT difference and
its share of that variant's remaining gap to Tiresias; then the queueing by gang size and the resizes):

* the search's allocation with every waiting gang that fits its free GPUs added (:class:`FilledPollux`, with
  and without Pollux's one-multi-node-job-per-node rule): does the search miss starts its fitness prefers?
* Tiresias with one queue (no demotion past its 16 GPU-hour threshold): where Tiresias' own edge comes from;
* the jobs made elastic downwards, ``min_gpus = 1`` (:func:`elastic_jobs`; the only change to the world; with
  and without Pollux's batch re-tuning, :class:`FixedBatchPollux`, which elasticity turns on), with Tiresias
  on the same jobs as the control that it changes nothing else.

    .venv/bin/python docs/_scripts/pollux_light_load.py --seeds 0-19
    .venv/bin/python docs/_scripts/pollux_light_load.py --seeds 0-9 --full-search   # adds Pollux's 100 x 100
    .venv/bin/python docs/_scripts/pollux_light_load.py --replicate                 # held-out seeds 100-139
    .venv/bin/python docs/_scripts/pollux_light_load.py --seeds 0-19 --variants 0,1,4,5,6,7,8,9,10  # the remainder

Without ``--replicate`` only development seeds: the held-out ones (100-179, 200-279) are refused.
``--replicate`` runs the same experiment, unchanged, on the held-out seeds 100-139 (``--seeds`` then picks
others among 100-139 and 200-239, e.g. ``--replicate --seeds 200-239``; ``--variants`` keeps only some of
:data:`VARIANTS`, by position, e.g. ``0,1``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, ClassVar

import gpucluster_env.baselines.pollux as pollux_module
import numpy as np
from gpucluster_env.baselines.pollux import Pollux
from gpucluster_env.baselines.tiresias import Tiresias
from held_out import HELD_OUT, HELD_OUT_TEXT, parse_seeds
from scipy import stats

from gpucluster_env.engine.metrics import job_table
from gpucluster_env.policy import make_policy, run_episode
from gpucluster_env.scenario_spec import Scenario

SCENARIO = "sjfbsbf-philly"
SETTING = {"restart_s": 30.0, "num_jobs": 120}
"""The claims board's ``sjfbsbf-120`` (leaderboard/claims.toml)."""
TICK = {"tick_s": 60.0}
"""A decision point every 60 s: Pollux's scheduling interval, as Pollux's simulator steps it."""
ELASTIC = "elastic"
"""A key of a variant's scenario options: its jobs are made elastic downwards (:func:`elastic_jobs`)."""


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


class FilledPollux(Pollux):
    """Counterfactual: the search's allocation, then every job it leaves waiting whose gang fits the GPUs that
    allocation leaves free, in the search's priority order (least attained service first), where starting it
    raises Pollux's fitness (its restart factor is above 0). ``distributed_rule``: a gang spread over several
    nodes takes only nodes that no other multi-node job uses (Pollux's interference avoidance, as the search's
    repair keeps it); without it, any free GPUs (as Tiresias places). A single-node gang takes the node with the
    least room that holds it. Measures what the genetic search misses among allocations the fitness prefers."""

    name: ClassVar[str] = "pollux"
    distributed_rule: ClassVar[bool] = True

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.filled = 0

    def _scorer(self, view: Any, jobs: list[int], space: Any) -> Any:
        self._score = super()._scorer(view, jobs, space)
        return self._score

    def _search(self, view: Any, jobs: list[int]) -> np.ndarray:
        best = super()._search(view, jobs).copy()
        free = self.free_capacity - best.sum(axis=0)
        pending = set(view.pending_jobs().tolist())
        for i, j in enumerate(jobs):
            g = int(view.req_gpus[j])
            if j not in pending or best[i].any() or g > free.sum() or self._score.penalty[i] <= 0:
                continue
            shared = ((best > 0).sum(axis=1) > 1)[:, None] & (best > 0)
            row = np.zeros_like(best[i])
            fits = np.flatnonzero(free >= g)
            if len(fits):
                row[fits[np.argmin(free[fits])]] = g
            else:
                room = free.copy()
                if self.distributed_rule:
                    room[shared.any(axis=0)] = 0
                left = g
                for h in np.argsort(-room, kind="stable").tolist():
                    take = min(left, int(room[h]))
                    row[h], left = take, left - take
                if left > 0:
                    continue
            cand = best.copy()
            cand[i] = row
            fit = self._score(np.stack([best, cand]))
            if fit[1] > fit[0]:
                best, free = cand, free - row
                self.filled += 1
        return best


class FilledAnyGPUs(FilledPollux):
    """:class:`FilledPollux` without the one-multi-node-job-per-node rule for the gangs it adds."""

    distributed_rule: ClassVar[bool] = False


class FixedBatchPollux(Pollux):
    """``pollux`` with batch-size adaptation off: every job keeps the batch it asked for, and its goodput at
    each size is taken at that batch (as for a job that :func:`tunes_batch` refuses). With elastic jobs this
    leaves resizing as the only elastic change."""

    name: ClassVar[str] = "pollux"

    def act(self, observation: Any, env: Any) -> Any:
        saved = pollux_module.tunes_batch
        pollux_module.tunes_batch = lambda view, j: False
        try:
            return super().act(observation, env)
        finally:
            pollux_module.tunes_batch = saved


VARIANTS: dict[str, tuple[Any, dict[str, Any], dict[str, float]]] = {
    "pollux (claims board)": (TracedPollux, {}, {}),
    "pollux, tick_s=60": (Pollux, {}, TICK),
    "pollux, first start unpenalised": (FirstStartFree, {}, {}),
    "pollux, tick_s=60, first start unpenalised": (FirstStartFree, {}, TICK),
    "pollux, tick_s=60, search's free GPUs filled": (FilledPollux, {}, TICK),
    "pollux, tick_s=60, free GPUs filled, any nodes": (FilledAnyGPUs, {}, TICK),
    "tiresias, one queue (no demotion)": (Tiresias, {"thresholds": ()}, {}),
    "pollux, tick_s=60, jobs elastic in [1, num_gpus]": (Pollux, {}, {**TICK, ELASTIC: 1.0}),
    "tiresias, jobs elastic in [1, num_gpus]": (Tiresias, {}, {ELASTIC: 1.0}),
    "pollux, tick_s=60, jobs elastic in [1, num_gpus], batch fixed": (FixedBatchPollux, {}, {**TICK, ELASTIC: 1.0}),
    "pollux, jobs elastic in [1, num_gpus], batch fixed": (FixedBatchPollux, {}, {ELASTIC: 1.0}),
}
"""Pollux class, its options and the scenario options each variant adds to :data:`SETTING`."""
GRID = "pollux, tick_s=60"
"""The variant the remaining gap is measured against: the board's ``pollux`` on Pollux's 60-s grid."""
FULL_SEARCH = ("pollux, tick_s=60, 100 x 100", (Pollux, {"population": 100, "generations": 100}, TICK))
"""Pollux's own search size (population 100, 100 generations), with the 60-s decision points."""


@contextmanager
def elastic_jobs() -> Iterator[None]:
    """The scenario's jobs, each made elastic downwards: ``min_gpus = 1``, ``max_gpus`` its own ``num_gpus``
    (it starts at its gang and may be shrunk and grown back within it, never beyond). Nothing else changes:
    same arrivals, models, batches, iterations and gangs, so a policy that never resizes (Tiresias) runs the
    same episode."""
    orig = Scenario.build_jobs

    def build(self: Scenario, seed: int, catalog: Any = None) -> tuple[Any, str]:
        jobs, note = orig(self, seed, catalog)
        jobs = jobs.copy()
        jobs["min_gpus"], jobs["max_gpus"] = 1, jobs["num_gpus"]
        return jobs, note + ", elastic in [1, num_gpus]"

    Scenario.build_jobs = build  # type: ignore[method-assign]
    try:
        yield
    finally:
        Scenario.build_jobs = orig  # type: ignore[method-assign]


def episode(policy: Any, seed: int, extra: dict[str, float]) -> dict[str, Any]:
    """One episode of the setting (plus ``extra`` scenario options; ``ELASTIC`` in them: :func:`elastic_jobs`)
    with its per-job table under ``jobs``."""
    options = {k: v for k, v in extra.items() if k != ELASTIC}
    with elastic_jobs() if ELASTIC in extra else nullcontext():
        return run_episode(SCENARIO, policy, seed, scenario_options={**SETTING, **options}, extra=tables)


def tables(env: Any) -> dict[str, Any]:
    """The per-job table (``jobs``) and the number of times a running job was resized below its gang
    (``shrinks``: ``reallocate`` records on fewer GPUs than it asked for)."""
    eng = env.unwrapped.engine
    shrinks = sum(1 for _t, kind, j, rec in eng.log.records
                  if kind == "reallocate" and rec and len(rec["gpus"]) < int(eng.req_gpus[j]))
    return {"jobs": job_table(eng), "shrinks": shrinks}


GANGS = ((1, 1), (2, 8), (12, 16), (24, 64))
"""Gang-size classes (GPUs) for the queueing breakdown; sjfbsbf-philly's gangs are 1-48 GPUs."""


def queue_by_gang(res: list[dict[str, Any]]) -> list[float]:
    """Mean queueing (s) per job of each :data:`GANGS` class, over all jobs of the episodes ``res``."""
    out = []
    for lo, hi in GANGS:
        q = np.concatenate([r["jobs"].queue_s[(r["jobs"].num_gpus >= lo) & (r["jobs"].num_gpus <= hi)]
                            for r in res])
        out.append(float(q.mean()) if len(q) else math.nan)
    return out


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
            raise SystemExit(f"--replicate reads the held-out seeds ({HELD_OUT_TEXT}) only")
    else:
        seeds = parse_seeds(args.seeds)
        if HELD_OUT & set(seeds):
            raise SystemExit(f"held-out seeds ({HELD_OUT_TEXT}) are read only with --replicate")
    variants = dict(VARIANTS)
    if args.variants is not None:
        keep = [list(VARIANTS)[int(i)] for i in args.variants.split(",")]
        variants = {k: v for k, v in VARIANTS.items() if k in keep}
    if args.full_search:
        variants[FULL_SEARCH[0]] = FULL_SEARCH[1]
    rows: dict[str, list[dict[str, Any]]] = {"tiresias (claims board)": [], "tiresias, tick_s=60": []}
    rows.update({name: [] for name in variants})
    zero: list[tuple[float, float]] = []
    fills: dict[str, list[int]] = {}
    for seed in seeds:
        rows["tiresias (claims board)"].append(episode(make_policy("tiresias"), seed, {}))
        rows["tiresias, tick_s=60"].append(episode(make_policy("tiresias"), seed, TICK))
        for name, (cls, opts, extra) in variants.items():
            pol = cls(**opts)
            rows[name].append(episode(pol, seed, extra))
            if isinstance(pol, TracedPollux):
                zero.append(age_zero(pol, rows[name][-1]))
            if isinstance(pol, FilledPollux):
                fills.setdefault(name, []).append(pol.filled)
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
    if GRID in rows:
        grid = col(GRID, "avg_jct_s")
        rest = float((grid - tir).mean())
        print(f"\nAgainst `{GRID}` (what the 60-s grid leaves: {rest / 3600:+.3f} h to Tiresias): the paired JCT "
              "difference to it (h, 95% t interval) and its share of that remainder\n")
        print("| variant | closed of the remainder (h) | share of the remainder |")
        print("|---|---|---|")
        for name in rows:
            if name.startswith("tiresias") or name in (GRID, "pollux (claims board)"):
                continue
            m, lo, hi = interval((grid - col(name, "avg_jct_s")) / 3600.0)
            print(f"| {name} | {m:+.3f} [{lo:+.3f}, {hi:+.3f}] | {m * 3600 / rest * 100:.0f}% |")
    print("\nQueueing by gang size (s per job of that size, all seeds' jobs pooled; jobs per episode in brackets); "
          "resizes below the gang per episode\n")
    counts = [np.mean([((r["jobs"].num_gpus >= lo) & (r["jobs"].num_gpus <= hi)).sum()
                       for r in rows["tiresias (claims board)"]]) for lo, hi in GANGS]
    print("| variant | " + " | ".join(f"{lo}-{hi} GPUs ({c:.0f})" if lo != hi else f"{lo} GPU ({c:.0f})"
                                      for (lo, hi), c in zip(GANGS, counts, strict=True)) + " | shrinks |")
    print("|---|" + "---|" * (len(GANGS) + 1))
    for name in rows:
        cells = " | ".join(f"{q:.0f}" for q in queue_by_gang(rows[name]))
        print(f"| {name} | {cells} | {np.mean([r['shrinks'] for r in rows[name]]):.1f} |")
    for name, n in fills.items():
        print(f"{name}: {np.mean(n):.1f} starts added to the search's allocations per episode "
              f"({min(n)}-{max(n)} per seed)")
    at0, missed = np.array(zero).T
    print(f"\nBoard's pollux: {at0.mean():.0%} of jobs are first searched at their own arrival (age 0; per seed "
          f"{at0.min():.0%}-{at0.max():.0%}); {missed.mean():.0%} of those are not started there although the free "
          f"GPUs cover their request (per seed {missed.min():.0%}-{missed.max():.0%}).")


if __name__ == "__main__":
    main()
