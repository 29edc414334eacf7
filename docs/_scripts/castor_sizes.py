"""Large (more than 8 GPUs) and small jobs beside castor Tables 5-6 (castor §9.4), for docs/results/reproduction.md.

Castor's Large and Small columns add up to its All Jobs column (``leaderboard/papers.py``, ``CASTOR_SIZES``):
each is a class's total JCT (or queueing) over *all* jobs, its share of the all-jobs average. Ours are computed
the same way from each episode's per-job results, so the two columns of a row add up to its average JCT."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gpucluster_env.leaderboard.papers import CASTOR_LARGE_GPUS, CASTOR_SIZES

CASTOR_SIZE_POLICIES = ("fifo", "sjf", "tiresias", "lucid", "castor")
"""The rows of castor Tables 5-6 this project runs (Pollux is not one of its policies)."""


def contributions_by_size(gpus: np.ndarray, jct: np.ndarray, queue: np.ndarray) -> dict[str, float]:
    """Each class's total JCT and queueing (s) over all jobs (large: more than :data:`CASTOR_LARGE_GPUS` GPUs),
    as castor Tables 5-6 split them, and the share of large jobs; jobs without a time (unfinished) count as 0."""
    large = np.asarray(gpus) > CASTOR_LARGE_GPUS
    n = max(len(large), 1)
    out = {"frac_large8": float(large.mean()) if len(large) else float("nan")}
    for name, rows in (("large8", large), ("small8", ~large)):
        out[f"jct_{name}_s"] = float(np.nansum(np.asarray(jct, float)[rows])) / n
        out[f"queue_{name}_s"] = float(np.nansum(np.asarray(queue, float)[rows])) / n
    return out


def castor_size_section(res: Any, fmt: Callable[[float], str]) -> list[str]:
    """Markdown: per castor scenario, each policy's large / small shares of average JCT and queueing, ours /
    the paper's (``res.m(scenario, policy, key)``: the mean over seeds of a row key)."""
    out = ["## Large and small jobs (castor Tables 5–6: large = more than 8 GPUs)\n",
           "Each class's share of the average JCT and queueing (h): its jobs' total over all jobs, so large + "
           "small = the row's average, as in Castor's tables (whose columns add up to *All Jobs*). Ours / "
           "paper.\n"]
    keys = ("jct_large8_s", "jct_small8_s", "queue_large8_s", "queue_small8_s")
    for sc, paper in CASTOR_SIZES.items():
        frac = res.m(sc, "fifo", "frac_large8")
        share = f"{100 * frac:.0f}%" if frac == frac else "–"
        out.append(f"### {sc}: {share} of our jobs ask for more than {CASTOR_LARGE_GPUS} GPUs\n")
        out.append("| policy | large JCT | small JCT | large queueing | small queueing |")
        out.append("|---|---|---|---|---|")
        for p in CASTOR_SIZE_POLICIES:
            ours = [res.m(sc, p, k) / 3600 for k in keys]
            out.append(f"| {p} | " + " | ".join(f"{fmt(v)} / {fmt(w)}" for v, w in zip(ours, paper[p], strict=True))
                       + " |")
        out.append("")
    return out
