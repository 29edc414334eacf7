"""The performance model (:mod:`gpucluster_env.performance`) applied to the live cluster state: each copy's
constants when it starts, the workers' interference ratios under the current partners and MPS shares, a copy's
and a job's rate (iterations per second, the sum over its copies); also the same estimates for hypothetical
placements, for the read-only view agents use, and Castor's sharing benefit of a colocation.

Every rate the engine charges progress at is computed here (:meth:`Rates.job_rate`, :meth:`Rates.copy_rate`);
:mod:`.job_progress` only integrates them over time."""

from __future__ import annotations

import math

import numpy as np

from ..catalog.pollux_efficiency import has_efficiency, progress_gain
from ..performance import CopyModel, copy_iter_time, copy_model, fit_accumulation, paced_iter_time
from .occupancy import Copy
from .state import EngineState


class Rates:
    """Copy constants, worker interference and rates on an :class:`~gpucluster_env.engine.state.EngineState`
    (reads the state, changes nothing but its caches of copy constants)."""

    def __init__(self, state: EngineState) -> None:
        self.state = state
        self._fit: dict[tuple[int, int, float], int | None] = {}  # fit()'s answers
        self._gangs: dict[tuple[int, ...], tuple[int, int]] = {}  # gang()'s answers
        self._arrays: dict[int | tuple[int, ...], np.ndarray] = {}  # gpu_array()'s answers
        self._xi_tm: dict[tuple[int, int], np.ndarray] = {}  # xi_share_tab[t, m + 1] views

    def fit(self, m: int, batch: int, room: float) -> int | None:
        """:func:`~gpucluster_env.performance.fit_accumulation` of model ``m`` at per-GPU ``batch`` in ``room`` GB,
        kept per argument (a pure function of them)."""
        key = (m, batch, room)
        f = self._fit
        if key in f:
            return f[key]
        s = f[key] = fit_accumulation(self.state.profiles[m], batch, room)
        return s

    def gang(self, gl: list[int]) -> tuple[int, int]:
        """The GPU type of the GPUs ``gl`` (-1 when mixed) and the number of nodes they span; kept per GPU set of
        more than one GPU (a pure function of the cluster)."""
        st = self.state
        if len(gl) == 1:
            return st.gpu_type_l[gl[0]], 1
        key = tuple(gl)
        out = self._gangs.get(key)
        if out is None:
            gt, gn = st.gpu_type_l, st.gpu_node_l
            t = gt[gl[0]]
            if any(gt[x] != t for x in gl):
                t = -1
            out = self._gangs[key] = (t, len({gn[x] for x in gl}))
        return out

    def gpu_array(self, gl: list[int]) -> np.ndarray:
        """The GPUs ``gl`` (Python ints) as a read-only int64 array, one kept per GPU set: a start names the
        same sets again and again (Gavel's rounds), and a copy's array is never written."""
        key = gl[0] if len(gl) == 1 else tuple(gl)
        g = self._arrays.get(key)
        if g is None:
            g = self._arrays[key] = np.array(gl, dtype=np.int64)
            g.flags.writeable = False
        return g

    def copy_model(self, m: int, batch: int, s: int, gl: list[int], t: int, n_nodes: int, stealing: bool) -> CopyModel:
        """The performance constants of a copy of model ``m`` (per-GPU batch ``batch``, accumulation ``s``) on
        GPUs ``gl`` over ``n_nodes`` nodes, with sample stealing (LISS) or not; ``t``: their one GPU type, or
        -1; a one-type copy Gavel measured runs at its measured solo time (``EngineState.gang_scale``; the
        checks refuse gangs measured at zero). One-type copies are cached by (model, batch, accumulation, type,
        GPUs, nodes, stealing), of which they are a pure function."""
        st = self.state
        n = len(gl)
        if t >= 0:
            key = (m, batch, s, t, n, n_nodes, stealing)
            k = st.copy_models.get(key)
            if k is None:
                f = st.gang_scale(m, batch, t, n, n_nodes)
                k = st.copy_models[key] = copy_model(
                    st.profiles[m], batch, s, np.full(n, st.speed_mt[m, t]), t, n_nodes,
                    float(st.type_intra_bw[t]), st.cluster.inter_node_bw_gbps, float(st.type_mem[t]),
                    stealing, st._comm_xi, f if math.isfinite(f) else 1.0)
            return k
        types = st.gpu_type[gl]
        return copy_model(
            st.profiles[m], batch, s, st.speed_mt[m, types], -1, n_nodes,
            float(st.type_intra_bw[types].min()), st.cluster.inter_node_bw_gbps,
            float(st.type_mem[types].min()), stealing, st._comm_xi)

    def new_copy(self, j: int, g: np.ndarray, s: int, gl: list[int] | None = None) -> Copy:
        """A :class:`~gpucluster_env.engine.occupancy.Copy` of job ``j`` on ``g`` at accumulation ``s``
        (``gl``: ``g.tolist()`` if at hand)."""
        st = self.state
        c = Copy()
        c._g2 = c._g2p1 = c.order = None
        m = st.model_l[j]
        c.g = g
        c.gl = gl = g.tolist() if gl is None else gl
        c.n = n = len(gl)
        if n == 1:
            c.gpu = gl[0]
            t, c.n_nodes = st.gpu_type_l[c.gpu], 1
        else:
            t, c.n_nodes = self.gang(gl)
            if t < 0:
                c.types = st.gpu_type[g]
        c.t = t
        c.k = self.copy_model(m, st.batch_l[j], s, gl, t, c.n_nodes, st.stealing.item(j))
        if t >= 0:
            c.xi_tl = st.xi_tab_l[t][m + 1]
            tm = self._xi_tm.get((t, m))
            if tm is None:
                tm = self._xi_tm[t, m] = st.xi_share_tab[t, m + 1]
            c.xi_tm = tm
        return c

    def copy_time(self, j: int, c: Copy) -> float:
        """The iteration time of job ``j``'s copy ``c`` now: its workers' interference ratios looked up in the
        :func:`~gpucluster_env.performance.xi_table` under the current partners and shares, then
        :func:`~gpucluster_env.performance.copy_iter_time`."""
        st = self.state
        k = c.k
        sj, ss = st.slot_job_flat, st.slot_share_flat
        if c.n == 1:
            g2 = 2 * c.gpu
            mine, other = (g2, g2 + 1) if sj.item(g2) == j else (g2 + 1, g2)
            partner = sj.item(other)
            x = c.xi_tl[st.model_l[partner] + 1 if partner >= 0 else 0][ss.item(mine)][ss.item(other)]
            return paced_iter_time(k, k.speed / x, x)  # no all-reduce: the scope does not matter
        if c.t >= 0 and not k.stealing:
            # The largest worker xi from a few table lookups, when j and each of its partners has one MPS share
            # on all its GPUs (then each worker's xi is that of its partner, or of no partner).
            lo, hi = st.share_lo, st.share_hi
            sh = lo.item(j)
            if sh == hi.item(j) and len(st.copies[j]) == 1:
                tab = c.xi_tl
                xmax = tab[0][sh][st.share_units] if st.held_shared.item(j) < c.n else 0.0
                jm = st.model_l
                for p in st.shared_map.get(j, ()):
                    sp = lo.item(p)
                    if sp != hi.item(p):
                        break
                    x = tab[jm[p] + 1][sh][sp]
                    if x > xmax:
                        xmax = x
                else:  # the slowest worker: speed / max xi (division rounds monotonically)
                    return paced_iter_time(k, k.speed / xmax, xmax if k.comm_xi else 1.0)
        return copy_iter_time(k, self.copy_xi(j, c))

    def copy_xi(self, j: int, c: Copy) -> np.ndarray:
        """The interference ratio of each worker of job ``j``'s multi-GPU copy ``c`` now (table lookups)."""
        st = self.state
        sj, ss = st.slot_job_flat, st.slot_share_flat
        own = sj[c.g2p1] == j  # job j sits in slot 1 of that GPU
        mine = c.g2 + own
        other = c.g2p1 - own
        pm1 = st.jm1[sj[other]]
        if c.t >= 0:
            return c.xi_tm[pm1, ss[mine], ss[other]]
        return st.xi_share_tab[c.types, st.model_l[j] + 1, pm1, ss[mine], ss[other]]

    def job_rate(self, j: int) -> float:
        """Running job ``j``'s rate now (iterations per second): the sum of its copies' ``1 / t_iter`` (a job of
        one full-size copy; jobs with per-copy progress are rated copy by copy, :meth:`copy_rate`)."""
        st = self.state
        if st.held_shared.item(j) == 0 and st.share_lo.item(j) == st.share_units:
            solo = st.solo_rate.item(j)
            if solo > 0:
                return solo  # alone at full share on every GPU: xi = 1 everywhere
        cs = st.copy_consts.get(j, ())
        if len(cs) == 1:
            return 0 + 1.0 / self.copy_time(j, cs[0])  # as sum() of one term
        return sum(1.0 / self.copy_time(j, c) for c in cs)

    def copy_rate(self, j: int, c: Copy) -> float:
        """The rate (iterations of job ``j``'s global batch per second) of its copy ``c`` when it progresses,
        under the current partners and shares: a copy of ``n`` of the ``N`` GPUs the job asked for does ``n / N``
        of a global iteration per iteration of its own, times the statistical-efficiency ratio when its total
        batch is not the stated one (:meth:`batch_gain`)."""
        st = self.state
        r = 1.0 / self.copy_time(j, c)
        n, req = c.n, st.req_l[j]
        return r if n == req and st.batch_l[j] == st.batch.item(j) else r * self.batch_gain(j, n)

    def solo_copy_rate(self, j: int, c: Copy) -> float:
        """:meth:`copy_rate` with no partner at full share."""
        st = self.state
        r = 1.0 / c.k.solo_iter
        n, req = c.n, st.req_l[j]
        return r if n == req and st.batch_l[j] == st.batch.item(j) else r * self.batch_gain(j, n)

    def done_fraction(self, j: int) -> float:
        """The fraction of job ``j``'s stated iterations done (at its last settled time)."""
        st = self.state
        return 1.0 - st.remaining.item(j) / max(st.iterations.item(j), 1e-12)

    def batch_gain(self, j: int, n: int) -> float:
        """Iterations of job ``j``'s stated global batch that one iteration of a copy of ``n`` GPUs at its
        per-GPU batch now makes: ``n / N`` (samples) at the stated per-GPU batch of a model with no noise data,
        else Pollux's :func:`~gpucluster_env.catalog.pollux_efficiency.progress_gain` (samples times the
        statistical-efficiency ratio at the job's progress)."""
        st = self.state
        b, b0, req = st.batch_l[j], st.batch.item(j), st.req_l[j]
        name = st.model_names[st.model_l[j]]
        if b == b0 and not has_efficiency(name):
            return n / req
        return progress_gain(name, n * b, req * b0, self.done_fraction(j))

    # ------------------------------------------------------------------ estimates (read-only)
    def copy_iter_time(self, j: int, gpus: np.ndarray, xi: np.ndarray | None = None) -> float:
        """True iteration time of one copy of running job ``j`` on ``gpus`` (one of its copies) in the current
        state, or under the per-worker interference ratios ``xi`` (e.g. all ones for the job alone)."""
        c = self.new_copy(j, np.asarray(gpus, dtype=np.int64), int(self.state.accum[j]))
        if xi is not None:
            return copy_iter_time(c.k, xi)
        if c.n == 1:
            return self.copy_time(j, c)
        return copy_iter_time(c.k, self.copy_xi(j, c))  # copy_time without its shortcut

    def iter_time_for(self, j: int, gpus: np.ndarray, s: int, xi: np.ndarray | float = 1.0,
                      batch: int | None = None) -> float:
        """Iteration time of one copy of job ``j`` on ``gpus`` at accumulation ``s`` with each worker slowed by
        ``xi`` (Castor eq. 1-3 and 4-5 under the engine's interference scope, slowest-worker pacing or LISS), at
        per-GPU ``batch`` (default its batch now). Pure: reads no dynamic state, so agents may use it to
        evaluate hypothetical placements with their own predicted ``xi``."""
        st = self.state
        gl = np.asarray(gpus, dtype=np.int64).tolist()
        gt = st.gpu_type_l
        t = gt[gl[0]]
        n = len(gl)
        if n == 1:
            n_nodes = 1
        else:
            if any(gt[x] != t for x in gl):
                t = -1
            n_nodes = len({st.gpu_node_l[x] for x in gl})
        b = st.batch_l[j] if batch is None else int(batch)
        k = self.copy_model(st.model_l[j], b, int(s), gl, t, n_nodes, st.stealing.item(j))
        if type(xi) is float and xi == 1.0:
            return k.solo_iter  # copy_iter_time(k, 1.0), which the copy model keeps
        if type(xi) is not float:
            xa = np.asarray(xi, dtype=float)
            if n > 1 or xa.size != 1:
                return copy_iter_time(k, xa)
            xi = xa.item()  # one worker: its ratio as a float, the same quotients (speed / xi, xi)
            if not xi > 0:  # zero, negative or NaN: numpy's division rules
                return copy_iter_time(k, xa)
        return copy_iter_time(k, xi)

    def accumulation_for(self, j: int, gpus: np.ndarray) -> int | None:
        """Smallest power-of-two accumulation under which job ``j`` fits in memory on every GPU of ``gpus``
        beside their current tenants (None: none does)."""
        st = self.state
        batch = st.batch_l[j]
        sjf, fp, gt = st.slot_job_flat, st.footprint, st.gpu_type_l
        most: dict[int, float] = {}  # GPU type: the largest tenant footprint on the set's GPUs of that type
        for x in gpus.tolist():
            o = sjf.item(2 * x)
            m = fp.item(o) if o >= 0 else 0.0
            t = gt[x]
            if m > most.get(t, -1.0):
                most[t] = m
        best = 1
        mj = st.model_l[j]
        for t, m in most.items():
            s = self.fit(mj, batch, st.type_mem_l[t] - m)
            if s is None:
                return None
            best = max(best, s)
        return best

    def solo_accumulation(self, j: int, g: np.ndarray | list[int], batch: int | None = None) -> int | None:
        """The accumulation job ``j`` would start with alone on GPUs ``g`` at per-GPU ``batch`` (default its batch
        now): the smallest power of two under which it fits the whole memory of the smallest GPU of ``g`` (None:
        none does)."""
        st = self.state
        gl = g if type(g) is list else g.tolist() if type(g) is np.ndarray else np.asarray(g).tolist()
        mem, gt = st.type_mem_l, st.gpu_type_l
        room = mem[gt[gl[0]]] if len(gl) == 1 else min(mem[gt[x]] for x in gl)  # (the min of one GPU: its own)
        return self.fit(st.model_l[j], st.batch_l[j] if batch is None else int(batch), room)

    def liss_micro_batches(self, j: int, c: Copy) -> np.ndarray:
        """The micro-batch of each worker of job ``j``'s multi-GPU copy ``c`` under LISS at the workers' current
        interference: the inverse of :func:`~gpucluster_env.performance.copy_iter_time`'s balance, ``(alpha +
        beta b_i) / v_i`` equal to the micro-step time ``tc`` for every worker (``v_i = speed_i / xi_i``), so
        ``b_i = (tc v_i - alpha) / beta``, at least 0; they sum to ``n B/s`` unless a worker is clipped at 0."""
        p = self.state.profiles[self.state.model_l[j]]
        xi = self.copy_xi(j, c)
        v = c.k.spd / xi
        tc = max(c.k.steal_num / float(v.sum()), c.k.alpha / float(v.min()))
        return np.maximum(0.0, (tc * v - p.alpha_s) / p.beta_s)

    def sharing_benefit(
        self, j: int, partners: set[int], rate_before: dict[int, float], solo_iter: float
    ) -> tuple[int, np.float64, np.float64]:
        """Castor §9.2's sharing benefit of job ``j`` just colocated with ``partners``: ``(j, t_solo, t_co)``,
        its JCT had it waited for its partners to finish (at their rates ``rate_before``) and then run alone,
        and its JCT colocated (shared rate until the partners finish at their shared rates, then alone), both
        assuming no further arrivals. ``solo_iter``: j's iteration time alone on its GPUs at its colocated
        accumulation (the pace of ``t_co`` once the partners are done); ``t_solo`` runs it alone at the
        accumulation it would have had alone on the same GPUs (:meth:`solo_accumulation`), not at the
        colocated one."""
        st = self.state
        rem, rate = st.remaining, st.rate
        if len(partners) == 1:  # max() of one value
            p = next(iter(partners))
            r = rate_before[p]
            wait = rem.item(p) / r if r > 0 else 0.0
        else:
            wait = max(rem.item(p) / rate_before[p] if rate_before[p] > 0 else 0.0 for p in partners)
        since = st.now - st.submit_l[j]
        rj = rem.item(j)
        c = st.copy_consts[j][0]
        own = self.solo_accumulation(j, c.gl)
        own_iter = solo_iter if own == st.accum.item(j) else self.iter_time_for(j, c.g, own)
        t_solo = since + wait + rj * own_iter
        shared_rate = rate.item(j)
        if len(partners) == 1:
            r = rate.item(p)
            p_done = rem.item(p) / r if r > 0 else 0.0
        else:
            p_done = max(rem.item(p) / r if (r := rate.item(p)) > 0 else 0.0 for p in partners)
        alone = rj / shared_rate if shared_rate else st.remaining[j] / st.rate[j]
        if alone <= p_done:
            t_co = alone
        else:
            t_co = p_done + (rj - shared_rate * p_done) * solo_iter
        t_co += since
        return (j, np.float64(t_solo), np.float64(t_co))
