"""Pollux's workload recipe, which Castor (§9.1) and SJF-BSBF (§VI-A) follow for their simulations.

Both papers: "we mainly follow the settings of Pollux ... randomly sample 240 jobs from the busiest period ...
annotate six DL tasks (BERT, CIFAR10, DeepSpeech2, ImageNet, NCF and YoloV3) used in Pollux ... The settings of
GPU numbers and training iterations also follow those of Pollux." Pollux's generator (Qiao et al., OSDI'21,
artifact ``petuum/adaptdl`` branch ``osdi21-artifact``, ``simulator/workloads/generate.py``; its eight outputs
are ``pollux_workloads/workload-{1..8}.csv``, 160 jobs each) does this:

1. **Jobs and arrivals.** Philly jobs with ``duration >= 60 s`` and ``gpu_time < 1000`` GPU-hours, submitted
   between 2:00 and 10:00 (hour of day, any day: ``--start 2 --duration 8``, the busiest hours); ``n`` drawn
   uniformly; a job arrives at its time of day minus 2:00, so all jobs arrive within 8 hours. More jobs from the
   same period is a higher arrival rate (Pollux Fig. 8b, Castor §9.5 and SJF-BSBF Fig. 6(a): 120-480 jobs).
2. **Application by the job's GPU time**: < 1 GPU-h cifar10 or ncf (1/2 each); 1-10 GPU-h deepspeech2 or bert
   (1/2 each); 10-100 GPU-h yolov3; >= 100 GPU-h imagenet.
3. **GPU count**: one of the application's configurations with 50-80 % of ideal scalability
   (``get_configurations(0.5, 0.8)``), i.e. not the trace's own GPU count (which Pollux's generator leaves
   commented out). Pollux is elastic and only *starts* a job there; Castor and SJF-BSBF are not elastic, and
   their model (castor §3, sjf-bsbf §III: "each job is characterized by the number of GPUs it requires ... and
   the total number of training iterations") makes it the job's fixed request. So here it is the fixed request.
   The per-application distribution is :data:`POLLUX_REPLICAS`, counted on the eight published workloads.
4. **Batch and training length**: the global batch Pollux's workloads give each (application, GPU count)
   (:data:`POLLUX_BATCH`, the files' ``batch_size`` column), split evenly over the job's GPUs and kept fixed, as
   Castor keeps the user's batch (the engine adds gradient accumulation where a GPU's memory needs it); a fixed
   amount of work per application, ``max_epochs x dataset_size`` samples (:data:`POLLUX_EPOCHS`, from Pollux's
   ``simulator/applications.py``), i.e. ``ceil(epochs x dataset / global batch)`` iterations. Castor and
   SJF-BSBF do not change batch sizes, so the engine's statistical-efficiency charge (which applies only to a
   job trained at another total batch than its stated one) never touches these jobs.
   ``annotate="pollux-time"`` (sjfbsbf-philly) keeps Pollux's work but measures it on Pollux's own hardware:
   those iterations times Pollux's measured T4 step time for the job's placement (``placements.csv``, 4-GPU
   nodes), converted to iterations with the catalog's T4 on the same placement
   (:func:`pollux_time_iterations`). The catalog's fitted communication terms make large data-parallel jobs
   (ImageNet on 24-48 GPUs) several times slower than Pollux measured, so counting Pollux's iterations on the
   catalog (``annotate="pollux"``) inflates the work (offered load about 7 on sjfbsbf-philly, against about 3).

The same recipe is applied to Venus (castor §9.1 samples Venus "the same way"): the busiest 8-hour range of the
day on that trace (its own clock), application by GPU time, GPUs and iterations as above.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpucluster_env.catalog import Catalog

POLLUX_START_HOUR = 2.0
"""Pollux's ``--start 2``: the busiest period of Philly begins at 2:00 (trace clock)."""
POLLUX_PERIOD_H = 8.0
"""Pollux's ``--duration 8``: 8 hours of the day."""
MIN_DURATION_S = 60.0
MAX_GPU_TIME_S = 1000.0 * 3600.0

GPU_HOUR_CLASSES: tuple[tuple[float, tuple[str, ...]], ...] = (
    (1.0, ("cifar10", "ncf")),
    (10.0, ("deepspeech2", "bert")),
    (100.0, ("yolov3",)),
    (math.inf, ("imagenet",)),
)
"""Pollux ``generate.py``: (upper GPU-hour bound, applications drawn uniformly in that class)."""

POLLUX_REPLICAS: dict[str, dict[int, int]] = {
    "bert": {6: 23, 8: 18, 12: 20, 16: 25},
    "cifar10": {6: 134, 8: 119, 12: 133, 16: 109},
    "deepspeech2": {6: 34, 8: 34, 12: 43},
    "imagenet": {24: 9, 32: 9, 48: 8},
    "ncf": {1: 503},
    "yolov3": {4: 59},
}
"""Jobs per (application, ``num_replicas``) over Pollux's eight published workloads (``workload-{1..8}.csv``,
1,280 jobs); :func:`fit_replicas` recounts them from the files when they are present."""

POLLUX_APP_SHARE: dict[str, float] = {
    "bert": 86 / 1280, "cifar10": 495 / 1280, "deepspeech2": 111 / 1280,
    "imagenet": 26 / 1280, "ncf": 503 / 1280, "yolov3": 59 / 1280,
}
"""Share of each application in the same 1,280 jobs (for checking a sample against Pollux's)."""

POLLUX_MEAN_ARRIVAL_S = 15077.8
"""Mean arrival time (s after 2:00) over the same 1,280 jobs: arrivals spread over the 8 hours."""

POLLUX_EPOCHS: dict[str, tuple[int, int]] = {
    "bert": (2, 97_077),
    "cifar10": (100, 50_000),
    "deepspeech2": (80, 4_074),
    "imagenet": (90, 1_281_167),
    "ncf": (10, 1_000_000),
    "yolov3": (50, 14_041),
}
"""(max_epochs, dataset_size) per application in Pollux's simulator (``simulator/applications.py``)."""


def pollux_pool(df: pd.DataFrame, start_h: float | None = POLLUX_START_HOUR,
                period_h: float = POLLUX_PERIOD_H) -> tuple[pd.DataFrame, float]:
    """The jobs Pollux samples from: usable durations, under 1000 GPU-hours, submitted within ``period_h`` hours
    of ``start_h`` o'clock (any day), with ``submit_s`` = seconds after ``start_h`` that day. ``start_h=None``
    takes the busiest ``period_h``-hour range of the day on this trace (whole hours). Returns the pool and the
    start hour used."""
    d = df["duration_s"].to_numpy(float)
    gt = d * df["num_gpus"].to_numpy(float)
    ok = np.isfinite(d) & (d >= MIN_DURATION_S) & (gt < MAX_GPU_TIME_S)
    pool = df[ok]
    tod_h = (pool["submit_s"].to_numpy(float) / 3600.0 + float(df.attrs.get("start_hour", 0.0))) % 24.0
    if start_h is None:
        counts = np.bincount(tod_h.astype(int) % 24, minlength=24)
        span = int(round(period_h))
        start_h = float(np.argmax([sum(counts[(s + k) % 24] for k in range(span)) for s in range(24)]))
    offset_h = (tod_h - start_h) % 24.0
    keep = offset_h < period_h
    out = pool[keep].copy()
    out["submit_s"] = offset_h[keep] * 3600.0
    out.attrs = dict(df.attrs)
    return out.reset_index(drop=True), float(start_h)


def pollux_sample(df: pd.DataFrame, n: int, rng: np.random.Generator,
                  start_h: float | None = POLLUX_START_HOUR,
                  period_h: float = POLLUX_PERIOD_H) -> tuple[pd.DataFrame, float, int]:
    """``n`` jobs drawn uniformly without replacement (with replacement when the pool is smaller) from
    :func:`pollux_pool`, sorted by arrival. Returns the sample, the start hour and the pool size."""
    pool, start = pollux_pool(df, start_h, period_h)
    if len(pool) == 0:
        raise ValueError(f"{df.attrs.get('source', 'trace')}: no usable job in the Pollux period")
    idx = rng.choice(len(pool), size=n, replace=len(pool) < n)
    out = pool.iloc[idx].sort_values("submit_s", kind="stable").reset_index(drop=True)
    out["job_id"] = [f"{j}#{i}" for i, j in enumerate(out["job_id"].astype(str))]
    out.attrs = dict(df.attrs)
    return out, start, len(pool)


def pollux_applications(raw: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
    """One Pollux application per job, by the job's GPU time (see :data:`GPU_HOUR_CLASSES`)."""
    gh = raw["num_gpus"].to_numpy(float) * raw["duration_s"].to_numpy(float) / 3600.0
    bounds = np.array([b for b, _ in GPU_HOUR_CLASSES[:-1]])
    cls = np.searchsorted(bounds, gh, side="right")
    u = rng.random(len(raw))
    out = np.empty(len(raw), dtype=object)
    for k, (_, apps) in enumerate(GPU_HOUR_CLASSES):
        rows = cls == k
        out[rows] = np.array(apps, dtype=object)[np.minimum((u[rows] * len(apps)).astype(int), len(apps) - 1)]
    return out


def pollux_replicas(apps: np.ndarray, rng: np.random.Generator,
                    table: dict[str, dict[int, int]] | None = None) -> np.ndarray:
    """One GPU count per job, drawn from its application's Pollux distribution (:data:`POLLUX_REPLICAS`)."""
    table = table or POLLUX_REPLICAS
    u = rng.random(len(apps))
    out = np.empty(len(apps), dtype=np.int64)
    for i, a in enumerate(apps):
        counts = table[str(a)]
        vals = np.array(sorted(counts))
        cdf = np.cumsum([counts[v] for v in vals], dtype=float)
        out[i] = vals[min(int(np.searchsorted(cdf / cdf[-1], u[i], side="right")), len(vals) - 1)]
    return out


POLLUX_BATCH: dict[str, dict[int, int]] = {
    "bert": {6: 384, 8: 384, 12: 384, 16: 384},
    "cifar10": {6: 2048, 8: 2048, 12: 4096, 16: 4096},
    "deepspeech2": {6: 320, 8: 320, 12: 640},
    "imagenet": {24: 3200, 32: 6400, 48: 6400},
    "ncf": {1: 32768},
    "yolov3": {4: 64},
}
"""Global batch size per (application, ``num_replicas``) in Pollux's eight published workloads (the column
``batch_size``; one value per pair: the batch ``get_configurations`` found fastest for that GPU count).
:func:`fit_batches` recounts it from the files when they are present."""


def pollux_batch(app: str, num_gpus: int) -> int:
    """Per-GPU batch of a Pollux job: its global batch (:data:`POLLUX_BATCH`, the configuration with the nearest
    GPU count when ``num_gpus`` is not one of Pollux's) split over ``num_gpus`` workers, at least 1."""
    table = POLLUX_BATCH[app]
    near = min(table, key=lambda g: (abs(g - num_gpus), g))
    return max(1, int(round(table[near] / max(1, int(num_gpus)))))


def pollux_iterations(app: str, num_gpus: int, catalog: Catalog) -> float:
    """Iterations for one job: Pollux's ``epochs x dataset`` samples at ``num_gpus x`` the job's per-GPU batch
    (:func:`pollux_batch`)."""
    epochs, size = POLLUX_EPOCHS[app]
    return float(max(1, math.ceil(epochs * size / (num_gpus * pollux_batch(app, num_gpus)))))


POLLUX_NODE_GPUS = 4
"""Pollux's testbed: g4dn.12xlarge nodes, four T4 GPUs each (Pollux §5), 16 nodes = 64 GPUs, the shape SJF-BSBF's
simulated cluster (16 x 4 RTX 2080 Ti) keeps."""
POLLUX_INTER_NODE_GBS = 6.25
"""g4dn.12xlarge's 50 Gbps network, in GB/s (the unit of ``ClusterSpec.inter_node_bw_gbps``)."""
POLLUX_GPU = "T4"


def pollux_placement(num_gpus: int) -> str:
    """Pollux's ``placements.csv`` key for ``num_gpus`` packed on 4-GPU nodes (GPUs per node, digits sorted).
    Pollux measured at most four nodes; a larger job takes the four-full-node row (``4444``), i.e. the per-GPU
    step time of 16 GPUs (weak scaling beyond 16 GPUs: an approximation, stated)."""
    full, rest = divmod(min(int(num_gpus), 4 * POLLUX_NODE_GPUS), POLLUX_NODE_GPUS)
    return "".join(str(d) for d in sorted([POLLUX_NODE_GPUS] * full + ([rest] if rest else [])))


def pollux_step_time(app: str, num_gpus: int, local_bsz: float, root: Path | None = None,
                     max_local: float | None = None, spread: bool = False) -> float:
    """Pollux's measured T4 time (s) of one optimizer step of ``num_gpus`` workers at ``local_bsz`` samples per
    GPU: ``step_time`` of ``profiles/pollux/<app>/placements.csv`` (which includes the all-reduce), interpolated
    linearly in the local batch. A local batch above the largest measured one (or above ``max_local``, the
    application's largest atomic batch in Pollux's simulator) is split into ``k`` equal micro-batches, paying
    ``k - 1`` extra compute passes (``step_time - sync_time``), as Pollux's simulator does for gradient
    accumulation; one below the smallest measured is clamped to it. ``spread``: more than 16 GPUs take the rows
    of ``scalability.csv`` measured at ``ceil(n / 4)`` nodes and ``n`` replicas where there are some (what
    Pollux's simulator interpolates for such placements), instead of the four-full-node row."""
    rows = _scalability_rows(app, num_gpus, root) if spread and num_gpus > 4 * POLLUX_NODE_GPUS else ()
    if not rows:
        pl = pollux_placement(num_gpus)
        rows = _placement_rows(app, pl, root)
        if not rows:
            raise ValueError(f"Pollux measured no placement {pl!r} for {app!r}")
    xs, steps, syncs = (np.array(c) for c in zip(*rows, strict=True))
    top = min(xs[-1], max_local) if max_local else xs[-1]
    k = max(1, math.ceil(float(local_bsz) / top - 1e-9))
    atom = float(local_bsz) / k
    step = float(np.interp(atom, xs, steps))
    sync = float(np.interp(atom, xs, syncs))
    return step + (k - 1) * max(0.0, step - sync)


@functools.lru_cache(maxsize=1024)
def _placement_rows(app: str, placement: str, root: Path | None) -> tuple[tuple[float, float, float], ...]:
    """``(local_bsz, step_time, sync_time)`` of Pollux's ``placements.csv`` at ``placement``, sorted by local
    batch (empty when not measured); read once per (application, placement)."""
    from gpucluster_env.catalog.measured import load_pollux_placements

    return tuple(sorted((float(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"]))
                        for r in load_pollux_placements(app, root) if r["placement"] == placement))


@functools.lru_cache(maxsize=1024)
def _scalability_rows(app: str, num_gpus: int, root: Path | None) -> tuple[tuple[float, float, float], ...]:
    """``(local_bsz, step_time, sync_time)`` of Pollux's ``scalability.csv`` at ``ceil(n / 4)`` nodes and ``n``
    replicas, sorted by local batch (empty when not measured); read once per (application, GPUs)."""
    from gpucluster_env.catalog.measured import read_csv_rows, require_data_dir

    path = (root or require_data_dir()) / "profiles" / "pollux" / app / "scalability.csv"
    nodes = -(-int(num_gpus) // POLLUX_NODE_GPUS)
    return tuple(sorted(
        (float(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"]))
        for r in read_csv_rows(path, ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"))
        if int(r["num_nodes"]) == nodes and int(r["num_replicas"]) == int(num_gpus)))


def pollux_time_iterations(app: str, num_gpus: int, catalog: Catalog, root: Path | None = None) -> float:
    """Iterations for one job under ``annotate="pollux-time"``: Pollux's ``epochs x dataset`` samples at
    Pollux's batch for this GPU count (:func:`pollux_batch`) take ``n x step`` seconds on Pollux's own hardware
    (measured T4 step time, :func:`pollux_step_time`); the job gets as many iterations as fill that time on the
    catalog's T4 with the same placement (4-GPU nodes, 50 Gbps). So the job runs on Pollux's hardware in this
    simulator as long as it ran in Pollux's measurements, whatever the catalog's fitted communication terms
    say."""
    from gpucluster_env.traces.annotate import reference_iter_time

    b = pollux_batch(app, num_gpus)
    n_pollux = pollux_iterations(app, num_gpus, catalog)
    seconds = n_pollux * pollux_step_time(app, num_gpus, b, root)
    t_iter = reference_iter_time(catalog, app, num_gpus, b, POLLUX_GPU, POLLUX_NODE_GPUS, POLLUX_INTER_NODE_GBS)
    return float(max(1, math.ceil(seconds / t_iter)))


# ------------------------------------------------------------------------------- fitting on the files
def find_pollux_workloads() -> list[Path]:
    """Pollux's ``workload-*.csv`` in the data roots (:func:`gpucluster_env.data_folders.data_roots`)."""
    from gpucluster_env.data_folders import data_roots

    for root in data_roots():
        files = sorted((root / "traces" / "philly" / "pollux_workloads").glob("workload-*.csv"))
        if files:
            return files
    return []


def fit_batches(files: list[Path]) -> dict[str, dict[int, int]]:
    """Recount :data:`POLLUX_BATCH` from Pollux's workload files; ``ValueError`` if an (application, GPU count)
    pair has more than one batch size there."""
    df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    out: dict[str, dict[int, int]] = {}
    for (app, r), b in df.groupby(["application", "num_replicas"])["batch_size"].unique().items():
        if len(b) != 1:
            raise ValueError(f"Pollux workloads: {app} on {r} GPUs has several batch sizes {sorted(b)}")
        out.setdefault(str(app), {})[int(r)] = int(b[0])
    return out


def fit_replicas(files: list[Path]) -> tuple[dict[str, dict[int, int]], dict[str, float], float]:
    """Recount :data:`POLLUX_REPLICAS`, :data:`POLLUX_APP_SHARE` and :data:`POLLUX_MEAN_ARRIVAL_S` from
    Pollux's workload files."""
    df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    reps: dict[str, dict[int, int]] = {}
    for (app, r), c in df.groupby(["application", "num_replicas"]).size().items():
        reps.setdefault(str(app), {})[int(r)] = int(c)
    share = {str(a): float(c) / len(df) for a, c in df["application"].value_counts().items()}
    return reps, share, float(df["time"].mean())


def workload_stats(jobs: pd.DataFrame) -> dict[str, float]:
    """Statistics of a job table comparable with Pollux's workloads: application shares, mean GPUs, share of
    jobs over 4 GPUs, mean arrival (s)."""
    out = {f"share_{a}": float((jobs["model"] == a).mean()) for a in POLLUX_EPOCHS}
    out["mean_gpus"] = float(jobs["num_gpus"].mean())
    out["share_gt4_gpus"] = float((jobs["num_gpus"] > 4).mean())
    out["mean_arrival_s"] = float(jobs["submit_s"].mean())
    return out


# ------------------------------------------------------------------------------- Pollux's own workload files
WORKLOAD_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
POLLUX_MAX_LOCAL: dict[str, int] = {"yolov3": 8}
"""Largest atomic (per-GPU, per-pass) batch Pollux's simulator allows where it is below the largest measured one
(``applications.py``: YOLOv3 ``max_local_bsz=8``): larger local batches accumulate gradients."""


def _time_matched(app: str, n: int, total: int, catalog: Catalog) -> tuple[float, int]:
    """Iterations and per-GPU batch of a job of ``app`` held at total batch ``total`` on ``n`` GPUs: the steps
    Pollux's simulator runs for it (:func:`~gpucluster_env.catalog.pollux_efficiency.validated_iterations`)
    times Pollux's measured T4 step time on that placement (:func:`pollux_step_time`, with its accumulation
    limit :data:`POLLUX_MAX_LOCAL` and, past 16 GPUs, its spread measurements), converted to iterations of the
    catalog's T4 on the same placement (as :func:`pollux_time_iterations`)."""
    from gpucluster_env.traces.annotate import reference_iter_time

    from gpucluster_env.catalog.pollux_efficiency import validated_iterations

    b = math.ceil(total / n)
    seconds = validated_iterations(app, total) * pollux_step_time(app, n, b, max_local=POLLUX_MAX_LOCAL.get(app),
                                                                  spread=True)
    t_iter = reference_iter_time(catalog, app, n, b, POLLUX_GPU, POLLUX_NODE_GPUS, POLLUX_INTER_NODE_GBS)
    return float(max(1, math.ceil(seconds / t_iter))), b


def pollux_workload_jobs(path: Path, catalog: Catalog, elastic: bool = True) -> pd.DataFrame:
    """The engine job table of one of Pollux's workload files (``workload-*.csv``: ``name, time, application,
    num_replicas, batch_size``), for running Pollux's own workloads here side by side with its simulator.

    Not ``elastic`` (Tiresias, as Pollux's simulator runs it): each job asks for its ``num_replicas`` GPUs at
    ``batch_size / num_replicas`` per GPU, its work what Pollux's simulator runs for a job held at that batch
    (:func:`_time_matched`). ``elastic`` (Pollux): each job asks for one GPU at Pollux's initial batch ``M0``
    (where Pollux's simulator starts every job), its work what Pollux's simulator runs for a job held there
    (its progress is counted in steps at ``M0``); the engine charges any other batch its statistical efficiency
    (``Reallocate``'s ``batch``), and the job may grow to the GPUs at which Pollux's smallest per-GPU batch
    reaches its largest validated batch (at most 64, Pollux's simulator's cap). NCF keeps one GPU at its
    workload batch, as Pollux's simulator fixes it (``target_batch_size=32768``)."""
    from gpucluster_env.catalog.pollux_efficiency import POLLUX_INIT_BATCH, POLLUX_LOCAL_BATCH, POLLUX_MAX_BATCH

    df = pd.read_csv(path)
    missing = [c for c in WORKLOAD_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: not a Pollux workload file (missing column(s) {', '.join(missing)})")
    rows = []
    work: dict[tuple[str, int, int], tuple[float, int]] = {}  # one computation per (application, GPUs, batch)
    for i, r in enumerate(df.itertuples(index=False)):
        app, n, total = str(r.application), int(r.num_replicas), int(r.batch_size)
        if app not in POLLUX_EPOCHS or n < 1 or total < n:
            raise ValueError(f"{path}: row {i + 2}: bad application/num_replicas/batch_size {app!r}, {n}, {total}")
        lo = hi = n
        if elastic:
            n, total, lo, hi = 1, (total if app == "ncf" else POLLUX_INIT_BATCH[app]), 1, 1
            if app != "ncf":
                hi = min(64, POLLUX_MAX_BATCH[app] // POLLUX_LOCAL_BATCH[app][0])
        if (app, n, total) not in work:
            work[app, n, total] = _time_matched(app, n, total, catalog)
        iters, b = work[app, n, total]
        rows.append({"job_id": str(r.name), "submit_s": float(r.time), "num_gpus": n, "model": app,
                     "batch_size": b, "iterations": iters, "min_gpus": lo, "max_gpus": hi})
    return pd.DataFrame(rows)


def load_pollux_workload(path: str | Path, skip_bad_rows: bool = False) -> tuple[pd.DataFrame, Any]:
    """One of Pollux's workload files as a trace (``--trace workload-1.csv``, format ``pollux-workload``): each
    job with its own application, GPU count and work as :func:`pollux_workload_jobs` makes them for a job held
    at its workload's GPUs and batch (not elastic: the ``trace`` recipe keeps models, batches and iterations);
    no durations (the work is iterations). ``skip_bad_rows`` is not offered: a bad row is an error naming it."""
    from gpucluster_env.traces.tables import LoadReport, finish

    from gpucluster_env.catalog import default_catalog

    if skip_bad_rows:
        raise ValueError(f"{path}: a Pollux workload file is read whole (--skip-bad-rows does not apply)")
    jobs = pollux_workload_jobs(Path(path), default_catalog(), elastic=False)
    report = LoadReport(str(path))
    report.rows_read = len(jobs)
    out = jobs[["job_id", "submit_s", "num_gpus", "model", "batch_size", "iterations"]].copy()
    out["duration_s"] = float("nan")
    return finish(out, path), report
