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
* :data:`POLLUX_ITERATIONS`: iterations the validation run at batch ``M`` took to reach the application's
  last epoch (``max_epochs`` of ``applications.py``), i.e. how many steps of a job held at batch ``M`` Pollux's
  simulator runs (its ``get_configurations`` uses exactly this count).
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
    "bert": {12: 14774, 24: 7427, 48: 3732, 96: 1885, 192: 940, 384: 480},
    "cifar10": {128: 39062, 256: 20377, 512: 10615, 1024: 5722, 2048: 3178, 4096: 2011},
    "deepspeech2": {20: 28536, 40: 14711, 80: 7683, 160: 4041, 320: 2264, 640: 1423},
    "imagenet": {200: 576525, 400: 292995, 800: 150231, 1600: 78453, 3200: 42123, 6400: 23972, 12800: 14461},
    "ncf": {256: 194174, 512: 97094, 1024: 48625, 2048: 24308, 4096: 12172, 8192: 6122, 16384: 3069,
            32768: 1548},
    "yolov3": {8: 103444, 16: 52905, 32: 27430, 64: 14577, 128: 8075, 256: 4809, 512: 3143},
}
"""Iterations to the last epoch of the validation run at each batch (module docstring)."""


def has_efficiency(model: str) -> bool:
    """Whether Pollux measured ``model``'s gradient noise (one of its six applications)."""
    return model in POLLUX_PGNS


def noise_scale(model: str, done: float) -> float:
    """``phi`` of ``model`` when the fraction ``done`` (0..1) of its training is done: the value of the part of
    :data:`POLLUX_PGNS` that ``done`` falls in."""
    curve = POLLUX_PGNS[model]
    k = min(len(curve) - 1, max(0, int(math.floor(float(done) * len(curve)))))
    return float(curve[k])


def efficiency(batch: np.ndarray | float, init_batch: float, phi: float) -> np.ndarray:
    """Pollux's statistical efficiency of total batch ``batch`` against ``init_batch`` at noise scale ``phi``:
    ``(phi + M0) / (phi + M)`` (1 at ``M = M0``). Written as AdaScale's gain over the scale, as Pollux computes
    it: ``gain = (var + sqr) / (var / scale + sqr)``, ``scale = M / M0``, ``phi = M0 var / sqr``."""
    m = np.asarray(batch, dtype=float)
    return (float(phi) + float(init_batch)) / (float(phi) + m)


def validated_iterations(model: str, batch: float) -> float:
    """Pollux's steps for a job held at total batch ``batch``: :data:`POLLUX_ITERATIONS`, interpolated linearly
    between the validated batches around it as Pollux's simulator does (clamped to the validated range)."""
    table = POLLUX_ITERATIONS[model]
    xs = np.array(sorted(table), dtype=float)
    ys = np.array([table[int(b)] for b in xs], dtype=float)
    return float(np.interp(float(batch), xs, ys))


def summarise_validation(trace_dir: Path, max_epochs: int, parts: int = 10
                         ) -> tuple[int, int, tuple[float, ...], dict[int, int]]:
    """Derive, from one application's folder of Pollux's ``simulator/traces`` (its ``validation-<M>.csv``
    files), ``(init_batch, max_batch, phi per part, iterations per batch)`` as the constants above were."""
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
    iters = {b: int(runs[b]["iteration"][max_epochs - 1]) for b in batches}
    return m0, batches[-1], curve, iters
