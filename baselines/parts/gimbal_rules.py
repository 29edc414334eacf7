"""Gimbal's packing constraints (gimbal §5.1) as the packing schedulers use them, and job packing sets.

The rule itself -- two jobs per GPU, every job on the fewest nodes, a job packs only on one larger job (all its
GPUs shared with it) that is not itself packed on a larger one, equal world sizes only balanced -- has one
implementation, the engine's ``topology_violation`` (enforced on every start when a scenario sets
``EngineConfig.topology_rule``). Agents ask it through :class:`TopologyRule` before they act, so they never
send a start the rule forbids, whether the scenario enforces it or not.

Under the rule every connected group of sharing jobs is a **job packing set** (:class:`JobSet`): one job of the
largest world size, ``J_max``, shares with every other member, and the others share only with it
(:func:`packing_sets`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpucluster_env.engine import Colocate
from gpucluster_env.engine.view import ClusterView


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


class TopologyRule:
    """The engine's topology rule as a read-only question: may pending job ``j`` start on ``gpus``? A policy
    that does not relax packing (``relaxed`` False) follows it only where the scenario enforces it
    (``EngineConfig.topology_rule``); otherwise every start is allowed."""

    def __init__(self, view: ClusterView, relaxed: bool = True) -> None:
        self._why = view.topology_violation
        self.on = bool(relaxed or view.topology_rule)

    def violation(self, j: int, gpus: np.ndarray | list[int]) -> str | None:
        """Why starting ``j`` on ``gpus`` would break the rule, or None (always None when the rule is off)."""
        if not self.on:
            return None
        return self._why(j, gpus)

    def allows(self, j: int, gpus: np.ndarray | list[int]) -> bool:
        """Whether starting ``j`` on ``gpus`` keeps the rule."""
        return self.violation(j, gpus) is None


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


def host_gpus(view: ClusterView, rule: TopologyRule, j: int, p: int) -> np.ndarray | None:
    """GPUs for pending job ``j`` among the GPUs running job ``p`` alone -- whole nodes of ``p`` first, so the
    job spans as few nodes as it can -- when the topology rule allows them; None otherwise."""
    need = int(view.req_gpus[j])
    singles = view.single_gpus_of(p)
    if len(singles) < need:
        return None
    nodes = view.gpu_node[singles]
    per_node = {int(n): int((nodes == n).sum()) for n in np.unique(nodes)}
    order = sorted(range(len(singles)), key=lambda i: (-per_node[int(nodes[i])], int(nodes[i]), int(singles[i])))
    g = np.sort(singles[order[:need]])
    return g if rule.allows(j, g) else None


def partner_gpus(view: ClusterView, rule: TopologyRule, j: int, p: int, unequal: bool) -> np.ndarray | None:
    """The GPUs pending job ``j`` would take beside running job ``p`` in Lucid's and Gandiva's packing: all of
    ``p``'s GPUs when ``p`` has ``j``'s size and runs alone (their only packing), or, with ``unequal`` (Gimbal's
    relaxation), GPUs of a larger ``p`` by :func:`host_gpus`; only what the ``rule`` allows."""
    n_j, n_p = int(view.req_gpus[j]), int(view.req_gpus[p])
    if n_p == n_j:
        if view.partners_of(p):
            return None
        g = np.sort(view.gpus_of(p))
        return g if rule.allows(j, g) else None
    if unequal and n_p > n_j:
        return host_gpus(view, rule, j, p)
    return None


def host_types(view: ClusterView, jobs: np.ndarray) -> np.ndarray:
    """The GPU type index of each of ``jobs`` when every GPU it runs on is of one type, else -1 (mixed types
    or no GPU)."""
    slots = view.tenants(np.arange(view.num_gpus))  # (GPUs, 2)
    held = slots >= 0
    n_types = int(view.gpu_type.max()) + 1
    pairs = np.unique(slots[held] * n_types + np.broadcast_to(view.gpu_type[:, None], slots.shape)[held])
    holder, kinds = np.divmod(pairs, n_types)  # (job, type) pairs held, by job
    at = np.searchsorted(holder, jobs)
    found = np.minimum(at, max(len(holder) - 1, 0))
    one = (at < len(holder)) & (holder[found] == jobs) & (np.searchsorted(holder, jobs, side="right") - at == 1)
    return np.where(one, kinds[found] if len(kinds) else -1, -1)


def least_utilized_host(view: ClusterView, rule: TopologyRule, j: int, unequal: bool,
                        demand: Callable[[int, int], float], skip: Callable[[int], bool] | None = None
                        ) -> Colocate | None:
    """Gandiva's packing choice for pending job ``j``, also Gavel+Gimbal's: beside the running job of least
    profiled ``demand(job, gpu_type)`` among those :func:`partner_gpus` offers (ties: the first running job)
    where ``j`` fits in memory at accumulation 1, hosts for which ``skip`` says True left out; None: no host.

    Only running jobs of a size :func:`partner_gpus` can offer are asked. A host whose GPUs are all of one type
    has its demand known before its GPUs are chosen (they are some of its own), so those hosts are asked in
    increasing (demand, running order) and the first that qualifies is the least utilized of them; hosts on
    mixed types are asked in full, and so is every host if a demand is NaN (no order to walk)."""
    run = view.running_jobs()
    n_j, n_p = int(view.req_gpus[j]), view.req_gpus[run]
    pos = np.flatnonzero((n_p == n_j) | ((n_p > n_j) & unequal)).tolist()
    if skip is not None:
        pos = [i for i in pos if not skip(int(run[i]))]
    tp = host_types(view, run[pos]).tolist() if pos else []
    known = sorted((demand(int(run[i]), t), i) for i, t in zip(pos, tp, strict=True) if t >= 0)
    best = _scan(view, rule, j, unequal, demand, run, [i for i, t in zip(pos, tp, strict=True) if t < 0])
    if any(math.isnan(u) for u, _ in known) or (best is not None and math.isnan(best[0])):
        known, best = [], _scan(view, rule, j, unequal, demand, run, pos)
    for u, i in known:
        if best is not None and (best[0], best[1]) < (u, i):
            break
        g = _host_gpus(view, rule, j, unequal, int(run[i]))
        if g is not None:
            best = (u, i, g)
            break
    if best is None:
        return None
    return Colocate(j, int(run[best[1]]), accumulation=1, gpus=tuple(int(x) for x in best[2]))


def _host_gpus(view: ClusterView, rule: TopologyRule, j: int, unequal: bool, p: int) -> np.ndarray | None:
    """:func:`partner_gpus` of ``j`` beside ``p`` where ``j`` fits in memory at accumulation 1, else None."""
    g = partner_gpus(view, rule, j, p, unequal)
    return None if g is None or not view.fits_on(j, g, 1).all() else g


def _scan(view: ClusterView, rule: TopologyRule, j: int, unequal: bool, demand: Callable[[int, int], float],
          run: np.ndarray, pos: list[int]) -> tuple[float, int, np.ndarray] | None:
    """The host of least demand among the running jobs at positions ``pos`` (in running order; the first of
    equals), as ``(demand, position, GPUs)``; None: none qualifies."""
    best: tuple[float, int, np.ndarray] | None = None
    for i in pos:
        p = int(run[i])
        g = _host_gpus(view, rule, j, unequal, p)
        if g is None:
            continue
        u = demand(p, int(view.gpu_type[g[0]]))
        if best is None or u < best[0]:
            best = (u, i, g)
    return best
