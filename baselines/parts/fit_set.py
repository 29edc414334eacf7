"""The set of jobs that should run, as the preemptive queue policies compute it (SRSF, Tiresias): walk the jobs in
priority order and take each that fits in the GPUs left (:func:`greedy_fit`), then move the cluster toward that set
one action at a time (:func:`move_toward`)."""

from __future__ import annotations

import numpy as np

from gpucluster_env.engine import Action, Place, Preempt, Wait
from gpucluster_env.engine.view import ClusterView


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


def move_toward(view: ClusterView, jobs: np.ndarray, running: np.ndarray, desired: np.ndarray) -> Action:
    """The next move toward running exactly the ``desired`` ones of ``jobs`` (in priority order; ``running`` marks
    those running now): start the first desired waiting job the engine can place now; else, while a desired job
    waits, preempt the lowest-priority running job outside the set; else wait."""
    to_start = jobs[desired & ~running].tolist()
    if not to_start:
        return Wait()
    for j in to_start:
        if view.plan_place(j) is not None:
            return Place(j)
    victims = jobs[~desired & running]
    return Preempt(int(victims[-1])) if victims.size else Wait()
