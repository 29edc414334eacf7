"""What Gavel's rate programs share (:mod:`.gavel_lp` and :mod:`.gavel_partner_lp`): their inputs' checks
and the solution record, kept apart so that neither LP module imports the other's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RateLP:
    """The solution of one packed or unpacked rate program: the scale ``z`` every served job's demand reached,
    each job's single-job fractions ``x`` (jobs x types), and with space sharing ``pairs`` (P x 2) with ``y``
    (P x types). From :func:`max_scaled_rate` the pairs are class pairs (class ids, ``a <= b``) and ``y`` the
    total time fraction of all job pairs of those two classes on each type (spread evenly over the pairs: a job
    of class ``a`` spends ``y / count(a)`` of its time paired with class ``b``, twice that when ``a == b``); from
    :func:`.gavel_partner_lp.packed_rate` they are job pairs (first < second) and ``y`` each pair's time."""

    z: float
    x: np.ndarray
    pairs: np.ndarray
    y: np.ndarray


def check_inputs(throughputs: np.ndarray, gpus: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, ...]:
    """The inputs as float arrays (jobs x types throughputs, GPUs per job, GPUs per type), or a ValueError
    naming the argument that is malformed."""
    t = np.asarray(throughputs, dtype=float)
    if t.ndim != 2:
        raise ValueError(f"throughputs: expected a (jobs, types) matrix, got shape {t.shape}")
    g = np.asarray(gpus, dtype=float).reshape(-1)
    c = np.asarray(capacity, dtype=float).reshape(-1)
    if len(g) != t.shape[0]:
        raise ValueError(f"gpus: expected {t.shape[0]} values (one per job), got {len(g)}")
    if len(c) != t.shape[1]:
        raise ValueError(f"capacity: expected {t.shape[1]} values (one per GPU type), got {len(c)}")
    if (t < 0).any() or not np.isfinite(t).all():
        raise ValueError("throughputs: must be finite and >= 0")
    if (g <= 0).any():
        raise ValueError("gpus: every job asks for at least one GPU")
    if (c < 0).any():
        raise ValueError("capacity: must be >= 0")
    return t, g, c
