"""Castor's pair terms kept across decisions (castor §5 Algorithm 2's inputs): each running partner's run, the
pair classes (what the terms read of a partner's run and of the GPUs a pending job would use beside it) with
their term-store rows by pending-job shape, shared by every pair alike (:class:`PairTermCache`), and the terms'
two halves (the partner's own times, the pending job's side) kept by what each reads."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from gpucluster_env.baselines.parts.castor_pairs import TermStore

from gpucluster_env.engine.view import ClusterView


def ended(view: ClusterView, kept: dict[int, Any]) -> list[int]:
    """The jobs ``kept`` holds (in its order) that are no longer running: one array read, not a call a job."""
    jobs = np.fromiter(kept, dtype=np.int64, count=len(kept))
    return jobs[~view.running_of(jobs)].tolist()


def shape_ids(view: ClusterView) -> tuple[np.ndarray, np.ndarray]:
    """Each job's shape id (jobs of one model, per-GPU batch, sample stealing and number of GPUs asked share
    one) and each shape's GPUs asked."""
    keys = np.array([(view.model_index(j), view.batch(j), view.stealing(j)) for j in range(view.n_jobs)],
                    dtype=np.int64).reshape(-1, 3)
    ids = np.unique(np.column_stack([keys, view.req_gpus]), axis=0, return_inverse=True)[1].reshape(-1)
    need = np.zeros(int(ids.max()) + 1, dtype=np.int64)
    need[ids] = view.req_gpus
    return ids, need


class ClassParts(NamedTuple):
    """What the terms of a pair class read, as keys (:meth:`PairTermCache.class_of`)."""

    gtype: int
    """The type of the first GPU the partner holds (the ratios' GPU type)."""
    job: tuple[Any, ...]
    """What a pending job's side reads besides its shape: the partner's model and footprint, the GPUs' types
    (bytes), how many nodes they span, which of them the partner holds (bytes)."""
    own: tuple[Any, ...]
    """What the partner's own slowed time reads besides the ratio: its run, which of its GPUs are shared (bytes)."""
    foreign: bool
    """A GPU held by another job (never, by the colocation rule): the job's side (its memory) is not kept."""


class PairTermCache:
    """The pair terms of a Castor episode: the rows of :attr:`store` by pair class (an id for what the terms
    read of a partner's run and of the GPUs a pending job would use beside it, :meth:`class_of`) and job shape,
    in one table (:attr:`rows`), with what each class's terms read (:attr:`parts`) and the terms' halves kept
    by those keys."""

    def __init__(self) -> None:
        self.store = TermStore()
        self.rows = np.zeros((1, 0), dtype=np.int64)
        """Term-store rows by (pair class, job shape); -1: not yet known. Class 0 stands for "no class known"
        (its row 0: no terms), so a gather through an unknown class reads a row that rejects nothing."""
        self.parts: list[ClassParts | None] = [None]
        """By pair class: what its terms read (None: the partner holds none of the GPUs, so no terms)."""
        self.job_sides: dict[tuple[Any, ...], Any] = {}
        """A pending job's side of its pair terms by its shape and :attr:`ClassParts.job`."""
        self.own: dict[Any, float] = {}
        """A partner's own iteration times, alone by its run, slowed by ``(ClassParts.own, ratio)``."""
        self.alone: dict[tuple[Any, ...], float] = {}
        """A pending job's iteration time alone by its shape, GPUs (types, nodes) and accumulation."""
        self._runs: dict[int, tuple[float, tuple[Any, ...], dict[bytes, int]]] = {}
        self._by_key: dict[tuple[Any, ...], int] = {}

    def forget_ended(self, view: ClusterView) -> None:
        """Forget the runs that ended (their classes stay, by key, for pairs alike)."""
        for p in ended(view, self._runs):
            del self._runs[p]

    def n_runs(self) -> int:
        """How many partners' runs are kept (some may have ended)."""
        return len(self._runs)

    def run_of(self, view: ClusterView, p: int) -> tuple[tuple[Any, ...], dict[bytes, int]]:
        """Running job ``p``'s current run: what the pair terms read of it (its model, batch, accumulation,
        footprint, sample stealing, and its GPUs' types and nodes) and its pair classes, kept by the GPUs a
        pending job would use."""
        start = view.last_start(p)
        entry = self._runs.get(p)
        if entry is None or entry[0] != start:
            gp = view.gpus_of(p)
            run = (view.model_index(p), view.batch(p), view.accumulation(p), view.footprint(p), view.stealing(p),
                   view.gpu_type[gp].tobytes(), len(set(view.gpu_node[gp].tolist())))
            entry = self._runs[p] = (start, run, {})
        return entry[1], entry[2]

    def class_of(self, view: ClusterView, p: int, gb: np.ndarray, n_shapes: int) -> int:
        """The pair class (a row of :attr:`rows`, ``n_shapes`` wide) of pending jobs on ``gb`` beside running
        job ``p``. The terms read of ``gb`` only its GPUs' types, how many nodes they span, which of them ``p``
        holds (the others are free: the colocation rule takes no other GPU) and which of ``p``'s GPUs they
        are, so pairs alike in that and in ``p``'s run (:meth:`run_of`) share their class, across partners and
        runs (the predicted ratios read the two models and the GPU type alone). A GPU of ``gb`` held by
        another job (never, by the rule) keys the class to this run alone."""
        run, kept = self.run_of(view, p)
        gkey = gb.tobytes()
        k = kept.get(gkey)
        if k is None:
            ten = view.tenants(gb)[:, 0]
            held = ten == p
            types, nodes = view.gpu_type[gb], len(set(view.gpu_node[gb].tolist()))
            mine = (view.gpus_of(p)[:, None] == gb).any(axis=1)  # which of p's GPUs are in gb
            alike = (run, types.tobytes(), held.tobytes(), nodes, mine.tobytes())
            foreign = bool(((ten != p) & (ten >= 0)).any())
            key = (alike, p, view.last_start(p), gkey, ten.tobytes()) if foreign else alike
            k = self._by_key.get(key)
            if k is None:
                k = self._by_key[key] = self._new_class(n_shapes)
                self.parts.append(ClassParts(int(types[held][0]), (run[0], run[3], *alike[1:4]), (run, alike[4]),
                                             foreign) if held.any() else None)
            kept[gkey] = k
        return k

    def _new_class(self, n_shapes: int) -> int:
        """A fresh row of :attr:`rows` (every shape unknown), the table grown when full."""
        k = len(self._by_key) + 1
        if k >= len(self.rows) or self.rows.shape[1] != n_shapes:
            grown = np.full((max(64, 2 * k), n_shapes), -1, dtype=np.int64)
            grown[0] = 0
            if self.rows.shape[1] == n_shapes:
                grown[:len(self.rows)] = self.rows
            self.rows = grown
        return k
