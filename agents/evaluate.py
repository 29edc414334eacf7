"""Evaluation of a trained model against reference policies on held-out seeds, through the one runner
(:func:`gpucluster_env.policy.run_episode`), with confidence intervals.

Per scenario and policy: the mean of the metric over seeds with a 95% Student-t interval; per reference
policy: the paired relative difference of the model's metric to the reference's on the same seeds (same job
tables), mean and 95% interval, so ``-12% [-15%, -9%]`` reads "12% lower average JCT than the reference".

A truncated episode (stopped at a limit, or stalled) has no value of the metric: it is left out of the means
and the pairs and listed by seed with the limit that stopped it. An interval needs at least
:data:`MIN_SEEDS_FOR_INTERVAL` values; with fewer, ``ci95`` is None and ``ci_note`` says why.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpucluster_env.task_pool import TaskFailed, in_order, run_tasks

HELD_OUT_SEEDS = tuple(range(100, 110))
"""Default evaluation seeds: training draws its episodes' trace seeds from the environments' generators
(seeded 0..n_envs-1) and its evaluation callback from 1,000,000 on; these ten are used for neither."""


MIN_SEEDS_FOR_INTERVAL = 5
"""Fewest values a 95% interval is computed from: with 2 seeds Student's t is 12.7 and the interval of a JCT
runs below zero; from 5 (t = 2.78) it says something."""


def t_interval(x: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and two-sided Student-t interval of ``x`` (the mean twice when there is one value)."""
    x = np.asarray(x, dtype=float)
    m = float(x.mean())
    if len(x) < 2:
        return m, m, m
    from scipy import stats

    h = float(stats.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return m, m - h, m + h


def _episode(item: tuple[str, str, int]) -> dict[str, Any]:
    """One evaluation episode: policy ``name`` on scenario ``sc`` with ``seed``, through the one runner."""
    from gpucluster_env.policy import make_policy, run_episode

    sc, name, seed = item
    r = run_episode(sc, make_policy(name), seed)
    r["policy"] = name
    return r


def evaluate(model: str, scenarios: list[str], seeds: list[int], baselines: list[str],
             metric: str = "avg_jct_s", progress: Any = None, lower_is_better: bool = True, workers: int = 1,
             backend: str = "local", address: str | None = None) -> dict[str, Any]:
    """Run ``model`` (``rl:DIR`` or a registered name) and ``baselines`` on every scenario and seed; returns
    ``{"runs": [...], "summary": {scenario: {policy: {...}}}}`` (``lower_is_better``: how a seed's win is
    counted). The episodes are independent tasks (:func:`gpucluster_env.task_pool.run_tasks`: ``workers``
    local processes or Ray tasks); the result does not depend on where they ran."""
    policies = [model, *baselines]
    items = [(sc, name, seed) for sc in scenarios for name in policies for seed in seeds]
    try:
        runs = in_order(run_tasks(_episode, items, workers, backend, address), len(items),
                        None if progress is None else lambda _i, _r: progress())
    except TaskFailed as e:
        raise e.cause from None  # the episode's own error (one line where it is the user's input)
    by_item = dict(zip(items, runs, strict=True))
    summary: dict[str, Any] = {}
    for sc in scenarios:
        table: dict[str, np.ndarray] = {}
        causes: dict[str, dict[int, str]] = {}
        for name in policies:
            vals = []
            causes[name] = {}
            for seed in seeds:
                r = by_item[(sc, name, seed)]
                if r[metric] is None and not r["truncated"]:
                    raise ValueError(f"metric {metric!r} is undefined on {sc} (e.g. deadlines without deadlines)")
                if r["truncated"]:
                    causes[name][seed] = r.get("truncated_by", "a limit")
                vals.append(math.nan if r["truncated"] else float(r[metric]))
            table[name] = np.array(vals, dtype=float)
        rows: dict[str, Any] = {}
        for name, vals in table.items():
            rows[name] = _row(vals, seeds, causes[name])
            if name != model:
                rows[name]["model_vs_this"] = _paired(table[model], vals, lower_is_better)
        summary[sc] = rows
    return {"metric": metric, "seeds": list(seeds), "model": model, "runs": runs, "summary": summary}


def _interval(x: np.ndarray) -> tuple[float | None, list[float] | None, str | None]:
    """Mean, 95% interval and a note on a missing interval, of the finite values of ``x``."""
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return None, None, "no finished episode"
    m, lo, hi = t_interval(x)
    if len(x) < MIN_SEEDS_FOR_INTERVAL:
        return m, None, f"{len(x)} finished seed(s): an interval needs at least {MIN_SEEDS_FOR_INTERVAL}"
    return m, [lo, hi], None


def _row(vals: np.ndarray, seeds: list[int], causes: dict[int, str]) -> dict[str, Any]:
    """One policy's summary: mean, interval (or why none), values (None where truncated), truncations."""
    m, ci, note = _interval(vals)
    return {"mean": m, "ci95": ci, "ci_note": note, "finished_seeds": int(np.isfinite(vals).sum()),
            "values": [float(v) if math.isfinite(v) else None for v in vals],
            "truncated": [{"seed": s, "cause": c} for s, c in causes.items()]}


def _paired(model: np.ndarray, ref: np.ndarray, lower_is_better: bool = True) -> dict[str, Any]:
    """The model's relative difference to a reference over the seeds both finished: mean, interval (or why
    none), wins (seeds where the model's value is better) and the number of pairs."""
    both = np.isfinite(model) & np.isfinite(ref) & (ref > 0)
    rel = model[both] / ref[both] - 1.0
    m, ci, note = _interval(rel)
    better = (model[both] < ref[both]) if lower_is_better else (model[both] > ref[both])
    return {"mean": m, "ci95": ci, "ci_note": note, "wins": int(better.sum()),
            "paired_seeds": int(both.sum())}
