"""Regenerate docs/reproduction.md: the reference policies on the castor / sjf-bsbf scenarios,.

Every cell is one :func:`~gpucluster_env.leaderboard.runner.run_episode` call (the same code path as
``gpucluster run --scenario S --policy P --seed N [--option k=v] --json``); cells run in parallel processes.

    python -m gpucluster_env.leaderboard.reproduce [--seeds 5] [--procs 2] [--out docs/reproduction.md]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

POLICIES = ["fifo", "sjf", "ssf", "yarn-cs", "tiresias", "sjf-ffs", "castor", "castor-oracle"]
SWEEP_POLICIES = ["fifo", "sjf", "tiresias", "sjf-ffs", "castor"]
MAIN = [("castor-philly", {}), ("castor-venus", {}), ("sjfbsbf-philly", {}),
        ("sjfbsbf-philly", {"num_jobs": 480})]
STRESS_LOAD = 4.0
XI_VALUES = [1.0, 1.25, 1.5, 1.75, 2.0]
RESTART_S = 30.0
"""Checkpoint-restart overhead charged to a preempted job in every cell (only Tiresias preempts)."""

# Papers' (avg JCT, queueing) in hours: castor Tables 5 (Philly) and 6 (Venus); sjf-bsbf Tables III, IV.
PAPER = {
    ("castor-philly", ""): {"fifo": (2.64, 1.86), "sjf": (1.88, 1.09), "tiresias": (2.57, 1.75),
                            "castor": (1.54, 0.41)},
    ("castor-venus", ""): {"fifo": (4.73, 3.51), "sjf": (3.35, 2.14), "tiresias": (3.94, 2.68),
                           "castor": (2.89, 0.93)},
    ("sjfbsbf-philly", ""): {"fifo": (2.34, 1.65), "sjf": (1.25, 0.56), "tiresias": (1.51, 0.81),
                             "sjf-ffs": (1.23, 0.18), "castor": (1.01, 0.14)},
    ("sjfbsbf-philly", "num_jobs=480"): {"fifo": (7.52, 0.73), "sjf": (2.55, 1.87), "tiresias": (5.09, 4.41),
                                         "sjf-ffs": (1.89, 0.73), "castor": (1.57, 0.69)},
}


def _opts_label(opts: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(opts.items()) if k != "restart_s")


def run_cell(cell: tuple[str, str, int, dict[str, Any], float | None]) -> dict[str, Any]:
    """One episode. ``xi`` (or None) injects a constant interference ratio into the world (sjf-bsbf
    Fig. 6(b)); policy ``castor-timeslice`` runs on the time-slicing world (castor §9.5)."""
    from gpucluster_env.baselines import make_policy
    from gpucluster_env.baselines.timeslice import timeslice_catalog
    from gpucluster_env.leaderboard.runner import run_episode

    from gpucluster_env.catalog import default_catalog
    from gpucluster_env.interference import ConstantInterference

    scenario, policy, seed, opts, xi = cell
    env_kwargs: dict[str, Any] = {}
    if xi is not None:
        env_kwargs["catalog"] = default_catalog().with_interference(ConstantInterference(xi))
    if policy == "castor-timeslice":
        env_kwargs["catalog"] = timeslice_catalog()
    pol = make_policy(policy)
    r = run_episode(scenario, pol, seed, scenario_options={"restart_s": RESTART_S, **opts},
                    env_kwargs=env_kwargs)
    eng = getattr(pol, "engine", None)
    if eng is not None and eng.sharing_benefits:
        b = [s / c for _, s, c in eng.sharing_benefits if c > 0]
        r["sb_median"] = statistics.median(b)
        r["sb_frac_gt1"] = sum(x > 1.0 for x in b) / len(b)
        r["sb_decisions"] = len(b)
    r["options"] = _opts_label(opts)
    r["xi"] = xi
    return r


def cells(seeds: int, stress_seeds: int = 2) -> list[tuple[str, str, int, dict[str, Any], float | None]]:
    """Paper settings and the load sweep over ``seeds`` seeds; the contended (load x4) cells and the
    xi injection under contention, where Castor's candidate search is slow, over ``stress_seeds``."""
    out: list[tuple[str, str, int, dict[str, Any], float | None]] = []
    for sc, opts in MAIN:
        out += [(sc, p, s, opts, None) for p in POLICIES for s in range(seeds)]
    for sc in ("castor-philly", "castor-venus", "sjfbsbf-philly"):
        out += [(sc, p, s, {"load": STRESS_LOAD}, None) for p in POLICIES for s in range(stress_seeds)]
    for sc in ("castor-philly", "castor-venus"):
        for f in (0.5, 1.5, 2.0):
            out += [(sc, p, s, {"num_jobs": int(240 * f)}, None)
                    for p in SWEEP_POLICIES for s in range(seeds)]
        out += [(sc, "castor-timeslice", s, {}, None) for s in range(seeds)]
        out += [(sc, "castor-timeslice", s, {"load": STRESS_LOAD}, None) for s in range(stress_seeds)]
    for xi in XI_VALUES:
        out += [("sjfbsbf-philly", p, s, {}, xi) for p in ("sjf-ffs", "castor", "castor-oracle")
                for s in range(seeds)]
        if xi in (1.0, 1.5, 2.0):
            out += [("sjfbsbf-philly", p, s, {"load": STRESS_LOAD}, xi)
                    for p in ("sjf-ffs", "castor", "castor-oracle") for s in range(stress_seeds)]
    return out


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
        self, scenario: str, policy: str, options: str = "", xi: float | None = None
    ) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["scenario"] == scenario and r["policy"] == policy
                and r["options"] == options and r["xi"] == xi]

    def m(self, scenario: str, policy: str, key: str, options: str = "", xi: float | None = None) -> float:
        return _agg(self.sel(scenario, policy, options, xi), key)


def _table(
    res: Results, sc: str, opts: str, policies: list[str], paper: dict[str, tuple[float, float]] | None,
    ref: str = "castor",
) -> list[str]:
    lines = ["| policy | avg JCT (h) | queueing (h) | makespan (h) | colocations | preemptions | JCT vs "
             f"{ref} | paper JCT (h) | paper queueing (h) | paper JCT vs {ref} |", "|" + "---|" * 10]
    ref_jct = res.m(sc, ref, "avg_jct_s", opts)
    for p in policies:
        jct = res.m(sc, p, "avg_jct_s", opts)
        pp = (paper or {}).get(p)
        pref = (paper or {}).get(ref)
        lines.append(
            f"| {p} | {_f(jct / 3600)} | {_f(res.m(sc, p, 'avg_queue_s', opts) / 3600)} | "
            f"{_f(res.m(sc, p, 'makespan_s', opts) / 3600)} | {_f(res.m(sc, p, 'colocations', opts), 1)} | "
            f"{_f(res.m(sc, p, 'preemptions', opts), 1)} | {_rel(ref_jct, jct)} | "
            f"{_f(pp[0]) if pp else '–'} | {_f(pp[1]) if pp else '–'} | "
            f"{_rel(pref[0], pp[0]) if pp and pref else '–'} |"
        )
    return lines


def _orderings(res: Results, sc: str, opts: str) -> list[str]:
    j = {p: res.m(sc, p, "avg_jct_s", opts) for p in POLICIES}
    checks = [
        ("FIFO worst (highest avg JCT)", all(j["fifo"] >= v - 1e-9 for v in j.values())),
        ("Tiresias worse than SJF", j["tiresias"] > j["sjf"]),
        ("SJF-FFS better than SJF", j["sjf-ffs"] < j["sjf"]),
        ("Castor better than SJF-FFS", j["castor"] < j["sjf-ffs"]),
        ("Castor better than SJF", j["castor"] < j["sjf"]),
    ]
    return [f"- {name}: **{'holds' if ok else 'does not hold'}**" for name, ok in checks]


def render(res: Results, seeds: int, wall_s: float) -> str:
    out: list[str] = []
    a = out.append
    a("# Reproduction: Castor / SJF-BSBF and baselines on the papers' scenarios\n")
    a("Generated by `python -m gpucluster_env.leaderboard.reproduce` "
      f"({seeds} seeds per cell, {len(res.rows)} episodes, {wall_s:.0f} s). "
      "Each cell is one `run_episode` call, "
      "i.e. `gpucluster run --scenario S --policy P --seed N [--option k=v] --option restart_s=30 --json`; "
      "numbers are means over seeds 0.."
      f"{seeds - 1}. Times in hours. \"JCT vs castor\" is castor's relative improvement over the row "
      "(positive: castor lower). Every cell charges preempted jobs a 30 s restart "
      "(only Tiresias preempts).\n")
    traces = sorted({r["trace"].split(";")[0] for r in res.rows})
    a("Traces used: " + "; ".join(traces) + ".\n")
    a("## Paper settings (castor Tables 5–6, sjf-bsbf Tables III–IV)\n")
    for sc, opts in MAIN:
        ol = _opts_label(opts)
        a(f"### {sc}{' (' + ol + ')' if ol else ''}\n")
        out.extend(_table(res, sc, ol, POLICIES, PAPER.get((sc, ol))))
        a("")
        out.extend(_orderings(res, sc, ol))
        a("")
    a(f"## Contended arrivals (load={STRESS_LOAD}: arrival times divided by {STRESS_LOAD}; "
      "seeds 0..stress_seeds-1)\n")
    a("Not a paper setting: it compresses the same sampled jobs in time so that queues form, which is the "
      "regime the papers' tables describe (see the discussion below).\n")
    for sc in ("castor-philly", "castor-venus", "sjfbsbf-philly"):
        ol = f"load={STRESS_LOAD}"
        a(f"### {sc} ({ol})\n")
        out.extend(_table(res, sc, ol, POLICIES, None))
        a("")
        out.extend(_orderings(res, sc, ol))
        a("")
    a("## Load sweep (castor §9.5, Fig. 16): 0.5×–2× jobs (120–480) from the busiest period\n")
    for sc in ("castor-philly", "castor-venus"):
        a(f"### {sc}: average JCT (h) / queueing (h)\n")
        a("| policy | 120 jobs | 240 jobs | 360 jobs | 480 jobs |")
        a("|---|---|---|---|---|")
        for p in SWEEP_POLICIES:
            cellsv = []
            for f in (0.5, 1.0, 1.5, 2.0):
                ol = "" if f == 1.0 else f"num_jobs={int(240 * f)}"
                cellsv.append(f"{_f(res.m(sc, p, 'avg_jct_s', ol) / 3600)} / "
                              f"{_f(res.m(sc, p, 'avg_queue_s', ol) / 3600)}")
            a(f"| {p} | " + " | ".join(cellsv) + " |")
        gaps = []
        for f in (0.5, 1.0, 1.5, 2.0):
            ol = "" if f == 1.0 else f"num_jobs={int(240 * f)}"
            gaps.append(_rel(res.m(sc, "castor", "avg_jct_s", ol), res.m(sc, "sjf-ffs", "avg_jct_s", ol)))
        a(f"| castor vs sjf-ffs | {' | '.join(gaps)} |")
        a("")
    a("## Sharing benefit per Castor decision (castor §9.2 eq. 24, computed by the engine with true rates)\n")
    a("| scenario | options | policy | decisions / episode | mean benefit | median benefit | share > 1 |")
    a("|---|---|---|---|---|---|---|")
    for sc in ("castor-philly", "castor-venus", "sjfbsbf-philly"):
        for ol in ("", f"load={STRESS_LOAD}"):
            for p in ("sjf-ffs", "castor", "castor-oracle", "castor-timeslice"):
                rows = res.sel(sc, p, ol)
                if not rows:
                    continue
                a(f"| {sc} | {ol or 'paper'} | {p} | {_f(_agg(rows, 'sb_decisions'), 1)} | "
                  f"{_f(_agg(rows, 'sharing_benefit'))} | {_f(_agg(rows, 'sb_median'))} | "
                  f"{_f(100 * _agg(rows, 'sb_frac_gt1'), 0)}% |")
    a("")
    a("## Predictor versus oracle, MPS versus time-slicing (castor §9.5)\n")
    a("| scenario | options | castor JCT (h) | castor-oracle JCT (h) | castor-timeslice JCT (h) | "
      "castor queue (h) | timeslice queue (h) |")
    a("|---|---|---|---|---|---|---|")
    for sc in ("castor-philly", "castor-venus"):
        for ol in ("", f"load={STRESS_LOAD}"):
            a(f"| {sc} | {ol or 'paper'} | {_f(res.m(sc, 'castor', 'avg_jct_s', ol) / 3600)} | "
              f"{_f(res.m(sc, 'castor-oracle', 'avg_jct_s', ol) / 3600)} | "
              f"{_f(res.m(sc, 'castor-timeslice', 'avg_jct_s', ol) / 3600)} | "
              f"{_f(res.m(sc, 'castor', 'avg_queue_s', ol) / 3600)} | "
              f"{_f(res.m(sc, 'castor-timeslice', 'avg_queue_s', ol) / 3600)} |")
    a("")
    a("## ξ injection (sjf-bsbf Fig. 6(b)): a fixed ξ for every pair, sjfbsbf-philly\n")
    a("The paper: SJF-BSBF equals SJF-FFS at ξ≈1 and is 8–13% better at ξ = 1.5–2.0. "
      "`castor` decides with the XGBoost predictor (which does not know ξ was injected); "
      "`castor-oracle` with the injected ξ.\n")
    for ol in ("", f"load={STRESS_LOAD}"):
        a(f"### {ol or 'paper setting (240 jobs)'}\n")
        a("| ξ | sjf-ffs JCT (h) | castor JCT (h) | castor-oracle JCT (h) | castor vs ffs | oracle vs ffs |")
        a("|---|---|---|---|---|---|")
        for xi in XI_VALUES:
            f_ = res.m("sjfbsbf-philly", "sjf-ffs", "avg_jct_s", ol, xi)
            c_ = res.m("sjfbsbf-philly", "castor", "avg_jct_s", ol, xi)
            o_ = res.m("sjfbsbf-philly", "castor-oracle", "avg_jct_s", ol, xi)
            a(f"| {xi} | {_f(f_ / 3600)} | {_f(c_ / 3600)} | {_f(o_ / 3600)} | {_rel(c_, f_)} | "
              f"{_rel(o_, f_)} |")
        a("")
    return "\n".join(out) + "\n"


DISCUSSION = """## Discussion: what matches the papers, what does not, and why

- **Philly-based paper settings carry no contention here.** castor-philly and sjfbsbf-philly (240 jobs) show
  zero average queueing for every policy, so all policies produce the same schedule and every relative
  difference is 0, where the papers report 0.1-1.9 h of queueing and 20-60% gaps (castor Table 5, sjf-bsbf
  Table III). This is a property of the sampled job tables (the busiest-window sampler spreads 240 Philly
  jobs over hours on 64-128 GPUs), not of the policies; the 0.5x-2x sweep on castor-philly stays uncontended
  for the same reason.
- **castor-venus reproduces the paper's ordering among FIFO, SJF, SJF-FFS and Castor** (FIFO worst; SJF-FFS
  better than SJF; Castor better than SJF-FFS, also at load x4), but not Tiresias: our Tiresias beats SJF.
  Our Tiresias pays only a 30 s restart per preemption and LAS suits the heavy-tailed synthetic Venus
  durations; the papers attribute Tiresias' long queueing to migration costs we do not model beyond that
  restart. FIFO's magnitude (22 h vs the paper's 4.7 h) differs by more than half because one long head-of-
  line job blocks a 240-job synthetic trace.
- **sjfbsbf-philly with 480 jobs and at load x4**: Castor beats SJF-FFS (the paper's 17% gap appears as 25%
  at 480 jobs and 11% at load x4), but greedy SJF-FFS is *worse* than exclusive SJF and Castor does not beat
  SJF. The catalog's measured interference on RTX 2080 Ti is high (predicted xi of 1.7-3.3 for most Pollux
  pairs), so sharing rarely pays; the papers' simulator evidently had milder ratios. Castor's Theorem-1 test
  is also myopic (it compares sharing with waiting for that partner only).
- **Predictor versus oracle.** castor and castor-oracle are within 1% on castor-venus and within 6% on
  sjfbsbf-philly; the XGBoost predictor errs most on pairs such as ncf+deepspeech2 (predicted 3.2/1.7, true
  1.04/1.02 on A6000).
- **xi injection (sjf-bsbf Fig. 6(b))** can only be read at load x4 (the paper setting is uncontended).
  There the oracle is 7.6% better than SJF-FFS at xi = 1.0 (the paper: equal), 1.4% at 1.5 and 3.8% at 2.0
  (the paper: 8-13%), from 2 seeds only. It does not match the
  paper; I have not diagnosed why (candidate: at xi = 1 Castor ranks partners by pair JCT while FFS
  takes the lowest-index GPU, so the two still place jobs differently).
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--stress-seeds", type=int, default=2)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--out", default="docs/reproduction.md")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    todo = cells(args.seeds, args.stress_seeds)
    with ProcessPoolExecutor(max_workers=args.procs) as ex:
        rows = list(ex.map(run_cell, todo, chunksize=1))
    text = render(Results(rows), args.seeds, time.perf_counter() - t0)
    text += "\n" + DISCUSSION
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(f"wrote {args.out} ({len(rows)} episodes, {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
