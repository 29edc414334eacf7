"""Why ``gavel+gimbal`` does not shorten Gavel's makespan on ``gimbal-alibaba`` (claim gimbal-f8-gavel-ali, Gimbal
Fig. 8; docs/causes/gimbal-gavel-alibaba.md).

Runs ``gimbal-alibaba`` episodes one at a time, Gavel and Gavel+Gimbal both with ``objective="makespan"`` as the
claim runs them, on the development seeds (default 0-19), and prints:

1. **The bound, per seed**: the 300 jobs' arrival span, their solo GPU-work over the 32 GPUs, the lower bound on
   any schedule's makespan ``max_j(arrival_j + solo_j)`` (``solo_j``: the job's run time alone on its fastest GPU
   type and fewest nodes, the engine's ``solo_time``; the cluster has one type, the A40) and the job that sets
   it, each policy's makespan and its gap to the bound, whether the job that ends last is the bound's, and the
   headroom ``1 - bound / Gavel's makespan``: the most any scheduler could gain on Gavel.
2. **The job that ends last**, per policy: when it waited, and the run time it lost against ``solo``, split by
   what it was doing (a probe reads the engine's rates after every step): paused (restarts, share switches),
   sharing its GPUs at full share, sharing them squeezed, alone; the guests packed beside it, the time it
   shared, its partners' mean share and its own rate over its solo rate while it shared.
3. **The isolating experiment**: ``gavel+gimbal`` whose packing never puts a job beside the bound's job nor the
   bound's job beside another (an oracle that reads the trace; a subclass here, the registered policy is not
   changed), and a variant any scheduler could run, where a job whose solo time left is within 10% of the longest
   of the jobs present takes no guest; also Gimbal's packing without its coordination (``lgrr=liss=false``).
4. **The paper's load** (``--loads``): the same comparison with the scenario's arrivals compressed 2x and 4x and
   all at 0 (the same jobs: ``load`` with ``max_span_h`` scaled so that the same window is drawn), with 600 jobs
   in the same 17.6 h (twice the work), and with jobs of at most 4 h all at 0 (a makespan set by work, not by one
   job): where a makespan gain has room.

    .venv/bin/python docs/_scripts/gimbal_gavel_alibaba.py                  # seeds 0-19, sections 1-3, ~2 minutes
    .venv/bin/python docs/_scripts/gimbal_gavel_alibaba.py --loads          # and section 4, ~8 more minutes
    .venv/bin/python docs/_scripts/gimbal_gavel_alibaba.py --seeds 0-4      # a quicker look
    .venv/bin/python docs/_scripts/gimbal_gavel_alibaba.py --replicate      # held-out seeds 100-139, sections 1-3

Nothing is read from the held-out seeds (100-179, 200-279) unless ``--replicate`` is given; ``--replicate`` runs
the same comparisons on seeds 100-139 and tunes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import gymnasium as gym
import numpy as np
from gimbal_lucid_alibaba import bootstrap, seeds_arg  # docs/_scripts: the paired interval and the seed lists
from gpucluster_env.baselines.gavel_gimbal import GavelGimbal, GavelLeftoverPacking
from gpucluster_env.baselines.parts.gimbal_hosts import least_utilized_host
from held_out import HELD_OUT, HELD_OUT_TEXT

from gpucluster_env.engine import Colocate
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy, make_policy, run_episode

SCENARIO = "gimbal-alibaba"
REPLICATE_SEEDS = list(range(100, 140))
PAPER_H = (17.6, 15.9)  # Gimbal Fig. 8, Alibaba: Gavel, Gavel+Gimbal
LONGEST_WITHIN = 0.9  # the "longest job takes no guest" variant: within 10% of the longest solo time left


class GuardedPacking(GavelLeftoverPacking):
    """``gavel+gimbal``'s host (Gavel's rounds, the jobs left waiting packed beside granted ones) with some jobs
    kept out of packing (they neither take a guest nor are packed as one): ``mode`` ``bound`` keeps out the job
    that sets ``max_j(arrival_j + solo_j)`` (an oracle: it reads the trace), ``longest`` every running job whose
    solo time left is within 10% of the longest solo time left of the jobs present (running or queued)."""

    def __init__(self, mode: str) -> None:
        super().__init__("makespan")
        if mode not in ("bound", "longest"):
            raise ValueError(f"GuardedPacking: mode must be 'bound' or 'longest', got {mode!r}")
        self.mode = mode

    def reset(self, env: Any) -> None:
        super().reset(env)
        if self.mode == "bound":
            e = env.unwrapped.engine
            keep = {int(np.argmax(e.submit + e.solo_time))}
            self.guarded: Any = lambda v: keep
        else:
            self.guarded = longest_jobs

    def _pack(self, j: int) -> Colocate | None:
        """The host's packing of pending job ``j`` with the guarded jobs (``guarded(view)``, asked each time)
        left out on both sides."""
        keep = self.guarded(self.by_demand.view)
        if j in keep:
            return None
        return least_utilized_host(self.by_demand.view, self.by_demand, j, lambda p: p in keep)


def longest_jobs(view: ClusterView) -> set[int]:
    """The running jobs whose solo time left is within 10% of the longest of the jobs present."""
    run, pend = view.running_jobs(), view.pending_jobs()
    if not len(run):
        return set()
    left = view.remaining_solo_time(run)
    top = max(float(left.max()), float(view.remaining_solo_time(pend).max(initial=0.0)) if len(pend) else 0.0)
    return set(run[left >= LONGEST_WITHIN * top].tolist())


def guarded(mode: str, **gimbal: Any) -> Policy:
    """``gavel+gimbal`` (makespan) on a :class:`GuardedPacking` host."""
    pol = GavelGimbal(objective="makespan", **gimbal)
    pol.host = GuardedPacking(mode)
    return pol


LONGEST = "gavel+gimbal, longest job takes no guest"
VARIANTS: dict[str, Any] = {
    "gavel": lambda: make_policy("gavel", objective="makespan"),
    "gavel+gimbal": lambda: make_policy("gavel+gimbal", objective="makespan"),
    "gavel+gimbal lgrr=liss=false": lambda: make_policy("gavel+gimbal", objective="makespan", lgrr=False,
                                                        liss=False),
    "gavel+gimbal, bound's job never shares": lambda: guarded("bound"),
    "gavel+gimbal, longest job takes no guest": lambda: guarded("longest"),
}
COMPARISONS = [
    ("gavel+gimbal", "gavel"),
    ("gavel+gimbal lgrr=liss=false", "gavel"),
    ("gavel+gimbal, bound's job never shares", "gavel"),
    ("gavel+gimbal, bound's job never shares", "gavel+gimbal"),
    ("gavel+gimbal, longest job takes no guest", "gavel"),
    ("gavel+gimbal, longest job takes no guest", "gavel+gimbal"),
]
LOADS: dict[str, dict[str, Any] | None] = {
    "as registered": None,
    "arrivals 2x faster": {"load": 2.0, "max_span_h": 8.8},
    "arrivals 4x faster": {"load": 4.0, "max_span_h": 4.4},
    "all at 0": {"all_at_zero": True},
    "600 jobs in 17.6 h": {"num_jobs": 600, "load": 2.0, "max_span_h": 17.6},
    "jobs of at most 4 h, all at 0": {"all_at_zero": True, "max_duration_h": 4.0},
}


class Probe(gym.Wrapper):
    """After every step, what holds until the clock next moves: the time, the running jobs, their rates and
    solo rates on their GPUs, when their pauses end, and every GPU's two tenants and their shares."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.rows: list[tuple] = []

    def reset(self, **kw: Any) -> Any:
        self.rows = []
        return self.env.reset(**kw)

    def step(self, action: Any) -> Any:
        out = self.env.step(action)
        e = self.env.unwrapped.engine
        run = e.running_jobs()
        row = (e.now, run, e.rate[run].copy(), e.active_from[run].copy(), e.slot_job.copy(), e.slot_share.copy())
        if self.rows and self.rows[-1][0] == e.now:
            self.rows[-1] = row  # the last state at an instant is the one that holds
        else:
            self.rows.append(row)
        return out


def last_job(rows: list[tuple], e: Any, c: int) -> dict[str, float]:
    """Job ``c``'s run time lost against its solo time by what it was doing, and its sharing (module
    docstring, section 2), from a :class:`Probe`'s rows."""
    best = e.iterations[c] / e.solo_time[c]
    full = e.share_units
    out = dict.fromkeys(("paused", "shared full", "shared squeezed", "alone", "shared_s", "guest_share", "rate"),
                        0.0)
    for r, nxt in zip(rows[:-1], rows[1:], strict=True):
        t0, run, rate, active, slot, share = r
        dt = nxt[0] - t0
        at = np.flatnonzero(run == c)
        if dt <= 0 or not len(at):
            continue
        i = int(at[0])
        paused = float(np.clip(min(active[i], nxt[0]) - t0, 0.0, dt))
        lost = (dt - paused) * (1.0 - rate[i] / best)
        out["paused"] += paused
        mine = (slot == c).any(axis=1)
        own = share[mine][slot[mine] == c]
        other = share[mine][(slot[mine] != c) & (slot[mine] >= 0)]
        if len(other):
            out["shared squeezed" if (own < full).any() else "shared full"] += lost
            out["shared_s"] += dt
            out["guest_share"] += dt * float(other.mean()) / full
            out["rate"] += dt * rate[i] / best
        else:
            out["alone"] += lost
    if out["shared_s"] > 0:
        out["guest_share"] /= out["shared_s"]
        out["rate"] /= out["shared_s"]
    else:
        out["guest_share"] = out["rate"] = float("nan")
    return out


def probed_episode(scenario: str, pol: Policy, seed: int, options: dict[str, Any] | None,
                   env_kwargs: dict[str, Any] | None, extra: Any, probe: Any = None) -> dict[str, Any]:
    """:func:`run_episode` with ``extra(env, wrapper)`` added to its result, the episode stepped through
    ``probe(env)`` (a wrapper class such as :class:`Probe`) when one is given (``wrapper`` None otherwise)."""
    holder: dict[str, Any] = {}

    def wrap(env: Any, _pol: Any) -> Any:
        holder["probe"] = probe(env)
        return holder["probe"]

    return run_episode(scenario, pol, seed, options, env_kwargs, extra=lambda env: extra(env, holder.get("probe")),
                       wrap=wrap if probe is not None else None)


def run(name: str, seed: int, options: dict[str, Any] | None = None, probe: bool = True) -> dict[str, Any]:
    """One episode of variant ``name``: its metrics, the bound and the job that ends last (module docstring)."""

    def extra(env: Any, wrapper: Probe | None) -> dict[str, Any]:
        e = env.unwrapped.engine
        end = e.submit + e.solo_time
        c, b = int(np.nanargmax(e.finish_t)), int(np.argmax(end))
        out = {"bound_s": float(end.max()), "bound_job": b, "last_job": c, "bound_gpus": int(e.req_gpus[b]),
               "bound_arrival_s": float(e.submit[b]), "bound_solo_s": float(e.solo_time[b]),
               "work_s": float((e.solo_time * e.req_gpus).sum() / e.num_gpus), "span_s": float(e.submit.max()),
               "max_solo_s": float(e.solo_time.max()), "last_gpus": int(e.req_gpus[c]),
               "last_arrival_s": float(e.submit[c]), "last_solo_s": float(e.solo_time[c]),
               "last_queue_s": float(e.first_start[c] - e.submit[c]),
               "last_run_s": float(e.finish_t[c] - e.first_start[c]), "last_preempt": int(e.n_preempt[c])}
        if wrapper is not None:
            out["last"] = last_job(wrapper.rows, e, c)
        return out

    return probed_episode(SCENARIO, VARIANTS[name](), seed, options, None, extra, Probe if probe else None)


def col(rs: list[dict[str, Any]], key: str) -> np.ndarray:
    return np.array([r[key] for r in rs], dtype=float)


def h(x: float) -> str:
    return f"{x / 3600:.2f}"


def bound_table(res: dict[str, list[dict[str, Any]]], seeds: list[int]) -> None:
    """Section 1: per seed, the bound and each policy's makespan against it."""
    g, gg = res["gavel"], res["gavel+gimbal"]
    print("| seed | span (h) | work / 32 GPUs (h) | bound (h) | bound's job: GPUs, arrival, solo (h) | gavel (h) "
          "| gap (min) | gavel+gimbal (h) | gap (min) | last job is the bound's (gavel / +gimbal) | headroom |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for s, a, b in zip(seeds, g, gg, strict=True):
        print(f"| {s} | {h(a['span_s'])} | {h(a['work_s'])} | {h(a['bound_s'])} | {a['bound_gpus']}, "
              f"{h(a['bound_arrival_s'])}, {h(a['bound_solo_s'])} | {h(a['makespan_s'])} | "
              f"{(a['makespan_s'] - a['bound_s']) / 60:.1f} | {h(b['makespan_s'])} | "
              f"{(b['makespan_s'] - b['bound_s']) / 60:.1f} | "
              f"{'yes' if a['last_job'] == a['bound_job'] else 'no'} / "
              f"{'yes' if b['last_job'] == b['bound_job'] else 'no'} | "
              f"{100 * (1 - a['bound_s'] / a['makespan_s']):.1f}% |")
    bound, mg, mgg = col(g, "bound_s"), col(g, "makespan_s"), col(gg, "makespan_s")
    head, lo, hi = bootstrap(bound, mg)
    print(f"\nMeans: bound {h(bound.mean())} h, gavel {h(mg.mean())} h ({(mg - bound).mean() / 60:.1f} min over it; "
          f"at most {(mg - bound).max() / 60:.1f}), gavel+gimbal {h(mgg.mean())} h ({(mgg - bound).mean() / 60:.1f} "
          f"min over it). Headroom (1 - mean bound / mean gavel): {100 * head:+.1f}% [{100 * lo:+.1f}, "
          f"{100 * hi:+.1f}]; the paper's gain {100 * (1 - PAPER_H[1] / PAPER_H[0]):.1f}%. Seeds whose bound alone "
          f"exceeds the paper's Gavel+Gimbal makespan ({PAPER_H[1]} h): {int((bound > PAPER_H[1] * 3600).sum())}/"
          f"{len(bound)}; whose longest job alone (arriving at 0) does: "
          f"{int((col(g, 'max_solo_s') > PAPER_H[1] * 3600).sum())}/{len(bound)}. GPU-work over 32 GPUs: "
          f"{h(col(g, 'work_s').mean())} h; GPU occupancy gavel {col(g, 'gpu_occupancy').mean():.2f}, "
          f"gavel+gimbal {col(gg, 'gpu_occupancy').mean():.2f}.")


def last_table(res: dict[str, list[dict[str, Any]]], names: list[str]) -> None:
    """Section 2: the job that ends last, per policy (means over seeds)."""
    print("\n| variant | makespan (h) | last job = bound's | its queueing (min) | run - solo (min) | paused | "
          "shared, full share | shared, squeezed | alone | time shared (h) | partners' share | rate / solo "
          "while shared |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in names:
        rs = res[n]
        last = [r["last"] for r in rs]

        def m(k: str, last: list[dict[str, float]] = last) -> float:
            v = np.array([x[k] for x in last])
            return float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
        same = sum(r["last_job"] == r["bound_job"] for r in rs)
        print(f"| {n} | {h(col(rs, 'makespan_s').mean())} | {same}/{len(rs)} | "
              f"{col(rs, 'last_queue_s').mean() / 60:.1f} | "
              f"{(col(rs, 'last_run_s') - col(rs, 'last_solo_s')).mean() / 60:.1f} | {m('paused') / 60:.1f} | "
              f"{m('shared full') / 60:.1f} | {m('shared squeezed') / 60:.1f} | {m('alone') / 60:.1f} | "
              f"{m('shared_s') / 3600:.2f} | {m('guest_share'):.2f} | {m('rate'):.3f} |")


def comparisons(res: dict[str, list[dict[str, Any]]], pairs: list[tuple[str, str]]) -> None:
    print("\n| makespan: policy vs baseline | improvement | 95% interval | seeds better |")
    print("|---|---|---|---|")
    for p, b in pairs:
        if p in res and b in res:
            pm, bm = col(res[p], "makespan_s"), col(res[b], "makespan_s")
            imp, lo, hi = bootstrap(pm, bm)
            print(f"| {p} vs {b} | {100 * imp:+.1f}% | [{100 * lo:+.1f}, {100 * hi:+.1f}] | "
                  f"{int((pm < bm).sum())}/{len(pm)} |")


def loads_table(seeds: list[int]) -> dict[str, Any]:
    """Section 4: headroom and gavel+gimbal vs gavel under heavier loads of the same cluster."""
    print("\n| setting | span (h) | work / 32 GPUs (h) | longest job (h) | bound (h) | gavel (h) | headroom | "
          "gavel+gimbal (h) | vs gavel | 95% interval | seeds better | last job's loss to sharing (min) | "
          "longest job takes no guest: vs gavel | 95% interval |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    out = {}
    for label, opts in LOADS.items():
        g = [run("gavel", s, opts, probe=False) for s in seeds]
        gg = [run("gavel+gimbal", s, opts) for s in seeds]
        gl = [run(LONGEST, s, opts, probe=False) for s in seeds]
        out[label] = {"gavel": g, "gavel+gimbal": gg, LONGEST: gl}
        print(f"  ran {label}", file=sys.stderr)
        bound, mg, mgg = col(g, "bound_s"), col(g, "makespan_s"), col(gg, "makespan_s")
        head = 1 - bound.mean() / mg.mean()
        imp, lo, hi = bootstrap(mgg, mg)
        loss = np.mean([r["last"]["shared full"] + r["last"]["shared squeezed"] for r in gg])
        imp2, lo2, hi2 = bootstrap(col(gl, "makespan_s"), mg)
        print(f"| {label} | {h(col(g, 'span_s').mean())} | {h(col(g, 'work_s').mean())} | "
              f"{h(col(g, 'max_solo_s').mean())} | {h(bound.mean())} | {h(mg.mean())} | {100 * head:.1f}% | "
              f"{h(mgg.mean())} | {100 * imp:+.1f}% | [{100 * lo:+.1f}, {100 * hi:+.1f}] | "
              f"{int((mgg < mg).sum())}/{len(mg)} | {loss / 60:.0f} | {100 * imp2:+.1f}% | "
              f"[{100 * lo2:+.1f}, {100 * hi2:+.1f}] |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--seeds", type=seeds_arg, default="0-19",
                    help="development seeds, e.g. 0-19 or 0,3,5 (default 0-19)")
    ap.add_argument("--replicate", action="store_true", help="sections 1-3 on the held-out seeds 100-139")
    ap.add_argument("--loads", action="store_true", help="also section 4 (heavier loads; development seeds only)")
    ap.add_argument("--json", help="also write every episode's metrics to this file")
    args = ap.parse_args()
    seeds = REPLICATE_SEEDS if args.replicate else args.seeds
    if not args.replicate and HELD_OUT & set(seeds):
        ap.error(f"held-out seeds ({HELD_OUT_TEXT}) are read only with --replicate")
    if args.replicate and args.loads:
        ap.error("--loads runs on development seeds only")
    print(f"{SCENARIO}, seeds {seeds[0]}-{seeds[-1]} ({len(seeds)})\n")
    res: dict[str, list[dict[str, Any]]] = {}
    for n in VARIANTS:
        res[n] = [run(n, s) for s in seeds]
        print(f"  ran {n}", file=sys.stderr)
    print("## 1. The bound\n")
    bound_table(res, seeds)
    print("\n## 2. The job that ends last\n")
    last_table(res, list(VARIANTS))
    print("\n## 3. Comparisons\n")
    comparisons(res, COMPARISONS)
    loads = None
    if args.loads:
        print("\n## 4. Heavier loads of the same cluster\n")
        loads = loads_table(seeds)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seeds": seeds, "variants": res, "loads": loads}, f)


if __name__ == "__main__":
    main()
