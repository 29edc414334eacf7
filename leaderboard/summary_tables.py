"""Rendering leaderboard summaries: a ``rich`` table for the terminal, Markdown for the README and docs, CSV
and JSON for tools. Times are shown in hours, minutes or seconds (one unit per metric, chosen from the values);
a policy with truncated episodes is marked ``†`` and a note says how many."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from gpucluster_env.leaderboard.stats import Interval
from gpucluster_env.leaderboard.summary import PolicyRow, Summary

FORMATS = ("table", "md", "csv", "json")
TRUNCATED_NOTE = "† truncated episodes: their numbers cover only the jobs finished before the limit"


def seconds_unit(values: Any) -> tuple[str, float]:
    """(unit, seconds per unit) for showing times in seconds, from the largest finite value: hours from 3 h,
    minutes from 3 min, else seconds (the unit of every leaderboard table, partial or final)."""
    big = max((v for v in values if math.isfinite(v)), default=0.0)
    return ("h", 3600.0) if big >= 3 * 3600 else ("min", 60.0) if big >= 180 else ("s", 1.0)


def time_unit(summary: Summary) -> tuple[str, float]:
    """(unit, seconds per unit) for a metric in seconds, from the largest mean; ("", 1) for other metrics."""
    if not summary.metric.endswith("_s"):
        return "", 1.0
    return seconds_unit(r.mean for t in summary.scenarios for r in t.rows)


def _num(x: float, scale: float = 1.0, nd: int = 2) -> str:
    return "–" if not math.isfinite(x) else f"{x / scale:,.{nd}f}"


def _pct(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{100 * x:+.1f}%"


def _ci(ci: Interval, fmt: Any) -> str:
    lo, hi = ci
    return "–" if not (math.isfinite(lo) and math.isfinite(hi)) else f"[{fmt(lo)}, {fmt(hi)}]"


def _rank(r: float) -> str:
    return f"{r:g}"


def _cells(summary: Summary, row: PolicyRow) -> list[str]:
    unit, scale = time_unit(summary)
    num = (lambda x: _num(x, scale)) if unit else (lambda x: _num(x, 1.0, 3))
    ref = row.policy == summary.reference
    return [
        _rank(row.rank),
        row.policy + (" †" if row.truncated else ""),
        str(row.n),
        num(row.mean),
        num(row.iqm),
        _ci(row.ci, num),
        "ref" if ref else _pct(row.improvement),
        "" if ref else _ci(row.improvement_ci, _pct),
        "" if ref else _num(row.p_improvement),
        "" if ref else _ci(row.p_improvement_ci, lambda x: _num(x)),
    ]


def headers(summary: Summary) -> list[str]:
    """Column titles of a scenario table."""
    unit, _ = time_unit(summary)
    m = summary.metric + (f" ({unit})" if unit else "")
    return ["rank", "policy", "seeds", f"mean {m}", "IQM", "95% CI", f"vs {summary.reference}", "95% CI",
            f"P(better than {summary.reference})", "95% CI"]


def _overall_cells(o: Any) -> list[str]:
    def f(x: float) -> str:
        return _num(x, 1.0, 3)

    return [_rank(o.rank), o.policy, str(o.scenarios), f(o.iqm), _ci(o.iqm_ci, f), f(o.mean), _ci(o.mean_ci, f)]


OVERALL_HEADERS = ["rank", "policy", "scenarios", "IQM", "95% CI", "mean", "95% CI"]


def _notes(summary: Summary) -> list[str]:
    better = "lower" if summary.lower_is_better else "higher"
    notes = [f"{summary.metric}: {better} is better. Mean and interquartile mean (IQM) over seeds; 95% CIs by "
             f"percentile bootstrap over seeds (2,000 resamples, seeded); vs {summary.reference}: relative "
             f"improvement of the mean (positive: better), paired by seed; P(better): probability that a run "
             f"beats a run of {summary.reference} (rliable)."]
    if summary.common_options:
        notes.append(f"Every cell: {summary.common_options}.")
    if any(r.truncated for t in summary.scenarios for r in t.rows):
        notes.append(TRUNCATED_NOTE + ".")
    kinds = kinds_note(sorted({r.policy for t in summary.scenarios for r in t.rows}))
    if kinds:
        notes.append(kinds)
    notes += summary.notes
    if summary.versions:
        notes.append("Made with " + ", ".join(f"{pkg} {' / '.join(v)}" for pkg, v in summary.versions.items()
                                              if v != ["none"]) + ".")
    return notes


def kinds_note(labels: list[str]) -> str | None:
    """What each policy of a table is, where it is not a heuristic (``rl-scratch``: RL from scratch; ``lookahead``:
    search; ``rl:DIR``: a trained model), so a table never shows search or imitation as RL; None where every
    policy shown is a heuristic."""
    from gpucluster_env.policy import POLICY_KINDS, registered_policies

    known = registered_policies()
    parts = []
    for label in labels:
        name = label.split(" (", 1)[0]  # a label is the name, then its options in parentheses
        kind = ("trained model (rl:DIR: RL, or imitation + RL, as its meta.json says)" if name.startswith("rl:")
                else getattr(known.get(name), "kind", None))
        if kind is not None and kind != "heuristic":
            parts.append(f"{label}: {kind}")
    if not parts:
        return None
    return ("Kinds (" + "; ".join(parts) + "); every other policy is a heuristic. " +
            " ".join(f"{k}: {v}." for k, v in POLICY_KINDS.items() if any(p.endswith(": " + k) for p in parts)))


def _overall_note(summary: Summary) -> str:
    better = "below" if summary.lower_is_better else "above"
    return (f"Overall: each run's {summary.metric} over {summary.reference}'s mean on its scenario ({better} 1: "
            f"better than {summary.reference}); IQM over all runs of all scenarios (ranked by it) and mean over "
            "scenarios; 95% CIs by bootstrap stratified by scenario.")


def render_markdown(summaries: list[Summary]) -> str:
    """Markdown: one table per scenario and metric, then the overall score."""
    out: list[str] = []
    for s in summaries:
        for t in s.scenarios:
            out += [f"### {t.scenario} · {s.metric}\n", "| " + " | ".join(headers(s)) + " |",
                    "|" + "---|" * len(headers(s))]
            out += ["| " + " | ".join(_cells(s, r)) + " |" for r in t.rows]
            out += ["", f"Trace: {t.trace}.", ""]
        if len(s.scenarios) > 1 and s.overall:
            out += [f"### Overall · {s.metric} normalized by {s.reference}\n", "| " + " | ".join(OVERALL_HEADERS)
                    + " |", "|" + "---|" * len(OVERALL_HEADERS)]
            out += ["| " + " | ".join(_overall_cells(o)) + " |" for o in s.overall]
            out += ["", _overall_note(s), ""]
        out += [n + "\n" for n in _notes(s)]
    return "\n".join(out).rstrip() + "\n"


def render_csv(summaries: list[Summary]) -> str:
    """CSV: one row per (metric, scenario, policy), plus ``overall`` rows; raw numbers in SI units."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["metric", "scenario", "policy", "rank", "seeds", "mean", "iqm", "ci_low", "ci_high",
                "reference", "improvement", "improvement_ci_low", "improvement_ci_high", "p_improvement",
                "p_improvement_ci_low", "p_improvement_ci_high", "truncated"])

    def f(x: float) -> str:
        return "" if not math.isfinite(x) else repr(float(x))

    for s in summaries:
        for t in s.scenarios:
            for r in t.rows:
                w.writerow([s.metric, t.scenario, r.policy, _rank(r.rank), r.n, f(r.mean), f(r.iqm), f(r.ci[0]),
                            f(r.ci[1]), s.reference, f(r.improvement), f(r.improvement_ci[0]),
                            f(r.improvement_ci[1]), f(r.p_improvement), f(r.p_improvement_ci[0]),
                            f(r.p_improvement_ci[1]), r.truncated])
        for o in s.overall:
            w.writerow([s.metric, "overall", o.policy, _rank(o.rank), o.scenarios, f(o.mean), f(o.iqm),
                        f(o.iqm_ci[0]), f(o.iqm_ci[1]), s.reference, "", "", "", "", "", "", ""])
    return buf.getvalue()


def render_json(summaries: list[Summary]) -> str:
    """JSON: a list with one object per metric (strict JSON: NaN as null)."""
    return json.dumps([s.as_dict() for s in summaries], allow_nan=False)


def print_rich(summaries: list[Summary], console: Any) -> None:
    """``rich`` tables on ``console``, every number whole at its width (in parts when the columns do not fit
    side by side; :mod:`gpucluster_env.text_tables`)."""
    from gpucluster_env.text_tables import Col, print_table

    for s in summaries:
        hs = headers(s)
        cols = [Col(hs[0], key=True), Col(hs[1], "left", key=True), Col(hs[2]), Col(hs[3]), Col(hs[4]),
                Col(hs[5], glue=True), Col(hs[6]), Col(hs[7], glue=True), Col(hs[8]), Col(hs[9], glue=True)]
        for t in s.scenarios:
            print_table(console, f"{t.scenario} · {s.metric}", cols, [_cells(s, r) for r in t.rows],
                        caption=f"trace: {t.trace}")
        if len(s.scenarios) > 1 and s.overall:
            ocols = [Col(OVERALL_HEADERS[0], key=True), Col(OVERALL_HEADERS[1], "left", key=True),
                     Col(OVERALL_HEADERS[2]), Col(OVERALL_HEADERS[3]), Col(OVERALL_HEADERS[4], glue=True),
                     Col(OVERALL_HEADERS[5]), Col(OVERALL_HEADERS[6], glue=True)]
            print_table(console, f"overall · {s.metric} normalized by {s.reference}", ocols,
                        [_overall_cells(o) for o in s.overall], caption=_overall_note(s))
        for n in _notes(s):
            console.print(n, highlight=False)


def render(summaries: list[Summary], fmt: str) -> str:
    """Text of the summaries in ``fmt`` (``md``, ``csv`` or ``json``)."""
    if fmt == "md":
        return render_markdown(summaries)
    if fmt == "csv":
        return render_csv(summaries)
    if fmt == "json":
        return render_json(summaries) + "\n"
    raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
