"""Gavel's space-sharing policies (packed max-min fairness, Gavel §3.1 / §4.1, and packed minimize-makespan,
§4.2) acting through the environment.

The max-min allocation comes from :func:`.gavel_lp.packed_max_min_fairness` over job classes (model, batch, GPUs):
single columns and one column per pair of classes and GPU type, a pair's throughputs being each member's solo
throughput divided by its interference ratio beside the other. As in Gavel's simulator, which reads measured
pair throughputs, the ratios are the engine's true ones (:meth:`~gpucluster_env.engine.view.ClusterView.
true_pair_xi`); a pair is offered on a type only where both workers fit in one GPU's memory.

A class pair's time is realized by job pairs: the i-th job of one class with the i-th of the other (consecutive jobs
within one class), each pair given the class pair's time divided by the number of job pairs. With
``objective="makespan"`` (:func:`.gavel_lp.packed_min_makespan`) the steps left differ from job to job, so every job
is its own row and the LP chooses job pairs (gimbal §7.2's baseline: Gavel's makespan policy with its own packing):
by default (``pair_lp="partners"``) one column per job, partner class and type (:mod:`.parts.gavel_partner_lp`), its
job pairs then being the transport plans of the partner-class times (``pair_lp="groups"``: one column per group of
alike jobs, partner class and type where that reaches the optimum, the group's time handed to its jobs; faster, but
it paces every job to finish at the makespan: docs/gavel.md); with ``pair_lp="pairs"`` one column per job pair
and type, Gavel's own formulation (the same optimum, kept for checking; where several allocations reach it, HiGHS may
return another one). Those pairs
are rows of Gavel's rounds beside the single jobs (priority = allocation / share of time received); a granted pair
starts its first job on the gang (``Place``) and its second beside it on the same GPUs (``Colocate``).
"""

from __future__ import annotations

from itertools import compress
from typing import Annotated, Any, ClassVar

import numpy as np
from gpucluster_env.baselines.parts import gavel_lp as lp
from gpucluster_env.baselines.parts.gavel_row_table import RowIndex, RowTable, job_rows, pair_code
from gpucluster_env.baselines.parts.gavel_scheduler import Gavel
from gpucluster_env.baselines.parts.gavel_warm import WarmStart

from gpucluster_env.engine import Action, Colocate, Place, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.performance import fit_accumulation, footprint_gb
from gpucluster_env.policy import register_policy
from gpucluster_env.policy_options import NON_NEGATIVE, OptionSpec

PAIR_LPS = ("pairs", "partners", "groups", "warm")
"""The makespan objective's LP: ``warm`` (the default), one column per job, partner class and type
(:mod:`.parts.gavel_partner_lp`), HiGHS started from the previous allocation's basis (:mod:`.parts.gavel_warm`:
the same optimum, ~40x less solver time on the loaded month); ``partners``, the same LP solved from scratch at
every allocation; ``groups``, the same over groups of alike jobs where that reaches the bound every allocation
has, else as ``partners`` (an option, not the default: its optimum gives every job just its rate, which moves
average JCT out of the boards' intervals; docs/gavel.md, "The partner-class LP over groups of alike jobs");
``pairs``, one column per pair of jobs and type (Gavel's own formulation, ~n^2/2 columns; the exact-but-slow
check). All reach the same optimum; where several allocations reach it, HiGHS may return another one, so they may
run different pairs (docs/gavel.md: the boards' gimbal-philly / gimbal-alibaba means stay within the previous
95% intervals for each default, ``partners`` and then ``warm``)."""


@register_policy
class GavelPacked(Gavel):
    """Gavel with space sharing: packed pairs of jobs as rows of the LP and of the rounds."""

    name: ClassVar[str] = "gavel-packed"
    description: ClassVar[str] = (
        "Gavel with space sharing: max-min fairness (or minimize-makespan) LP over single jobs and packed pairs "
        "(measured pair throughputs), realized in rounds; a pair shares its GPUs (MPS)"
    )

    def __init__(self, objective: Annotated[str, OptionSpec(choices=("max-min", "makespan"))] = "max-min",
                 round_s: float | None = None, min_reset_s: Annotated[float, NON_NEGATIVE] = 1920.0,
                 wait_for_reset: bool = False,
                 pair_lp: Annotated[str, OptionSpec(choices=PAIR_LPS)] = "warm") -> None:
        """``objective``: ``max-min`` or ``makespan``; ``round_s``: round length (None: the scenario's, else
        360 s); ``min_reset_s``: least time between allocation recomputations; ``wait_for_reset``: Gavel's
        between-resets rule (:attr:`.gavel_scheduler.Gavel.wait_for_reset`); ``pair_lp``: how the makespan LP
        counts pairs (:data:`PAIR_LPS`)."""
        super().__init__(objective, round_s, min_reset_s, wait_for_reset)
        self.pair_lp = pair_lp

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.pair_ok: dict[tuple[int, ...], np.ndarray] = {}
        self._accum: dict[tuple[tuple[int, int, int], tuple[int, int, int], int], tuple[int, int] | None] = {}
        self._pair_tp: dict[tuple[tuple[int, int, int], tuple[int, int, int]], tuple[np.ndarray, np.ndarray]] = {}
        # the last round's candidate rows: kept while the round's one-job rows (the same list while the active jobs
        # stay the same) and the allocation's pairs (a new dict at each allocation) stay
        self._cands: tuple[Any, ...] | None = None
        self._klass_of: dict[int, tuple[int, int, int]] = {}  # each job's class, found once (_klass)
        self._pair_arr: tuple[Any, ...] | None = None  # _pair_arrays' answer, with the pair_ok it was made of
        self._live = np.zeros(self.view(env).n_jobs, dtype=bool)  # scratch: the active jobs (False between uses)
        self._warm = WarmStart()  # pair_lp="warm": the last LP's basis

    def _klass(self, view: ClusterView, j: int) -> tuple[int, int, int]:
        """Job ``j``'s class (model, per-GPU batch, GPUs asked): a pure function of the job (no Gavel policy changes
        a job's batch), so found once per job and kept for the episode."""
        c = self._klass_of.get(j)
        if c is None:
            c = self._klass_of[j] = (view.model_index(j), view.batch(j), int(view.req_gpus[j]))
        return c

    def pair_accumulations(self, view: ClusterView, a: int, b: int, k: int) -> tuple[int, int] | None:
        """The accumulations under which a worker of job ``a`` and one of job ``b`` fit together in one type-``k``
        GPU (``a``'s smallest first), or None."""
        key = (self._klass(view, a), self._klass(view, b), k)
        if key not in self._accum:
            mem = float(view.type_mem[k])
            pa, ba, pb, bb = view.model(a), view.batch(a), view.model(b), view.batch(b)
            out = None
            s = 1
            while s <= ba and out is None:
                sb = fit_accumulation(pb, bb, mem - footprint_gb(pa, ba, s))
                if sb is not None:
                    out = (s, sb)
                s *= 2
            self._accum[key] = out
        return self._accum[key]

    def _pair_throughputs(self, view: ClusterView, ca: tuple[int, int, int], cb: tuple[int, int, int], ja: int,
                          jb: int, ta: np.ndarray, tb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per type, the throughput of a class-``ca`` job (``ja``, solo throughputs ``ta``) beside a class-``cb``
        one (``jb``, ``tb``) and the other way round: solo throughput over the engine's true pair ratio where both
        run there and fit together in one GPU, else 0. A pure function of the two classes (model, batch, GPUs: the
        solo throughputs and the ratios depend on nothing else), kept per class pair across allocations."""
        hit = self._pair_tp.get((ca, cb))
        if hit is None:
            vab, vba = np.zeros(self.nk), np.zeros(self.nk)
            for k, tname in enumerate(view.type_names):
                if ta[k] <= 0 or tb[k] <= 0 or self.pair_accumulations(view, ja, jb, k) is None:
                    continue
                xa, xb = view.true_pair_xi(ja, jb, tname)
                vab[k] = ta[k] / xa
                vba[k] = tb[k] / xb
            hit = self._pair_tp[(ca, cb)] = (vab, vba)
        return hit

    def _allocate(self, view: ClusterView, active: list[int], t: np.ndarray) -> None:
        keys = [self._klass(view, j) for j in active]
        uniq = sorted(set(keys))
        index = {c: i for i, c in enumerate(uniq)}
        cls_l = [index[c] for c in keys]
        cls = np.array(cls_l)
        by_class: list[list[int]] = [[] for _ in uniq]  # each class's jobs, in the order of active
        for j, c in zip(active, cls_l, strict=True):
            by_class[c].append(j)
        rep = [m[0] for m in by_class]
        nc = len(uniq)
        cp = np.zeros((nc, nc, self.nk))
        ti = {j: i for i, j in enumerate(active)}
        for a in range(nc):
            for b in range(a, nc):
                if uniq[a][2] == uniq[b][2]:
                    cp[a, b], cp[b, a] = self._pair_throughputs(view, uniq[a], uniq[b], rep[a], rep[b],
                                                                t[ti[rep[a]]], t[ti[rep[b]]])
        if self.objective == "makespan":  # every job its own row: the steps left differ
            gpus, rem = view.req_gpus[active], view.remaining_now()[active]
            if self.pair_lp != "pairs":  # partners counted by class
                warm = self._warm.label(active, uniq) if self.pair_lp == "warm" else None
                r = lp.packed_min_makespan(t, gpus, self.capacity, rem, cp[cls], cls, self.pair_lp == "groups", warm)[1]
            else:
                r = lp.packed_min_makespan(t, gpus, self.capacity, rem, cp[cls][:, cls])[1]
            members, of = [[j] for j in active], cls
        else:
            r = lp.packed_max_min_fairness(t, view.req_gpus[active], self.capacity, cls, cp)
            members, of = by_class, np.arange(nc)
        self.alloc = RowTable.of_rows(view.n_jobs, job_rows(active), r.x)
        self.pair_ok = {}
        keys: list[tuple[int, int]] = []
        shares: list[np.ndarray] = []  # each class pair's share, and how many job pairs take it (in keys' order)
        counts: list[int] = []
        for (a, b), y in zip(r.pairs.tolist(), r.y, strict=True):
            if y.sum() <= 1e-9:
                continue
            ma, mb = members[a], members[b]
            pairs = list(zip(ma[0::2], ma[1::2], strict=False)) if a == b else list(zip(ma, mb, strict=False))
            ca, cb = of[a], of[b]
            share = np.minimum(y / len(pairs), 1.0)
            ok = (cp[ca, cb] > 0) & (cp[cb, ca] > 0)
            shares.append(share)
            counts.append(len(pairs))
            for p in pairs:
                key = (int(p[0]), int(p[1]))
                keys.append(key)
                self.pair_ok[key] = ok
        if keys:  # the job pairs' shares of their class pairs' time, written at once
            self.alloc.write_pairs(keys, np.repeat(np.array(shares), counts, axis=0))

    def _candidate_rows(self, view: ClusterView, active: list[int], t: np.ndarray
                        ) -> tuple[list[tuple[int, ...]], np.ndarray]:
        rows, run = super()._candidate_rows(view, active, t)
        kept = self._cands
        if kept is not None and kept[0] is rows and kept[1] is self.pair_ok:  # the same jobs and allocation
            return kept[2], kept[3]
        keys, first, second, codes, oks = self._pair_arrays()
        live = self._live
        live[active] = True
        m = live[first] & live[second]  # the allocation's pairs whose two jobs are active
        live[active] = False
        pairs = list(compress(keys, m.tolist()))
        out = (rows, run) if not pairs else (rows + pairs, np.vstack([run, oks[m]]))
        out[1].flags.writeable = False
        self._cands = (rows, self.pair_ok, *out)  # the same list kept: its row index is kept with it
        if pairs:  # the rows' index (what row_index(rows + pairs) gives), from the arrays at hand
            ix = self._row_index(rows)
            n = len(rows)
            self._index_kept = (out[0], RowIndex(np.concatenate([ix.heads, first[m]]),
                                                 np.arange(n, n + len(pairs), dtype=np.int64), codes[m]))
        return out

    def _pair_arrays(self) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The allocation's pairs (:attr:`pair_ok`, in its order) as arrays, made once per allocation: the keys,
        each pair's first and second job, its code (:func:`.gavel_row_table.pair_code`) and the types it may
        run on."""
        arr = self._pair_arr
        if arr is None or arr[0] is not self.pair_ok:
            keys = list(self.pair_ok)
            jobs = np.array(keys, dtype=np.int64).reshape(len(keys), 2)
            oks = np.array(list(self.pair_ok.values()), dtype=bool).reshape(len(keys), self.nk)
            arr = self._pair_arr = (self.pair_ok, keys, jobs[:, 0].copy(), jobs[:, 1].copy(), pair_code(keys), oks)
        return arr[1:]

    def _kept(self, view: ClusterView, key: tuple[int, ...], k: int) -> bool:
        """A job alone on type-``k`` GPUs, or a pair together on the same type-``k`` GPUs
        (:meth:`~gpucluster_env.engine.view.ClusterView.runs_as`)."""
        return view.runs_as([(key, k)])[0]

    def _keep(self, view: ClusterView, grants: list[tuple[tuple[int, ...], int]]) -> dict[tuple[int, ...], int]:
        """:meth:`_kept` of every grant in one call (:meth:`~gpucluster_env.engine.view.ClusterView.runs_as`)."""
        return {key: k for (key, k), ok in zip(grants, view.runs_as(grants), strict=True) if ok}

    def _place_row(self, view: ClusterView, key: tuple[int, ...], gang: tuple[int, ...]) -> list[Action]:
        if len(key) == 1:
            return super()._place_row(view, key, gang)
        i, j = key
        acc = self.pair_accumulations(view, i, j, self._gpu_type_l[gang[0]])
        self._follow.append(Colocate(j, partner=i, gpus=gang))
        return [Place(i, gpus=gang, accumulation=None if acc is None else acc[0])]

    def _follow_up(self, view: ClusterView) -> Action:
        """The second job of each pair placed this round, beside its partner, where it still fits."""
        while self._follow:
            a = self._follow.pop(0)
            if not isinstance(a, Colocate) or not view.is_pending(a.job) or not view.is_running(a.partner):
                continue
            gpus = np.array(a.gpus, dtype=np.int64)
            if view.accumulation_for(a.job, gpus) is not None:
                return a
        return Wait()
