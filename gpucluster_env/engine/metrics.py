"""Metrics of an episode: JCT statistics, makespan, queueing, utilization, sharing, deadlines.

Definitions follow Castor §9.2: JCT = finish - submit; makespan = last finish - first submit; queueing delay =
time a job spends pending (before its first start and after each preemption); sharing benefit = t_solo /
t_colocated per colocation decision (eq. 24; mean and median over the decisions).

Two utilization figures, not to be confused:

* ``gpu_occupancy``: GPU-time holding at least one job over available GPU-time (all GPUs over the makespan). A
  GPU counts as busy whatever its job does with it.
* ``sm_activity_est``: an estimate of what Castor §9.2 measures with DCGM's SMACT (the fraction of time SMs
  have a warp active), over the same GPU-time. Each worker keeps ``min(demand, share)`` of its GPU's SMs
  active (its model's GPU demand on that GPU type, capped by its MPS active-thread share); a GPU's activity is
  the sum over its (at most two) workers, capped at 1. Restart and calibration pauses count as active (the
  estimate reads demand and shares only). ``sharing_utilization``: GPU-time with two jobs over the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .perf import fit_accumulation

if TYPE_CHECKING:
    from .simulator import ClusterEngine


def episode_metrics(eng: ClusterEngine) -> dict[str, float]:
    """Metrics over the jobs finished so far (all of them once the episode is done)."""
    done = ~np.isnan(eng.finish_t)
    jct = eng.finish_t[done] - eng.submit[done]
    nan = float("nan")
    if done.any():
        makespan = float(eng.finish_t[done].max() - eng.submit.min())
    else:
        makespan = nan
    eng._accumulate_util(eng.now)
    avail = eng.num_gpus * makespan if done.any() and makespan > 0 else nan
    benefits = sharing_benefit_ratios(eng.sharing_benefits)
    has_dl = ~np.isnan(eng.deadline)
    met = done & has_dl & (eng.finish_t <= eng.deadline + 1e-9)
    out = {
        "jobs": int(eng.n_jobs),
        "jobs_done": int(done.sum()),
        "avg_jct_s": float(jct.mean()) if len(jct) else nan,
        "median_jct_s": float(np.median(jct)) if len(jct) else nan,
        "p95_jct_s": float(np.percentile(jct, 95)) if len(jct) else nan,
        "makespan_s": makespan,
        "avg_queue_s": float(eng.queue_s[done].mean()) if len(jct) else nan,
        "gpu_occupancy": float(eng.busy_gpu_s / avail) if avail == avail else nan,
        "sm_activity_est": float(eng.sm_active_gpu_s / avail) if avail == avail else nan,
        "sharing_utilization": float(eng.shared_gpu_s / avail) if avail == avail else nan,
        "avg_slowdown": float((jct / eng.solo_time[done]).mean()) if len(jct) else nan,
        "colocations": int(eng.counts["colocations"]),
        "preemptions": int(eng.counts["preemptions"]),
        "forks": int(eng.counts["forks"]),
        "reallocations": int(eng.counts["reallocations"]),
        "copy_drops": int(eng.counts["copy_drops"]),
        "copy_moves": int(eng.counts["copy_moves"]),
        "squeezes": int(eng.counts["squeezes"]),
        "swells": int(eng.counts["swells"]),
        "decisions": int(eng.counts["decisions"]),
        "sharing_benefit": float(np.mean(benefits)) if benefits else nan,
        "sharing_benefit_median": float(np.median(benefits)) if benefits else nan,
        "deadline_satisfaction": float(met.sum() / has_dl.sum()) if has_dl.any() else nan,
    }
    return out


def sharing_benefit_ratios(records: list[tuple[int, float, float]]) -> list[float]:
    """The sharing benefit ``t_solo / t_co`` of each colocation decision in ``records`` (the engine's
    ``sharing_benefits``: ``(job, t_solo, t_co)``), skipping a zero ``t_co``."""
    return [s / c for _, s, c in records if c > 0]


def gpu_sm_activity(eng: ClusterEngine, g: int) -> float:
    """Estimated fraction of the SMs active now on GPU ``g``: each worker counts ``min(demand, share)``, summed
    over the GPU's two slots and capped at 1 (the one formula; see the module docstring)."""
    sj, ss, t = eng._sj_flat, eng._ss_flat, eng._gpu_type_l[g]
    act = 0.0
    for i in (2 * g, 2 * g + 1):
        j = sj.item(i)
        if j >= 0:
            act += min(eng._demand_tm_l[t][eng._model_l[j]], ss.item(i) * eng.share_step)
    return min(1.0, act)


def sm_activity_now(eng: ClusterEngine) -> float:
    """Estimated active SMs summed over the GPUs now (in GPUs: 1 = one GPU's SMs all active). Kept per GPU:
    after a start or stop only the GPUs it touched (``eng._sm_dirty``, marked by the occupancy code) are
    computed again; after a new episode or a share change, all of them."""
    key = (eng.epoch, eng.counts["squeezes"], eng.counts["swells"])
    if key != eng._sm_key:
        eng._sm_dirty = range(eng.num_gpus)
        eng._sm_key = key
    if eng._sm_dirty:
        per_gpu = eng._sm_gpu
        for g in set(eng._sm_dirty):
            per_gpu[g] = gpu_sm_activity(eng, g)
        eng._sm_dirty = []
        eng._sm_now = float(per_gpu.sum())
    return eng._sm_now


def job_table(eng: ClusterEngine) -> pd.DataFrame:
    """Per-job results as a DataFrame (one row per job of the episode, in submit order)."""
    sharers: dict[int, set[int]] = {}
    gpus: dict[int, set[int]] = {}
    holders: dict[int, set[int]] = {}
    for _t, kind, j, extra in eng.log.records:
        if kind in ("start", "fork") and extra:
            for g in extra["gpus"]:
                gpus.setdefault(j, set()).add(g)
                for other in holders.get(g, ()):
                    sharers.setdefault(j, set()).add(other)
                    sharers.setdefault(other, set()).add(j)
                holders.setdefault(g, set()).add(j)
        elif kind in ("finish", "preempt"):
            for g in gpus.get(j, ()):
                holders.get(g, set()).discard(j)
    return pd.DataFrame(
        {
            "job_id": eng.job_ids,
            "model": [eng.model_names[m] for m in eng.job_model],
            "num_gpus": eng.req_gpus,
            "submit_s": eng.submit,
            "start_s": eng.first_start,
            "finish_s": eng.finish_t,
            "jct_s": eng.finish_t - eng.submit,
            "queue_s": eng.queue_s,
            "solo_s": eng.solo_time,
            "deadline_s": eng.deadline,
            "preemptions": eng.n_preempt,
            "max_copies": eng.max_copies,
            "gpus": [sorted(gpus.get(j, ())) for j in range(eng.n_jobs)],
            "sharers": [sorted(eng.job_ids[k] for k in sharers.get(j, ())) for j in range(eng.n_jobs)],
        }
    )


def sharing_benefit(
    eng: ClusterEngine, j: int, partners: set[int], rate_before: dict[int, float], solo_iter: float
) -> tuple[int, np.float64, np.float64]:
    """Castor §9.2's sharing benefit of job ``j`` just colocated with ``partners``: ``(j, t_solo, t_co)``, its
    JCT had it waited for its partners to finish (at their rates ``rate_before``) and then run alone, and its
    JCT colocated (shared rate until the partners finish at their shared rates, then alone), both assuming no
    further arrivals. ``solo_iter``: j's iteration time alone on its GPUs at its colocated accumulation (the
    pace of ``t_co`` once the partners are done); ``t_solo`` runs it alone at the accumulation it would have
    had alone on the same GPUs (:func:`solo_accumulation`), not at the colocated one."""
    t = eng.now
    rem, rate = eng.remaining, eng.rate
    if len(partners) == 1:  # max() of one value
        p = next(iter(partners))
        r = rate_before[p]
        wait = rem.item(p) / r if r > 0 else 0.0
    else:
        wait = max(rem.item(p) / rate_before[p] if rate_before[p] > 0 else 0.0 for p in partners)
    since = t - eng._submit_l[j]
    rj = rem.item(j)
    g = eng.copies[j][0]
    own = solo_accumulation(eng, j, g)
    own_iter = solo_iter if own == eng.accum.item(j) else eng.iter_time_for(j, g, own)
    t_solo = since + wait + rj * own_iter
    shared_rate = rate.item(j)
    if len(partners) == 1:
        r = rate.item(p)
        p_done = rem.item(p) / r if r > 0 else 0.0
    else:
        p_done = max(rem.item(p) / r if (r := rate.item(p)) > 0 else 0.0 for p in partners)
    alone = rj / shared_rate if shared_rate else eng.remaining[j] / eng.rate[j]
    if alone <= p_done:
        t_co = alone
    else:
        t_co = p_done + (rj - shared_rate * p_done) * solo_iter
    t_co += since
    return (j, np.float64(t_solo), np.float64(t_co))


def solo_accumulation(eng: ClusterEngine, j: int, g: np.ndarray) -> int:
    """The accumulation job ``j`` would start with alone on GPUs ``g``: the smallest power of two that fits the
    whole memory of every GPU type of ``g`` (the job runs there, so one fits)."""
    p, batch = eng.profiles[eng._model_l[j]], eng._batch_l[j]
    fits = [fit_accumulation(p, batch, eng._type_mem_l[t]) for t in {eng._gpu_type_l[x] for x in g.tolist()}]
    return max(s for s in fits if s is not None)
