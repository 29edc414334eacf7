"""The set of jobs that should run, as the preemptive queue policies compute it (SRSF, Tiresias): walk the jobs in
priority order and take each that fits in the GPUs left."""

from __future__ import annotations

import numpy as np


def greedy_fit(req: np.ndarray, cap: int) -> np.ndarray:
    """Which of the jobs asking ``req`` GPUs, walked in order, fit in ``cap`` GPUs when each that fits is taken (a
    mask). Whole prefixes that fit are taken at once, then each further job that fits the GPUs left, so the work
    is one pass over the jobs plus one array scan per later take."""
    take = np.zeros(req.size, dtype=bool)
    i = 0
    while i < req.size and cap > 0:
        fits = np.flatnonzero(req[i:] <= cap)
        if not fits.size:
            break
        i += int(fits[0])
        run = np.cumsum(req[i:])
        n = int(np.searchsorted(run, cap, side="right"))  # the prefix from i that fits whole (n >= 1)
        take[i:i + n] = True
        cap -= int(run[n - 1])
        i += n
    return take
