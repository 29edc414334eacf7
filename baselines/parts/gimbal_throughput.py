"""The predicted throughput Gimbal's coordination search works on (:mod:`.gimbal_search`'s module docstring,
"Predicted throughput"): a job's iteration time on its GPUs with each worker's interference ratio taken from a
predictor's free-competition ratio under the MPS shares, by the one share model
(:func:`gpucluster_env.performance.apply_shares`); never the engine's true ratios. Gandiva's introspection
(:mod:`gpucluster_env.baselines.gandiva`) reads it too."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from gpucluster_env.baselines.parts.gimbal_rules import TenantWatch
from gpucluster_env.baselines.parts.pair_ratios import PairRatios, run_ratios
from gpucluster_env.baselines.parts.xi_predictor import XiPredictor

from gpucluster_env.engine.view import ClusterView
from gpucluster_env.performance import apply_shares


class ThroughputModel:
    """Predicted per-job throughput under MPS shares (see the module docstring). ``demand(j, gpu_type)`` is the
    job's profiled GPU demand (its utilization alone); shares are in steps of the engine's share grid per
    ``(job, gpu)`` (``view.share_units`` steps: 100%; a pair absent: full share). ``predictor``: the
    interference predictor (None: the catalog's, shared by the run's models, :func:`run_ratios`)."""

    def __init__(self, view: ClusterView, demand: Any, predictor: XiPredictor | None = None) -> None:
        self.view = view
        self.full = view.share_units
        self.demand = demand
        self.ratios = run_ratios(view) if predictor is None else PairRatios(view, predictor)
        self.free_xi = self.ratios.free_xi
        self._shared: dict[tuple[float, float, float, float, bool], float] = {}
        self._held = False
        self._workers: dict[int, tuple[np.ndarray, list[tuple[int, int, float, float]]]] = {}
        self._watch = TenantWatch(view)
        self._rates: dict[tuple[int, tuple[float, ...]], float] = {}
        self._left: np.ndarray | None = None

    @contextmanager
    def held(self) -> Iterator[None]:
        """While the cluster stays as it is (one monitoring tick, one introspection): each rate is computed once
        per set of worker ratios and every job's iterations left are read once, both forgotten on leaving. Each
        job's workers (GPUs, partners, demand, predicted free ratio) are kept from one hold to the next until a
        tenant of one of its GPUs changes (:class:`~.gimbal_rules.TenantWatch`); outside a hold every question
        asks the view afresh."""
        moved = self._watch.moved()
        if moved is None:
            self._workers.clear()
        for j in moved or ():
            self._workers.pop(j, None)
        self._held = True
        try:
            yield
        finally:
            self._held = False
            self._rates.clear()
            self._left = None

    def remaining(self, jobs: Any) -> np.ndarray:
        """Iterations ``jobs`` have left now (a fresh array; every job's read once while :meth:`held`)."""
        left = self._left
        if left is None:
            left = self.view.remaining_now()
            if self._held:
                self._left = left
        return left[np.asarray(jobs, dtype=np.int64)]

    def _workers_of(self, j: int) -> tuple[np.ndarray, list[tuple[int, int, float, float]]]:
        """Running job ``j``'s GPUs, and per worker ``(gpu, partner or -1, demand, predicted free ratio beside
        the partner)`` (kept from hold to hold, see :meth:`held`)."""
        w = self._workers.get(j) if self._held else None
        if w is None:
            v = self.view
            g = v.gpus_of(j)
            rows = []
            for x, row in zip(g.tolist(), v.tenants(g).tolist(), strict=True):
                q = row[1] if row[0] == j else row[0]
                t = int(v.gpu_type[x])
                rows.append((x, q, self.demand(j, t), self.free_xi(j, q, t) if q >= 0 else 1.0))
            w = (g, rows)
            if self._held:
                self._workers[j] = w
        return w

    def worker_xi(self, j: int, shares: dict[tuple[int, int], int], gone: frozenset[int] = frozenset()
                  ) -> np.ndarray:
        """Predicted interference ratio of each worker of running job ``j`` (GPUs in ``gpus_of`` order); jobs in
        ``gone`` count as finished (their GPUs free, and a worker left alone back at full share)."""
        return np.array(self._xi(j, shares, gone))

    def _xi(self, j: int, shares: dict[tuple[int, int], int], gone: frozenset[int]) -> tuple[float, ...]:
        """:meth:`worker_xi` as a tuple."""
        full = self.full
        out = []
        for x, q, d, fx in self._workers_of(j)[1]:
            if q < 0 or q in gone:
                out.append(self._under(1.0, d, 1.0, 0.0, False))
            else:
                out.append(self._under(fx, d, shares.get((j, x), full) / full, shares.get((q, x), full) / full,
                                       True))
        return tuple(out)

    def _under(self, xi: float, d: float, own: float, other: float, has: bool) -> float:
        """:func:`~gpucluster_env.performance.apply_shares` of one worker, remembered by its arguments (a
        search asks the same few share points of the same pairs again and again)."""
        key = (xi, d, own, other, has)
        v = self._shared.get(key)
        if v is None:
            v = self._shared[key] = float(apply_shares(xi, d, own, other, has))
        return v

    def rate(self, j: int, shares: dict[tuple[int, int], int], gone: frozenset[int] = frozenset()) -> float:
        """Predicted iterations per second of running job ``j`` under ``shares`` (``gone``: as
        :meth:`worker_xi`)."""
        xi = self._xi(j, shares, gone)
        key = (j, xi)
        r = self._rates.get(key)
        if r is None:
            v = self.view
            r = 1.0 / v.iter_time(j, self._workers_of(j)[0], v.accumulation(j), np.array(xi, dtype=float))
            if self._held:
                self._rates[key] = r
        return r

    def remaining_times(self, jobs: tuple[int, ...], shares: dict[tuple[int, int], int],
                        departures: bool = True) -> np.ndarray:
        """Each job's expected remaining time ``RemainingSteps / Throughput`` under ``shares``. With
        ``departures`` the throughput is the one over the job's remaining life: the set runs at its predicted
        rates until its first job finishes, then the others go on without it (alone where it was their
        partner), and so on; without, the current rates to the end (eq. 1's literal reading)."""
        rem = self.remaining(jobs).astype(float)
        if not departures:
            return rem / np.array([self.rate(j, shares) for j in jobs])
        out = np.zeros(len(jobs))
        left = list(range(len(jobs)))
        gone: frozenset[int] = frozenset()
        rate = {i: self.rate(jobs[i], shares) for i in left}
        t = 0.0
        while left:
            r = np.array([rate[i] for i in left])
            dt = rem[left] / r
            k = int(np.argmin(dt))
            step = float(dt[k])
            t += step
            rem[left] -= r * step
            i = left.pop(k)
            out[i] = t
            gone = gone | {jobs[i]}
            for o in left:  # a departure changes only the rates of its partners
                if jobs[i] in self.partners(jobs[o]):
                    rate[o] = self.rate(jobs[o], shares, gone)
        return out

    def partners(self, j: int) -> set[int]:
        """The jobs sharing a GPU with running job ``j`` (as :meth:`worker_xi` sees them)."""
        return {q for _, q, _, _ in self._workers_of(j)[1] if q >= 0}

    def stragglers(self, j: int, shares: dict[tuple[int, int], int]) -> tuple[np.ndarray, np.ndarray]:
        """``(slow, fast)`` GPUs of job ``j``: its workers with a predicted ratio above its smallest, and the
        rest (``slow`` empty: no straggler)."""
        g = self.view.gpus_of(j)
        xi = self.worker_xi(j, shares)
        slow = xi > xi.min() * (1.0 + 1e-9)
        return g[slow], g[~slow]
