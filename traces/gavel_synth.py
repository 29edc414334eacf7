"""Gavel-generated traces (Narayanan et al., OSDI'20 §7): the job generator of Gavel's simulator.

Each job draws, independently: its GPU count from Gavel's Philly-derived distribution (1: 70 %, 2: 10 %,
4: 15 %, 8: 5 %); its job type uniformly among Gavel's 26 job types (7 model families at their measured batch
sizes), redrawn until the type can run distributed when the job asks for more than one GPU (Gavel: ResNet-18,
ResNet-50, Transformer and LM can; A3C, CycleGAN and Recommendation cannot); its run time on one reference
V100 gang, ``60 * 10 ** U(1.5, 3)`` s with probability 0.8 and ``60 * 10 ** U(3, 4)`` s otherwise; arrivals are
a Poisson process of ``rate_per_hour`` jobs per hour. Steps follow from the run time on the reference GPU (the
engine's job table does that with the catalog, whose V100/P100/K80 speeds come from Gavel's measured
throughputs, ``profiles/gavel``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

GAVEL_JOB_TYPES: tuple[tuple[str, int, bool], ...] = (
    *(("resnet18", b, True) for b in (16, 32, 64, 128, 256)),
    *(("resnet50", b, True) for b in (16, 32, 64, 128)),
    *(("transformer", b, True) for b in (16, 32, 64, 128, 256)),
    *(("lm", b, True) for b in (5, 10, 20, 40, 80)),
    *(("recommendation", b, False) for b in (512, 1024, 2048, 4096, 8192)),
    ("a3c", 1, False),
    ("cyclegan", 1, False),
)
"""Gavel's job types: (catalog model, per-GPU batch, may run on several GPUs)."""

GAVEL_GPU_COUNTS = ((1, 0.7), (2, 0.1), (4, 0.15), (8, 0.05))
"""Gavel's GPU-count distribution (from Philly): (GPUs, probability)."""

DEFAULT_RATE_PER_HOUR = 1.5
"""Arrival rate of the ``gavel`` scenario (jobs per hour) at ``load`` 1: X with
Gavel's mean job of some 32 GPU-hours."""


def gavel_raw(n: int, rng: np.random.Generator, rate_per_hour: float = DEFAULT_RATE_PER_HOUR) -> pd.DataFrame:
    """``n`` jobs from Gavel's generator (module docstring): ``job_id``, ``submit_s``, ``num_gpus``,
    ``duration_s`` (on the reference V100), ``model`` and ``batch_size``."""
    if n < 1:
        raise ValueError(f"n: at least one job, got {n}")
    if not rate_per_hour > 0:
        raise ValueError(f"rate_per_hour: must be positive, got {rate_per_hour}")
    counts = np.array([c for c, _ in GAVEL_GPU_COUNTS])
    gpus = rng.choice(counts, n, p=[p for _, p in GAVEL_GPU_COUNTS])
    dist = np.flatnonzero([d for _, _, d in GAVEL_JOB_TYPES])
    anyt = np.arange(len(GAVEL_JOB_TYPES))
    kind = np.where(gpus > 1, dist[rng.integers(0, len(dist), n)], anyt[rng.integers(0, len(anyt), n)])
    long = rng.random(n) >= 0.8
    expo = np.where(long, rng.uniform(3.0, 4.0, n), rng.uniform(1.5, 3.0, n))
    gaps = rng.exponential(3600.0 / rate_per_hour, n)
    gaps[0] = 0.0
    return pd.DataFrame(
        {
            "job_id": [f"gavel-{i:05d}" for i in range(n)],
            "submit_s": np.cumsum(gaps),
            "num_gpus": gpus.astype(np.int64),
            "duration_s": 60.0 * 10.0 ** expo,
            "model": [GAVEL_JOB_TYPES[k][0] for k in kind],
            "batch_size": np.array([GAVEL_JOB_TYPES[k][1] for k in kind], dtype=np.int64),
        }
    )
