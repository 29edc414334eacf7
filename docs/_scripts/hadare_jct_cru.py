"""Where HadarE's and Hadar's average-JCT gains over Gavel on HadarE's mixes come from, and the paper's CRU beside
GPU occupancy (claims hadare-f10-tb-hadar, hadare-f10-aws-hadare, hadare-f10-tb-hadare, hadare-f8-aws-cru;
docs/causes/hadare-jct-cru.md).

Runs gavel, hadar and hadare on ``hadare-aws`` and ``hadare-testbed``, every workload mix, one episode at a time
(the mixes are fixed batches: every seed is the same episode, so seed 0 is used; about a second each), and prints:

1. **Average JCT per mix** (s) of each policy, each policy's improvement on Gavel's (1 - policy / gavel, as the
   claims page computes it per mix) and its share of the seven-mix mean, beside two lower bounds on the average
   JCT of any schedule in this world, from each job's time alone on each node (no restart, start-up or
   consolidation cost): ``fork`` (a job may run on every node at once, perfect forking) and ``nofork`` (on one node
   at a time). Each is a time-indexed LP (intervals of ``--dt`` seconds) with the mean-busy-time bound: a job whose
   processing runs at most ``1/P`` of it per second (``P``: its time alone on all nodes, or on its fastest one)
   completes no earlier than its mean busy time plus ``P/2``, and no earlier than ``P``. ``gavel / bound`` is the
   most any such schedule could gain on our Gavel's average JCT. ``SPT fork`` is one schedule perfect forking
   could run (each job in turn on every node, shortest first): the least average JCT lies between it and ``fork``.
2. **Utilization per mix**: GPU occupancy (the board's reading of the paper's CRU: GPU-time holding a job over all
   GPUs x the makespan; pauses count as busy), and the paper's CRU as §VI-C and Theorem 3 define it, the nodes'
   busy time over the time slots of all nodes: ``busy`` (holding time less the restart and consolidation pauses
   the engine's rules apply, read from the event log: :func:`pauses`) over all nodes x the makespan, and over all
   nodes x the rounds begun (``slots``); and the same busy time over only the node-rounds in which a node held a
   job (``held slots``, the other reading of "allocated time slots").
3. **Aggregates** over the seven mixes: the mean of the per-mix ratios (the claims board's "mean of 7 mixes") and
   the ratio of the seven-mix means (the other reading of the paper's "on average"), for JCT and each utilization.
4. With ``--variants``, the average JCT of counterfactual orders (policy options, and a subclass defined here; the
   registered policies are not changed): HadarE with the oracle throughputs, Hadar and HadarE with the queue by
   utility per GPU-slot
   (``order=slot``, short jobs first: docs/causes/hadar-median-jct.md), and HadarE that also forks the running
   job with the least time left first (``hadare-shortfirst``), with the spec estimate or the oracle throughputs.

    .venv/bin/python docs/_scripts/hadare_jct_cru.py                       # both clusters, about 1 minute
    .venv/bin/python docs/_scripts/hadare_jct_cru.py --variants            # the counterfactual orders (4.)
    .venv/bin/python docs/_scripts/hadare_jct_cru.py --scenarios hadare-aws --mixes M-1,M-5

The policies, scenarios and engine are not changed.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np
import scipy.sparse as sp
from gpucluster_env.baselines.hadare import HadarE
from hadare_gain import MIXES, SCENARIOS, parse_kv, solo_matrix
from scipy.optimize import linprog

from gpucluster_env.engine import Action
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy, make_policy, run_episode

POLICIES = ("gavel", "hadar", "hadare")
def holdings(env: Any) -> dict[int, list[tuple[float, float, int]]]:
    """Each GPU's holding intervals (from, to, job) read from the event log."""
    st = env.engine.state
    held: dict[int, dict[int, float]] = {}  # job -> {gpu: since}
    out: dict[int, list[tuple[float, float, int]]] = {}

    def release(j: int, gpus: list[int], t: float) -> None:
        for g in gpus:
            since = held.get(j, {}).pop(g, None)
            if since is not None:
                out.setdefault(g, []).append((since, t, j))

    for t, kind, j, extra in st.log.records:
        if kind in ("start", "fork"):
            for g in extra["gpus"]:
                held.setdefault(j, {})[g] = t
        elif kind == "reallocate":
            release(j, list(held.get(j, {})), t)
            for g in extra["gpus"]:
                held.setdefault(j, {})[g] = t
        elif kind == "move_copy":
            release(j, extra["from"], t)
            for g in extra["gpus"]:
                held.setdefault(j, {})[g] = t
        elif kind == "drop_copy":
            release(j, extra["gpus"], t)
        elif kind in ("preempt", "finish"):
            release(j, list(held.get(j, {})), t)
    return out


def pauses(env: Any) -> tuple[dict[int, list[tuple[float, float]]], list[tuple[int, float, float]]]:
    """The pauses the engine's rules apply, read from the event log and the scenario's settings: per job, the
    intervals in which none of its copies progresses (a restart after a preemption, or on every allocation with
    ``restart_on_allocation``; a ``Reallocate`` that moves it; a forked job's consolidation at every round
    boundary while it has more than one copy; a squeeze or swell's calibration), and per GPU, a new copy's start-up
    (``fork``, ``move_copy``)."""
    st = env.engine.state
    cfg = st.config
    job: dict[int, list[tuple[float, float]]] = {}
    gpu: list[tuple[int, float, float]] = []
    preempted: set[int] = set()
    copies: dict[int, int] = {}
    gpus: dict[int, list[int]] = {}

    def add(j: int, t: float, length: float) -> None:
        if length > 0:
            job.setdefault(j, []).append((t, t + length))

    for t, kind, j, extra in st.log.records:
        if kind == "start":
            add(j, t, cfg.restart_s if j in preempted or cfg.restart_on_allocation else 0.0)
            copies[j], gpus[j] = 1, sorted(extra["gpus"])
        elif kind == "reallocate":
            if sorted(extra["gpus"]) != gpus.get(j) or "batch" not in extra:
                add(j, t, cfg.restart_s)
            gpus[j] = sorted(extra["gpus"])
        elif kind in ("fork", "move_copy"):
            copies[j] += kind == "fork"
            if cfg.copy_startup_s > 0:
                gpu += [(g, t, t + cfg.copy_startup_s) for g in extra["gpus"]]
        elif kind == "drop_copy":
            copies[j] -= 1
        elif kind in ("squeeze", "swell"):
            add(j, t, cfg.calibration_overhead_s)
        elif kind in ("preempt", "finish"):
            if kind == "preempt":
                preempted.add(j)
            copies.pop(j, None)
        elif kind == "round" and cfg.consolidation_s:
            for k, n in copies.items():
                if n > 1:
                    add(k, t, cfg.consolidation_s)
    return job, gpu


def paused_gpu_s(env: Any, hold: dict[int, list[tuple[float, float, int]]]) -> float:
    """GPU-time of the pauses while the paused job held the GPU (a job's overlapping pauses counted once)."""
    job, gpu = pauses(env)
    total = 0.0
    for j, ivs in job.items():
        merged: list[list[float]] = []
        for a, b in sorted(ivs):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        held = [(a, b) for iv in hold.values() for a, b, k in iv if k == j]
        total += sum(max(0.0, min(b, hb) - max(a, ha)) for a, b in merged for ha, hb in held)
    for g, a, b in gpu:
        total += sum(max(0.0, min(b, hb) - max(a, ha)) for ha, hb, _ in hold.get(g, []))
    return total


def utilization(env: Any, r: dict[str, Any]) -> dict[str, float]:
    """Section 2 of the module docstring, for one finished episode."""
    st = env.engine.state
    n, span, tau = st.num_gpus, r["makespan_s"], float(st.config.round_s)
    hold = holdings(env)
    held_s = sum(b - a for iv in hold.values() for a, b, _ in iv)
    busy = held_s - paused_gpu_s(env, hold)
    rounds = math.ceil(span / tau - 1e-9)
    held_slots = 0
    for k in range(rounds):
        lo, hi = k * tau, (k + 1) * tau
        held_slots += sum(any(min(b, hi) - max(a, lo) > 1e-9 for a, b, _ in iv) for iv in hold.values())
    return {"occupancy": r["gpu_occupancy"], "held_check": held_s / (n * span), "busy": busy / (n * span),
            "slots": busy / (n * rounds * tau), "held_slots": busy / (held_slots * tau) if held_slots else math.nan}


def jct_bound(solo: np.ndarray, fork: bool, dt: float, horizon: float) -> float:
    """The least average JCT of any schedule (module docstring, section 1): x[j, i, k] seconds of job j on node i
    in interval k, C[j] its completion bound."""
    nj, nn = solo.shape
    nk = int(math.ceil(horizon / dt))
    rate = 1.0 / solo
    p = 1.0 / rate.sum(axis=1) if fork else solo.min(axis=1)
    x = np.arange(nj * nn * nk).reshape(nj, nn, nk)
    groups = [x.transpose(1, 2, 0).reshape(-1, nj)]  # each node's time in each interval
    if not fork:
        groups.append(x.transpose(0, 2, 1).reshape(-1, nn))  # each job's time in each interval: one node at a time
    caps = [sp.csr_matrix((np.ones(g.size), (np.repeat(np.arange(len(g)), g.shape[1]), g.ravel())),
                          shape=(len(g), x.size + nj)) for g in groups]
    t_k = np.arange(nk) * dt  # C[j] >= sum_k t_k y[j, k] + P/2, with y[j, k] = sum_i x r: progress by time
    jobs = np.repeat(np.arange(nj), nn * nk)
    done = sp.csr_matrix(((rate[:, :, None] * t_k).ravel(), (jobs, x.ravel())), shape=(nj, x.size + nj))
    done = done - sp.csr_matrix((np.ones(nj), (np.arange(nj), x.size + np.arange(nj))), shape=(nj, x.size + nj))
    a_ub = sp.vstack([*caps, done])
    b_ub = np.concatenate([np.full(c.shape[0], dt) for c in caps] + [-p / 2])
    work = sp.csr_matrix((np.repeat(rate, nk, axis=1).ravel(), (jobs, x.ravel())), shape=(nj, x.size + nj))
    c = np.concatenate([np.zeros(x.size), np.full(nj, 1.0 / nj)])
    bounds = [(0, None)] * x.size + [(float(pj), None) for pj in p]
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=work, b_eq=np.ones(nj), bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"JCT bound LP: {res.message}")
    return float(res.fun)


class _LeastLeftFirst:
    """A view whose remaining work is negated: HadarE's fork order (most time left first) then takes the job with
    the least time left first."""

    def __init__(self, view: ClusterView) -> None:
        self._view = view

    def __getattr__(self, name: str) -> Any:
        return getattr(self._view, name)

    def remaining_now(self, *args: Any) -> np.ndarray:
        return -self._view.remaining_now(*args)


class HadarEShortFirst(HadarE):
    """Counterfactual HadarE for average JCT: free nodes take copies of the running job with the *least* time left
    first (the registered HadarE forks the one with the most, as Fig. 6(b) runs the longest job on every node)."""

    name = "hadare-shortfirst"

    def _after_starts(self, view: ClusterView) -> Action:
        return super()._after_starts(_LeastLeftFirst(view))  # type: ignore[arg-type]


def make(arg: str) -> Policy:
    """``NAME[:KEY=VALUE,...]``: a registered policy with options, or ``hadare-shortfirst[:...]``."""
    name, _, rest = arg.partition(":")
    return HadarEShortFirst(**parse_kv(rest)) if name == "hadare-shortfirst" else make_policy(name, **parse_kv(rest))


VARIANTS = ("hadar:order=slot", "hadare:estimate=oracle", "hadare:order=slot", "hadare-shortfirst:order=slot",
            "hadare-shortfirst:order=slot,estimate=oracle")
"""The counterfactual queue and fork orders of ``--variants`` (average JCT only)."""


def variants(scenario: str, mixes: list[str]) -> None:
    g = [run(scenario, m, "gavel")["avg_jct_s"] for m in mixes]
    print(f"\n## {scenario}: average JCT (s) of the counterfactual orders; board's mean improvement on gavel")
    print("| variant | " + " | ".join(mixes) + " | mean improvement on gavel | mean of gavel / x |")
    print("|---|" + "---|" * len(mixes) + "---|---|")
    for v in VARIANTS:
        x = [run(scenario, m, v)["avg_jct_s"] for m in mixes]
        imp = np.mean([1 - a / b for a, b in zip(x, g, strict=True)])
        print(f"| {v} | " + " | ".join(f"{a:.0f}" for a in x) + f" | {100 * imp:+.1f}% | "
              f"{mean_ratio(x, g, True):.3f}x |")


def spt_fork(solo: np.ndarray) -> float:
    """The average JCT of one schedule that perfect, free forking could run: the jobs one at a time on every node,
    shortest (on all nodes) first (so the least average JCT lies between the fork bound and this)."""
    p = np.sort(1.0 / (1.0 / solo).sum(axis=1))
    return float(np.cumsum(p).mean())


def run(scenario: str, mix: str, policy: str) -> dict[str, Any]:

    def extra(env: Any) -> dict[str, Any]:
        solo, _ = solo_matrix(env)
        return {"solo": solo, "env": env}

    r = run_episode(scenario, make(policy), 0, {"mix": mix}, extra=extra)
    r.update(utilization(r.pop("env"), r))
    return r


def mean_ratio(a: list[float], b: list[float], lower: bool) -> float:
    """The mean over mixes of b/a (lower is better) or a/b: the claims board's "mean of 7 mixes" as a ratio."""
    x, y = np.array(a), np.array(b)
    return float(np.mean(y / x if lower else x / y))


def report(scenario: str, mixes: list[str], dt: float) -> None:
    res = {p: [run(scenario, m, p) for m in mixes] for p in POLICIES}
    gavel = res["gavel"]
    bounds: dict[str, list[float]] = {"fork": [], "nofork": [], "spt": []}
    for k in range(len(mixes)):
        horizon = 1.05 * max(r[k]["makespan_s"] for r in res.values())
        for f in ("fork", "nofork"):
            bounds[f].append(jct_bound(gavel[k]["solo"], f == "fork", dt, horizon))
        bounds["spt"].append(spt_fork(gavel[k]["solo"]))
    print(f"\n## {scenario}: average JCT (s) per mix; improvement on gavel (1 - x / gavel) and its share of the "
          "7-mix mean")
    print("| mix | gavel | hadar | hadare | LB nofork | LB fork | SPT fork | hadar vs gavel | hadare vs gavel | "
          "gavel / LB nofork | gavel / LB fork |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    n = len(mixes)
    for k, m in enumerate(mixes):
        g = gavel[k]["avg_jct_s"]
        h, e = res["hadar"][k]["avg_jct_s"], res["hadare"][k]["avg_jct_s"]
        nf, f = bounds["nofork"][k], bounds["fork"][k]
        print(f"| {m} | {g:.0f} | {h:.0f} | {e:.0f} | {nf:.0f} | {f:.0f} | {bounds['spt'][k]:.0f} | "
              f"{100 * (1 - h / g):+.1f}% ({100 * (1 - h / g) / n:+.1f}) | "
              f"{100 * (1 - e / g):+.1f}% ({100 * (1 - e / g) / n:+.1f}) | {g / nf:.2f}x | {g / f:.2f}x |")
    g = [r["avg_jct_s"] for r in gavel]
    jct = {p: [r["avg_jct_s"] for r in res[p]] for p in ("hadar", "hadare")}
    jct.update({f"LB {b}": bounds[b] for b in ("nofork", "fork")} | {"SPT fork": bounds["spt"]})
    print("mean of the per-mix improvements (the board): "
          + ", ".join(f"{p} {100 * np.mean(1 - np.array(x) / g):+.1f}%" for p, x in jct.items()))
    print("mean of the per-mix ratios gavel / x: "
          + ", ".join(f"{p} {mean_ratio(x, g, True):.3f}x" for p, x in jct.items()))
    print("ratio of the 7-mix means: " + ", ".join(f"{p} {np.mean(g) / np.mean(x):.3f}x" for p, x in jct.items()))

    keys = ("occupancy", "busy", "slots", "held_slots")
    print(f"\n## {scenario}: utilization per mix (occupancy / busy / slots / held slots), and the holding check")
    print("| mix | " + " | ".join(POLICIES) + " | hadare / gavel (occupancy, busy, slots, held slots) |")
    print("|---|" + "---|" * len(POLICIES) + "---|")
    for k, m in enumerate(mixes):
        cells = " | ".join("/".join(f"{res[p][k][x]:.3f}" for x in keys) + f" ({res[p][k]['held_check']:.3f})"
                           for p in POLICIES)
        rat = ", ".join(f"{res['hadare'][k][x] / gavel[k][x]:.2f}x" for x in keys)
        print(f"| {m} | {cells} | {rat} |")
    for p in ("hadar", "hadare"):
        for x in keys:
            a, b = [r[x] for r in res[p]], [r[x] for r in gavel]
            without = mean_ratio(a[1:], b[1:], False) if mixes[0] == "M-1" else math.nan
            print(f"{p} vs gavel, {x}: mean of per-mix ratios {mean_ratio(a, b, False):.3f}x (without M-1 "
                  f"{without:.3f}x); ratio of the means {np.mean(a) / np.mean(b):.3f}x; means {np.mean(a):.3f} / "
                  f"{np.mean(b):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--mixes", default=",".join(MIXES))
    ap.add_argument("--dt", type=float, default=30.0, help="interval of the JCT bound LP (s)")
    ap.add_argument("--variants", action="store_true", help="only the counterfactual orders' average JCT")
    args = ap.parse_args()
    for scenario in args.scenarios.split(","):
        if args.variants:
            variants(scenario, args.mixes.split(","))
        else:
            report(scenario, args.mixes.split(","), args.dt)


if __name__ == "__main__":
    main()
