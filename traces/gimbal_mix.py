"""Gimbal's job mix (gimbal §7.1, Table 2): the ``gimbal`` annotation recipe of the gimbal scenarios.

Gimbal takes submit times and durations from the trace and assigns "model types, GPU requirements, and
calculated iteration counts" itself, generating the large workloads "to resemble the longer-term jobs". So:

* each job gets a size class in Table 2's proportions (Philly: 43 small, 86 medium, 21 large of 150; Alibaba:
  112, 132, 56 of 300), the large class going to the longest jobs of the sample and small and medium drawn at
  random among the rest;
* a model uniformly among its class's models (§7.1: small RN18, MNV2, EFN; medium DeepSpeech2, RN50, MNV3,
  VGG-11, VGG-16, PLNAS, OFA; large BERT, LLaMA);
* a GPU count from {1, 2, 4, 8} whose mean is Table 2's average for the class (two adjacent powers of two,
  mixed in the proportion that gives that mean), capped at the cluster;
* iterations from the trace duration on the scenario's own GPUs (its first node's type) at that GPU count
  ("calculated iteration counts based on the model's computation profiles", profiled on Gimbal's A40 testbed: a
  job runs its traced duration alone on the cluster, on the fewest nodes), and Gimbal's deadlines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from gpucluster_env.traces.annotate import gimbal_deadlines, to_job_table
from gpucluster_env.traces.trace_sources import SOURCES, arrivals, recipe

from gpucluster_env.catalog import Catalog

if TYPE_CHECKING:
    from gpucluster_env.scenario_spec import Scenario

GIMBAL_CLASSES = {
    "small": ("resnet18", "mobilenetv2", "efficientnet"),
    "medium": ("deepspeech2", "resnet50", "mobilenetv3", "vgg11", "vgg16", "pnasnet", "ofa"),
    "large": ("bert", "llama"),
}
TABLE2 = {
    "philly": {"small": (43, 2.39), "medium": (86, 2.41), "large": (21, 4.85)},
    "alibaba": {"small": (112, 1.98), "medium": (132, 2.03), "large": (56, 3.54)},
}
"""Gimbal Table 2: jobs and average GPUs per job of each size class, per trace."""


def class_counts(n: int, table: dict[str, tuple[int, float]]) -> dict[str, int]:
    """Table 2's class counts scaled to ``n`` jobs (largest remainders; exactly the table's at its size)."""
    total = sum(c for c, _ in table.values())
    exact = {k: n * c / total for k, (c, _) in table.items()}
    out = {k: int(np.floor(v)) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: (out[k] - exact[k], k))[: n - sum(out.values())]:
        out[k] += 1
    return out


def gpu_counts(mean: float, size: int, rng: np.random.Generator, cap: int) -> np.ndarray:
    """``size`` GPU counts from two adjacent powers of two whose expected value is ``mean`` (at most ``cap``)."""
    lo = 2 ** int(np.floor(np.log2(mean)))
    hi = 2 * lo
    p_hi = (mean - lo) / (hi - lo)
    return np.minimum(np.where(rng.random(size) < p_hi, hi, lo), cap).astype(np.int64)


def gimbal_mix(durations: np.ndarray, trace: str, rng: np.random.Generator, cap: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(models, gpus)`` for jobs of the given durations by Table 2 of ``trace`` (module docstring)."""
    if trace not in TABLE2:
        raise ValueError(f"Gimbal's job mix is given for the philly and alibaba traces, not {trace!r}")
    n = len(durations)
    counts = class_counts(n, TABLE2[trace])
    order = np.argsort(-np.asarray(durations, dtype=float), kind="stable")
    large = order[: counts["large"]]
    rest = rng.permutation(order[counts["large"]:])
    rows = {"large": large, "small": rest[: counts["small"]], "medium": rest[counts["small"]:]}
    models = np.empty(n, dtype=object)
    gpus = np.empty(n, dtype=np.int64)
    for k in ("small", "medium", "large"):
        r = np.sort(rows[k])
        models[r] = rng.choice(np.array(GIMBAL_CLASSES[k], dtype=object), len(r))
        gpus[r] = gpu_counts(TABLE2[trace][k][1], len(r), rng, cap)
    return models, gpus


@recipe("gimbal")
def _gimbal_jobs(sc: Scenario, rng: np.random.Generator, catalog: Catalog) -> tuple[pd.DataFrame, str]:
    """Gimbal's recipe: the trace's arrivals and durations, Table 2's classes, models and GPU counts."""
    raw, note, _ = SOURCES[sc.trace](sc, rng)
    raw = arrivals(sc, raw)
    trace = "alibaba" if sc.trace.startswith("alibaba") else sc.trace
    models, gpus = gimbal_mix(raw["duration_s"].to_numpy(float), trace, rng, sc.cluster.num_gpus)
    raw = raw.assign(num_gpus=gpus)
    deadlines = gimbal_deadlines(raw, rng) if sc.deadlines else None
    node = sc.cluster.nodes[0]
    reference = (node.gpu_type, node.count, sc.cluster.inter_node_bw_gbps)
    return (to_job_table(raw, models, catalog, deadlines, reference=reference),
            f"{note}; Gimbal Table 2 job mix ({trace})")
