"""Every metric of an episode declared once: its name, unit, whether a higher value is better, and what it
means. The engine's :func:`~gpucluster_env.engine.metrics.episode_metrics` returns exactly the engine metrics
here (tests/engine/test_metric_specs.py checks it), the leaderboard ranks by :attr:`MetricSpec.higher_is_better`
(:func:`gpucluster_env.leaderboard.stats.lower_is_better`), and ``docs/glossary.md`` names every one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricSpec:
    """One metric: its unit (``s``, ``fraction``, ``count``, ``ratio``, ``jobs``), whether more is better, what it
    is, and who computes it (``engine``: every episode; ``leaderboard``: a record's sharing-benefit summary)."""

    unit: str
    higher_is_better: bool
    meaning: str
    source: str = "engine"


METRICS: dict[str, MetricSpec] = {
    "jobs": MetricSpec("jobs", False, "jobs in the episode (the same for every policy on a job table)"),
    "jobs_done": MetricSpec("jobs", True, "jobs finished (all of them unless the episode was truncated)"),
    "avg_jct_s": MetricSpec("s", False, "mean job completion time (finish - submit) of the finished jobs"),
    "median_jct_s": MetricSpec("s", False, "median job completion time"),
    "p95_jct_s": MetricSpec("s", False, "95th percentile of the job completion times"),
    "makespan_s": MetricSpec("s", False, "last finish - first submit"),
    "avg_queue_s": MetricSpec("s", False, "mean time a job spends pending (before its first start and after each "
                                          "preemption)"),
    "gpu_occupancy": MetricSpec("fraction", True, "GPU-time holding at least one job over the GPUs x makespan"),
    "sm_activity_est": MetricSpec("fraction", True, "estimated SM activity (DCGM SMACT, Castor §9.2) over the "
                                                    "same GPU-time, from each job's demand and MPS share"),
    "sharing_utilization": MetricSpec("fraction", True, "GPU-time holding two jobs over the GPUs x makespan"),
    "avg_slowdown": MetricSpec("ratio", False, "mean over finished jobs of JCT over the job's time alone"),
    "colocations": MetricSpec("count", False, "starts or moves onto GPUs another job already held (MPS sharing)"),
    "preemptions": MetricSpec("count", False, "jobs stopped and sent back to the queue"),
    "forks": MetricSpec("count", False, "copies of a job started on other nodes (HadarE)"),
    "reallocations": MetricSpec("count", False, "running jobs moved to other GPUs"),
    "copy_drops": MetricSpec("count", False, "forked copies dropped"),
    "copy_moves": MetricSpec("count", False, "forked copies moved"),
    "squeezes": MetricSpec("count", False, "MPS shares lowered"),
    "swells": MetricSpec("count", False, "MPS shares raised"),
    "decisions": MetricSpec("count", False, "decision points the policy was asked at"),
    "sharing_benefit": MetricSpec("ratio", True, "mean over colocations of the job's time alone over its time "
                                                 "colocated (Castor eq. 24)"),
    "sharing_benefit_median": MetricSpec("ratio", True, "median of the same"),
    "deadline_satisfaction": MetricSpec("fraction", True, "share of the jobs with a deadline that met it"),
    "sb_median": MetricSpec("ratio", True, "median sharing benefit of a record's colocations", "leaderboard"),
    "sb_frac_gt1": MetricSpec("fraction", True, "share of a record's colocations whose sharing benefit is above 1",
                              "leaderboard"),
    "sb_decisions": MetricSpec("count", False, "colocations a record's sharing-benefit summary covers",
                               "leaderboard"),
}
"""Every metric of an episode and of a leaderboard record, by name."""


def engine_metrics() -> tuple[str, ...]:
    """The names :func:`~gpucluster_env.engine.metrics.episode_metrics` returns, in declaration order."""
    return tuple(n for n, m in METRICS.items() if m.source == "engine")


def higher_is_better(metric: str) -> bool:
    """Whether a higher value of ``metric`` is better: its declaration, else False (a policy's own counts, such
    as ``searches``, and every time are better lower)."""
    spec = METRICS.get(metric)
    return spec.higher_is_better if spec is not None else False


def metrics_markdown() -> str:
    """The Markdown table of every metric, as docs/glossary.md holds it (a test checks the page has it verbatim)."""
    rows = ["| metric | unit | better | meaning |", "|---|---|---|---|"]
    rows += [f"| `{n}` | {m.unit} | {'higher' if m.higher_is_better else 'lower'} | {m.meaning}"
             f"{' (leaderboard records)' if m.source == 'leaderboard' else ''} |" for n, m in METRICS.items()]
    return "\n".join(rows) + "\n"
