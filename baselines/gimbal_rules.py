"""Gimbal's packing constraints (gimbal §5.1) and job packing sets, as read-only functions over the view.

* **Two jobs per GPU** (the engine's own rule).
* **Optimal topology**: a job sits on the theoretically smallest number of nodes, ``ceil(n / gpus per node)``
  (:func:`optimal_topology`).
* **No cascades**: a job may share GPUs only with one job of a larger world size, or, with equal world sizes,
  only in balanced co-location (the very same GPUs). Then every connected group of sharing jobs is a
  **job packing set** (:class:`JobSet`): one job of the largest world size, ``J_max``, shares with every
  other member, and the others share only with it (:func:`packing_sets`, :func:`colocation_allowed`).

:func:`violations` checks the whole cluster against the rule (tests assert it stays empty under Gimbal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..engine.view import ClusterView


@dataclass(frozen=True)
class JobSet:
    """A job packing set: ``jmax`` (largest world size; ties: the lowest index) and the jobs sharing its GPUs,
    by index."""

    jmax: int
    others: tuple[int, ...]

    @property
    def jobs(self) -> tuple[int, ...]:
        """Every member, ``jmax`` first."""
        return (self.jmax, *self.others)


def gpus_per_node(view: ClusterView) -> int:
    """GPUs of the largest node (the unit of the optimal-topology rule)."""
    return int(np.bincount(view.gpu_node).max())


def optimal_topology(view: ClusterView, gpus: np.ndarray | list[int]) -> bool:
    """Whether ``gpus`` span the smallest number of nodes a gang of that size can (gimbal §5.1)."""
    g = np.asarray(gpus, dtype=np.int64)
    nodes = len(np.unique(view.gpu_node[g]))
    return nodes <= math.ceil(len(g) / gpus_per_node(view))


def packing_sets(view: ClusterView) -> list[JobSet]:
    """The job packing sets of the running jobs that share at least one GPU, ordered by ``jmax``."""
    seen: set[int] = set()
    out: list[JobSet] = []
    for j in view.running_jobs().tolist():
        if j in seen or not view.partners_of(j):
            continue
        comp, stack = {j}, [j]
        while stack:
            for p in view.partners_of(stack.pop()):
                if p not in comp:
                    comp.add(p)
                    stack.append(p)
        seen |= comp
        jmax = min(comp, key=lambda x: (-int(view.req_gpus[x]), x))
        out.append(JobSet(jmax, tuple(sorted(comp - {jmax}))))
    out.sort(key=lambda s: s.jmax)
    return out


def can_host(view: ClusterView, p: int) -> bool:
    """Whether running job ``p`` may take a new partner: it shares with no job of a larger world size and with
    none of its own size (then it is alone or the ``J_max`` of its set)."""
    n = int(view.req_gpus[p])
    return all(int(view.req_gpus[q]) < n for q in view.partners_of(p))


def colocation_allowed(view: ClusterView, j: int, gpus: np.ndarray | list[int]) -> bool:
    """Whether pending job ``j`` may start on ``gpus`` under gimbal §5.1: optimal topology; every GPU free or
    held by one job ``p``, the same ``p`` on all shared GPUs; ``p`` may host (:func:`can_host`); ``p`` is
    larger than ``j``, or of the same size and on exactly the same GPUs (balanced co-location)."""
    g = np.asarray(gpus, dtype=np.int64)
    if len(g) != int(view.req_gpus[j]) or not optimal_topology(view, g):
        return False
    ten = view.tenants(g)
    if (ten[:, 1] >= 0).any():
        return False
    held = np.unique(ten[:, 0][ten[:, 0] >= 0])
    if len(held) == 0:
        return True
    if len(held) > 1:
        return False
    p = int(held[0])
    if not can_host(view, p):
        return False
    n_j, n_p = int(view.req_gpus[j]), int(view.req_gpus[p])
    if n_p > n_j:
        return True
    return n_p == n_j and set(g.tolist()) == set(view.gpus_of(p).tolist())


def violations(view: ClusterView) -> list[str]:
    """Every breach of gimbal §5.1 among the running jobs (empty when the rule holds), one line each."""
    out: list[str] = []
    for j in view.running_jobs().tolist():
        if not optimal_topology(view, view.gpus_of(j)):
            out.append(f"job {j} spans more nodes than its {int(view.req_gpus[j])} GPUs need")
    for s in packing_sets(view):
        n_max = int(view.req_gpus[s.jmax])
        for o in s.others:
            partners = view.partners_of(o)
            if partners != [s.jmax]:
                out.append(f"job {o} shares with {partners}, not only with J_max {s.jmax}")
            n_o = int(view.req_gpus[o])
            if n_o > n_max or (n_o == n_max and set(view.gpus_of(o).tolist()) != set(view.gpus_of(s.jmax).tolist())):
                out.append(f"job {o} ({n_o} GPUs) shares unevenly with J_max {s.jmax} ({n_max} GPUs)")
    return out


def host_gpus(view: ClusterView, j: int, p: int) -> np.ndarray | None:
    """GPUs for pending job ``j`` among the GPUs running job ``p`` alone, fewest nodes first (whole nodes of
    ``p`` before partial ones), that satisfy :func:`colocation_allowed`; None when there are none."""
    need = int(view.req_gpus[j])
    singles = view.single_gpus_of(p)
    if len(singles) < need:
        return None
    nodes = view.gpu_node[singles]
    per_node = {int(n): int((nodes == n).sum()) for n in np.unique(nodes)}
    order = sorted(range(len(singles)), key=lambda i: (-per_node[int(nodes[i])], int(nodes[i]), int(singles[i])))
    g = np.sort(singles[order[:need]])
    return g if colocation_allowed(view, j, g) else None
