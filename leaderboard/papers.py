"""The papers' published tables that the leaderboard's results stand beside (castor Tables 5-6, sjf-bsbf Tables
III-IV), in hours, and what they imply. The numbers are read from ``leaderboard/claims.toml`` (the one place a
published number is written: its claims read the same tables)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpucluster_env.leaderboard.cell_options import options_label
from gpucluster_env.leaderboard.claims import Table, load_claims

LARGE_GPUS = 4
"""sjf-bsbf §VI-C: jobs asking for more than 4 GPUs are large, the others small."""
SHARED_OPTIONS = ("restart_s",)
"""Scenario options every paper board shares (a checkpoint-restart charge), left out of the labels below as the
leaderboard's tables leave them out."""


def _label(t: Table) -> tuple[str, str]:
    s = load_claims().settings[t.setting]
    return s.scenario, options_label({k: v for k, v in s.scenario_options.items() if k not in SHARED_OPTIONS})


def _tables(cols: tuple[str, ...], key: Callable[[Table], Any]) -> dict[Any, dict[str, tuple[float, ...]]]:
    """Every published table (hours) holding the columns ``cols``, by ``key(table)``: policy -> the values."""
    return {key(t): {p: tuple(t.value(p, c) for c in cols) for p in t.rows}
            for t in load_claims().tables.values() if t.unit == "h" and set(cols) <= set(t.columns)}


PAPER = _tables(("avg_jct_s", "avg_queue_s"), _label)
"""Papers' (avg JCT, queueing) in hours per (scenario, options label) and policy: castor Tables 5 (Philly) and 6
(Venus), sjf-bsbf Tables III (240 jobs) and IV (``num_jobs=480``); SJF-BSBF is ``castor``, Pollux ``pollux``."""
PAPER_SIZES = _tables(("avg_jct_s large", "avg_jct_s small", "avg_queue_s large", "avg_queue_s small"),
                      lambda t: _label(t)[1])
"""sjf-bsbf Tables III (``""``) and IV (``"num_jobs=480"``) by job size, large = more than :data:`LARGE_GPUS`
GPUs: policy -> (avg JCT large, avg JCT small, avg queueing large, avg queueing small), hours."""


def implied_large_share(paper: dict[str, tuple[float, ...]], all_jobs: dict[str, tuple[float, float]]) -> float:
    """The share f of large jobs a paper's table implies, from All = f x Large + (1 - f) x Small over its rows
    (least squares on average JCT and queueing)."""
    num = den = 0.0
    for p, (jl, js, ql, qs) in paper.items():
        if p not in all_jobs:
            continue
        for tot, lg, sm in ((all_jobs[p][0], jl, js), (all_jobs[p][1], ql, qs)):
            num += (tot - sm) * (lg - sm)
            den += (lg - sm) ** 2
    return num / den if den else float("nan")


def paper_rows(scenario: str, options: str = "") -> dict[str, tuple[float, float]]:
    """The paper's (avg JCT, queueing) in hours per policy for a scenario and its options label
    (``num_jobs=480``); empty where no paper publishes numbers for it."""
    return PAPER.get((scenario, options), {})


CASTOR_SIZES = _tables(("jct_share large", "jct_share small", "queue_share large", "queue_share small"),
                       lambda t: _label(t)[0])
"""castor Tables 5-6 by job size (large: more than :data:`CASTOR_LARGE_GPUS` GPUs), per scenario and policy:
(JCT large, JCT small, queueing large, queueing small) in hours, each class's share of the all-jobs average (the
two add up to the All Jobs column), not class averages."""
CASTOR_LARGE_GPUS = 8
"""castor §9.4: jobs asking for more than 8 GPUs are large, the others small."""
