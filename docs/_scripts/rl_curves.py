"""Learning curves of `gpucluster train` runs, drawn as one PNG: per scenario, the median over training seeds of the
greedy evaluation return at each evaluation (the training callback's own episodes, `eval/evaluations.npz`), and
the spread (least to greatest) over the seeds.

    .venv/bin/python docs/_scripts/rl_curves.py --out docs/img/rl-curves.png RUN_DIR [RUN_DIR ...]

Runs are grouped by the first scenario of their `meta.json`. With the job-centric defaults the evaluation return
is relative to SRSF on the same trace: (SRSF's total JCT - the policy's) / the total solo time, 0 = as good as SRSF.
The script also turns each evaluation into the policy's average JCT over SRSF's on the same episodes (it replays
the evaluation env's resets: `gpucluster train` evaluates on fresh traces each time, from seed 1,000,000 on, and
SB3's evaluation resets once more after its last episode), and prints the largest ratio between two consecutive
evaluations of a run.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np


def curves(runs: list[Path]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Scenario -> (timesteps, returns of shape (seeds, points)) over the runs that share the evaluation steps."""
    by: dict[str, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
    for run in runs:
        meta = json.loads((run / "meta.json").read_text())
        z = np.load(run / "eval" / "evaluations.npz")
        by[meta["config"]["scenarios"][0]].append((z["timesteps"], z["results"].mean(axis=1)))
    out = {}
    for sc, items in by.items():
        n = min(len(t) for t, _ in items)
        out[sc] = (items[0][0][:n], np.stack([r[:n] for _, r in items]))
    return out


def srsf_totals(scenario: str, evaluations: int, episodes: int) -> np.ndarray:
    """``(evaluations, episodes, 2)``: (total solo time, SRSF's total JCT) of each evaluation episode of a run."""
    from gpucluster_env.agents.train import EVAL_SEED
    from gpucluster_env.baselines.lookahead import rollout_curve

    from gpucluster_env.env.jobs_env import JobsEnv
    from gpucluster_env.policy import make_policy

    env = JobsEnv(scenario)
    out = np.zeros((evaluations, episodes, 2))
    env.reset(seed=EVAL_SEED)
    for e in range(evaluations):
        for k in range(episodes + 1):  # the extra reset after the last episode
            if e or k:
                env.reset()
            if k < episodes:
                c = rollout_curve(env.engine.clone(), make_policy("srsf"))
                out[e, k] = env.engine.solo_time.sum(), float((c[:, 2] * (c[:, 1] - c[:, 0])).sum())
    return out


def jct_ratios(run: Path) -> np.ndarray:
    """The policy's total JCT over SRSF's at each evaluation of ``run`` (its episodes pooled)."""
    meta = json.loads((run / "meta.json").read_text())
    z = np.load(run / "eval" / "evaluations.npz")
    res = z["results"]
    tot = srsf_totals(meta["config"]["scenarios"][0], *res.shape)
    agent = tot[..., 1] - res * tot[..., 0]
    return agent.sum(axis=1) / tot[..., 1].sum(axis=1)


def plot(data: dict[str, tuple[np.ndarray, np.ndarray]], out: Path) -> None:
    """One panel per scenario: median line, least-greatest band, each seed faint."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(data), figsize=(4.2 * len(data), 3.4), squeeze=False)
    for ax, (sc, (t, r)) in zip(axes[0], sorted(data.items()), strict=True):
        k = t / 1000
        for row in r:
            ax.plot(k, row, color="tab:blue", alpha=0.25, linewidth=0.8)
        ax.fill_between(k, r.min(axis=0), r.max(axis=0), color="tab:blue", alpha=0.15)
        ax.plot(k, np.median(r, axis=0), color="tab:blue", linewidth=2, label=f"median of {len(r)} seeds")
        ax.axhline(0.0, color="black", linewidth=0.8, linestyle="--", label="SRSF")
        ax.set_title(sc)
        ax.set_xlabel("training steps (thousands)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("greedy return relative to SRSF")
    axes[0][0].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--jct-ratio", action="store_true", help="also the JCT ratios to SRSF and the largest jump")
    args = p.parse_args()
    data = curves(args.runs)
    plot(data, args.out)
    for sc, (t, r) in sorted(data.items()):
        med = np.median(r, axis=0)
        print(sc, " ".join(f"{int(a) // 1000}k:{b:+.3f}" for a, b in zip(t, med, strict=True)))
    if args.jct_ratio:
        by: dict[str, list[np.ndarray]] = defaultdict(list)
        for run in args.runs:
            q = jct_ratios(run)
            by[json.loads((run / "meta.json").read_text())["config"]["scenarios"][0]].append(q)
            jump = np.maximum(q[1:] / q[:-1], q[:-1] / q[1:]).max()
            print(run.name, "JCT / SRSF's:", " ".join(f"{x:.2f}" for x in q), f"largest jump {jump:.2f}x")
        for sc, qs in sorted(by.items()):
            n = min(len(q) for q in qs)
            med = np.median(np.stack([q[:n] for q in qs]), axis=0)
            jump = np.maximum(med[1:] / med[:-1], med[:-1] / med[1:]).max()
            print(sc, f"median of {len(qs)} runs, JCT / SRSF's:", " ".join(f"{x:.2f}" for x in med),
                  f"largest jump {jump:.2f}x")


if __name__ == "__main__":
    main()
