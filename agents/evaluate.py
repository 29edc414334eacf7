"""Evaluation of a trained model against reference policies on held-out seeds, through the one runner
(:func:`gpucluster_env.leaderboard.runner.run_episode`), with confidence intervals.

Per scenario and policy: the mean of the metric over seeds with a 95% Student-t interval; per reference
policy: the paired relative difference of the model's metric to the reference's on the same seeds (same job
tables), mean and 95% interval, so ``-12% [-15%, -9%]`` reads "12% lower average JCT than the reference".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

HELD_OUT_SEEDS = tuple(range(100, 110))
"""Default evaluation seeds: training draws its episodes' trace seeds from the environments' generators
(seeded 0..n_envs-1) and its evaluation callback from 1,000,000 on; these ten are used for neither."""


def t_interval(x: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and two-sided Student-t interval of ``x`` (the mean twice when there is one value)."""
    x = np.asarray(x, dtype=float)
    m = float(x.mean())
    if len(x) < 2:
        return m, m, m
    from scipy import stats

    h = float(stats.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return m, m - h, m + h


def evaluate(model: str, scenarios: list[str], seeds: list[int], baselines: list[str],
             metric: str = "avg_jct_s", progress: Any = None) -> dict[str, Any]:
    """Run ``model`` (``rl:DIR`` or a registered name) and ``baselines`` on every scenario and seed; returns
    ``{"runs": [...], "summary": {scenario: {policy: {...}}}}``."""
    from ..baselines.base import make_policy
    from ..leaderboard.runner import run_episode

    runs: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    policies = [model, *baselines]
    for sc in scenarios:
        table: dict[str, np.ndarray] = {}
        for name in policies:
            vals = []
            for seed in seeds:
                r = run_episode(sc, make_policy(name), seed)
                r["policy"] = name
                runs.append(r)
                if r[metric] is None and not r["truncated"]:
                    raise ValueError(f"metric {metric!r} is undefined on {sc} (e.g. deadlines without deadlines)")
                vals.append(r[metric] if not r["truncated"] else math.inf)
                if progress is not None:
                    progress()
            table[name] = np.array(vals, dtype=float)
        rows: dict[str, Any] = {}
        for name, vals in table.items():
            m, lo, hi = t_interval(vals)
            rows[name] = {"mean": m, "ci95": [lo, hi], "values": vals.tolist()}
            if name != model:
                rel = table[model] / vals - 1.0
                rm, rlo, rhi = t_interval(rel)
                rows[name]["model_vs_this"] = {"mean": rm, "ci95": [rlo, rhi],
                                               "wins": int((table[model] < vals).sum())}
        summary[sc] = rows
    return {"metric": metric, "seeds": list(seeds), "model": model, "runs": runs, "summary": summary}
