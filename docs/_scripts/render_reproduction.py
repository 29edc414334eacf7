"""docs/results/reproduction.md, rendered from the results of the ``castor`` and ``sjf-bsbf`` boards: the reference
policies on the papers' scenarios beside the papers' tables (:mod:`.papers`), the orderings the papers report,
and a discussion whose every figure is computed from the records when the document is rendered.

    gpucluster leaderboard run castor --workers 2 --out leaderboard-results/castor
    gpucluster leaderboard run sjf-bsbf --workers 2 --out leaderboard-results/sjf-bsbf
    python docs/_scripts/render_reproduction.py leaderboard-results/castor leaderboard-results/sjf-bsbf [--commit REV]

The page begins with that command and the commit the records were made at (``rendered_by.py``; ``--commit`` where
the records name several commits or a modified tree).

Every cell is one :func:`~gpucluster_env.policy.run_episode` call (the same code path as
``gpucluster run --scenario S --policy P --seed N [--option k=v] --json``).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from castor_sizes import castor_size_section, contributions_by_size
from gpucluster_env.leaderboard.papers import LARGE_GPUS, PAPER, PAPER_SIZES, implied_large_share
from gpucluster_env.leaderboard.stats import improvement, improvement_ci, mean_ci
from rendered_by import RESULTS, command, header, records_commit

from gpucluster_env.atomic_write import write_bytes_atomic

POLICIES = ["fifo", "sjf", "ssf", "yarn-cs", "tiresias", "sjf-ffs", "lucid", "pollux", "castor", "castor-oracle"]
"""Rows of the main tables (a policy a board did not run on a setting shows as '–')."""
SWEEP_POLICIES = ["fifo", "sjf", "tiresias", "sjf-ffs", "castor"]
MAIN = [("castor-philly", {}), ("castor-venus", {}), ("sjfbsbf-philly", {}),
        ("sjfbsbf-philly", {"num_jobs": 480})]
SWEEP_SCENARIOS = ["castor-philly", "castor-venus", "sjfbsbf-philly"]
SWEEP_JOBS = [120, 240, 360, 480]
XI_VALUES = [1.0, 1.25, 1.5, 1.75, 2.0]
TIRESIAS_THRESHOLDS_H: list[float | None] = [1.0, 4.0, 16.0, 64.0, None]
"""Tiresias queue thresholds (GPU-hours; None: never demote) for the threshold sweep (16: Pollux's default)."""
BOARDS = ("castor", "sjf-bsbf")
"""The boards whose results this document is rendered from."""
OUT = Path(RESULTS) / "reproduction.md"
"""The page this script writes unless ``--out`` names another."""
RESTART_S = 30.0
"""Checkpoint-restart overhead charged to a preempted job in every cell (only Tiresias preempts)."""


def split_by_size(gpus: np.ndarray, jct: np.ndarray, queue: np.ndarray) -> dict[str, float]:
    """Average JCT and queueing (s) of large (more than :data:`LARGE_GPUS` GPUs) and small jobs, and the share
    of large jobs, from per-job arrays."""
    large = np.asarray(gpus) > LARGE_GPUS
    out = {"frac_large": float(large.mean())}
    for name, rows in (("large", large), ("small", ~large)):
        out[f"avg_jct_{name}_s"] = float(np.mean(jct[rows])) if rows.any() else float("nan")
        out[f"avg_queue_{name}_s"] = float(np.mean(queue[rows])) if rows.any() else float("nan")
    return out


def size_split(env: Any) -> dict[str, float]:
    """:func:`split_by_size` of a finished episode (``run_episode(..., extra=size_split)``)."""
    eng = env.unwrapped.engine
    jct = eng.finish_t - eng.submit
    return {**split_by_size(eng.req_gpus, jct, eng.queue_s), **contributions_by_size(eng.req_gpus, jct, eng.queue_s)}


def _opts_label(opts: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(opts.items()) if k != "restart_s")


def _popts_label(popts: dict[str, Any]) -> str:
    return ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(popts.items()))


def _tiresias_popts(hours: float | None) -> dict[str, Any]:
    return {"thresholds": [1e300 if hours is None else hours * 3600.0]}


def record_row(rec: dict[str, Any]) -> dict[str, Any]:
    """A leaderboard record as one row of the tables below: its metrics, the cell's labels (options without
    ``restart_s``, injected ``xi`` or None, policy options) and the per-size statistics of its jobs."""
    cell, jobs = rec["cell"], rec.get("per_job") or {}
    row = {k: (float("nan") if v is None else v) for k, v in rec["metrics"].items()}
    row.update(scenario=cell["scenario"], policy=cell["policy"], seed=cell["seed"], trace=rec.get("trace", ""),
               options=_opts_label(cell["scenario_options"]), xi=cell["env_options"].get("xi"),
               popts=_popts_label(cell["policy_options"]), wall_s=rec.get("wall_s") or 0.0,
               truncated=bool(rec.get("truncated")), git_revision=rec.get("git_revision", "unknown"))
    if jobs:
        nan = float("nan")
        gpus = np.asarray(jobs["gpus"])
        jct = np.array([nan if v is None else v for v in jobs["jct_s"]], float)
        queue = np.array([nan if v is None else v for v in jobs["queue_s"]], float)
        row.update(split_by_size(gpus, jct, queue))
        row.update(contributions_by_size(gpus, jct, queue))
    return row


def _agg(rows: Iterable[dict[str, Any]], key: str) -> float:
    v = [r[key] for r in rows
         if r.get(key) is not None and not (isinstance(r[key], float) and math.isnan(r[key]))]
    return statistics.fmean(v) if v else float("nan")


def _f(x: float, nd: int = 2) -> str:
    return "–" if x != x else f"{x:.{nd}f}"


def _rel(a: float, b: float) -> str:
    """Relative improvement of a over b (positive: a is lower / better)."""
    if not (a == a and b == b) or b == 0:
        return "–"
    return f"{100.0 * (b - a) / b:+.1f}%"


class Results:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def sel(
        self, scenario: str, policy: str, options: str = "", xi: float | None = None, popts: str = ""
    ) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["scenario"] == scenario and r["policy"] == policy
                and r["options"] == options and r["xi"] == xi and r.get("popts", "") == popts]

    def m(self, scenario: str, policy: str, key: str, options: str = "", xi: float | None = None,
          popts: str = "") -> float:
        return _agg(self.sel(scenario, policy, options, xi, popts), key)


def _table(
    res: Results, sc: str, opts: str, policies: list[str], paper: dict[str, tuple[float, float]] | None,
    ref: str = "castor",
) -> list[str]:
    lines = ["| policy | avg JCT (h) | 95% CI | queueing (h) | makespan (h) | colocations | preemptions | JCT vs "
             f"{ref} | paper JCT (h) | paper queueing (h) | paper JCT vs {ref} |", "|" + "---|" * 11]
    ref_jct = res.m(sc, ref, "avg_jct_s", opts)
    for p in policies:
        jct = res.m(sc, p, "avg_jct_s", opts)
        pp = (paper or {}).get(p)
        pref = (paper or {}).get(ref)
        lo, hi = mean_ci(np.array([r["avg_jct_s"] for r in res.sel(sc, p, opts)], float) / 3600)
        lines.append(
            f"| {p} | {_f(jct / 3600)} | {_f(lo)}–{_f(hi)} | {_f(res.m(sc, p, 'avg_queue_s', opts) / 3600)} | "
            f"{_f(res.m(sc, p, 'makespan_s', opts) / 3600)} | {_f(res.m(sc, p, 'colocations', opts), 1)} | "
            f"{_f(res.m(sc, p, 'preemptions', opts), 1)} | {_rel(ref_jct, jct)} | "
            f"{_f(pp[0]) if pp else '–'} | {_f(pp[1]) if pp else '–'} | "
            f"{_rel(pref[0], pp[0]) if pp and pref else '–'} |"
        )
    return lines


def _orderings(res: Results, sc: str, opts: str) -> list[str]:
    j = {p: v for p in POLICIES if (v := res.m(sc, p, "avg_jct_s", opts)) == v}
    checks = [
        ("FIFO worst (highest avg JCT)", all(j["fifo"] >= v - 1e-9 for v in j.values()), ""),
        ("Tiresias worse than SJF", j["tiresias"] > j["sjf"], _paired(res, sc, opts, "sjf", "tiresias")),
        ("SJF-FFS better than SJF", j["sjf-ffs"] < j["sjf"], _paired(res, sc, opts, "sjf-ffs", "sjf")),
        ("Castor better than SJF-FFS", j["castor"] < j["sjf-ffs"], _paired(res, sc, opts, "castor", "sjf-ffs")),
        ("Castor better than SJF", j["castor"] < j["sjf"], _paired(res, sc, opts, "castor", "sjf")),
    ]
    if sc.startswith("castor-") and "lucid" in j:  # castor Tables 5-6 (§9.4: 13.7% better on Venus)
        checks.append(("Castor better than Lucid", j["castor"] < j["lucid"], _paired(res, sc, opts, "castor", "lucid")))
    return [f"- {name}: **{'holds' if ok else 'does not hold'}**{note}" for name, ok, note in checks]


def _paired(res: Results, sc: str, opts: str, a: str, b: str) -> str:
    """How sure the ordering of ``a`` and ``b`` is: the 95% interval of ``a``'s average JCT improvement over
    ``b``'s, paired by seed (both ran the same job tables), and whether it excludes zero."""
    by_seed = [{r["seed"]: r["avg_jct_s"] for r in res.sel(sc, p, opts)} for p in (a, b)]
    seeds = sorted(set(by_seed[0]) & set(by_seed[1]))
    if len(seeds) < 2:
        return ""
    x, y = (np.array([d[s] for s in seeds], float) for d in by_seed)
    lo, hi = improvement_ci(x, y)
    sure = "excludes 0" if lo > 0 or hi < 0 else "includes 0: within the seed-to-seed noise"
    return f" ({a} vs {b}: {100 * improvement(x, y):+.1f}%, 95% CI {100 * lo:+.1f}% to {100 * hi:+.1f}%, {sure})"


def _workload_section(seeds: int) -> list[str]:
    """The job tables' statistics beside Pollux's published workloads (means over the seeds)."""
    from gpucluster_env.traces.pollux_workloads import (
        POLLUX_APP_SHARE,
        POLLUX_MEAN_ARRIVAL_S,
        POLLUX_REPLICAS,
        workload_stats,
    )

    from gpucluster_env.scenarios import get_scenario

    apps = sorted(POLLUX_APP_SHARE)
    tot = sum(sum(c.values()) for c in POLLUX_REPLICAS.values())
    mean_g = sum(g * c for r in POLLUX_REPLICAS.values() for g, c in r.items()) / tot
    gt4 = sum(c for r in POLLUX_REPLICAS.values() for g, c in r.items() if g > 4) / tot
    lines = ["## Workloads (Pollux's recipe, `gpucluster_env/traces/pollux_workloads.py`)\n",
             "| job table | annotate | " + " | ".join(apps) + " | mean GPUs | > 4 GPUs | mean arrival (h) | "
             "offered load |", "|" + "---|" * (len(apps) + 6)]
    lines.append("| Pollux workload-1..8 (1,280 jobs) | – | " + " | ".join(f"{POLLUX_APP_SHARE[x]:.0%}" for x in apps)
                 + f" | {mean_g:.1f} | {gt4:.0%} | {POLLUX_MEAN_ARRIVAL_S / 3600:.2f} | – |")
    for sc in ("castor-philly", "castor-venus", "sjfbsbf-philly"):
        s = get_scenario(sc)
        st, loads = [], []
        for seed in range(seeds):
            jobs, _ = s.build_jobs(seed)
            st.append(workload_stats(jobs))
            loads.append(_offered_load(s, jobs))
        m = {k: statistics.fmean(d[k] for d in st) for k in st[0]}
        lines.append(f"| {sc} (240 jobs) | {s.annotate} | " + " | ".join(f"{m['share_' + x]:.0%}" for x in apps)
                     + f" | {m['mean_gpus']:.1f} | {m['share_gt4_gpus']:.0%} | {m['mean_arrival_s'] / 3600:.2f} | "
                     f"{statistics.fmean(loads):.2f} |")
    lines += ["", "Offered load: the jobs' exclusive GPU-time on the scenario's GPUs (alone, packed on fewest nodes) "
              "divided by the cluster's GPU-time over the 8-hour arrival period.", ""]
    return lines


def _offered_load(sc: Any, jobs: Any) -> float:
    """Sum of GPUs x exclusive run time on the cluster's GPU type, over GPUs x 8 h."""
    from gpucluster_env.traces.annotate import reference_iter_time

    from gpucluster_env.catalog import default_catalog

    cat = default_catalog()
    gname = sc.cluster.nodes[0].gpu_type
    per_node = sc.cluster.num_gpus // max(1, len(sc.cluster.nodes))
    total = 0.0
    for m, g, it, b in zip(jobs["model"], jobs["num_gpus"], jobs["iterations"], jobs["batch_size"], strict=True):
        total += int(g) * it * reference_iter_time(cat, m, int(g), int(b), gname, per_node,
                                                   sc.cluster.inter_node_bw_gbps)
    return total / (sc.cluster.num_gpus * 8 * 3600.0)


def _sweep_opts(n: int) -> str:
    return "" if n == 240 else f"num_jobs={n}"


def _trace_name(note: str) -> str:
    """The first clause of a trace note (up to the first ';' outside parentheses), its data folder written as
    ``$DATA`` (the page is read on other machines)."""
    depth = 0
    for i, ch in enumerate(note):
        depth += (ch == "(") - (ch == ")")
        if ch == ";" and depth == 0:
            note = note[:i]
            break
    return re.sub(r"\((?:[^()]*/)?data/", "($DATA/", note)

def _size_section(res: Results) -> list[str]:
    """Large (more than 4 GPUs) versus small jobs on sjfbsbf-philly beside sjf-bsbf Tables III-IV."""
    out = ["## Large and small jobs (sjf-bsbf Tables III–IV: large = more than 4 GPUs)\n",
           "Average JCT and queueing (h) of each class, ours / paper.\n"]
    for ol, paper in PAPER_SIZES.items():
        ours_frac = res.m("sjfbsbf-philly", "fifo", "frac_large", ol)
        f = implied_large_share(paper, PAPER[("sjfbsbf-philly", ol)])
        out.append(f"### sjfbsbf-philly{' (' + ol + ')' if ol else ''}: large jobs are {100 * ours_frac:.0f}% of "
                   f"ours; the paper's columns imply {100 * f:.0f}%\n")
        out.append("| policy | large JCT | small JCT | large queueing | small queueing |")
        out.append("|---|---|---|---|---|")
        for p in ("fifo", "sjf", "tiresias", "sjf-ffs", "castor"):
            vals = [res.m("sjfbsbf-philly", p, k, ol) / 3600 for k in
                    ("avg_jct_large_s", "avg_jct_small_s", "avg_queue_large_s", "avg_queue_small_s")]
            out.append(f"| {p} | " + " | ".join(f"{_f(v)} / {_f(w)}" for v, w in zip(vals, paper[p], strict=True))
                       + " |")
        out.append("")
    out.append("The implied share solves All = f x Large + (1 - f) x Small over the paper's rows (least squares on "
               "JCT and queueing). Pollux's recipe, which both papers name, gives more than half of the jobs more "
               "than 4 GPUs (CIFAR-10, BERT and DeepSpeech2 jobs run on 6-16 GPUs in Pollux's workloads); the "
               "paper's own GPU counts are not published.\n")
    return out


def _tiresias_label(h: float | None) -> str:
    return "" if h == 16.0 else _popts_label(_tiresias_popts(h))


def _tiresias_section(res: Results) -> list[str]:
    """Tiresias' average JCT for each queue threshold beside SJF's (240 jobs)."""
    heads = [("∞" if h is None else f"{h:g}") + (" (default)" if h == 16.0 else "") for h in TIRESIAS_THRESHOLDS_H]
    out = ["## Tiresias' queue threshold (GPU-hours of attained service before demotion)\n",
           "Average JCT (h) / preemptions per episode, 240 jobs; `gpucluster run --policy tiresias "
           "--policy-option thresholds=[SECONDS]`. 16 GPU-hours is Pollux's Tiresias; ∞ never demotes (FIFO "
           "order, preempting later arrivals for earlier ones).\n",
           "| scenario | sjf | " + " | ".join(heads) + " |", "|---|---|" + "---|" * len(heads)]
    for sc in SWEEP_SCENARIOS:
        cellsv = [f"{_f(res.m(sc, 'tiresias', 'avg_jct_s', popts=_tiresias_label(h)) / 3600)} / "
                  f"{_f(res.m(sc, 'tiresias', 'preemptions', popts=_tiresias_label(h)), 0)}"
                  for h in TIRESIAS_THRESHOLDS_H]
        out.append(f"| {sc} | {_f(res.m(sc, 'sjf', 'avg_jct_s') / 3600)} | " + " | ".join(cellsv) + " |")
    out.append("")
    return out


def render(res: Results, seeds: int, wall_s: float, head: str = "") -> str:
    out: list[str] = []
    a = out.append
    a("# Reproduction: Castor / SJF-BSBF and baselines on the papers' scenarios\n")
    if head:  # rendered_by.header: the command and the records' commit
        a(head + "\n")
    a("Rendered by `python docs/_scripts/render_reproduction.py leaderboard-results/castor "
      "leaderboard-results/sjf-bsbf` from the results of `gpucluster leaderboard run castor` and "
      f"`gpucluster leaderboard run sjf-bsbf` ({seeds} seeds per cell, {len(res.rows)} episodes, "
      f"{wall_s:.0f} s of episode time; boards in `leaderboard/boards/`, confidence intervals with "
      "`gpucluster leaderboard show DIR`). Each cell is one `run_episode` call, "
      "i.e. `gpucluster run --scenario S --policy P --seed N [--option k=v] [--policy-option k=v] "
      "--option restart_s=30 --json`; "
      "numbers are means over seeds 0.."
      f"{seeds - 1}, with the 95% bootstrap interval of the mean (`leaderboard/stats.py`). Times in hours. "
      "\"JCT vs castor\" is castor's relative improvement over the row "
      "(positive: castor lower). Every cell charges preempted jobs a 30 s restart "
      "(only Tiresias preempts).\n")
    traces = sorted({_trace_name(r["trace"]) for r in res.rows})
    a("Traces used: " + "; ".join(traces) + ".\n")
    cut = [r for r in res.rows if r.get("truncated")]
    a(f"Truncated episodes: {len(cut)}" + (" (their numbers cover only the jobs finished before the limit: "
      + ", ".join(sorted({f"{r['scenario']} {r['policy']} seed {r['seed']}" for r in cut})) + ")" if cut else "")
      + ".\n")
    out.extend(_workload_section(seeds))
    a("## Paper settings (castor Tables 5–6, sjf-bsbf Tables III–IV)\n")
    a("Where a scenario's setting departs from, or had to be read into, a paper's stated setup, and what each "
      "change moved: `docs/departures.md` (e.g. `sjfbsbf-philly`'s 10 Gbps server links, sjf-bsbf §VI-A).\n")
    for sc, opts in MAIN:
        ol = _opts_label(opts)
        a(f"### {sc}{' (' + ol + ')' if ol else ''}\n")
        out.extend(_table(res, sc, ol, POLICIES, PAPER.get((sc, ol))))
        a("")
        out.extend(_orderings(res, sc, ol))
        a("")
    out.extend(castor_size_section(res, _f))
    out.extend(_size_section(res))
    out.extend(_tiresias_section(res))
    a("## Load sweep (castor §9.5, sjf-bsbf Fig. 6(a)): 0.5×–2× jobs (120–480) from the same period\n")
    a("More jobs sampled from the same 8 hours, i.e. a higher arrival rate (as Pollux Fig. 8b).\n")
    for sc in SWEEP_SCENARIOS:
        a(f"### {sc}: average JCT (h) / queueing (h)\n")
        a("| policy | " + " | ".join(f"{n} jobs" for n in SWEEP_JOBS) + " |")
        a("|---|" + "---|" * len(SWEEP_JOBS))
        for p in SWEEP_POLICIES:
            cellsv = [f"{_f(res.m(sc, p, 'avg_jct_s', _sweep_opts(n)) / 3600)} / "
                      f"{_f(res.m(sc, p, 'avg_queue_s', _sweep_opts(n)) / 3600)}" for n in SWEEP_JOBS]
            a(f"| {p} | " + " | ".join(cellsv) + " |")
        for ref in ("sjf-ffs", "sjf"):
            gaps = [_rel(res.m(sc, "castor", "avg_jct_s", _sweep_opts(n)), res.m(sc, ref, "avg_jct_s", _sweep_opts(n)))
                    for n in SWEEP_JOBS]
            a(f"| castor vs {ref} | {' | '.join(gaps)} |")
        a("")
    a("## Sharing benefit per Castor decision (castor §9.2 eq. 24, computed by the engine with true rates)\n")
    a("| scenario | policy | decisions / episode | mean benefit | median benefit | share > 1 |")
    a("|---|---|---|---|---|---|")
    for sc in ("castor-philly", "castor-venus", "sjfbsbf-philly"):
        for p in ("sjf-ffs", "castor", "castor-oracle", "castor-timeslice"):
            rows = res.sel(sc, p, "")
            if not rows:
                continue
            a(f"| {sc} | {p} | {_f(_agg(rows, 'sb_decisions'), 1)} | "
              f"{_f(_agg(rows, 'sharing_benefit'))} | {_f(_agg(rows, 'sb_median'))} | "
              f"{_f(100 * _agg(rows, 'sb_frac_gt1'), 0)}% |")
    a("")
    a("## Predictor versus oracle, MPS versus time-slicing (castor §9.5)\n")
    a("`castor-timeslice` declares the time-slicing world itself (`Policy.env_kwargs`), so the cell is plain "
      "`gpucluster run --policy castor-timeslice`.\n")
    a("| scenario | castor JCT (h) | castor-oracle JCT (h) | castor-timeslice JCT (h) | "
      "castor queue (h) | timeslice queue (h) |")
    a("|---|---|---|---|---|---|")
    for sc in ("castor-philly", "castor-venus"):
        a(f"| {sc} | {_f(res.m(sc, 'castor', 'avg_jct_s') / 3600)} | "
          f"{_f(res.m(sc, 'castor-oracle', 'avg_jct_s') / 3600)} | "
          f"{_f(res.m(sc, 'castor-timeslice', 'avg_jct_s') / 3600)} | "
          f"{_f(res.m(sc, 'castor', 'avg_queue_s') / 3600)} | "
          f"{_f(res.m(sc, 'castor-timeslice', 'avg_queue_s') / 3600)} |")
    a("")
    a("## ξ injection (sjf-bsbf Fig. 6(b)): a fixed ξ for every pair, sjfbsbf-philly (240 jobs)\n")
    a("The paper: SJF-BSBF equals SJF-FFS at ξ≈1 and is 8–13% better at ξ = 1.5–2.0. "
      "`castor` decides with the XGBoost predictor (which does not know ξ was injected); "
      "`castor-oracle` with the injected ξ.\n")
    a("| ξ | sjf-ffs JCT (h) | castor JCT (h) | castor-oracle JCT (h) | castor vs ffs | oracle vs ffs |")
    a("|---|---|---|---|---|---|")
    for xi in XI_VALUES:
        f_ = res.m("sjfbsbf-philly", "sjf-ffs", "avg_jct_s", "", xi)
        c_ = res.m("sjfbsbf-philly", "castor", "avg_jct_s", "", xi)
        o_ = res.m("sjfbsbf-philly", "castor-oracle", "avg_jct_s", "", xi)
        a(f"| {xi} | {_f(f_ / 3600)} | {_f(c_ / 3600)} | {_f(o_ / 3600)} | {_rel(c_, f_)} | {_rel(o_, f_)} |")
    a("")
    return "\n".join(out) + "\n"


def _pct(a: float, b: float) -> float:
    """Relative improvement of a over b in percent (positive: a lower)."""
    return 100.0 * (b - a) / b if (a == a and b == b and b) else float("nan")


def _load_stats(sc_name: str, seeds: int, opts: dict[str, Any] | None = None) -> tuple[float, dict[str, float]]:
    """Mean offered load over the seeds and each application's share of the jobs' exclusive GPU-time."""
    from gpucluster_env.scenarios import get_scenario

    sc = get_scenario(sc_name, **(opts or {}))
    loads, share_sum = [], dict.fromkeys(POLLUX_APPS, 0.0)
    for seed in range(seeds):
        jobs, _ = sc.build_jobs(seed)
        loads.append(_offered_load(sc, jobs))
        tot = _offered_load(sc, jobs)
        for app in POLLUX_APPS:
            sub = jobs[jobs["model"] == app]
            share_sum[app] += (_offered_load(sc, sub) / tot) if len(sub) and tot else 0.0
    return statistics.fmean(loads), {a: v / seeds for a, v in share_sum.items()}


POLLUX_APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")


def _pair_throughput(sc_name: str, seeds: int) -> tuple[float, float, float]:
    """Median and 10th/90th percentiles of the true combined pair throughput ``1/xi_a + 1/xi_b`` on the
    scenario's GPU, over (tenant, newcomer) model pairs: the tenant weighted by its model's share of the jobs'
    GPU-time (what holds the GPUs), the newcomer by its model's share of the jobs (what arrives)."""
    from gpucluster_env.catalog import default_catalog
    from gpucluster_env.scenarios import get_scenario

    cat = default_catalog()
    sc = get_scenario(sc_name)
    gpu = sc.cluster.nodes[0].gpu_type
    held: dict[str, float] = {}
    arrive: dict[str, float] = {}
    for seed in range(seeds):
        jobs, _ = sc.build_jobs(seed)
        gt = jobs["duration_s"].to_numpy(float) * jobs["num_gpus"].to_numpy(float)
        for m, g in zip(jobs["model"], gt, strict=True):
            held[str(m)] = held.get(str(m), 0.0) + float(g)
            arrive[str(m)] = arrive.get(str(m), 0.0) + 1.0
    vals, wts = [], []
    for a_, ca in held.items():
        for b_, cb in arrive.items():
            xa, xb = cat.interference.pair_xi(cat.model(a_), cat.model(b_), gpu)
            vals.append(1.0 / xa + 1.0 / xb)
            wts.append(ca * cb)
    order = np.argsort(vals)
    v, w = np.asarray(vals)[order], np.cumsum(np.asarray(wts)[order])
    w /= w[-1]
    q = [float(v[min(int(np.searchsorted(w, x)), len(v) - 1)]) for x in (0.5, 0.1, 0.9)]
    return q[0], q[1], q[2]


def _demotion_stats(sc_name: str, seeds: int, threshold_gpu_s: float) -> tuple[float, float]:
    """Mean share of the jobs whose exclusive GPU-time (GPUs x solo run time on the scenario's cluster) exceeds
    ``threshold_gpu_s``, and their share of the GPU-time."""
    from gpucluster_env.engine.build import make_engine
    from gpucluster_env.scenarios import get_scenario

    sc = get_scenario(sc_name)
    fr, sh = [], []
    for seed in range(seeds):
        eng = make_engine(sc, seed)
        gt = eng.solo_time * eng.req_gpus
        big = gt > threshold_gpu_s
        fr.append(float(big.mean()))
        sh.append(float(gt[big].sum() / gt.sum()) if gt.sum() > 0 else 0.0)
    return statistics.fmean(fr), statistics.fmean(sh)


def load_rows(dirs: list[str]) -> list[dict[str, Any]]:
    """The rows of every current record in the results folders ``dirs`` (records made under another spec or
    version are left out and reported on stderr, as ``leaderboard show`` does)."""
    from gpucluster_env.leaderboard.execute import load_current

    records, notes = load_current(dirs)
    for n in notes:
        print(f"reproduce: note: {n}", file=sys.stderr)
    return [record_row(r) for r in records]


def missing_settings(rows: list[dict[str, Any]]) -> list[str]:
    """The (scenario x policy) pairs of the :data:`BOARDS` that no row covers (the document needs them all),
    as ``scenario x policy``."""
    from gpucluster_env.leaderboard.board import load_board

    have = {(r["scenario"], r["policy"]) for r in rows}
    missing: dict[tuple[str, str], str] = {}
    for name in BOARDS:
        for c in load_board(name).cells:
            if (c.scenario, c.policy) not in have:
                missing.setdefault((c.scenario, c.policy), f"{c.scenario} x {c.policy}")
    return list(missing.values())


def partial_results_message(rows: list[dict[str, Any]], dirs: list[str], error: BaseException) -> str:
    """One line saying that ``dirs`` hold only part of what the document needs, what is missing and how to
    complete it (``error``: what stopped the rendering, named when no missing setting explains it)."""
    missing = missing_settings(rows)
    where = ", ".join(dirs)
    how = ("complete them with `gpucluster leaderboard run castor --out DIR` and `gpucluster leaderboard run "
           "sjf-bsbf --out DIR` (done cells are skipped)")
    if missing:
        shown = "; ".join(missing[:4]) + (f"; and {len(missing) - 4} more" if len(missing) > 4 else "")
        return f"{where}: partial results, {len(missing)} scenario x policy pair(s) of the castor and sjf-bsbf " \
               f"boards have no record ({shown}); {how}"
    return f"{where}: partial results, the document needs a result that is missing ({type(error).__name__}: " \
           f"{error}); {how}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", help="results folders of the castor and sjf-bsbf boards")
    ap.add_argument("--out", default=str(OUT), help=f"the page to write (default {OUT})")
    ap.add_argument("--before", default=None,
                    help="an engine snapshot to compare with (default: docs/_scripts/snapshots/engine_v1.json "
                         "when present; 'none' leaves the comparison out)")
    ap.add_argument("--commit", help="the commit of the page's first line (default: the one the records were made at, "
                                     "where they all name one clean commit)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        rows = load_rows(args.results)
    except (OSError, ValueError) as e:  # a folder that is not there, a file that is not a results folder
        print(f"reproduce: error: {e}", file=sys.stderr)
        return 2
    if not rows:
        ap.error("no records in " + ", ".join(args.results))
    try:
        head = header(command("render_reproduction.py", sys.argv[1:] if argv is None else argv),
                      records_commit(rows, args.commit))
    except ValueError as e:
        print(f"reproduce: error: {e}", file=sys.stderr)
        return 2
    seeds = len({r["seed"] for r in rows})
    res = Results(rows)
    try:
        text = render(res, seeds, sum(r["wall_s"] for r in rows), head)
        from reproduction_discussion import discussion

        text += "\n" + "\n".join(discussion(res)) + "\n"
    except (KeyError, IndexError, ValueError, statistics.StatisticsError) as e:
        print(f"reproduce: error: {partial_results_message(rows, args.results, e)}", file=sys.stderr)
        return 2
    from engine_change import DEFAULT_SNAPSHOT, ENGINE_CHANGES, load_snapshot, render_change

    before = args.before or (str(DEFAULT_SNAPSHOT) if DEFAULT_SNAPSHOT.exists() else "none")
    if before != "none":
        try:
            snap = load_snapshot(before)
        except ValueError as e:
            ap.error(str(e))
        text += "\n" + "\n".join(render_change(snap, res, ENGINE_CHANGES)) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(args.out, text.encode())
    print(f"wrote {args.out} ({len(rows)} episodes, {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
