"""Castor's pair terms kept across decisions (castor §5 Algorithm 2's inputs): each running partner's run, its
own iteration times, and the term-store rows of pending-job shapes beside it, shared by every pair alike in what
the terms read (:class:`PairTermCache`)."""

from __future__ import annotations

from typing import Any

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


class PairTermCache:
    """The pair terms of a Castor episode: the rows of :attr:`store` by (partner run, GPUs a pending job would
    use, job shape), and each partner's own iteration times in its run."""

    def __init__(self) -> None:
        self.store = TermStore()
        self._runs: dict[int, tuple[float, tuple[Any, ...], dict[bytes, np.ndarray]]] = {}
        self._by_key: dict[tuple[Any, ...], np.ndarray] = {}
        self._own: dict[int, tuple[float, dict[Any, float]]] = {}

    def forget_ended(self, view: ClusterView) -> None:
        """Forget the runs that ended (their rows stay, by key, for pairs alike)."""
        for p in ended(view, self._runs):
            del self._runs[p]
            self._own.pop(p, None)

    def n_runs(self) -> int:
        """How many partners' runs are kept (some may have ended)."""
        return len(self._runs)

    def run_of(self, view: ClusterView, p: int) -> tuple[tuple[Any, ...], dict[bytes, np.ndarray]]:
        """Running job ``p``'s current run: what the pair terms read of it (its model, batch, accumulation,
        footprint, sample stealing, and its GPUs' types and nodes) and its rows by job shape, kept by the GPUs
        a pending job would use."""
        start = view.last_start(p)
        entry = self._runs.get(p)
        if entry is None or entry[0] != start:
            gp = view.gpus_of(p)
            run = (view.model_index(p), view.batch(p), view.accumulation(p), view.footprint(p), view.stealing(p),
                   view.gpu_type[gp].tobytes(), len(set(view.gpu_node[gp].tolist())))
            entry = self._runs[p] = (start, run, {})
        return entry[1], entry[2]

    def rows_by_shape(self, view: ClusterView, p: int, gb: np.ndarray, n_shapes: int) -> np.ndarray:
        """The term-store rows by job shape (-1: not yet known) of pending jobs on ``gb`` beside running job
        ``p``. The terms read of ``gb`` only its GPUs' types, how many nodes they span, which of them ``p``
        holds (the others are free: the colocation rule takes no other GPU) and which of ``p``'s GPUs they
        are, so pairs alike in that and in ``p``'s run (:meth:`run_of`) share their rows, across partners and
        runs (the predicted ratios read the two models and the GPU type alone). A GPU of ``gb`` held by
        another job (never, by the rule) keys the rows to this run alone."""
        run, kept = self.run_of(view, p)
        gkey = gb.tobytes()
        rows = kept.get(gkey)
        if rows is None:
            ten = view.tenants(gb)[:, 0]
            alike = (run, view.gpu_type[gb].tobytes(), (ten == p).tobytes(), len(set(view.gpu_node[gb].tolist())),
                     np.isin(view.gpus_of(p), gb).tobytes())
            if ((ten != p) & (ten >= 0)).any():
                alike = (alike, p, view.last_start(p), gkey, ten.tobytes())
            rows = self._by_key.get(alike)
            if rows is None:
                rows = self._by_key[alike] = np.full(n_shapes, -1, dtype=np.int64)
            kept[gkey] = rows
        return rows

    def own_times(self, view: ClusterView, p: int) -> dict[Any, float]:
        """Running job ``p``'s own iteration times in its current run, alone (key None) and slowed by ``xi``
        on the GPUs of a mask (key ``(xi, mask bytes)``): they read only ``p``'s run, fixed from its start."""
        start = view.last_start(p)
        entry = self._own.get(p)
        if entry is None or entry[0] != start:
            entry = self._own[p] = (start, {})
        return entry[1]
