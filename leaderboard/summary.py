"""From records to the leaderboard's numbers: per scenario, each policy's mean, IQM, interval, rank, improvement
over the reference and probability of improvement; across scenarios, a normalized score (see :mod:`.stats`).

Labels leave out the options every record shares (e.g. ``restart_s=30`` on a whole board), so rows read
``sjfbsbf-philly (num_jobs=480)`` and ``tiresias (thresholds=[3600.0])``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from gpucluster_env.leaderboard import stats
from gpucluster_env.leaderboard.board import Cell
from gpucluster_env.leaderboard.cell_options import canonical, options_label


@dataclass
class PolicyRow:
    """One policy on one scenario for one metric."""

    policy: str
    n: int
    mean: float
    iqm: float
    ci: stats.Interval
    rank: float
    improvement: float
    improvement_ci: stats.Interval
    p_improvement: float
    p_improvement_ci: stats.Interval
    truncated: int
    seeds: list[int] = field(default_factory=list)


@dataclass
class ScenarioTable:
    """Every policy on one scenario (with options) for one metric, best first."""

    scenario: str
    rows: list[PolicyRow]
    trace: str


@dataclass
class OverallRow:
    """A policy's normalized score over the scenarios it ran: each run over the reference's mean on its scenario,
    averaged over scenarios (``mean``) and IQM over all runs (``iqm``), with scenario-stratified intervals;
    ranked by IQM."""

    policy: str
    scenarios: int
    mean: float
    mean_ci: stats.Interval
    iqm: float
    iqm_ci: stats.Interval
    rank: float


@dataclass
class Summary:
    """The leaderboard for one metric."""

    metric: str
    reference: str
    lower_is_better: bool
    common_options: str
    scenarios: list[ScenarioTable]
    overall: list[OverallRow]
    versions: dict[str, list[str]] = field(default_factory=dict)
    """Each package's versions among the records (``python``, ``numpy``, ...; ``none``: not installed)."""
    notes: list[str] = field(default_factory=list)
    """What is not counted and why: records without a value of the metric, scenarios left out of the overall
    score (their reference's mean is 0, so no run can be expressed as a multiple of it)."""

    def as_dict(self) -> dict[str, Any]:
        """Plain data (``--format json``); NaN as None."""
        return _clean(asdict(self))


def _clean(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_clean(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _without_trace(c: Cell) -> str:
    opts = {k: v for k, v in c.labelled_options.items() if k != "trace_id"}
    return f"{c.scenario} {canonical(opts)}"


def labelled(records: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], str]:
    """Each record's (scenario label, policy label) without the options shared by every record, and those
    shared options as a label. The trace is one of the options (``trace_id="synthetic"``) wherever a scenario
    ran on more than one trace, so records of two traces are never one row."""
    cells = [Cell.from_dict(r["cell"]) for r in records]
    # the trace is named only where it tells rows apart: a scenario (with its options) run on one trace only
    # keeps its plain label, so `--scenarios gimbal-philly` selects it; on two traces each row names its own
    traces: dict[str, set[str | None]] = {}
    for c in cells:
        traces.setdefault(_without_trace(c), set()).add(c.trace)
    shown = [c.labelled_options if len(traces[_without_trace(c)]) > 1
             else {k: v for k, v in c.labelled_options.items() if k != "trace_id"} for c in cells]
    pairs = [{f"{k}={canonical(v)}" for k, v in c.labelled_options.items()} for c in cells]
    common = set.intersection(*pairs) if pairs else set()  # said once, for every row (the trace too)
    out = []
    for c, o in zip(cells, shown, strict=True):
        opts = {k: v for k, v in o.items() if f"{k}={canonical(v)}" not in common}
        lab = options_label(opts)
        out.append((f"{c.scenario} ({lab})" if lab else c.scenario, c.policy_label))
    return out, ",".join(sorted(common))


def check_reference(records: list[dict[str, Any]], reference: str, where: str) -> None:
    """``reference`` must be a policy label of ``records`` (a name alone where that policy ran without options),
    or a one-line ``ValueError`` naming the labels it could mean; comparing with a policy that has no row would
    leave every improvement and the overall score empty without a word."""
    labels = {p for _, p in labelled(records)[0]}
    if reference in labels:
        return
    variants = sorted(p for p in labels if p.split(" (")[0] == reference)
    if variants:
        raise ValueError(f"reference policy {reference!r} ran only with options in {where}; name one by its label, "
                         f"e.g. {variants[0]!r}")
    raise ValueError(f"reference policy {reference!r} has no records in {where}")


def metric_value(record: dict[str, Any], metric: str) -> float:
    """A record's value of ``metric`` (NaN where absent or null)."""
    v = record["metrics"].get(metric)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else float("nan")


def summarize(records: list[dict[str, Any]], metric: str, reference: str = "fifo") -> Summary:
    """The leaderboard of ``records`` for ``metric`` with ``reference`` as the policy compared against."""
    lower = stats.lower_is_better(metric)
    labels, common = labelled(records)
    groups: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for rec, (sl, pl) in zip(records, labels, strict=True):
        groups.setdefault(sl, {}).setdefault(pl, []).append(rec)
    if records and not any(metric in r["metrics"] for r in records):
        raise ValueError(f"no record has metric {metric!r}; e.g.: {', '.join(sorted(records[0]['metrics'])[:12])}")
    tables: list[ScenarioTable] = []
    norm: dict[str, list[np.ndarray]] = {}
    notes: list[str] = []
    for sl in sorted(groups):
        pols = groups[sl]
        series = {p: _series(rs, metric) for p, rs in pols.items()}
        ref = series.get(reference)
        if ref is None or not len(ref[1]):
            notes.append(f"{sl}: no {metric} of {reference} here, so no improvement over it and no overall score "
                         "are computed on this scenario.")
        elif float(np.mean(ref[1])) == 0.0:
            notes.append(f"{sl}: {reference}'s mean {metric} is 0, so no improvement over it and no overall score "
                         "are computed on this scenario.")
            ref = None
        rows = []
        for p, (seeds, vals) in series.items():
            rows.append(_row(p, seeds, vals, ref, lower, sum(bool(r.get("truncated")) for r in pols[p])))
            if len(vals) < len(pols[p]):
                notes.append(f"{sl} · {p}: {len(pols[p]) - len(vals)} of {len(pols[p])} record(s) have no "
                             f"{metric} (undefined in their episode, e.g. no job finished) and are not counted.")
            if ref is not None and len(vals) and len(ref[1]):
                norm.setdefault(p, []).append(stats.normalized(vals, float(np.mean(ref[1]))))
        for row, rk in zip(rows, stats.ranks([r.mean for r in rows], lower), strict=True):
            row.rank = rk
        rows.sort(key=lambda r: (r.rank, r.policy))
        traces = sorted({r.get("trace", "") for rs in pols.values() for r in rs})
        tables.append(ScenarioTable(sl, rows, "; ".join(traces)))
    overall = [OverallRow(p, len(v), stats.aggregate_mean(v), stats.aggregate_mean_ci(v), stats.aggregate_iqm(v),
                          stats.aggregate_iqm_ci(v), 0.0) for p, v in norm.items()]
    for row, rk in zip(overall, stats.ranks([o.iqm for o in overall], lower), strict=True):
        row.rank = rk
    overall.sort(key=lambda r: (r.rank, r.policy))
    return Summary(metric, reference, lower, common, tables, overall, record_versions(records), notes)


def record_versions(records: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The versions of each package the records were made with (several where they differ)."""
    seen: dict[str, set[str]] = {}
    for r in records:
        for pkg, v in (r.get("versions") or {}).items():
            seen.setdefault(pkg, set()).add(str(v) if v is not None else "none")
    return {pkg: sorted(v) for pkg, v in seen.items()}


def _series(recs: list[dict[str, Any]], metric: str) -> tuple[list[int], np.ndarray]:
    pairs = sorted((int(r["cell"]["seed"]), metric_value(r, metric)) for r in recs)
    pairs = [(s, v) for s, v in pairs if math.isfinite(v)]
    return [s for s, _ in pairs], np.array([v for _, v in pairs], dtype=float)


def _row(policy: str, seeds: list[int], vals: np.ndarray, ref: tuple[list[int], np.ndarray] | None, lower: bool,
         truncated: int) -> PolicyRow:
    nan = float("nan")
    mean = float(np.mean(vals)) if len(vals) else nan
    value_iqm = float(stats.iqm(vals)) if len(vals) else nan
    impr, impr_ci, p, p_ci = nan, stats.NAN_INTERVAL, nan, stats.NAN_INTERVAL
    if ref is not None and len(vals) and len(ref[1]):
        ref_seeds, ref_vals = ref
        impr = stats.improvement(vals, ref_vals, lower)
        impr_ci = stats.improvement_ci(vals, ref_vals, lower, paired=seeds == ref_seeds)
        p = stats.prob_improvement([vals], [ref_vals], lower)
        p_ci = stats.prob_improvement_ci([vals], [ref_vals], lower)
    return PolicyRow(policy, len(vals), mean, value_iqm, stats.mean_ci(vals), 0.0, impr, impr_ci, p, p_ci,
                     truncated, seeds)
