"""What a clone of the engine's state shares and what it copies flat (:meth:`EngineState.shared_memo`).

A search agent clones the engine at many decision points (:meth:`ClusterEngine.clone`). ``copy.deepcopy`` walks
every container item by item; most of the state is plain data whose flat copy is already a deep one: the
per-job and per-GPU numpy arrays of numbers, the pending queue and running set (dicts of ints to None), the set
of forked jobs, the running copies' arrays, and the lists of the copies' constants (constants shared, never
changed in place). This module fills ``deepcopy``'s memo with those copies up front, so the deep copy finds them
there and walks only what is left (the event queue, per-copy progress, partner maps, counters): the same copy,
object for object (an object reached twice is copied once, as before), at a fraction of the cost.
"""

from __future__ import annotations

from typing import Any

import numpy as np

FLAT_CONTAINERS = ("pending_queue", "running_set", "forked_set", "batch_l")
"""The state's containers of plain ints (or None) only, whose shallow copy is a deep one."""


def _flat_array(a: Any) -> bool:
    """A numpy array that owns its numbers (not a view, not of Python objects): ``a.copy()`` deep-copies it."""
    return type(a) is np.ndarray and a.base is None and a.dtype != object


def clone_memo(state: Any, static_names: frozenset[str]) -> dict[int, Any]:
    """A ``copy.deepcopy`` memo for cloning ``state`` (an ``EngineState``): its static tables (``static_names``)
    and the running copies' constants as themselves, and a flat copy of every container and array the module
    docstring names."""
    d = state.__dict__
    memo: dict[int, Any] = {id(d[k]): d[k] for k in static_names}
    for k in FLAT_CONTAINERS:
        memo[id(d[k])] = d[k].copy()
    for v in d.values():
        if id(v) not in memo and _flat_array(v):
            memo[id(v)] = v.copy()
    consts: dict[int, list[Any]] = {}
    for j, cs in state.copy_consts.items():
        for c in cs:
            memo[id(c)] = c
        consts[j] = memo[id(cs)] = list(cs)
    memo[id(state.copy_consts)] = consts
    copies: dict[int, list[np.ndarray]] = {}
    for j, arrays in state.copies.items():
        if not all(_flat_array(a) for a in arrays):
            continue  # left to deepcopy
        twin = []
        for a in arrays:
            if id(a) not in memo:
                memo[id(a)] = a.copy()
            twin.append(memo[id(a)])
        copies[j] = memo[id(arrays)] = twin
    if len(copies) == len(state.copies):
        memo[id(state.copies)] = copies
    return memo
