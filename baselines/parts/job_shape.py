"""A pending job's shape as the packing schedulers' start questions see it, so a decision asks each shape once.

Where a pending job may start in one cluster state -- the engine's placement on free GPUs
(:meth:`~gpucluster_env.engine.view.ClusterView.plan_place`: GPUs asked, the types its model and batch fit),
Gimbal's topology rule (:class:`~.gimbal_rules.TopologyRule`: the number of GPUs), memory beside a partner
(``fits_on``: model and batch), profiled demand and harmful model pairs (the model) -- depends on the job only
through ``(GPUs asked, model, batch)``. Lucid, Gandiva and Gavel+Gimbal walk their queue in one state until a
job starts, so once a shape found nothing, the later jobs of that shape are skipped without asking again: the
same decision, without a scan of the running jobs per queued job.

:class:`FailedShapes` keeps those answers across decisions while the cluster state stays the same (the GPUs'
tenants, and whatever else the policy's start question reads, such as Gandiva's harmful pairs): a decision after
an arrival or a tick that changed nothing asks only the shapes not yet asked, and picks the jobs to ask over
arrays (one code per shape) instead of one Python call per queued job.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np

from gpucluster_env.engine.view import ClusterView


def start_shape(view: ClusterView, j: int) -> tuple[int, int, int]:
    """Job ``j``'s ``(GPUs asked, model index, per-GPU batch)``: all a start question reads of it."""
    return int(view.req_gpus[j]), view.model_index(j), view.batch(j)


def first_start(view: ClusterView, jobs: list[int], ask: Callable[[int], object | None]) -> tuple[int, object] | None:
    """The first of ``jobs`` (walked in order, in one cluster state) that ``ask`` answers, as ``(position,
    answer)``; each shape asked once (a later job of a shape that found nothing is skipped). None: none. For a
    walk that usually stops at its first job (:class:`FailedShapes` keeps answers across decisions instead)."""
    failed: set[tuple[int, int, int]] = set()
    for i, j in enumerate(jobs):
        if failed and start_shape(view, j) in failed:
            continue
        a = ask(j)
        if a is not None:
            return i, a
        failed.add(start_shape(view, j))
    return None


class FailedShapes:
    """The shapes that found nothing in the current cluster state, with the smallest priority key each was asked
    at (a policy whose start question also reads a job's priority, Lucid's time-ratio test, passes a job only
    when its key is below that; one without passes ``keys=None``: a shape asked once is done in that state).

    Each pending job's shape is coded once, when first seen pending (a pending job runs at its stated batch: a
    batch set by ``Reallocate`` lasts only while the job runs). The state is the GPUs' tenants (read as the view's
    ``tenants_version``) and the policy's ``extra`` key; any change of either forgets every answer."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self._code = np.full(view.n_jobs, -1, dtype=np.int64)
        self._ids: dict[tuple[int, int, int], int] = {}
        self._floor = np.zeros(0)  # by shape code: the smallest key it failed at (inf: not failed)
        self._state: tuple[tuple[int, int], Hashable] | None = None
        self._version: tuple[int, int] | None = None  # the view's tenants_version at the last walk
        self._extra: Hashable = None
        self._idle: tuple[object, np.ndarray, np.ndarray | None] | None = None  # a walk that found nothing: its
        # state, queue and keys

    def codes(self, jobs: np.ndarray) -> np.ndarray:
        """Shape codes of pending ``jobs`` (one per ``(GPUs asked, model, batch)``), coding the ones never seen."""
        c = self._code[jobs]
        if len(c) and c.min() < 0:
            v = self.view
            for j in jobs[c < 0].tolist():
                self._code[j] = self._ids.setdefault(start_shape(v, j), len(self._ids))
            if len(self._ids) > len(self._floor):
                self._floor = np.concatenate([self._floor, np.full(len(self._ids) - len(self._floor), np.inf)])
            c = self._code[jobs]
        return c

    def code(self, j: int) -> int:
        """The shape code of pending job ``j``, once :meth:`codes` or :meth:`walk` has seen it pending."""
        return int(self._code[j])

    @property
    def state(self) -> tuple[tuple[int, int], Hashable] | None:
        """The state of the last :meth:`walk` (the view's ``tenants_version``, ``extra``): a new object whenever
        either moved."""
        return self._state

    def walk(self, order: np.ndarray, keys: np.ndarray | None, extra: Hashable,
             ask: Callable[[int], object | None],
             prepare: Callable[[np.ndarray], np.ndarray | None] | None = None) -> object | None:
        """Walk pending jobs ``order`` (with their priority ``keys`` in the same order, ascending, or None) in
        the current state: ``ask(j)`` for each job not known to find nothing, in order, until one answers
        (returned); a job that finds nothing marks its shape. None: nothing can start. ``prepare``: told first
        the jobs that may be asked, in order (a policy that works out their answers at once, over arrays); it
        may return a mask over them, False where the answer is known to be None (that job is not asked, and
        marks its shape as if it had been)."""
        version = self.view.tenants_version
        if version != self._version or extra != self._extra:
            # a new state at each move of the version (a start, stop or move: nearly always a change of the
            # tenants; a move that left them as they were only asks again what it asked, with the same answers)
            self._version, self._extra = version, extra
            self._state = (version, extra)
            self._floor[:] = np.inf
        if len(order) == 0:
            return None
        idle = self._idle  # the last walk found nothing in this very state over this very queue: nor does this one
        if idle is not None and idle[0] is self._state and np.array_equal(idle[1], order) and (
                keys is None if idle[2] is None else keys is not None and np.array_equal(idle[2], keys)):
            return None
        a = self._walk(order, keys, ask, prepare)
        self._idle = (self._state, order, keys) if a is None else None
        return a

    def _walk(self, order: np.ndarray, keys: np.ndarray | None, ask: Callable[[int], object | None],
              prepare: Callable[[np.ndarray], np.ndarray | None] | None) -> object | None:
        """:meth:`walk` in the current state over a queue of at least one job."""
        codes = self.codes(order)
        floor = self._floor
        k = np.zeros(len(order)) if keys is None else keys
        live = np.flatnonzero(k < floor[codes])
        # the first job of each live shape, in order: a later one has a key no smaller, so it is skipped too
        # (the least position by shape code in one pass over the queue, not a sort of it)
        first = np.full(len(floor), len(order), dtype=np.int64)
        np.minimum.at(first, codes[live], live)
        asked = np.sort(first[first < len(order)])
        may = None
        if prepare is not None and len(asked):
            may = prepare(order[asked])
        if may is None:
            for i in asked.tolist():
                a = ask(int(order[i]))
                if a is not None:
                    return a
                floor[codes[i]] = k[i]
            return None
        for m in np.flatnonzero(may).tolist():  # (each shape once in asked: no two writes to one floor)
            a = ask(int(order[asked[m]]))
            if a is not None:
                floor[codes[asked[:m]]] = k[asked[:m]]
                return a
        floor[codes[asked]] = k[asked]
        return None
