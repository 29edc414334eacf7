"""Why Tiresias' and YARN-CS's makespans on ``hadar-philly`` are about 3x Hadar's where the paper has 1.35x and 1.67x
(claims hadar-f4-tiresias, hadar-f4-yarn, Hadar Fig. 4; docs/causes/hadar-makespan.md).

Runs ``hadar-philly`` episodes one at a time (about a second each) and prints:

1. **Where the makespan goes**, per policy (means over seeds): the makespan, the bound ``LB`` (the longest job
   alone on its fastest GPU type: no schedule that runs a job on one GPU set at a time ends sooner), the makespan
   over LB, the tail job (the last to finish, or where that one only waited for the whole cluster, the job it
   waited for) with its run over its time alone on its fastest type and the share of its run on a K80, the share
   of the five longest jobs' run time on each GPU type (``mixed``: a gang over two types, paced by the slower),
   their run over their time alone on their fastest type, how many jobs would outlast LB on a K80 (their time
   alone there) and how many of those ran more than 10% of their run on a K80 (or a gang with K80s), and the
   preemptions and reallocations.
2. **The isolating experiment**: the same Tiresias and YARN-CS with one rule added, ``+up``: when the policy
   itself has nothing to do at a decision point (it would wait), a running job whose GPUs are of a slower type
   than one with free room moves there (Reallocate, paying the scenario's 10 s restart), the job gaining most
   first. Its queue order, preemptions and first placements are the policy's own; only a job's stay on slow
   GPUs after faster ones free is taken away. Subclasses defined here; the registered policies are not changed.
3. **Comparisons** on makespan as the claims page computes them (1 - mean policy / mean baseline over seeds),
   with a paired bootstrap 95% interval and the seeds where Hadar is ahead.
4. **Even share** (arithmetic, no simulation): each seed's longest job if it ran an equal time on each of the
   three types, as a heterogeneity-agnostic policy under Gavel's round-based mechanism would spread it (its
   allocation LP with every throughput set to 1), over its time alone on its fastest type.

    .venv/bin/python docs/_scripts/hadar_makespan.py                   # development seeds 0-19, about 3 minutes
    .venv/bin/python docs/_scripts/hadar_makespan.py --seeds 0-4       # a quicker look
    .venv/bin/python docs/_scripts/hadar_makespan.py --replicate       # held-out 100-139 and 200-239, about 8 min

Nothing is read from the held-out seeds (100-179, 200-279) unless ``--replicate`` is given; ``--replicate`` runs only
hadar, the two baselines and their ``+up`` variants, and tunes nothing.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from gpucluster_env.baselines.tiresias import Tiresias
from gpucluster_env.baselines.yarn_cs import YarnCS
from gpucluster_env.leaderboard import stats
from held_out import HELD_OUT, HELD_OUT_TEXT, parse_seeds

from gpucluster_env.engine import Action, Reallocate, Wait
from gpucluster_env.policy import make_policy, run_episode

SCENARIO = "hadar-philly"
TIRESIAS = {"thresholds": (3600.0,), "order": "start"}  # the claim's Tiresias (Tiresias' own simulator)
LONGEST = 5  # the longest jobs (by time alone on their fastest type) whose placement is followed


class MoveUp:
    """Mixed in before a policy: when the policy would wait, move one running job to free GPUs of a type faster for
    it than the slowest type it holds (the job gaining most first; ties by index)."""

    def act(self, observation: Any, env: Any) -> Action | int:
        a = super().act(observation, env)  # type: ignore[misc]
        if not isinstance(a, Wait):
            return a
        view = self.view(env)  # type: ignore[attr-defined]
        eng = env.engine
        st = eng.state
        moves = []
        for j in view.running_jobs().tolist():
            order = eng.type_order(j)  # fastest first
            held = max(order.index(int(st.gpu_type[g])) for g in view.gpus_of(j).tolist())
            for t in order[:held]:
                if view.plan_reallocate(j, st.type_names[t]) is not None:
                    gain = eng.solo_iter_time(j, st.type_names[order[held]]) / eng.solo_iter_time(j, st.type_names[t])
                    moves.append((-gain, j, st.type_names[t]))
                    break
        if not moves:
            return a
        _, j, t = min(moves)
        return Reallocate(j, gpu_type=t)


class TiresiasUp(MoveUp, Tiresias):
    name = "tiresias+up"


class YarnUp(MoveUp, YarnCS):
    name = "yarn-cs+up"


POLICIES: dict[str, Any] = {
    "hadar": lambda: make_policy("hadar"),
    "gavel": lambda: make_policy("gavel"),
    "tiresias": lambda: make_policy("tiresias", **TIRESIAS),
    "yarn-cs": lambda: make_policy("yarn-cs"),
    "tiresias+up": lambda: TiresiasUp(**TIRESIAS),
    "yarn-cs+up": lambda: YarnUp(),
}
COMPARE = ("gavel", "tiresias", "yarn-cs", "tiresias+up", "yarn-cs+up")
REPLICATE = ("hadar", "tiresias", "yarn-cs", "tiresias+up", "yarn-cs+up")


def segments(env: Any) -> dict[int, list[tuple[float, float, str]]]:
    """Each job's runs from the event log: (from, to, GPU type, or ``mixed`` for a gang over two types)."""
    st = env.engine.state
    cur: dict[int, tuple[float, str]] = {}
    out: dict[int, list[tuple[float, float, str]]] = {}
    for t, kind, j, extra in st.log.records:
        if kind in ("start", "reallocate", "preempt", "finish") and j in cur:
            t0, ty = cur.pop(j)
            out.setdefault(j, []).append((t0, t, ty))
        if kind in ("start", "reallocate"):
            types = {int(st.gpu_type[g]) for g in extra["gpus"]}
            cur[j] = (t, st.type_names[types.pop()] if len(types) == 1 else "mixed")
    return out


def _tail(fin: np.ndarray, segs: dict[int, list[tuple[float, float, str]]], lb: float) -> int:
    """The last job to finish; where it only started once every earlier job was done and ran briefly (a gang that
    needs the whole cluster), the job it waited for, and so on."""
    j = int(np.argmax(fin))
    while True:
        start = segs[j][0][0]
        before = np.where(fin <= start + 1e-6)[0]
        if fin[j] - start > lb / 4 or not before.size:
            return j
        j = int(before[np.argmax(fin[before])])


def probe(env: Any) -> dict[str, Any]:
    """The bound, the tail job and the longest jobs' placement (section 1 of the module docstring)."""
    eng = env.engine
    st = eng.state
    n = st.n_jobs
    best = np.array([eng.solo_iter_time(j) * st.iterations[j] for j in range(n)])
    fin = np.asarray(st.finish_t, float)
    segs = segments(env)
    lb = float(best.max())
    tail = _tail(fin, segs, lb)
    run_tail = sum(b - a for a, b, _ in segs[tail])
    k80 = sum(b - a for a, b, ty in segs[tail] if ty == "K80")
    share: dict[str, float] = {}
    slow = []
    for j in np.argsort(-best)[:LONGEST].tolist():
        for a, b, ty in segs[j]:
            share[ty] = share.get(ty, 0.0) + b - a
        slow.append(sum(b - a for a, b, _ in segs[j]) / best[j])
    total = sum(share.values())
    k80_t = st.type_names.index("K80")
    danger = [j for j in range(n) if st.fits_type[j, k80_t] and eng.solo_iter_time(j, "K80") * st.iterations[j] > lb]
    on_k80 = [j for j in danger if sum(b - a for a, b, ty in segs[j] if ty in ("K80", "mixed"))
              > 0.1 * sum(b - a for a, b, _ in segs[j])]
    even = []  # each job's time at an equal share of every type, over its time on its fastest type
    for j in range(n):
        rates = [1.0 / eng.solo_iter_time(j, t) for t in st.type_names if st.fits_type[j, st.type_names.index(t)]]
        even.append(st.iterations[j] / float(np.mean(rates)))
    return {"lb": lb, "tail_slow": run_tail / best[tail], "tail_k80": k80 / run_tail,
            "tail_desc": f"job {tail} ({st.model_names[int(st.job_model[tail])]}, {int(st.req_gpus[tail])} GPU)",
            "share": {k: v / total for k, v in share.items()}, "long_slow": float(np.mean(slow)),
            "danger": len(danger), "danger_k80": len(on_k80),
            "even": float(max(even)) / lb}


def run(name: str, seed: int) -> dict[str, Any]:
    return run_episode(SCENARIO, POLICIES[name](), seed, extra=probe)


def bootstrap(p: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """The claims page's improvement of ``p`` over ``b`` (lower is better) with its paired 95% interval."""
    lo, hi = stats.improvement_ci(p, b)
    return stats.improvement(p, b), lo, hi


def where_table(res: dict[str, list[dict[str, Any]]]) -> None:
    print("| policy | makespan (h) | makespan / LB | tail job: run / alone on fastest | tail job on K80 | "
          "5 longest on V100 / P100 / K80 / mixed | 5 longest: run / alone on fastest | jobs longer than LB on a "
          "K80 | of them run > 10% on a K80 or mixed | preemptions | reallocations |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, rs in res.items():
        def m(k: str, rs: list[dict[str, Any]] = rs) -> float:
            return float(np.mean([r[k] for r in rs]))
        sh = {t: float(np.mean([r["share"].get(t, 0.0) for r in rs])) for t in ("V100", "P100", "K80", "mixed")}
        print(f"| {name} | {m('makespan_s') / 3600:.1f} | {np.mean([r['makespan_s'] / r['lb'] for r in rs]):.2f} | "
              f"{m('tail_slow'):.2f} | {100 * m('tail_k80'):.0f}% | "
              + " / ".join(f"{100 * v:.0f}%" for v in sh.values())
              + f" | {m('long_slow'):.2f} | {m('danger'):.1f} | {m('danger_k80'):.1f} | {m('preemptions'):.0f} | "
              f"{m('reallocations'):.0f} |")


def compare_table(res: dict[str, list[dict[str, Any]]], seeds: list[int]) -> None:
    h = np.array([r["makespan_s"] for r in res["hadar"]])
    print(f"\n| makespan, seeds {seeds[0]}-{seeds[-1]} | hadar (h) | baseline (h) | hadar's improvement | 95% interval "
          "| as a ratio | seeds hadar ahead |")
    print("|---|---|---|---|---|---|---|")
    for b in COMPARE:
        if b not in res:
            continue
        x = np.array([r["makespan_s"] for r in res[b]])
        imp, lo, hi = bootstrap(h, x)
        print(f"| hadar vs {b} | {h.mean() / 3600:.1f} | {x.mean() / 3600:.1f} | {100 * imp:+.1f}% | "
              f"[{100 * lo:+.1f}, {100 * hi:+.1f}] | {1 / (1 - imp):.2f}x | {int((h < x).sum())}/{len(h)} |")


def per_seed(res: dict[str, list[dict[str, Any]]], seeds: list[int]) -> None:
    print("\n| seed | LB (h) | " + " | ".join(res) + " | tail job under yarn-cs | even share / LB |")
    print("|---|---|" + "---|" * len(res) + "---|---|")
    for i, s in enumerate(seeds):
        first = next(iter(res.values()))[i]
        cells = " | ".join(f"{rs[i]['makespan_s'] / 3600:.1f}" for rs in res.values())
        tail = res["yarn-cs"][i]["tail_desc"] if "yarn-cs" in res else "-"
        print(f"| {s} | {first['lb'] / 3600:.1f} | {cells} | {tail} | {first['even']:.2f} |")
    ev = [r["even"] for r in next(iter(res.values()))]
    print(f"\neven share of the longest job over its time on its fastest type: mean {np.mean(ev):.2f}, "
          f"range {min(ev):.2f}-{max(ev):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-19", help="development seeds (default 0-19)")
    ap.add_argument("--replicate", action="store_true", help="the isolating comparisons on seeds 100-139, 200-239")
    args = ap.parse_args()
    if args.replicate:
        for seeds in (list(range(100, 140)), list(range(200, 240))):
            res = {p: [run(p, s) for s in seeds] for p in REPLICATE}
            compare_table(res, seeds)
        return
    seeds = parse_seeds(args.seeds)
    if HELD_OUT & set(seeds):
        ap.error(f"held-out seeds ({HELD_OUT_TEXT}) are read only with --replicate")
    res = {p: [run(p, s) for s in seeds] for p in POLICIES}
    where_table(res)
    compare_table(res, seeds)
    per_seed(res, seeds)


if __name__ == "__main__":
    main()
