"""docs/img/rl-table-curves.png: the learning curves of ``gpucluster rl-table`` results, one panel per scenario.

    .venv/bin/python docs/_scripts/rl_table_curves.py docs/results/rl-table/tiny.json ... [--out PNG]

Each algorithm: the median over training seeds of the greedy validation score (average JCT over SRSF's on the
same job tables, the curve seeds of the run; lower is better) at each checkpoint, with the spread (lowest to
highest training seed) shaded; the fixed policies' held-out scores as dashed lines; SRSF at 1.
"""

from __future__ import annotations

import argparse
import json
import math
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP = 1.8
"""The top of the score axis; an algorithm above it says so in the legend with its final score."""


def draw(files: list[Path], out: Path) -> Path:
    """One panel per rl-table JSON file, written to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(files), figsize=(5.2 * len(files), 4.2), squeeze=False)
    for ax, f in zip(axes[0], files, strict=True):
        d = json.loads(f.read_text())
        for name, a in d["algos"].items():
            xs = [p["timesteps"] / 1000 for p in a["curve"]]
            per = np.array([[v if v is not None and math.isfinite(v) else np.nan for v in p["per_seed"]]
                            for p in a["curve"]], dtype=float)
            if np.isnan(per).all():
                continue
            with warnings.catch_warnings():  # a checkpoint where no seed finished an episode: a gap
                warnings.simplefilter("ignore", RuntimeWarning)
                med, lo, hi = np.nanmedian(per, axis=1), np.nanmin(per, axis=1), np.nanmax(per, axis=1)
            final = a.get("mean")
            above = f", above the scale: final {final:.2f}" if final is not None and final > TOP else ""
            line, = ax.plot(xs, med, marker="o", ms=3, label=f"{name} ({per.shape[1]} seeds{above})")
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.15)
        for name, p in d["policies"].items():
            if p.get("mean") is not None and name != "random" and p["mean"] > TOP:
                ax.annotate(f"{name} {p['mean']:.2f} (above the scale)", (1.0, TOP), xycoords=("axes fraction", "data"),
                            fontsize=8, color="grey", va="top", ha="right")
            elif p.get("mean") is not None and name != "random":
                ax.axhline(p["mean"], ls="--", lw=1, color="grey")
                ax.annotate(f"{name} {p['mean']:.2f}", (1.0, p["mean"]), xycoords=("axes fraction", "data"),
                            fontsize=8, color="grey", va="bottom", ha="right")
        ax.axhline(1.0, color="black", lw=1)
        ax.annotate("srsf 1.00", (1.0, 1.0), xycoords=("axes fraction", "data"), fontsize=8, va="top", ha="right")
        ax.set_title(f"{d['config']['scenario']} · greedy score vs SRSF (lower is better)", fontsize=10)
        ax.set_xlabel("training steps (thousands)")
        ax.set_ylim(0.8, TOP)
        ax.legend(fontsize=7, loc="upper left")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "rl-table-curves.png")
    a = p.parse_args()
    print(draw(a.files, a.out))
