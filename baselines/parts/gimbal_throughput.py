"""The predicted throughput Gimbal's coordination search works on (:mod:`.gimbal_search`'s module docstring,
"Predicted throughput"): a job's iteration time on its GPUs with each worker's interference ratio taken from a
predictor's free-competition ratio under the MPS shares, by the one share model
(:func:`gpucluster_env.performance.apply_shares`); never the engine's true ratios. Gandiva's introspection
(:mod:`gpucluster_env.baselines.gandiva`) reads it too."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from gpucluster_env.baselines.parts.gimbal_rules import TenantWatch
from gpucluster_env.baselines.parts.pair_ratios import PairRatios, run_ratios
from gpucluster_env.baselines.parts.xi_predictor import XiPredictor

from gpucluster_env.engine.view import ClusterView
from gpucluster_env.performance import apply_shares


class _Kept:
    """What :class:`ThroughputModel` keeps of running job ``j`` while no tenant of its GPUs changes: its GPUs
    ``g``, per worker ``((job, gpu), (partner, gpu), partner or -1, predicted free ratio beside the partner,
    demand, ratio when alone, ratio by (own, partner's) share units)`` (the two share keys made once), its
    partners and the GPUs it shares with them, its ``shape`` ``(model, GPU type, GPUs, nodes)`` when its GPUs
    are of one type (else None), and, on GPUs of mixed types, its rates by (accumulation, batch, sample
    stealing, worker ratios): every input of the engine's iteration time but the GPUs, which stay. ``serial``: a
    number no other of the model's :class:`_Kept` has."""

    __slots__ = ("g", "rows", "partners", "shared", "shape", "rates", "serial")

    def __init__(self, view: ClusterView, j: int, g: np.ndarray,
                 rows: list[tuple[tuple[int, int], tuple[int, int], int, float, float, float, dict]],
                 serial: int) -> None:
        g.flags.writeable = False  # handed out by ThroughputModel.gpus
        self.g, self.rows, self.serial = g, rows, serial
        self.partners = {r[2] for r in rows if r[2] >= 0}
        self.shared = {r[0][1] for r in rows if r[2] >= 0}
        types = set(view.gpu_type[g].tolist())
        self.shape = (None if len(types) != 1 else
                      (view.model_index(j), types.pop(), len(g), len(set(view.gpu_node[g].tolist()))))
        self.rates: dict[tuple[tuple[int, int, bool], tuple[float, ...]], float] = {}


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
        self._workers: dict[int, _Kept] = {}
        self._watch = TenantWatch(view)
        self._hot: dict[int, tuple[_Kept, dict, tuple]] = {}  # in a hold: job -> (its _Kept, rate memo, key head)
        self._by_shape: dict[tuple, float] = {}  # rates on GPUs of one type, by (shape, setup) and worker ratios
        self._left: dict[int, float] | None = None  # in a hold: the iterations left of the jobs asked
        self._serial = 0  # the _Kept made so far

    @contextmanager
    def held(self) -> Iterator[None]:
        """While the cluster stays as it is (one monitoring tick, one introspection): every job's iterations left
        and its accumulation, batch and sample stealing are read once. Each job's workers (GPUs, partners, demand,
        predicted free ratio) are kept from one hold to the next until a tenant of one of its GPUs changes
        (:class:`~.gimbal_rules.TenantWatch`). Rates are kept for good by every input of the engine's iteration
        time (a pure function): on GPUs of one type by (model, type, GPUs, nodes, accumulation, batch, sample
        stealing, worker ratios), for every job of that model; on mixed types with the job's workers, by the
        same less the GPUs, which stay. Outside a hold every question asks the view afresh."""
        moved = self._watch.moved()
        if moved is None:
            self._workers.clear()
        for j in moved or ():
            self._workers.pop(j, None)
        self._held = True
        self._left = {}
        try:
            yield
        finally:
            self._held = False
            self._hot.clear()
            self._left = None

    def _left_of(self, jobs: Any) -> list[float]:
        """Iterations ``jobs`` have left now, as Python floats: only theirs read from the view (every job's would
        cost the whole trace per tick), each read once while :meth:`held`."""
        left = self._left
        if left is None:
            return self.view.remaining_now(np.asarray(jobs, dtype=np.int64)).tolist()
        new = [j for j in jobs if j not in left]
        if new:
            left.update(zip(new, self.view.remaining_now(np.array(new, dtype=np.int64)).tolist(), strict=True))
        return [left[j] for j in jobs]

    def read_ahead(self, jobs: list[int]) -> None:
        """While :meth:`held`: read the iterations ``jobs`` have left in one call (the later questions of the hold
        find them kept), instead of one read of the view for each group of them asked."""
        if self._left is not None and jobs:
            self._left_of(jobs)

    def remaining(self, jobs: Any) -> np.ndarray:
        """Iterations ``jobs`` have left now (a fresh array; each job's read once while :meth:`held`)."""
        return np.array(self._left_of([int(j) for j in np.asarray(jobs, dtype=np.int64).tolist()]), dtype=float)

    def remaining_one(self, j: int) -> float:
        """Iterations job ``j`` has left now, as :meth:`remaining` (a float)."""
        return self._left_of((j,))[0]

    def _kept(self, j: int) -> _Kept:
        """Running job ``j``'s :class:`_Kept` (kept from hold to hold, see :meth:`held`)."""
        w = self._workers.get(j) if self._held else None
        if w is None:
            v = self.view
            g = v.gpus_of(j)
            rows = []
            for x, row in zip(g.tolist(), v.tenants(g).tolist(), strict=True):
                q = row[1] if row[0] == j else row[0]
                t = int(v.gpu_type[x])
                d = self.demand(j, t)
                rows.append(((j, x), (q, x), q, self.free_xi(j, q, t) if q >= 0 else 1.0, d,
                             self._under(1.0, d, 1.0, 0.0, False), {}))
            self._serial += 1
            w = _Kept(v, j, g, rows, self._serial)
            if self._held:
                self._workers[j] = w
        return w

    def worker_xi(self, j: int, shares: dict[tuple[int, int], int], gone: frozenset[int] = frozenset()
                  ) -> np.ndarray:
        """Predicted interference ratio of each worker of running job ``j`` (GPUs in ``gpus_of`` order); jobs in
        ``gone`` count as finished (their GPUs free, and a worker left alone back at full share)."""
        return np.array(self._xi(j, self._kept(j), shares, gone))

    def _xi(self, j: int, w: _Kept, shares: dict[tuple[int, int], int], gone: frozenset[int]) -> tuple[float, ...]:
        """:meth:`worker_xi` as a tuple (``w``: ``j``'s :class:`_Kept`)."""
        full = self.full
        get = shares.get
        out = []
        for kj, kq, q, fx, d, lone, memo in w.rows:
            if q < 0 or q in gone:
                out.append(lone)
                continue
            own, other = get(kj, full), get(kq, full)
            v = memo.get((own, other))
            if v is None:
                v = memo[(own, other)] = self._under(fx, d, own / full, other / full, True)
            out.append(v)
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
        if not self._held:
            v = self.view
            w = self._kept(j)
            xi = self._xi(j, w, shares, gone)
            return 1.0 / v.iter_time(j, w.g, v.accumulation(j), np.array(xi, dtype=float))
        w, memo, head = self._hot.get(j) or self._hot_of(j)
        xi = self._xi(j, w, shares, gone)
        key = (head, xi)
        r = memo.get(key)
        if r is None:
            setup = head if w.shape is None else head[1]
            r = memo[key] = 1.0 / self.view.iter_time(j, w.g, setup[0], np.array(xi, dtype=float), setup[1])
        return r

    def _hot_of(self, j: int) -> tuple[_Kept, dict, tuple]:
        """While :meth:`held`: running job ``j``'s :class:`_Kept`, the memo of its rates and their key's head (its
        accumulation, batch and sample stealing, read once a hold, after its shape on GPUs of one type)."""
        v = self.view
        w = self._kept(j)
        setup = (v.accumulation(j), v.batch(j), v.stealing(j))
        # on one GPU type the iteration time reads the job only through its model: shared by its jobs
        hot = self._hot[j] = (w, w.rates, setup) if w.shape is None else (w, self._by_shape, (w.shape, setup))
        return hot

    def inputs(self, jobs: tuple[int, ...]) -> tuple | None:
        """While :meth:`held`: all :meth:`rate` reads of running ``jobs`` but the shares and ``gone`` (their workers
        as kept, their accumulation, batch and sample stealing), as a key: under a key equal to an earlier one,
        the same shares give the same rates. None outside a hold (no key)."""
        if not self._held:
            return None
        hot = self._hot
        return tuple(((h := hot.get(j) or self._hot_of(j))[0].serial, h[2]) for j in jobs)

    def remaining_times(self, jobs: tuple[int, ...], shares: dict[tuple[int, int], int],
                        departures: bool = True) -> np.ndarray:
        """Each job's expected remaining time ``RemainingSteps / Throughput`` under ``shares``. With
        ``departures`` the throughput is the one over the job's remaining life: the set runs at its predicted
        rates until its first job finishes, then the others go on without it (alone where it was their
        partner), and so on; without, the current rates to the end (eq. 1's literal reading)."""
        if not departures:
            return self.remaining(jobs).astype(float) / np.array([self.rate(j, shares) for j in jobs])
        return np.array(self.finish_times(jobs, shares))

    def finish_times(self, jobs: tuple[int, ...], shares: dict[tuple[int, int], int],
                     memo: dict[tuple[int, frozenset[int]], float] | None = None) -> list[float]:
        """:meth:`remaining_times` with departures, as Python floats (:func:`departure_times`). ``memo``: the rates
        already known for these ``shares`` by ``(job, gone)``, added to (while :meth:`inputs` of ``jobs`` stays
        the same, they stay true)."""
        if memo is None:
            rates = [self.rate(j, shares) for j in jobs]
            return departure_times(self._left_of(jobs), rates, jobs,
                                   lambda o, gone: self.rate(jobs[o], shares, gone), [self.partners(j) for j in jobs])
        none: frozenset[int] = frozenset()

        def rate(o: int, gone: frozenset[int]) -> float:
            r = memo.get((jobs[o], gone))
            if r is None:
                r = memo[(jobs[o], gone)] = self.rate(jobs[o], shares, gone)
            return r

        return departure_times(self._left_of(jobs), [rate(o, none) for o in range(len(jobs))], jobs, rate,
                               [self.partners(j) for j in jobs])

    def gpus(self, j: int) -> np.ndarray:
        """The GPUs of running job ``j``, as ``view.gpus_of`` gives them (kept from hold to hold with its workers,
        see :meth:`held`; read only)."""
        return self._kept(j).g

    def shared_gpus(self, j: int) -> set[int]:
        """The GPUs running job ``j`` shares with a partner (as :meth:`worker_xi` sees them)."""
        return self._kept(j).shared

    def partners(self, j: int) -> set[int]:
        """The jobs sharing a GPU with running job ``j`` (as :meth:`worker_xi` sees them)."""
        return self._kept(j).partners

    def stragglers(self, j: int, shares: dict[tuple[int, int], int]) -> tuple[np.ndarray, np.ndarray]:
        """``(slow, fast)`` GPUs of job ``j``: its workers with a predicted ratio above its smallest, and the
        rest (``slow`` empty: no straggler)."""
        w = self._kept(j)
        g = w.g
        xi = self._xi(j, w, shares, frozenset())
        if len(xi) == 1 and xi[0] >= 0.0:  # one worker (a ratio, not NaN) is never slower than itself
            return g[:0], g
        a = np.array(xi)
        slow = a > a.min() * (1.0 + 1e-9)
        return g[slow], g[~slow]


def _quotient(a: float, b: float) -> float:
    """``a / b`` as numpy divides float64: a zero divisor gives a signed infinity, or NaN for 0 / 0 and NaN."""
    if b == 0.0:
        return math.nan if a == 0.0 or a != a else math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _first_least(xs: list[float]) -> int:
    """``np.argmin(xs)``: the first NaN if there is one, else the first least."""
    for k, x in enumerate(xs):
        if x != x:
            return k
    return xs.index(min(xs))


def departure_times(rem: list[float], rates: list[float], jobs: tuple[int, ...],
                    rate_after: Callable[[int, frozenset[int]], float], partners: list[set[int]]) -> list[float]:
    """When each of ``jobs`` finishes (:meth:`ThroughputModel.remaining_times` with departures): ``rem`` its
    iterations left (changed), ``rates`` its rate now, ``rate_after(o, gone)`` job ``o``'s rate once the jobs of
    ``gone`` have finished, ``partners`` each job's partners. The set runs at its rates until the first least time
    to finish, then that job leaves and only its partners' rates change. Python floats under numpy's float64
    rules (a zero rate divides to an infinity or NaN; a NaN time is the least), so the times are the bits an
    array walk gives (``tests/baselines/test_gimbal_kept.py`` keeps that walk as its oracle)."""
    out = [0.0] * len(jobs)
    left = list(range(len(jobs)))
    rate = list(rates)
    gone: frozenset[int] = frozenset()
    t = 0.0
    plain = all(0.0 < r < math.inf for r in rate)  # then no quotient is infinite or NaN: Python's rules suffice
    while left:
        if plain:
            dt = [rem[i] / rate[i] for i in left]
            k = dt.index(min(dt))
        else:
            dt = [_quotient(rem[i], rate[i]) for i in left]
            k = _first_least(dt)
        step = dt[k]
        t += step
        for i in left:
            rem[i] -= rate[i] * step
        i = left.pop(k)
        out[i] = t
        gone = gone | {jobs[i]}
        for o in left:  # a departure changes only the rates of its partners
            if jobs[i] in partners[o]:
                r = rate[o] = rate_after(o, gone)
                plain = plain and 0.0 < r < math.inf
    return out
