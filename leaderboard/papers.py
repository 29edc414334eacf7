"""The papers' published numbers that the leaderboard's results stand beside (castor Tables 5-6, sjf-bsbf
Tables III-IV), in hours, and what they imply."""

from __future__ import annotations

# Papers' (avg JCT, queueing) in hours: castor Tables 5 (Philly) and 6 (Venus); sjf-bsbf Tables III, IV. Castor runs
# Pollux on Philly only (§9.1: Venus has no gradient information).
PAPER = {
    ("castor-philly", ""): {"fifo": (2.64, 1.86), "sjf": (1.88, 1.09), "tiresias": (2.57, 1.75),
                            "pollux": (2.17, 1.00), "castor": (1.54, 0.41)},
    ("castor-venus", ""): {"fifo": (4.73, 3.51), "sjf": (3.35, 2.14), "tiresias": (3.94, 2.68),
                           "castor": (2.89, 0.93)},
    ("sjfbsbf-philly", ""): {"fifo": (2.34, 1.65), "sjf": (1.25, 0.56), "tiresias": (1.51, 0.81),
                             "sjf-ffs": (1.23, 0.18), "castor": (1.01, 0.14)},
    ("sjfbsbf-philly", "num_jobs=480"): {"fifo": (7.52, 0.73), "sjf": (2.55, 1.87), "tiresias": (5.09, 4.41),
                                         "sjf-ffs": (1.89, 0.73), "castor": (1.57, 0.69)},
}


# sjf-bsbf Tables III (240 jobs) and IV (480 jobs) by job size, large = more than 4 GPUs:
# policy -> (avg JCT large, avg JCT small, avg queueing large, avg queueing small), hours.
PAPER_SIZES = {
    "": {"fifo": (3.92, 2.13, 2.17, 1.58), "sjf": (3.50, 0.94, 1.76, 0.39), "tiresias": (3.48, 1.23, 1.73, 0.68),
         "sjf-ffs": (4.29, 0.81, 0.98, 0.07), "castor": (3.38, 0.68, 0.89, 0.03)},
    "num_jobs=480": {"fifo": (10.06, 7.08, 4.06, 0.21), "sjf": (7.00, 1.90, 5.35, 1.35),
                     "tiresias": (8.25, 4.59, 6.60, 4.04), "sjf-ffs": (8.12, 0.99, 4.06, 0.21),
                     "castor": (6.13, 0.88, 3.62, 0.21)},
}
LARGE_GPUS = 4
"""sjf-bsbf §VI-C: jobs asking for more than 4 GPUs are large, the others small."""


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
