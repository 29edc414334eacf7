"""The gimbal-alibaba claims on development seeds, and the experiments that isolate their causes
(docs/causes/gimbal-alibaba.md).

Reads the records of ``gpucluster leaderboard run`` results folders of ``gimbal-alibaba`` cells (the
``gimbal`` board's gimbal-alibaba group on seeds 0-9, and variants of it: env ``xi = 1``, scenario options)
and prints, per folder:

* each cell's means over seeds: average JCT, queueing, run time (JCT minus queueing; GPU-time-weighted too),
  deadlines met, makespan, colocations;
* each claim's comparison (and the Fig. 12 ablation steps): the mean over seeds of the per-seed improvement
  (1 - policy/baseline where lower is better, policy/baseline - 1 for deadlines), its paired 95% t interval,
  and how many seeds go the paper's way;
* deadlines met by job run time (short / medium / long thirds of each seed's jobs) for Gandiva and
  Gandiva+Gimbal;
* per seed, Gavel's and Gavel+Gimbal's makespans beside the unpacked bounds (the solo GPU-work over 32 GPUs;
  the latest arrival plus its run alone), from the scenario's job tables (with the folder's scenario options).

    .venv/bin/gpucluster leaderboard run BOARD.toml --workers 1 --out /tmp/gimbal-ali
    .venv/bin/python docs/_scripts/gimbal_alibaba_claims.py /tmp/gimbal-ali [/tmp/gimbal-ali-xi1 ...]

Only development seeds: a folder holding records of held-out seeds (100-179, 200-279) is refused.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.utils import seeding
from held_out import HELD_OUT
from scipy import stats

from gpucluster_env.scenarios import get_scenario


def episode_jobs(sc: Any, seed: int) -> Any:
    """The job table an episode of ``seed`` runs: the env draws the trace's seed from its own generator
    (``ClusterEnv.reset``), so it is not ``build_jobs(seed)``."""
    return sc.build_jobs(int(seeding.np_random(seed)[0].integers(0, 2**31 - 1)))[0]
GPUS = 32
MK = {"objective": "makespan"}

COMPARISONS: list[tuple[str, tuple[str, dict[str, Any]], tuple[str, dict[str, Any]], str]] = [
    ("gimbal-f8-lucid-ali: avg JCT", ("lucid+gimbal", {}), ("lucid", {}), "avg_jct_s"),
    ("gimbal-f9-queue-ali: queueing", ("lucid+gimbal", {}), ("lucid", {}), "avg_queue_s"),
    ("gimbal-f8-gandiva-ali: deadlines", ("gandiva+gimbal", {}), ("gandiva", {}), "deadline_satisfaction"),
    ("gimbal-f8-gavel-ali: makespan", ("gavel+gimbal", MK), ("gavel", MK), "makespan_s"),
    ("gimbal-f8-gavelpk-ali: makespan", ("gavel-packed+gimbal", MK), ("gavel-packed", MK), "makespan_s"),
    ("Lucid, unequal packing alone: JCT", ("lucid+gimbal", {"lgrr": False, "liss": False}), ("lucid", {}),
     "avg_jct_s"),
    ("Lucid, + LISS: JCT", ("lucid+gimbal", {"lgrr": False}), ("lucid+gimbal", {"lgrr": False, "liss": False}),
     "avg_jct_s"),
    ("Lucid, + LGRR: JCT", ("lucid+gimbal", {}), ("lucid+gimbal", {"lgrr": False}), "avg_jct_s"),
    ("Lucid, unequal packing alone: queueing", ("lucid+gimbal", {"lgrr": False, "liss": False}), ("lucid", {}),
     "avg_queue_s"),
    ("Gandiva, unequal packing alone: deadlines", ("gandiva+gimbal", {"lgrr": False, "liss": False}),
     ("gandiva", {}), "deadline_satisfaction"),
    ("Gandiva, + LISS: deadlines", ("gandiva+gimbal", {"lgrr": False}),
     ("gandiva+gimbal", {"lgrr": False, "liss": False}), "deadline_satisfaction"),
    ("Gandiva, + LGRR: deadlines", ("gandiva+gimbal", {}), ("gandiva+gimbal", {"lgrr": False}),
     "deadline_satisfaction"),
    ("Gavel, equal-size packing, no mechanisms: makespan",
     ("gavel+gimbal", {**MK, "unequal": False, "lgrr": False, "liss": False}), ("gavel", MK), "makespan_s"),
    ("Gavel, + unequal packing: makespan", ("gavel+gimbal", {**MK, "lgrr": False, "liss": False}),
     ("gavel+gimbal", {**MK, "unequal": False, "lgrr": False, "liss": False}), "makespan_s"),
    ("Gavel, + LISS: makespan", ("gavel+gimbal", {**MK, "lgrr": False}),
     ("gavel+gimbal", {**MK, "lgrr": False, "liss": False}), "makespan_s"),
    ("Gavel, + LGRR: makespan", ("gavel+gimbal", MK), ("gavel+gimbal", {**MK, "lgrr": False}), "makespan_s"),
    ("Gavel, unequal packing + LISS + LGRR: makespan", ("gavel+gimbal", MK),
     ("gavel+gimbal", {**MK, "unequal": False, "lgrr": False, "liss": False}), "makespan_s"),
    ("Gavel's packed LP vs Gavel: makespan", ("gavel-packed", MK), ("gavel", MK), "makespan_s"),
]
"""(label, policy, baseline, metric): the claims of leaderboard/claims.toml on gimbal-alibaba and the ablation
steps between them."""

DEFAULTS = {"gavel-packed": MK, "gavel-packed+gimbal": MK}
"""Options a policy runs with when none are given (a record may name them or not)."""


def key(policy: str, options: dict[str, Any]) -> str:
    """One cell's name: the policy and its options, defaults filled in."""
    opts = {**DEFAULTS.get(policy, {}), **options}
    return policy + ("" if not opts else " (" + ",".join(f"{k}={opts[k]}" for k in sorted(opts)) + ")")


def load(folder: Path) -> tuple[dict[str, dict[int, dict[str, Any]]], dict[str, Any]]:
    """Records of ``folder`` as cell -> seed -> record, and the folder's scenario options."""
    cells: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    scenario_options: dict[str, Any] = {}
    for path in sorted(folder.glob("*.json")):
        rec = json.loads(path.read_text())
        if rec.get("format") != "gpucluster-leaderboard-record" or rec["cell"]["scenario"] != "gimbal-alibaba":
            continue
        cell = rec["cell"]
        if cell["seed"] in HELD_OUT:
            raise SystemExit(f"{path}: held-out seed {cell['seed']} is not for investigation")
        scenario_options = cell["scenario_options"]
        cells[key(cell["policy"], cell["policy_options"])][cell["seed"]] = rec
    return cells, scenario_options


def improvement(p: float, b: float, metric: str) -> float:
    """The paper's direction positive: 1 - p/b (lower better), p/b - 1 (deadlines)."""
    return p / b - 1.0 if metric == "deadline_satisfaction" else 1.0 - p / b


def interval(x: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% t interval."""
    m = float(x.mean())
    if len(x) < 2:
        return m, float("nan"), float("nan")
    h = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))
    return m, m - h, m + h


def cell_table(cells: dict[str, dict[int, dict[str, Any]]]) -> None:
    """Each cell's means over seeds."""
    print("| cell | seeds | avg JCT h | queue h | run h | GPU-weighted run h | deadlines met | makespan h "
          "| colocations |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in sorted(cells):
        recs = list(cells[name].values())
        m = {k: np.mean([r["metrics"][k] for r in recs]) for k in
             ("avg_jct_s", "avg_queue_s", "deadline_satisfaction", "makespan_s", "colocations")}
        wrun = np.mean([np.average(np.subtract(r["per_job"]["jct_s"], r["per_job"]["queue_s"]),
                                   weights=r["per_job"]["gpus"]) for r in recs])
        print(f"| {name} | {len(recs)} | {m['avg_jct_s'] / 3600:.2f} | {m['avg_queue_s'] / 3600:.2f} | "
              f"{(m['avg_jct_s'] - m['avg_queue_s']) / 3600:.2f} | {wrun / 3600:.2f} | "
              f"{m['deadline_satisfaction']:.1%} | {m['makespan_s'] / 3600:.2f} | {m['colocations']:.0f} |")


def comparisons(cells: dict[str, dict[int, dict[str, Any]]]) -> None:
    """Each comparison of :data:`COMPARISONS` whose cells the folder holds."""
    print("\n| comparison | metric | policy / baseline (means) | paired mean improvement | 95% interval "
          "| seeds the paper's way |")
    print("|---|---|---|---|---|---|")
    for label, pol, base, metric in COMPARISONS:
        a, b = cells.get(key(*pol)), cells.get(key(*base))
        if not a or not b:
            continue
        seeds = sorted(set(a) & set(b))
        pa = np.array([a[s]["metrics"][metric] for s in seeds])
        pb = np.array([b[s]["metrics"][metric] for s in seeds])
        imp = np.array([improvement(x, y, metric) for x, y in zip(pa, pb, strict=True)])
        m, lo, hi = interval(imp)
        scale = (lambda v: f"{v:.1%}") if metric == "deadline_satisfaction" else (lambda v: f"{v / 3600:.2f} h")
        print(f"| {label} | {metric} | {scale(pa.mean())} / {scale(pb.mean())} | {m:+.1%} | "
              f"[{lo:+.1%}, {hi:+.1%}] | {int((imp > 0).sum())}/{len(seeds)} |")


def deadlines_by_length(cells: dict[str, dict[int, dict[str, Any]]], jobs: dict[int, Any]) -> None:
    """Deadlines met by run-time third (each seed's jobs split at its run-time terciles)."""
    names = [key("gandiva", {}), key("gandiva+gimbal", {}), key("lucid", {}), key("gavel", MK)]
    print("\nDeadlines met by run-time third (jobs, mean over seeds; short / medium / long):")
    for name in names:
        if name not in cells:
            continue
        thirds = []
        for seed, rec in sorted(cells[name].items()):
            df = jobs[seed]
            dur = df["duration_s"].to_numpy(float)
            slack = df["deadline_s"].to_numpy(float) - df["submit_s"].to_numpy(float)
            met = np.asarray(rec["per_job"]["jct_s"]) <= slack + 1e-6
            cut = np.quantile(dur, [1 / 3, 2 / 3])
            part = np.digitize(dur, cut)
            thirds.append([met[part == k].sum() for k in range(3)] + [met.sum()])
        t = np.mean(thirds, axis=0)
        print(f"  {name}: {t[0]:.1f} / {t[1]:.1f} / {t[2]:.1f}, all {t[3]:.1f} of 300")


def makespan_bounds(cells: dict[str, dict[int, dict[str, Any]]], jobs: dict[int, Any]) -> None:
    """Per seed: Gavel's and Gavel+Gimbal's makespans beside the unpacked bounds."""
    g, gg, gp = cells.get(key("gavel", MK)), cells.get(key("gavel+gimbal", MK)), cells.get(key("gavel-packed", MK))
    if not g or not gg:
        return
    print("\n| seed | gavel h | gavel+gimbal h | gavel-packed h | work / 32 h | last arrival + run h | "
          "gavel+gimbal vs gavel |")
    print("|---|---|---|---|---|---|---|")
    for seed in sorted(set(g) & set(gg)):
        df = jobs[seed]
        dur_h = df["duration_s"].to_numpy(float) / 3600.0
        work = float((dur_h * df["num_gpus"].to_numpy(float)).sum()) / GPUS
        one = float((df["submit_s"].to_numpy(float) / 3600.0 + dur_h).max())
        a, b = g[seed]["metrics"]["makespan_s"] / 3600, gg[seed]["metrics"]["makespan_s"] / 3600
        c = gp[seed]["metrics"]["makespan_s"] / 3600 if gp and seed in gp else float("nan")
        print(f"| {seed} | {a:.2f} | {b:.2f} | {c:.2f} | {work:.2f} | {one:.2f} | {a / b:.3f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", help="results folders of gimbal-alibaba cells")
    args = ap.parse_args()
    for folder in args.dirs:
        cells, options = load(Path(folder))
        seeds = sorted({s for c in cells.values() for s in c})
        print(f"\n## {folder}: gimbal-alibaba {options or ''}, seeds {seeds[0]}-{seeds[-1]}\n")
        sc = get_scenario("gimbal-alibaba", **options)
        jobs = {s: episode_jobs(sc, s) for s in seeds}
        cell_table(cells)
        comparisons(cells)
        deadlines_by_length(cells, jobs)
        makespan_bounds(cells, jobs)


if __name__ == "__main__":
    main()
