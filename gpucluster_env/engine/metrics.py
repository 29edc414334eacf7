"""Metrics of an episode: JCT statistics, makespan, queueing, utilization, sharing, deadlines.

Definitions follow Castor §9.2: JCT = finish - submit; makespan = last finish - first submit; queueing delay =
time a job spends pending (before its first start and after each preemption); GPU utilization = busy GPU-time
over available GPU-time (all GPUs over the makespan); sharing utilization = GPU-time with two jobs over the
same; sharing benefit = t_solo / t_colocated per colocation decision.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

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
    benefits = [s / c for _, s, c in eng.sharing_benefits if c > 0]
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
        "gpu_utilization": float(eng.busy_gpu_s / avail) if avail == avail else nan,
        "sharing_utilization": float(eng.shared_gpu_s / avail) if avail == avail else nan,
        "avg_slowdown": float((jct / eng.solo_time[done]).mean()) if len(jct) else nan,
        "colocations": int(eng.counts["colocations"]),
        "preemptions": int(eng.counts["preemptions"]),
        "forks": int(eng.counts["forks"]),
        "squeezes": int(eng.counts["squeezes"]),
        "swells": int(eng.counts["swells"]),
        "decisions": int(eng.counts["decisions"]),
        "sharing_benefit": float(np.mean(benefits)) if benefits else nan,
        "deadline_satisfaction": float(met.sum() / has_dl.sum()) if has_dl.any() else nan,
    }
    return out


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
    further arrivals. ``solo_iter``: j's iteration time alone on its GPUs."""
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
    t_solo = since + wait + rj * solo_iter
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
