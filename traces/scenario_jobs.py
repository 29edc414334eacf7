"""Build a scenario's job table for a seed: pick the trace source, sample, annotate.

Each source returns a raw table (``job_id``, ``submit_s``, ``num_gpus``, ``duration_s``) and a note saying
which trace was used (a real file, or a synthetic trace fitted to the real one's statistics).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..catalog import Catalog
from .annotate import gimbal_deadlines, to_job_table

if TYPE_CHECKING:
    from ..scenarios import Scenario


def _tiny_raw(sc: Scenario, rng: np.random.Generator) -> pd.DataFrame:
    """The tiny scenario's own small synthetic trace: Poisson arrivals (mean gap 90 s), mostly 1-GPU jobs,
    log-normal durations with median 15 minutes."""
    n = sc.num_jobs
    gaps = rng.exponential(90.0 / sc.load, n)
    gaps[0] = 0.0
    return pd.DataFrame(
        {
            "job_id": [f"tiny-{i:03d}" for i in range(n)],
            "submit_s": np.cumsum(gaps),
            "num_gpus": rng.choice([1, 1, 1, 2, 4], n),
            "duration_s": np.clip(rng.lognormal(np.log(900.0), 1.0, n), 60.0, 6 * 3600.0),
        }
    )


def build_jobs(sc: Scenario, seed: int, catalog: Catalog) -> tuple[pd.DataFrame, str]:
    """The engine job table for scenario ``sc`` and ``seed``, and a note naming the trace used."""
    rng = np.random.default_rng(seed)
    if sc.trace == "tiny":
        raw, note = _tiny_raw(sc, rng), "synthetic tiny trace (embedded generator)"
    else:
        raise ValueError(f"scenario {sc.name!r}: trace source {sc.trace!r} is not available yet")
    if sc.all_at_zero:
        raw = raw.assign(submit_s=0.0)
    models = rng.choice(np.array(sc.models, dtype=object), len(raw))
    deadlines = gimbal_deadlines(raw, rng) if sc.deadlines else None
    return to_job_table(raw, models, catalog, deadlines), note
