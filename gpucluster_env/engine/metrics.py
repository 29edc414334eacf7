"""Metrics of an episode: JCT statistics, makespan, queueing, utilization, sharing, deadlines.

Definitions follow Castor §9.2: JCT = finish - submit; makespan = last finish - first submit; queueing delay =
time a job spends pending (before its first start and after each preemption); sharing benefit = t_solo /
t_colocated per colocation decision (eq. 24; mean and median over the decisions).

Two utilization figures, not to be confused:

* ``gpu_occupancy``: GPU-time holding at least one job over available GPU-time (all GPUs over the makespan; in
  an episode truncated before every job finished, over the time observed). A GPU counts as busy whatever its
  job does with it.
* ``sm_activity_est``: an estimate of what Castor §9.2 measures with DCGM's SMACT (the fraction of time SMs
  have a warp active), over the same GPU-time. Each worker keeps ``min(demand, share)`` of its GPU's SMs
  active (its model's GPU demand on that GPU type, capped by its MPS active-thread share); a GPU's activity is
  the sum over its (at most two) workers, capped at 1. Restart and calibration pauses count as active (the
  estimate reads demand and shares only). ``sharing_utilization``: GPU-time with two jobs over the same.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .state import EngineState


def episode_metrics(eng: EngineState) -> dict[str, float]:
    """Metrics over the jobs finished so far (all of them once the episode is done), read from the engine's
    state (its utilization integrals brought up to the current time by the caller)."""
    done = ~np.isnan(eng.finish_t)
    jct = eng.finish_t[done] - eng.submit[done]
    nan = float("nan")
    if done.any():
        makespan = float(eng.finish_t[done].max() - eng.submit.min())
    else:
        makespan = nan
    # GPU-time available: over the makespan once every job is done; before that (a truncated episode) over the
    # time observed so far, as the busy integrals run to now (over the makespan they could exceed 1)
    span = makespan if done.all() else float(eng.now - eng.submit.min())
    avail = eng.num_gpus * span if done.any() and span > 0 else nan
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


def job_table(eng: EngineState) -> pd.DataFrame:
    """Per-job results as a DataFrame (one row per job of the episode, in submit order)."""
    sharers: dict[int, set[int]] = {}
    gpus: dict[int, set[int]] = {}
    holders: dict[int, set[int]] = {}
    for kind, j, gl in eng.log.gpu_events():
        if kind in ("start", "fork") and gl:
            for g in gl:
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
