"""Statistics over seeds, after rliable (Agarwal et al., "Deep RL at the Edge of the Statistical Precipice",
NeurIPS 2021), computed with numpy and ``scipy.stats.bootstrap`` (rliable itself is archived).

- Interquartile mean (IQM): the mean of the middle 50% of the runs (``scipy.stats.trim_mean(x, 0.25)``).
- 95% stratified bootstrap confidence intervals, percentile method: each stratum (a scenario's seeds) is
  resampled with replacement on its own; with one stratum it is the ordinary bootstrap over seeds.
- Probability of improvement ``P(X > Y)``: per scenario the chance that a run of X is better than a run of Y
  (ties count one half; the Mann-Whitney U statistic over ``n x m``), averaged over scenarios.
- Improvement over a reference: ``1 - mean(X) / mean(ref)`` for a metric where lower is better (``mean(X) /
  mean(ref) - 1`` where higher is), paired over seeds when both ran the same seeds (a seed fixes the job trace,
  so the pair shares it), with its own bootstrap interval.
- Normalized score: each run divided by the reference's mean on its scenario (so the reference's runs average
  exactly 1 on every scenario; for a lower-is-better metric a score below 1 is better), aggregated over all runs
  of all scenarios by the mean and by IQM, with bootstrap intervals stratified by scenario.

Every bootstrap uses its own generator seeded with :data:`BOOTSTRAP_SEED`: the same records give the same
intervals. No global random state is touched.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats as sps

from gpucluster_env.engine.metric_specs import METRICS, higher_is_better

CONFIDENCE = 0.95
N_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
HIGHER_IS_BETTER = frozenset(n for n, m in METRICS.items() if m.higher_is_better)
"""Metrics where a higher value is better (their declaration in :mod:`gpucluster_env.engine.metric_specs`); for
every other metric (times, slowdown, counts, a policy's own counts) lower is better."""

Interval = tuple[float, float]
NAN_INTERVAL: Interval = (float("nan"), float("nan"))


def lower_is_better(metric: str) -> bool:
    """Whether a lower value of ``metric`` is better (its declaration; undeclared: lower)."""
    return not higher_is_better(metric)


def iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean along ``axis``: the mean after cutting 25% of the values from each end."""
    return sps.trim_mean(x, 0.25, axis=axis)


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def bootstrap_ci(
    samples: Sequence[np.ndarray],
    statistic: Callable[..., np.ndarray],
    paired: bool = False,
    seed: int = BOOTSTRAP_SEED,
) -> Interval:
    """Percentile bootstrap interval of ``statistic(*samples, axis=-1)`` at :data:`CONFIDENCE`; each sample is
    resampled on its own (stratified), or all together with ``paired``. NaN where a sample has fewer than two
    values."""
    arrays = tuple(np.asarray(s, dtype=float) for s in samples)
    if any(a.size < 2 for a in arrays):
        return NAN_INTERVAL
    with np.errstate(divide="ignore", invalid="ignore"):  # a resample with a zero mean: inf, shown as "–"
        res = sps.bootstrap(arrays, statistic, n_resamples=N_RESAMPLES, confidence_level=CONFIDENCE,
                            method="percentile", paired=paired, vectorized=True, axis=-1,
                            rng=np.random.default_rng(seed))
    ci = res.confidence_interval
    return float(ci.low), float(ci.high)


def mean_ci(x: np.ndarray) -> Interval:
    """95% bootstrap interval of the mean over seeds."""
    return bootstrap_ci((x,), _mean)


def improvement(x: np.ndarray, ref: np.ndarray, lower_better: bool = True) -> float:
    """Relative improvement of the mean of ``x`` over the mean of ``ref`` (positive: ``x`` is better)."""
    return float(_improvement(np.asarray(ref, float), np.asarray(x, float), lower_better=lower_better))


def _improvement(ref: np.ndarray, x: np.ndarray, axis: int = -1, lower_better: bool = True) -> np.ndarray:
    ratio = np.mean(x, axis=axis) / np.mean(ref, axis=axis)
    return 1.0 - ratio if lower_better else ratio - 1.0


def improvement_ci(x: np.ndarray, ref: np.ndarray, lower_better: bool = True, paired: bool = True) -> Interval:
    """Bootstrap interval of :func:`improvement`; ``paired`` resamples seeds jointly (``x[i]`` and ``ref[i]``
    ran the same seed), else each side on its own."""
    def stat(r: np.ndarray, v: np.ndarray, axis: int = -1) -> np.ndarray:
        return _improvement(r, v, axis, lower_better)

    return bootstrap_ci((ref, x), stat, paired=paired)


def mean_improvement(xs: Sequence[np.ndarray], refs: Sequence[np.ndarray], lower_better: bool = True) -> float:
    """The mean over settings of :func:`improvement` (``xs[k]`` over ``refs[k]``): how a paper averages a
    speed-up over its workload mixes; with one setting it is :func:`improvement`."""
    return float(np.mean([improvement(x, r, lower_better) for x, r in zip(xs, refs, strict=True)]))


def mean_improvement_ci(xs: Sequence[np.ndarray], refs: Sequence[np.ndarray], lower_better: bool = True) -> Interval:
    """Paired bootstrap interval of :func:`mean_improvement`: every array holds one value per seed, in one seed
    order, and a resample draws the same seeds in all of them; with one setting it is :func:`improvement_ci`."""
    k = len(xs)

    def stat(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean([_improvement(samples[i], samples[k + i], axis, lower_better) for i in range(k)], axis=0)

    with warnings.catch_warnings():  # seeds that repeat one another (fixed mixes): a zero-width interval, said so
        warnings.simplefilter("ignore", sps.DegenerateDataWarning)
        return bootstrap_ci(tuple(refs) + tuple(xs), stat, paired=True)


def _p_better(x: np.ndarray, y: np.ndarray, axis: int = -1, lower_better: bool = True) -> np.ndarray:
    xa, ya = np.moveaxis(x, axis, -1)[..., :, None], np.moveaxis(y, axis, -1)[..., None, :]
    wins = (xa < ya) if lower_better else (xa > ya)
    return np.mean(wins + 0.5 * (xa == ya), axis=(-2, -1))


def prob_improvement(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], lower_better: bool = True) -> float:
    """``P(X > Y)``: over scenarios (``xs[k]``, ``ys[k]`` are the runs of X and Y on scenario k), the mean of
    the chance that a run of X beats a run of Y, ties counting one half."""
    return float(np.mean([_p_better(np.asarray(x, float), np.asarray(y, float), lower_better=lower_better)
                          for x, y in zip(xs, ys, strict=True)]))


def prob_improvement_ci(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], lower_better: bool = True) -> Interval:
    """Stratified bootstrap interval of :func:`prob_improvement` (each scenario's runs of X and of Y resampled
    on their own)."""
    k = len(xs)

    def stat(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean([_p_better(samples[i], samples[k + i], axis, lower_better) for i in range(k)], axis=0)

    return bootstrap_ci(tuple(xs) + tuple(ys), stat)


def normalized(x: np.ndarray, ref_mean: float) -> np.ndarray:
    """Runs as multiples of the reference's mean on their scenario."""
    return np.asarray(x, float) / ref_mean


def _pooled_iqm(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    return iqm(np.concatenate(samples, axis=axis), axis=axis)


def _scenario_mean(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean([np.mean(s, axis=axis) for s in samples], axis=0)


def aggregate_iqm(per_scenario: Sequence[np.ndarray]) -> float:
    """IQM of the runs of all scenarios pooled (rliable's aggregate IQM)."""
    return float(_pooled_iqm(*[np.asarray(s, float) for s in per_scenario]))


def aggregate_iqm_ci(per_scenario: Sequence[np.ndarray]) -> Interval:
    """Bootstrap interval of :func:`aggregate_iqm`, stratified by scenario."""
    return bootstrap_ci(tuple(per_scenario), _pooled_iqm)


def aggregate_mean(per_scenario: Sequence[np.ndarray]) -> float:
    """Mean over scenarios of each scenario's mean (every scenario weighs the same)."""
    return float(_scenario_mean(*[np.asarray(s, float) for s in per_scenario]))


def aggregate_mean_ci(per_scenario: Sequence[np.ndarray]) -> Interval:
    """Bootstrap interval of :func:`aggregate_mean`, stratified by scenario."""
    return bootstrap_ci(tuple(per_scenario), _scenario_mean)


def ranks(values: Sequence[float], lower_better: bool = True) -> list[float]:
    """Rank of each value (1 = best; ties share their average rank; NaN ranks last)."""
    v = np.asarray(values, float)
    key = np.where(np.isnan(v), np.inf, v if lower_better else -v)
    return [float(r) for r in sps.rankdata(key, method="average")]
