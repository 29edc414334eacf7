"""Why ``gavel-packed+gimbal`` finishes ``gimbal-philly`` later than ``gavel-packed`` (claim gimbal-f8-gavelpk-ph,
Gimbal Fig. 8; docs/causes/gimbal-gavelpk-philly.md).

Runs ``gimbal-philly`` episodes one at a time, Gavel's packed LP (``gavel-packed``, ``objective="makespan"``) with
and without Gimbal's coordination, on the development seeds (default 0-19), and prints:

1. **Ablation** (the catalog's interference): ``gavel-packed+gimbal`` with one of Gimbal's mechanisms switched
   off or changed at a time (LGRR, LISS, early exit, a 30% granularity, the world's own pair ratios in place of
   Castor's predictor, a search step every 117 s or 351 s instead of 39 s, one search per packing set: a set
   that Gavel's rounds form again goes back to its earlier search's best shares instead of searching anew), and
   with the engine's pause per
   share switch (``calibration_overhead_s``, 3.6 s, gimbal §7.4) set to 0 for both policies (the baseline never
   switches a share, so it runs the same). Per variant: makespan, average JCT, queueing, run time, colocations,
   preemptions, share switches (squeezes + swells), Gimbal's searches and LISS switches, Gavel's LP solves,
   and the makespan's improvement on ``gavel-packed`` with a paired bootstrap 95% interval over seeds.
2. **Where the time goes** (a probe reads the engine's rates after every step): every job's run time lost
   against its solo time, in GPU-hours, by what the job was doing (paused by a share switch, sharing its GPUs
   at full share, sharing them squeezed, alone); the switch pauses over the 32 GPUs beside the makespan
   difference; the true change in the pair's work rate (GPUs x rate / solo rate, summed over both jobs) at each
   squeeze and swell; and the job that ends last (arrival, solo time, queueing, run time).
3. **No interference** (world xi = 1, the claims page's diagnostic): the same for the variants that tell the
   predictor's part from the switches'.

    .venv/bin/python docs/_scripts/gimbal_gavelpk_philly.py                 # seeds 0-19, about 10 minutes
    .venv/bin/python docs/_scripts/gimbal_gavelpk_philly.py --seeds 0-4     # a quicker look
    .venv/bin/python docs/_scripts/gimbal_gavelpk_philly.py --replicate     # held-out seeds 100-139

Nothing is read from the held-out seeds (100-179, 200-279) unless ``--replicate`` is given; ``--replicate`` runs
only the isolating comparisons on seeds 100-139 and tunes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import gymnasium as gym
import numpy as np
from gimbal_gavel_alibaba import probed_episode  # docs/_scripts
from gimbal_lucid_alibaba import WorldRatios, bootstrap, seeds_arg
from gpucluster_env.baselines.gavel_packed import GavelPacked
from gpucluster_env.baselines.gavel_packed_gimbal import GavelPackedGimbal
from gpucluster_env.baselines.parts.gimbal_rules import JobSet
from gpucluster_env.baselines.parts.gimbal_search import Coordinator, SetSearch
from held_out import HELD_OUT, HELD_OUT_TEXT

from gpucluster_env.catalog import Catalog, default_catalog
from gpucluster_env.engine import Action, Squeeze, Swell
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.interference import ConstantInterference
from gpucluster_env.policy import Policy

SCENARIO = "gimbal-philly"
REPLICATE_SEEDS = list(range(100, 140))
NO_PAUSE = {"calibration_overhead_s": 0.0}
BASE = "gavel-packed"
GIMBAL = "gavel-packed+gimbal"

# name: (Gimbal's options or None for gavel-packed alone, scenario options, decide on the world's ratios)
VARIANTS: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None, bool]] = {
    BASE: (None, None, False),
    GIMBAL: ({}, None, False),
    "+gimbal lgrr=false": ({"lgrr": False}, None, False),
    "+gimbal liss=false": ({"liss": False}, None, False),
    "+gimbal early_exit=false": ({"early_exit": False}, None, False),
    "+gimbal granularity=30": ({"granularity": 30}, None, False),
    "+gimbal, world's ratios": ({}, None, True),
    "+gimbal, search step 117 s": ({"step_s": 117.0}, None, False),
    "+gimbal, search step 351 s": ({"step_s": 351.0}, None, False),
    "+gimbal, one search per set": ({"one_search": True}, None, False),
    "gavel-packed, switch pause 0": (None, NO_PAUSE, False),
    "+gimbal, switch pause 0": ({}, NO_PAUSE, False),
    "+gimbal, world's ratios, switch pause 0": ({}, NO_PAUSE, True),
}
PROBED = [BASE, GIMBAL, "+gimbal, switch pause 0"]
XI1 = [BASE, GIMBAL, "+gimbal, switch pause 0", "+gimbal, world's ratios",
       "+gimbal, world's ratios, switch pause 0"]
REPLICATE = [BASE, GIMBAL, "+gimbal, switch pause 0", "+gimbal, search step 351 s", "+gimbal, one search per set"]
REPLICATE_XI1 = XI1


class CountingPacked(GavelPacked):
    """``gavel-packed`` counting its LP solves (allocation recomputations); it decides as registered."""

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.solves = 0

    def _allocate(self, view: Any, active: list[int], t: np.ndarray) -> None:
        self.solves += 1
        super()._allocate(view, active, t)


class PairMemory(Coordinator):
    """Gimbal's coordinator that searches each packing set once: when Gavel's rounds form a set again that an
    earlier search finished (a set's jobs are stopped between rounds and restart at full share), its shares go
    back at once to that search's best point, and no new search starts. A counterfactual of the round effect
    (the registered coordinator searches every set it sees anew)."""

    memory: dict[tuple[int, ...], dict[int, int]]

    def start(self, view: ClusterView, s: JobSet, acts: list[Action]) -> SetSearch:
        best = self.memory.get(s.jobs)
        if best is None:
            return super().start(view, s, acts)
        self.move_to(view, {(j, g): best[j] for j in s.jobs for g in view.gpus_of(j).tolist()}, acts)
        return SetSearch(s.jobs, (), (), dict(self.shares), done=True)

    def _restore(self, view: ClusterView, st: SetSearch, acts: list[Action]) -> None:
        super()._restore(view, st, acts)
        self.memory[st.members] = {j: min((self.shares.get((j, g), self.full) for g in view.gpus_of(j).tolist()),
                                          default=self.full) for j in st.members}


class OneSearchPerSet(GavelPackedGimbal):
    """``gavel-packed+gimbal`` with :class:`PairMemory` in place of its coordinator (its state is the same: the
    class of the coordinator ``reset`` makes is swapped, nothing else)."""

    def reset(self, env: Any) -> None:
        super().reset(env)
        assert self.coordinator is not None
        self.coordinator.__class__ = PairMemory
        self.coordinator.memory = {}


def make(name: str, catalog: Catalog) -> tuple[Policy, CountingPacked]:
    """The variant's policy and its Gavel (whose LP solves are read after the episode)."""
    gimbal, _, world = VARIANTS[name]
    gavel = CountingPacked("makespan")
    if gimbal is None:
        return gavel, gavel
    opts = dict(gimbal)
    step_s = opts.pop("step_s", None)
    kind = OneSearchPerSet if opts.pop("one_search", False) else GavelPackedGimbal
    pol = kind(**opts, predictor=WorldRatios(catalog) if world else None)
    g = pol.gimbal
    if step_s is not None:  # GimbalOptions is frozen: a copy with the other step
        g = type(g)(g.lgrr, g.liss, g.early_exit, g.predictor, g.granularity, step_s)
    pol.gimbal = g
    pol.host = gavel
    return pol, gavel


class Probe(gym.Wrapper):
    """After every step, what holds until the clock next moves (the running jobs, their rates, when their pauses
    end, their shared GPUs and least share); at every Squeeze or Swell, the true change it made to the work rate
    of the job and its partners."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.rows: list[tuple] = []
        self.moves: list[tuple[str, float]] = []

    def reset(self, **kw: Any) -> Any:
        self.rows, self.moves = [], []
        return self.env.reset(**kw)

    def step(self, action: Any) -> Any:
        e = self.env.unwrapped.engine
        jobs = before = None
        if isinstance(action, Squeeze | Swell):
            on = np.flatnonzero((e.slot_job == action.job).any(axis=1))
            jobs = np.unique(e.slot_job[on])
            jobs = jobs[jobs >= 0]
            before = e.rate[jobs].copy()
        out = self.env.step(action)
        if jobs is not None and len(jobs) == 2:
            w = e.req_gpus[jobs] * e.solo_time[jobs] / e.iterations[jobs]
            self.moves.append((type(action).__name__, float(((e.rate[jobs] - before) * w).sum())))
        run = e.running_jobs()
        row = (e.now, run, e.rate[run].copy(), e.active_from[run].copy(), e.held_shared[run].copy(),
               e.share_lo[run].copy())
        if self.rows and self.rows[-1][0] == e.now:
            self.rows[-1] = row
        else:
            self.rows.append(row)
        return out


def lost_gpu_s(rows: list[tuple], e: Any) -> np.ndarray:
    """Per state (paused, shared at full share, shared squeezed, alone), the GPU-seconds of run time all jobs lost
    against their solo time (a job's lost time times its GPUs)."""
    best = e.iterations / e.solo_time
    out = np.zeros(4)
    for r, nxt in zip(rows[:-1], rows[1:], strict=True):
        t0, run, rate, active, shared, least = r
        dt = nxt[0] - t0
        if dt <= 0 or not len(run):
            continue
        g = e.req_gpus[run]
        paused = np.clip(np.minimum(active, nxt[0]) - t0, 0.0, dt)
        lost = (dt - paused) * (1.0 - rate / best[run]) * g
        sh, sq = shared > 0, least < e.share_units
        out += [(paused * g).sum(), lost[sh & ~sq].sum(), lost[sh & sq].sum(), lost[~sh].sum()]
    return out


def run(name: str, seed: int, xi: float | None, probe: bool = False) -> dict[str, Any]:
    catalog = default_catalog() if xi is None else default_catalog().with_interference(ConstantInterference(xi))
    pol, gavel = make(name, catalog)

    def extra(env: Any, wrapper: Probe | None) -> dict[str, Any]:
        e = env.unwrapped.engine
        c = int(np.nanargmax(e.finish_t))
        out: dict[str, Any] = {
            "lp_solves": gavel.solves, "last_job": c, "last_arrival_s": float(e.submit[c]),
            "last_solo_s": float(e.solo_time[c]), "last_queue_s": float(e.first_start[c] - e.submit[c]),
            "last_run_s": float(e.finish_t[c] - e.first_start[c]), "last_gpus": int(e.req_gpus[c]),
            "work_gpu_s": float((e.solo_time * e.req_gpus).sum()), "num_gpus": int(e.num_gpus)}
        if wrapper is not None:
            out["lost_gpu_s"] = lost_gpu_s(wrapper.rows, e).tolist()
            out["moves"] = wrapper.moves
        return out

    r = probed_episode(SCENARIO, pol, seed, VARIANTS[name][1], {"catalog": catalog}, extra, Probe if probe else None)
    stats = pol.episode_stats() if hasattr(pol, "episode_stats") else {}
    r.update({k: stats.get(k, 0.0) for k in ("gimbal_searches", "gimbal_attempts", "gimbal_early_exits",
                                             "gimbal_liss_switches")})
    return r


def col(rs: list[dict[str, Any]], key: str) -> np.ndarray:
    return np.array([r[key] for r in rs], dtype=float)


def table(res: dict[str, list[dict[str, Any]]], names: list[str]) -> None:
    """Section 1 (and 3): per variant, means over seeds and the makespan against gavel-packed."""
    base = col(res[BASE], "makespan_s")
    print("| variant | makespan (h) | avg JCT (h) | queueing (h) | run (h) | colocations | preemptions | share "
          "switches | searches | LISS switches | LP solves | makespan vs gavel-packed | 95% interval | seeds better |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in names:
        rs = res[n]
        m, jct, q = col(rs, "makespan_s"), col(rs, "avg_jct_s"), col(rs, "avg_queue_s")
        imp, lo, hi = bootstrap(m, base)
        sw = col(rs, "squeezes") + col(rs, "swells")
        print(f"| {n} | {m.mean() / 3600:.3f} | {jct.mean() / 3600:.3f} | {q.mean() / 3600:.3f} | "
              f"{(jct - q).mean() / 3600:.3f} | {col(rs, 'colocations').mean():.0f} | "
              f"{col(rs, 'preemptions').mean():.0f} | {sw.mean():.0f} | {col(rs, 'gimbal_searches').mean():.0f} | "
              f"{col(rs, 'gimbal_liss_switches').mean():.0f} | {col(rs, 'lp_solves').mean():.0f} | "
              f"{100 * imp:+.2f}% | [{100 * lo:+.2f}, {100 * hi:+.2f}] | {int((m < base).sum())}/{len(base)} |")


def where(res: dict[str, list[dict[str, Any]]]) -> None:
    """Section 2: lost GPU-hours by state, switch pauses against the makespan, squeezes' true effect, last job."""
    base = col(res[BASE], "makespan_s")
    print("| variant | GPU-h of work (solo) | GPU-h lost: paused | shared, full share | shared, squeezed | alone "
          "| all | pauses / GPUs (h) | makespan - gavel-packed's (h) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in PROBED:
        rs = res[n]
        lost = np.array([r["lost_gpu_s"] for r in rs]).mean(axis=0) / 3600
        pause_h = np.mean([r["lost_gpu_s"][0] / r["num_gpus"] for r in rs]) / 3600
        print(f"| {n} | {col(rs, 'work_gpu_s').mean() / 3600:.1f} | {lost[0]:.1f} | {lost[1]:.1f} | {lost[2]:.1f} | "
              f"{lost[3]:.1f} | {lost.sum():.1f} | {pause_h:.3f} | "
              f"{(col(rs, 'makespan_s') - base).mean() / 3600:+.3f} |")
    rs = res[GIMBAL]
    srch = col(rs, "gimbal_searches").sum()
    print(f"\n{GIMBAL}: {col(rs, 'gimbal_searches').mean():.0f} searches per episode for "
          f"{col(rs, 'colocations').mean():.0f} colocations, {col(rs, 'gimbal_attempts').sum() / srch:.1f} "
          f"attempts and {(col(rs, 'squeezes') + col(rs, 'swells')).sum() / srch:.1f} share switches per search, "
          f"{100 * col(rs, 'gimbal_early_exits').sum() / srch:.0f}% of searches ended by early exit.\n")
    print("| variant | move | per episode | mean change of the pair's work rate (GPUs) | share lowering it |")
    print("|---|---|---|---|---|")
    for n in PROBED[1:]:
        for kind in ("Squeeze", "Swell"):
            d = np.array([dw for r in res[n] for k, dw in r["moves"] if k == kind])
            if len(d):
                print(f"| {n} | {kind} | {len(d) / len(res[n]):.0f} | {d.mean():+.4f} | "
                      f"{100 * (d < -1e-12).mean():.0f}% |")
    print("\n| variant | last job = gavel-packed's | its GPUs | arrival (h) | solo (h) | queueing (h) | run (h) |")
    print("|---|---|---|---|---|---|---|")
    for n in PROBED:
        rs = res[n]
        same = sum(a["last_job"] == b["last_job"] for a, b in zip(rs, res[BASE], strict=True))
        print(f"| {n} | {same}/{len(rs)} | {col(rs, 'last_gpus').mean():.1f} | "
              f"{col(rs, 'last_arrival_s').mean() / 3600:.2f} | {col(rs, 'last_solo_s').mean() / 3600:.2f} | "
              f"{col(rs, 'last_queue_s').mean() / 3600:.2f} | {col(rs, 'last_run_s').mean() / 3600:.2f} |")


def run_all(names: list[str], seeds: list[int], xi: float | None, probed: list[str]
            ) -> dict[str, list[dict[str, Any]]]:
    res: dict[str, list[dict[str, Any]]] = {}
    for n in names:
        res[n] = [run(n, s, xi, n in probed) for s in seeds]
        print(f"  ran {n} (xi={'catalog' if xi is None else xi}), {len(seeds)} seeds", file=sys.stderr)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--seeds", type=seeds_arg, default="0-19", help="development seeds, e.g. 0-19 or 0,3,5")
    ap.add_argument("--replicate", action="store_true",
                    help="run only the isolating comparisons on the held-out seeds 100-139")
    ap.add_argument("--json", help="also write every episode's metrics to this file")
    args = ap.parse_args()
    if args.replicate:
        seeds, names, names_xi1 = REPLICATE_SEEDS, REPLICATE, REPLICATE_XI1
    else:
        seeds, names, names_xi1 = args.seeds, list(VARIANTS), XI1
        if HELD_OUT & set(seeds):
            ap.error(f"held-out seeds ({HELD_OUT_TEXT}) are read only with --replicate")
    print(f"{SCENARIO}, seeds {seeds[0]}-{seeds[-1]} ({len(seeds)})\n")
    res = run_all(names, seeds, None, PROBED)
    print("## 1. The catalog's interference\n")
    table(res, names)
    print("\n## 2. Where the time goes\n")
    where(res)
    res1 = run_all(names_xi1, seeds, 1.0, [])
    print("\n## 3. No interference (world xi = 1)\n")
    table(res1, names_xi1)
    if args.json:
        for rs in (*res.values(), *res1.values()):
            for r in rs:
                r.pop("moves", None)
        with open(args.json, "w") as f:
            json.dump({"seeds": seeds, "catalog": res, "xi1": res1}, f)


if __name__ == "__main__":
    main()
