"""Statistical efficiency of Pollux's six applications: the data Pollux's goodput model needs beside throughput.

Pollux (Qiao et al., OSDI'21, §3.1) scores a configuration by *goodput* = throughput x statistical efficiency.
The efficiency of training at total batch ``M`` instead of the initial batch ``M0`` follows from the
gradient noise scale ``phi`` (Pollux eq. 5, after McCandlish et al.'s noise scale and AdaScale's gain)::

    EFFICIENCY(M) = (phi + M0) / (phi + M)

which is the work done by one sample at batch ``M`` relative to one at ``M0`` (1 at ``M = M0``, falling as
``M`` grows past ``phi``). ``phi`` grows as training proceeds, so large batches become cheaper later on.

**Source and licence.** Pollux's simulator (``petuum/adaptdl``, branch ``osdi21-artifact``, folder
``simulator/``, Apache License 2.0, Copyright 2020 Petuum, Inc.) ships, per application, validation runs at
several batch sizes (``traces/<app>/validation-<M>.csv``: per epoch the progress, iterations, validation
metric and the gradient statistics ``grad_sqr`` (|g|^2) and ``grad_var`` (the per-sample variance, scaled to
``M0``)). Nothing of those files is copied here; the numbers below are summaries derived from them, as follows
(:func:`summarise_validation` does it again on a checkout of that folder):

* :data:`POLLUX_PGNS`: per application, the gradient noise scale ``phi = M0 x grad_var / grad_sqr`` of every
  epoch of every validation run, split into (up to) ten equal parts of the training's epochs; each value is the
  median ``phi`` over the epochs of that part and all validated batch sizes (Pollux's simulator interpolates
  the statistics of the two validated batch sizes around the job's; the median over them is the summary).
* :data:`POLLUX_INIT_BATCH` / :data:`POLLUX_MAX_BATCH`: the smallest and largest validated batch (Pollux's
  ``init_batch_size`` and ``max_batch_size``, ``applications.py``).
* :data:`POLLUX_ITERATIONS`: the steps Pollux's simulator runs for a job held at batch ``M`` until its last
  epoch (``max_epochs`` of ``applications.py``): over the epochs, the epoch's progress (in steps at ``M0``, the
  smallest over the runs, as the simulator's ``get_progress``) divided by the gain ``M/M0 x EFFICIENCY(M)``
  with that epoch's ``grad_sqr``/``grad_var`` of the run at ``M``. (The runs' own ``iteration`` counts differ
  by up to 10%, e.g. YOLOv3 at 64: 14,577 against 15,970.)
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

POLLUX_INIT_BATCH: dict[str, int] = {
    "bert": 12, "cifar10": 128, "deepspeech2": 20, "imagenet": 200, "ncf": 256, "yolov3": 8,
}
"""Pollux's ``init_batch_size`` ``M0`` per application: its smallest validated batch (samples)."""

POLLUX_MAX_BATCH: dict[str, int] = {
    "bert": 384, "cifar10": 4096, "deepspeech2": 640, "imagenet": 12800, "ncf": 32768, "yolov3": 512,
}
"""Pollux's ``max_batch_size`` per application: its largest validated batch (samples)."""

POLLUX_MAX_EPOCHS: dict[str, int] = {
    "bert": 2, "cifar10": 100, "deepspeech2": 80, "imagenet": 90, "ncf": 10, "yolov3": 50,
}
"""``max_epochs`` per application in Pollux's ``applications.py`` (a job is done after that many)."""

POLLUX_PGNS: dict[str, tuple[float, ...]] = {
    "bert": (1823.0, 7172.0),
    "cifar10": (791.7, 2860.0, 4859.0, 7018.0, 10280.0, 15140.0, 26630.0, 41140.0, 62680.0, 65030.0),
    "deepspeech2": (166.6, 1092.0, 3659.0, 12780.0, 25160.0, 53390.0, 80570.0, 97250.0, 63710.0, 77900.0),
    "imagenet": (5509.0, 8264.0, 9037.0, 21630.0, 33220.0, 30340.0, 32850.0, 93280.0, 89690.0, 88750.0),
    "ncf": (1.404e5, 1.247e6, 9.085e5, 1.571e6, 6.31e6, 8.021e6, 6.617e6, 3.478e7, 3.241e7, 3.933e7),
    "yolov3": (184.1, 334.1, 372.9, 457.2, 483.1, 587.8, 800.6, 1173.0, 2126.0, 5099.0),
}
"""Gradient noise scale ``phi`` (samples) per equal part of training (epochs), median over the epochs of the
part and over the validated batch sizes (module docstring). BERT trains two epochs, so two parts."""

POLLUX_ITERATIONS: dict[str, dict[int, int]] = {
    "bert": {12: 14774, 24: 7440, 48: 3748, 96: 1893, 192: 941, 384: 476},
    "cifar10": {128: 39063, 256: 20383, 512: 10632, 1024: 5796, 2048: 3343, 4096: 2143},
    "deepspeech2": {20: 28536, 40: 14710, 80: 7685, 160: 4052, 320: 2275, 640: 1391},
    "imagenet": {200: 576526, 400: 293095, 800: 150648, 1600: 78669, 3200: 42850, 6400: 25094, 12800: 14803},
    "ncf": {256: 194174, 512: 97092, 1024: 48681, 2048: 24308, 4096: 12183, 8192: 6203, 16384: 3091,
            32768: 1552},
    "yolov3": {8: 103444, 16: 53465, 32: 28484, 64: 15970, 128: 9713, 256: 6587, 512: 4976},
}
"""Steps to the last epoch of a job held at each validated batch, as Pollux's simulator counts them (module
docstring)."""


def has_efficiency(model: str) -> bool:
    """Whether Pollux measured ``model``'s gradient noise (one of its six applications)."""
    return model in POLLUX_PGNS


NOISE_PART_TOL = 1e-9
"""A fraction of training done within this of a part's end counts as in the next part (the engine's progress
reaches a boundary up to float noise)."""

POLLUX_LOCAL_BATCH: dict[str, tuple[int, int]] = {
    "bert": (4, 12), "cifar10": (32, 1024), "deepspeech2": (10, 80), "imagenet": (20, 200), "ncf": (32, 32768),
    "yolov3": (4, 8),
}
"""Per-GPU (atomic) batch range Pollux's simulator tunes within: the smallest and largest ``local_bsz`` of
``profiles/pollux/<app>/placements.csv`` (its ``min_local_bsz`` / ``max_local_bsz``; YOLOv3's largest is
``applications.py``'s ``max_local_bsz=8``)."""


def noise_part(model: str, done: float) -> int:
    """The part of :data:`POLLUX_PGNS` that the fraction ``done`` (0..1) of ``model``'s training falls in."""
    n = len(POLLUX_PGNS[model])
    return min(n - 1, max(0, int(math.floor(float(done) * n + NOISE_PART_TOL))))


def noise_scale(model: str, done: float) -> float:
    """``phi`` of ``model`` when the fraction ``done`` (0..1) of its training is done: the value of the part of
    :data:`POLLUX_PGNS` that ``done`` falls in."""
    return float(POLLUX_PGNS[model][noise_part(model, done)])


def noise_part_end(model: str, done: float) -> float | None:
    """The fraction of training at which ``model``'s ``phi`` next changes after ``done`` (None: it does not)."""
    n = len(POLLUX_PGNS[model])
    k = noise_part(model, done)
    return (k + 1) / n if k + 1 < n else None


def batch_range(model: str) -> tuple[int, int] | None:
    """The total batches ``model`` may train at, Pollux's validated ``[M0, max_batch]`` (None: no data, so a
    batch other than the stated one has no known statistical efficiency)."""
    if model not in POLLUX_INIT_BATCH:
        return None
    return POLLUX_INIT_BATCH[model], POLLUX_MAX_BATCH[model]


def progress_gain(model: str, total: float, base_total: float, done: float) -> float:
    """The progress one iteration at total batch ``total`` makes, in iterations at ``base_total`` (the batch a
    job's work is stated at), when the fraction ``done`` of its training is done: the samples' ratio times the
    efficiency ratio, ``total / base x EFFICIENCY(total) / EFFICIENCY(base) = total / base x (phi + base) /
    (phi + total)`` (Pollux eq. 5 relative to the stated batch instead of ``M0``); ``total / base`` (samples
    only) for a model with no noise data. Exactly 1 at ``total == base_total``."""
    if total == base_total:
        return 1.0
    ratio = float(total) / float(base_total)
    if not has_efficiency(model):
        return ratio
    return ratio * float(efficiency(total, base_total, noise_scale(model, done)))


def efficiency(batch: np.ndarray | float, init_batch: float, phi: float) -> np.ndarray:
    """Pollux's statistical efficiency of total batch ``batch`` against ``init_batch`` at noise scale ``phi``:
    ``(phi + M0) / (phi + M)`` (1 at ``M = M0``). Written as AdaScale's gain over the scale, as Pollux computes
    it: ``gain = (var + sqr) / (var / scale + sqr)``, ``scale = M / M0``, ``phi = M0 var / sqr``."""
    m = np.asarray(batch, dtype=float)
    return (float(phi) + float(init_batch)) / (float(phi) + m)


def validated_iterations(model: str, batch: float) -> float:
    """Pollux's steps for a job held at total batch ``batch``: :data:`POLLUX_ITERATIONS`, interpolated linearly
    between the validated batches around it (clamped to the validated range)."""
    table = POLLUX_ITERATIONS[model]
    xs = np.array(sorted(table), dtype=float)
    ys = np.array([table[int(b)] for b in xs], dtype=float)
    return float(np.interp(float(batch), xs, ys))


def summarise_validation(trace_dir: Path, max_epochs: int, parts: int = 10
                         ) -> tuple[int, int, tuple[float, ...], dict[int, int]]:
    """Derive, from one application's folder of Pollux's ``simulator/traces`` (its ``validation-<M>.csv``
    files), ``(init_batch, max_batch, phi per part, steps per batch)`` as the constants above were."""
    import pandas as pd

    runs = {int(p.stem.split("-")[-1]): pd.read_csv(p) for p in sorted(Path(trace_dir).glob("validation-*.csv"))}
    if not runs:
        raise ValueError(f"{trace_dir}: no validation-*.csv files")
    batches = sorted(runs)
    m0 = batches[0]
    with np.errstate(divide="ignore"):
        phi = np.array([[m0 * runs[b]["grad_var"][e] / runs[b]["grad_sqr"][e] for b in batches]
                        for e in range(max_epochs)])
    curve = tuple(float(np.median(phi[idx])) for idx in np.array_split(np.arange(max_epochs),
                                                                         min(parts, max_epochs)))
    edges = [0.0] + [min(float(runs[b]["progress"][e]) for b in batches) for e in range(max_epochs)]
    iters = {}
    for b in batches:
        sqr = runs[b]["grad_sqr"].to_numpy(float)[:max_epochs]
        var = runs[b]["grad_var"].to_numpy(float)[:max_epochs]
        scale = b / m0
        gain = (var + sqr) / (var / scale + sqr)
        iters[b] = int(round(float(np.sum(np.diff(edges) / gain))))
    return m0, batches[-1], curve, iters
