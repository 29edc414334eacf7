"""The papers' published tables that the leaderboard's results stand beside (castor Tables 5-6, sjf-bsbf Tables
III-IV), in hours, and what they imply. The numbers are read from ``leaderboard/claims.toml`` (the one place a
published number is written: its claims read the same tables)."""

from __future__ import annotations

from gpucluster_env.leaderboard.board import options_label
from gpucluster_env.leaderboard.claims import Table, load_claims

LARGE_GPUS = 4
"""sjf-bsbf §VI-C: jobs asking for more than 4 GPUs are large, the others small."""
SHARED_OPTIONS = ("restart_s",)
"""Scenario options every paper board shares (a checkpoint-restart charge), left out of the labels below as the
leaderboard's tables leave them out."""


def _label(t: Table) -> tuple[str, str]:
    s = load_claims().settings[t.setting]
    return s.scenario, options_label({k: v for k, v in s.scenario_options.items() if k not in SHARED_OPTIONS})


def _paper() -> dict[tuple[str, str], dict[str, tuple[float, float]]]:
    out = {}
    for t in load_claims().tables.values():
        if t.unit == "h" and {"avg_jct_s", "avg_queue_s"} <= set(t.columns):
            out[_label(t)] = {p: (t.value(p, "avg_jct_s"), t.value(p, "avg_queue_s")) for p in t.rows}
    return out  # type: ignore[return-value]


def _paper_sizes() -> dict[str, dict[str, tuple[float, float, float, float]]]:
    cols = ("avg_jct_s large", "avg_jct_s small", "avg_queue_s large", "avg_queue_s small")
    out = {}
    for t in load_claims().tables.values():
        if t.unit == "h" and set(cols) <= set(t.columns):
            out[_label(t)[1]] = {p: tuple(t.value(p, c) for c in cols) for p in t.rows}
    return out  # type: ignore[return-value]


PAPER = _paper()
"""Papers' (avg JCT, queueing) in hours per (scenario, options label) and policy: castor Tables 5 (Philly) and 6
(Venus), sjf-bsbf Tables III (240 jobs) and IV (``num_jobs=480``); SJF-BSBF is ``castor``, Pollux ``pollux``."""
PAPER_SIZES = _paper_sizes()
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


# castor Tables 5 (Philly) and 6 (Venus) by job size, large = more than 8 GPUs (castor §9.4):
# policy -> (JCT large, JCT small, queueing large, queueing small), hours. In every row but Pollux's queueing
# (not a policy here) Large + Small = All Jobs, so each column is its class's share of the all-jobs average (the
# class's total over all jobs), not the class's own average as in sjf-bsbf Tables III-IV.
CASTOR_SIZES = {
    "castor-philly": {"fifo": (1.04, 1.60, 0.94, 0.92), "sjf": (0.36, 1.51, 0.26, 0.83),
                      "tiresias": (1.31, 1.26, 1.19, 0.55), "lucid": (1.32, 0.78, 1.21, 0.05),
                      "castor": (0.45, 1.09, 0.28, 0.12)},
    "castor-venus": {"fifo": (1.94, 2.79, 1.77, 1.74), "sjf": (0.72, 2.64, 0.55, 1.59),
                     "tiresias": (1.76, 2.18, 1.58, 1.10), "lucid": (1.14, 2.21, 2.05, 0.02),
                     "castor": (1.13, 1.76, 0.76, 0.17)},
}
CASTOR_LARGE_GPUS = 8
"""castor §9.4: jobs asking for more than 8 GPUs are large, the others small."""


def _castor_sizes() -> dict[str, dict[str, tuple[float, float, float, float]]]:
    cols = ("jct_share large", "jct_share small", "queue_share large", "queue_share small")
    out = {}
    for t in load_claims().tables.values():
        if t.unit == "h" and set(cols) <= set(t.columns):
            out[_label(t)[0]] = {p: tuple(t.value(p, c) for c in cols) for p in t.rows}
    return out  # type: ignore[return-value]


CASTOR_SIZES = _castor_sizes()
"""castor Tables 5-6 by job size (large: more than :data:`CASTOR_LARGE_GPUS` GPUs), per scenario and policy:
(JCT large, JCT small, queueing large, queueing small) in hours, each class's share of the all-jobs average (the
two add up to the All Jobs column), not class averages."""
CASTOR_LARGE_GPUS = 8
"""castor §9.4: jobs asking for more than 8 GPUs are large, the others small."""
