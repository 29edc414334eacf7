"""Fit of the all-reduce latency term of Castor eq. 2 on multi-node measurements (``gpucluster catalog
fit-comm``).

:func:`gpucluster_env.performance.comm_time` charges ``alpha_comm (1 + log2 n) nodes + 2 (n-1)/n grad / bw``.
The latency constant ``alpha_comm_s`` was first fitted on Gavel's single-node 2/4/8-GPU runs
(:func:`.fit.fit_gavel_comm`) and extrapolated across nodes. Here it is fitted on Pollux's multi-node
measurements (Qiao et al., OSDI'21): ``scalability.csv`` (6-16 g4dn.12xlarge nodes, 6-64 T4s) and the
multi-node rows of ``placements.csv`` (2-4 nodes), whose ``sync_time`` is the all-reduce time itself. Per
(GPUs, nodes) configuration the median ``sync_time`` over local batch sizes is one row; the ring term uses
the model's ``grad_mb`` and the testbed's bandwidths (T4 intra-node 10 GB/s, 50 Gbit/s = 6.25 GB/s between
nodes); ``alpha_comm_s`` is the least-absolute-deviation fit in log space (:func:`fit_alpha`).

The fitted constants are written to ``gpucluster_env/data/comm_fit.json``, which :mod:`.models` reads; the
fit needs ``../shared/data`` but the package does not.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..performance import comm_time
from ..workloads import ModelProfile
from .measured import load_pollux_placements, read_csv_rows, require_data_dir

COMM_FIT_FILE = "comm_fit.json"
POLLUX_INTRA_BW_GBPS = 10.0
"""T4s inside a g4dn.12xlarge talk over PCIe (the catalog's T4 intra-node bandwidth)."""
POLLUX_INTER_BW_GBPS = 6.25
"""g4dn.12xlarge network: 50 Gbit/s."""
POLLUX_MODELS: tuple[str, ...] = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
SAME_ARCHITECTURE: dict[str, str] = {"resnet18": "cifar10", "resnet50": "imagenet"}
"""Catalog models that take the fit of the Pollux model with the same network and gradient size."""


@dataclass(frozen=True)
class CommRow:
    """One measured configuration: all-reduce seconds of ``n_gpus`` workers over ``n_nodes`` nodes."""

    source: str
    n_gpus: int
    n_nodes: int
    t_comm_s: float


def rows_from_samples(source: str, samples: Sequence[tuple[int, int, float]]) -> list[CommRow]:
    """Multi-node ``(n_gpus, n_nodes, sync_time)`` samples -> one row per configuration (median time)."""
    groups: dict[tuple[int, int], list[float]] = {}
    for n, nodes, t in samples:
        if nodes >= 2 and n >= 2 and t > 0:
            groups.setdefault((n, nodes), []).append(t)
    return [CommRow(source, n, nodes, float(np.median(ts))) for (n, nodes), ts in sorted(groups.items())]


def pollux_rows(model: str, root: Path | None = None) -> list[CommRow]:
    """Pollux's multi-node all-reduce times of ``model`` (``scalability.csv`` and ``placements.csv``)."""
    root = root or require_data_dir()
    path = root / "profiles" / "pollux" / model / "scalability.csv"
    cols = ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")
    scal = [(int(r["num_replicas"]), int(r["num_nodes"]), float(r["sync_time"])) for r in read_csv_rows(path, cols)]
    place = []
    for r in load_pollux_placements(model, root):
        digits = str(r["placement"])
        place.append((sum(int(c) for c in digits), len(digits), float(r["sync_time"])))
    return rows_from_samples("pollux scalability.csv", scal) + rows_from_samples("pollux placements.csv", place)


def predict(p: ModelProfile, rows: Sequence[CommRow], alpha_comm_s: float,
            intra_bw: float = POLLUX_INTRA_BW_GBPS, inter_bw: float = POLLUX_INTER_BW_GBPS) -> np.ndarray:
    """Castor eq. 2 (:func:`gpucluster_env.performance.comm_time`) for each row at ``alpha_comm_s``."""
    q = dataclasses.replace(p, alpha_comm_s=alpha_comm_s)
    return np.array([comm_time(q, r.n_gpus, r.n_nodes, intra_bw, inter_bw) for r in rows])


def fit_alpha(p: ModelProfile, rows: Sequence[CommRow], intra_bw: float = POLLUX_INTRA_BW_GBPS,
              inter_bw: float = POLLUX_INTER_BW_GBPS) -> float:
    """``alpha_comm_s`` minimising the sum of ``|log(pred / measured)|`` over the rows (a median fit in log
    space, as :func:`.fit.fit_gavel_joint`; a least-squares fit in relative error is pulled down by the rows
    the eq. 2 form over-predicts and leaves a median error 7-30 points higher), searched on ``log alpha`` in
    [1e-7 s, 1 s]."""
    from scipy.optimize import minimize_scalar

    if not rows:
        raise ValueError(f"model {p.name!r}: no multi-node rows to fit")
    t = np.array([r.t_comm_s for r in rows])

    def loss(log_alpha: float) -> float:
        return float(np.sum(np.abs(np.log(predict(p, rows, math.exp(log_alpha), intra_bw, inter_bw) / t))))

    res = minimize_scalar(loss, bounds=(math.log(1e-7), 0.0), method="bounded", options={"xatol": 1e-9})
    return math.exp(float(res.x))


def residuals(p: ModelProfile, rows: Sequence[CommRow], alpha_comm_s: float) -> np.ndarray:
    """Relative errors ``pred / measured - 1`` of the rows at ``alpha_comm_s``."""
    return predict(p, rows, alpha_comm_s) / np.array([r.t_comm_s for r in rows]) - 1.0


def fit_all(models: dict[str, ModelProfile], single_node_alpha: dict[str, float],
            root: Path | None = None) -> dict[str, Any]:
    """The fit of every Pollux model (and the same-architecture aliases): parameters, rows, residuals, and
    the residuals the single-node constant gave, as written to ``comm_fit.json``."""
    out: dict[str, Any] = {}
    for m in POLLUX_MODELS:
        p = models[m]
        rows = pollux_rows(m, root)
        alpha = fit_alpha(p, rows)
        res, before = residuals(p, rows, alpha), residuals(p, rows, single_node_alpha[m])
        out[m] = {
            "alpha_comm_s": round(alpha, 6),
            "single_node_alpha_comm_s": single_node_alpha[m],
            "rows": len(rows),
            "rows_by_source": {s: sum(r.source == s for r in rows) for s in sorted({r.source for r in rows})},
            "nodes": [min(r.n_nodes for r in rows), max(r.n_nodes for r in rows)],
            "gpus": [min(r.n_gpus for r in rows), max(r.n_gpus for r in rows)],
            "median_abs_rel_err": round(float(np.median(np.abs(res))), 4),
            "max_abs_rel_err": round(float(np.max(np.abs(res))), 4),
            "median_abs_rel_err_single_node": round(float(np.median(np.abs(before))), 4),
        }
    return {
        "about": "alpha_comm_s of Castor eq. 2 fitted on Pollux multi-node sync times (gpucluster_env.catalog."
                 "comm_fit); written by `gpucluster catalog fit-comm`.",
        "intra_bw_gbps": POLLUX_INTRA_BW_GBPS,
        "inter_bw_gbps": POLLUX_INTER_BW_GBPS,
        "models": out,
        "same_architecture": dict(SAME_ARCHITECTURE),
    }


def fitted_alpha_comm() -> dict[str, float]:
    """The shipped multi-node ``alpha_comm_s`` by catalog model (aliases included); empty if the file is absent."""
    table = shipped_fit()
    out = {m: float(rec["alpha_comm_s"]) for m, rec in table.get("models", {}).items()}
    for alias, src in table.get("same_architecture", {}).items():
        if src in out:
            out[alias] = out[src]
    return out


def shipped_fit() -> dict[str, Any]:
    """The whole shipped ``comm_fit.json`` (empty dict if absent), for ``catalog validate``."""
    try:
        return json.loads(resources.files("gpucluster_env").joinpath("data", COMM_FIT_FILE).read_text())
    except (FileNotFoundError, OSError):
        return {}
