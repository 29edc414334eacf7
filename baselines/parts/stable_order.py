"""A stable sort of a short key inside compiled code: the one insertion sort the numba kernels of Hadar's
FIND_ALLOC (:mod:`.hadar_find`) and Pollux's genetic search (:mod:`.pollux_ga`) share. For a few keys it beats
``np.argsort`` (no allocation), and a stable order keeps ties by index, as ``np.argsort(kind="stable")`` does."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, error_model="numpy", boundscheck=False)
def key_order(keys: np.ndarray, order: np.ndarray) -> None:
    """``order`` := the indices of ``keys`` in increasing key order, ties by index (a stable sort)."""
    for a in range(len(keys)):
        order[a] = a
    for a in range(1, len(keys)):
        x = order[a]
        b = a - 1
        while b >= 0 and keys[order[b]] > keys[x]:
            order[b + 1] = order[b]
            b -= 1
        order[b + 1] = x
