"""Print the figures of docs/reproduction-hadar-gimbal.md's Gimbal part from a `gimbal` board's results folder:
the §7.2 comparisons beside the paper, the Fig. 12 ablation, Gavel's makespans per seed with what bounds each,
and the §7.4 granularity and early-exit groups (Markdown, to stdout; the prose around them is written from it).

    gpucluster leaderboard run gimbal --workers 2 --replace-stale --out leaderboard-results/gimbal
    .venv/bin/python docs/_scripts/render_gimbal.py leaderboard-results/gimbal

Ratios are of means over the seeds the two cells share, written as the paper's speedups: the plain policy's
JCT, queueing or makespan over the Gimbal one's (above 1 = Gimbal better), the Gimbal one's deadline
satisfaction over the plain one's. "better" counts the seeds where the Gimbal cell is strictly better.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from gpucluster_env.leaderboard.execute import load_current

from gpucluster_env.env import GPUClusterEnv

PHILLY, ALIBABA = ("gimbal-philly", ()), ("gimbal-alibaba", ())
MK = (("objective", "makespan"),)
LUCID, GANDIVA, GAVEL, PACKED = ("lucid", ()), ("gandiva", ()), ("gavel", MK), ("gavel-packed", MK)
UNEQUAL_ONLY, PLUS_LISS = (("lgrr", False), ("liss", False)), (("lgrr", False),)


def _gimbal(host: str, opts: tuple = (), gavel: bool = False) -> tuple[str, tuple]:
    return (f"{host}+gimbal", tuple(sorted(opts + (MK if gavel else ()))))


# (label, metric, plain cell, gimbal cell, paper Philly, paper Alibaba); lower is better but for deadlines
COMPARISONS = (
    ("Lucid -> Lucid+Gimbal, avg JCT", "avg_jct_s", LUCID, _gimbal("lucid"), 1.28, 1.26),
    ("Lucid -> Lucid+Gimbal, queueing delay", "avg_queue_s", LUCID, _gimbal("lucid"), 1.87, 1.51),
    ("Gandiva -> Gandiva+Gimbal, deadlines met", "deadline_satisfaction", GANDIVA, _gimbal("gandiva"), 1.22, 1.32),
    ("Gavel -> Gavel+Gimbal, makespan", "makespan_s", GAVEL, _gimbal("gavel", gavel=True), 1.12, 1.1),
    ("Gavel's packed LP -> the same with Gimbal's coordination, makespan", "makespan_s", PACKED,
     ("gavel-packed+gimbal", ()), 1.12, 1.1),
)
ABLATION = (  # (label, metric, plain cell, gimbal host, gavel?, paper's three steps)
    ("Lucid avg JCT", "avg_jct_s", LUCID, "lucid", False, "1.05x -> 1.18x -> 1.28x"),
    ("Lucid queueing", "avg_queue_s", LUCID, "lucid", False, "1.09x -> 1.54x -> 1.63x"),
    ("Gandiva deadlines met", "deadline_satisfaction", GANDIVA, "gandiva", False, "1.04x -> 1.11x -> 1.13x"),
    ("Gavel makespan, against Gavel with packing", "makespan_s",
     _gimbal("gavel", UNEQUAL_ONLY + (("unequal", False),), gavel=True), "gavel", True, "1.01x -> 1.1x -> 1.11x"),
)
GRANULARITY = (  # §7.4: (label, scenario options, lucid+gimbal options)
    ("5% steps (5% grid)", (("share_step", 0.05),), (("granularity", 5),)),
    ("10% steps, early exit (Gimbal's)", (), ()),
    ("10% steps on the 5% grid", (("share_step", 0.05),), ()),
    ("20% steps", (), (("granularity", 20),)),
    ("30% steps", (), (("granularity", 30),)),
    ("10% steps, no early exit", (), (("early_exit", False),)),
)

Table = dict[tuple, dict[int, dict[str, Any]]]


def load(folder: Path) -> Table:
    """Every current record of the folder, by (scenario, scenario options, policy, policy options) and seed."""
    out: Table = defaultdict(dict)
    records, notes = load_current([str(folder)])
    for note in notes:
        print(f"render_gimbal: left out: {note}", file=sys.stderr)
    for r in records:
        c = r["cell"]
        key = (c["scenario"], tuple(sorted(c["scenario_options"].items())), c["policy"],
               tuple(sorted(c["policy_options"].items())))
        out[key][int(c["seed"])] = r["metrics"]
    return out


def ratio(t: Table, scen: tuple, metric: str, plain: tuple, gimbal: tuple) -> tuple[float, int, int]:
    """The paper-style speedup of the Gimbal cell over the plain one, seeds better, seeds shared."""
    a, b = t.get((*scen, *plain), {}), t.get((*scen, *gimbal), {})
    seeds = sorted(set(a) & set(b))
    if not seeds:
        raise SystemExit(f"render_gimbal: no shared seeds for {plain} and {gimbal} on {scen[0]}")
    x = np.array([a[s][metric] for s in seeds], float)
    y = np.array([b[s][metric] for s in seeds], float)
    if metric == "deadline_satisfaction":
        return float(y.mean() / x.mean()), int((y > x).sum()), len(seeds)
    return float(x.mean() / y.mean()), int((y < x).sum()), len(seeds)


def comparisons(t: Table) -> list[str]:
    rows = ["| comparison | Philly (ours / paper) | Alibaba, openb 2023 (ours / paper) |", "|---|---|---|"]
    for label, metric, plain, gim, p_ph, p_al in COMPARISONS:
        cells = []
        for scen, paper in ((PHILLY, p_ph), (ALIBABA, p_al)):
            r, better, n = ratio(t, scen, metric, plain, gim)
            cells.append(f"{r:.3f}x ({better}/{n} seeds better) / {paper}x")
        rows.append(f"| {label} | {cells[0]} | {cells[1]} |")
    return rows


def ablation(t: Table) -> list[str]:
    rows = ["| | Philly | Alibaba | paper (Philly, 16-GPU testbed) |", "|---|---|---|---|"]
    for label, metric, plain, host, gavel, paper in ABLATION:
        cells = []
        for scen in (PHILLY, ALIBABA):
            steps = [ratio(t, scen, metric, plain, _gimbal(host, o, gavel))[0] for o in (UNEQUAL_ONLY, PLUS_LISS, ())]
            cells.append(" -> ".join(f"{s:.3f}x" for s in steps))
        rows.append(f"| {label} | {cells[0]} | {cells[1]} | {paper} |")
    return rows


def bounds(scenario: str, options: dict, seed: int) -> tuple[float, float, float]:
    """Hours: the latest arrival plus run alone, the longest run alone, and the total work alone per GPU: the
    least makespan a scheduler that never packs could reach, set by one job or by the cluster's throughput (a
    packed pair does more than one GPU's work, so packing can end below the second)."""
    env = GPUClusterEnv(scenario, scenario_options=options, observation="none")
    env.reset(seed=seed)  # the board's episode of this seed (the env draws the trace seed from it)
    eng = env.engine
    ends = eng.submit + eng.solo_time
    work = float((eng.solo_time * eng.req_gpus).sum()) / eng.num_gpus
    return float(ends.max()) / 3600, float(eng.solo_time.max()) / 3600, work / 3600


def _bound_text(job: float, work: float) -> str:
    if job >= work:
        return f"one job {job:.2f} h"
    return f"work {work:.2f} h (one job {job:.2f} h)"


def per_seed(t: Table) -> list[str]:
    rows = ["| seed | Philly | unpacked bound | Alibaba | unpacked bound |", "|---|---|---|---|---|"]
    gim = _gimbal("gavel", gavel=True)
    a = {s: t[(*scen, *GAVEL)] for s, scen in (("p", PHILLY), ("a", ALIBABA))}
    b = {s: t[(*scen, *gim)] for s, scen in (("p", PHILLY), ("a", ALIBABA))}
    for seed in sorted(set(a["p"]) & set(b["p"]) & set(a["a"]) & set(b["a"])):
        cells = []
        for side, scen in (("p", PHILLY), ("a", ALIBABA)):
            x, y = a[side][seed]["makespan_s"] / 3600, b[side][seed]["makespan_s"] / 3600
            job, _, work = bounds(scen[0], dict(scen[1]), seed)
            change = f"{x:.2f} -> {y:.2f}" + (f" ({x / y:.3f}x)" if abs(x - y) > 0.005 else "")
            cells += [change, _bound_text(job, work)]
        rows.append(f"| {seed} | " + " | ".join(cells) + " |")
    return rows


def granularity(t: Table) -> list[str]:
    rows = ["| search | avg JCT (h) | vs Lucid | searches | attempts | attempts / search | early exits |",
            "|---|---|---|---|---|---|---|"]
    lucid = t[("gimbal-philly", (), *LUCID)]
    for label, sopts, popts in GRANULARITY:
        cell = t[("gimbal-philly", sopts, "lucid+gimbal", popts)]
        seeds = sorted(set(cell) & set(lucid))
        m = {k: float(np.mean([cell[s][k] for s in seeds])) for k in
             ("avg_jct_s", "gimbal_searches", "gimbal_attempts", "gimbal_early_exits")}
        base = float(np.mean([lucid[s]["avg_jct_s"] for s in seeds]))
        rows.append(f"| {label} | {m['avg_jct_s'] / 3600:.3f} | {base / m['avg_jct_s']:.3f}x | "
                    f"{m['gimbal_searches']:.1f} | {m['gimbal_attempts']:.1f} | "
                    f"{m['gimbal_attempts'] / m['gimbal_searches']:.2f} | {m['gimbal_early_exits']:.1f} |")
    rows.append(f"\n(Lucid alone: {float(np.mean([v['avg_jct_s'] for v in lucid.values()])) / 3600:.3f} h over "
                f"{len(lucid)} seeds. Per episode, means over seeds.)")
    return rows


def means(t: Table) -> list[str]:
    """Mean makespan (h) of the Gavel cells, Philly / Alibaba."""
    out = []
    cells = (("gavel", GAVEL), ("gavel-packed", PACKED), ("gavel-packed+gimbal", ("gavel-packed+gimbal", ())),
             ("gavel+gimbal", _gimbal("gavel", gavel=True)))
    for label, cell in cells:
        ph, al = (float(np.mean([m["makespan_s"] for m in t[(*scen, *cell)].values()])) / 3600
                  for scen in (PHILLY, ALIBABA))
        out.append(f"`{label}` {ph:.2f} / {al:.2f}")
    return ["Mean makespan (h), Philly / Alibaba: " + ", ".join(out) + "."]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="a `gimbal` board's results folder")
    args = ap.parse_args(argv)
    if not args.results.is_dir():
        print(f"render_gimbal: {args.results}: no such results folder", file=sys.stderr)
        return 2
    t = load(args.results)
    for title, part in (("§7.2 comparisons", comparisons), ("Fig. 12 ablation", ablation),
                        ("Gavel means", means), ("Gavel per seed", per_seed), ("§7.4 search", granularity)):
        print(f"### {title}\n")
        print("\n".join(part(t)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
