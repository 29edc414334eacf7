"""Why ``lucid+gimbal`` is slower than ``lucid`` on ``gimbal-alibaba`` (claim gimbal-f8-lucid-ali, Gimbal Fig. 8;
docs/causes/gimbal-lucid-alibaba.md).

Runs ``gimbal-alibaba`` episodes one at a time on the development seeds (default 0-19) and prints:

1. **Ablation** (the catalog's interference): ``lucid``, ``lucid+gimbal`` and its parts (LGRR off, LISS off, both
   off, 30% granularity, Lucid's own packing rule with Gimbal's mechanisms, sharing-score thresholds 2 and 3
   instead of 4), Lucid with each of Gimbal's two packing relaxations alone (any pair of sharing scores,
   ``threshold=4``; unequal GPU counts), and the counterfactual **free GPUs first**: the same policies, except
   that a job is packed beside a running partner only when it cannot start on free GPUs (a subclass defined here;
   the registered policies are not changed). Per variant: means of average JCT, queueing, run time (JCT minus
   queueing), makespan, colocations, squeezes, GPU occupancy; the improvement on ``lucid`` as the claims page
   computes it (1 - mean policy / mean baseline over seeds) with a paired bootstrap 95% interval over seeds, and
   the seeds where it improves.
2. **Colocations**: for every Colocate a policy issues, whether enough free GPUs for the job were there (the
   placement it would have had alone, under the same topology rule), whether the partner is larger, and the sum of
   the two Lucid sharing scores (0-4; Lucid's own threshold is 2).
3. **Per job**: ``lucid+gimbal``'s and ``lucid`` (threshold 4)'s run-time change against ``lucid`` by GPU count and
   by solo-run-time third, as hours of average JCT (each group's summed change over all jobs).
4. **No interference** (world xi = 1, the claims page's diagnostic): the same comparisons, and ``lucid+gimbal``
   deciding on the world's own pair ratios (what its runtime monitor would observe, gimbal §5.2 Algorithm 1 line 8)
   instead of Castor's predictor.

    .venv/bin/python docs/_scripts/gimbal_lucid_alibaba.py                 # seeds 0-19, about 6 minutes
    .venv/bin/python docs/_scripts/gimbal_lucid_alibaba.py --seeds 0-4     # a quicker look
    .venv/bin/python docs/_scripts/gimbal_lucid_alibaba.py --replicate     # held-out seeds 100-139, about 3 minutes

Nothing is read from the held-out seeds (100-179, 200-279) unless ``--replicate`` is given; ``--replicate`` runs only
the isolating comparisons, on seeds 100-139, and tunes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np
from gpucluster_env.baselines.lucid import Lucid, sharing_score
from gpucluster_env.baselines.parts.gimbal_layer import GimbalOptions, WithGimbal
from gpucluster_env.baselines.parts.packing_walk import free_start
from held_out import HELD_OUT, HELD_OUT_TEXT

from gpucluster_env.catalog import Catalog, default_catalog
from gpucluster_env.engine import Action, Colocate
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.interference import ConstantInterference
from gpucluster_env.policy import Policy, run_episode

SCENARIO = "gimbal-alibaba"
REPLICATE_SEEDS = range(100, 140)
RELAXED = {"threshold": 4, "unequal": True}  # lucid+gimbal's host (baselines/lucid_gimbal.py)


class ProbedLucid(Lucid):
    """Lucid as registered, logging each Colocate it issues (enough free GPUs? partner larger? score sum);
    ``free_first``: the counterfactual that starts a job on free GPUs whenever it can, packing it only when not."""

    name = "lucid"

    def __init__(self, threshold: int = 2, unequal: bool = False, free_first: bool = False) -> None:
        super().__init__(threshold, unequal)
        self.free_first = free_first
        self.log: list[tuple[bool, bool, int]] = []

    def _answer(self, view: ClusterView, j: int) -> Action | None:
        if self.free_first:
            a = free_start(view, self.rule, j)
            if a is not None:
                return a
        a = super()._answer(view, j)
        if isinstance(a, Colocate):
            t = np.array([int(view.gpu_type[a.gpus[0]])])
            s = int(sharing_score(view.demand_of(np.array([j]), t))[0] + sharing_score(
                view.demand_of(np.array([a.partner]), t))[0])
            self.log.append((free_start(view, self.rule, j) is not None,
                             int(view.req_gpus[a.partner]) > int(view.req_gpus[j]), s))
        return a


class WorldRatios:
    """An interference 'predictor' that returns the world's own pair ratios: what Gimbal's runtime monitor
    would measure (the registered policies decide on Castor's fitted predictor instead)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def predict_pair(self, a: Any, b: Any, gpu_type: str) -> tuple[float, float]:
        return self.catalog.interference.pair_xi(a, b, gpu_type)


# name: (host options, Gimbal options or None for Lucid alone, free GPUs first, decide on the world's ratios)
VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any] | None, bool, bool]] = {
    "lucid": ({}, None, False, False),
    "lucid+gimbal": (RELAXED, {}, False, False),
    "lucid+gimbal lgrr=false": (RELAXED, {"lgrr": False}, False, False),
    "lucid+gimbal liss=false": (RELAXED, {"liss": False}, False, False),
    "lucid+gimbal lgrr=liss=false": (RELAXED, {"lgrr": False, "liss": False}, False, False),
    "lucid+gimbal granularity=30": (RELAXED, {"granularity": 30}, False, False),
    "lucid+gimbal threshold=2 unequal=false": ({}, {}, False, False),
    "lucid+gimbal threshold=2": ({"threshold": 2, "unequal": True}, {}, False, False),
    "lucid+gimbal threshold=3": ({"threshold": 3, "unequal": True}, {}, False, False),
    "lucid threshold=4": ({"threshold": 4}, None, False, False),
    "lucid unequal=true": ({"unequal": True}, None, False, False),
    "lucid, free GPUs first": ({}, None, True, False),
    "lucid threshold=4, free GPUs first": ({"threshold": 4}, None, True, False),
    "lucid+gimbal, free GPUs first": (RELAXED, {}, True, False),
    "lucid+gimbal lgrr=liss=false, free GPUs first": (RELAXED, {"lgrr": False, "liss": False}, True, False),
    "lucid+gimbal, world's ratios": (RELAXED, {}, False, True),
}
ABLATION = list(VARIANTS)
XI1 = ["lucid", "lucid+gimbal", "lucid+gimbal lgrr=false", "lucid+gimbal liss=false",
       "lucid+gimbal lgrr=liss=false", "lucid+gimbal, world's ratios", "lucid+gimbal, free GPUs first"]
REPLICATE = ["lucid", "lucid+gimbal", "lucid threshold=4", "lucid+gimbal threshold=2 unequal=false",
             "lucid+gimbal, free GPUs first"]
REPLICATE_XI1 = ["lucid", "lucid+gimbal", "lucid+gimbal, world's ratios"]
COMPARISONS = [  # (policy, baseline) pairs printed after each table
    ("lucid+gimbal", "lucid"),
    ("lucid threshold=4", "lucid"),
    ("lucid+gimbal threshold=2 unequal=false", "lucid"),
    ("lucid+gimbal, free GPUs first", "lucid"),
    ("lucid+gimbal, free GPUs first", "lucid+gimbal"),
    ("lucid+gimbal, free GPUs first", "lucid, free GPUs first"),
    ("lucid+gimbal", "lucid+gimbal lgrr=liss=false"),
    ("lucid+gimbal, world's ratios", "lucid+gimbal"),
    ("lucid+gimbal, world's ratios", "lucid"),
]


def make(name: str, catalog: Catalog) -> tuple[Policy, ProbedLucid]:
    """The variant's policy and its Lucid host (whose Colocate log is read after the episode)."""
    host_opts, gimbal_opts, free_first, world = VARIANTS[name]
    host = ProbedLucid(free_first=free_first, **host_opts)
    if gimbal_opts is None:
        return host, host
    opts = GimbalOptions(**gimbal_opts, predictor=WorldRatios(catalog) if world else None)
    pol = WithGimbal(host, "jct", opts)
    pol.name = "lucid+gimbal"
    return pol, host


def per_job(env: Any) -> dict[str, Any]:
    e = env.engine
    return {"jobs": {"gpus": e.req_gpus.tolist(), "solo": e.solo_time.tolist(),
                     "run": (e.finish_t - e.first_start).tolist()}}


def run(name: str, seed: int, xi: float | None) -> dict[str, Any]:
    catalog = default_catalog() if xi is None else default_catalog().with_interference(ConstantInterference(xi))
    pol, host = make(name, catalog)
    r = run_episode(SCENARIO, pol, seed, None, {"catalog": catalog}, extra=per_job)
    r["colocate_log"] = host.log
    return r


def bootstrap(p: np.ndarray, b: np.ndarray, n: int = 10_000) -> tuple[float, float, float]:
    """1 - mean(p)/mean(b) over seeds (lower is better), with its paired bootstrap 95% interval."""
    rng = np.random.default_rng(0)
    i = rng.integers(0, len(p), size=(n, len(p)))
    boot = 1.0 - p[i].mean(axis=1) / b[i].mean(axis=1)
    return 1.0 - p.mean() / b.mean(), float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))


def table(res: dict[str, list[dict[str, Any]]], names: list[str]) -> None:
    base = np.array([r["avg_jct_s"] for r in res["lucid"]])
    print("| variant | avg JCT (h) | queueing (h) | run (h) | makespan (h) | colocations | squeezes | GPU occupancy "
          "| avg JCT vs lucid | 95% interval | seeds better |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in names:
        rs = res[n]
        jct = np.array([r["avg_jct_s"] for r in rs])
        q = np.array([r["avg_queue_s"] for r in rs])
        imp, lo, hi = bootstrap(jct, base)

        def mean(k: str, rs: list[dict[str, Any]] = rs) -> float:
            return float(np.mean([r[k] for r in rs]))
        print(f"| {n} | {jct.mean() / 3600:.3f} | {q.mean() / 3600:.4f} | {(jct - q).mean() / 3600:.3f} | "
              f"{mean('makespan_s') / 3600:.1f} | {mean('colocations'):.0f} | {mean('squeezes'):.0f} | "
              f"{mean('gpu_occupancy'):.2f} | {100 * imp:+.1f}% | [{100 * lo:+.1f}, {100 * hi:+.1f}] | "
              f"{int((jct < base).sum())}/{len(base)} |")


def comparisons(res: dict[str, list[dict[str, Any]]]) -> None:
    print("\n| avg JCT: policy vs baseline | improvement | 95% interval | seeds better |")
    print("|---|---|---|---|")
    for p, b in COMPARISONS:
        if p in res and b in res:
            pj = np.array([r["avg_jct_s"] for r in res[p]])
            bj = np.array([r["avg_jct_s"] for r in res[b]])
            imp, lo, hi = bootstrap(pj, bj)
            print(f"| {p} vs {b} | {100 * imp:+.1f}% | [{100 * lo:+.1f}, {100 * hi:+.1f}] | "
                  f"{int((pj < bj).sum())}/{len(pj)} |")


def colocations(res: dict[str, list[dict[str, Any]]], names: list[str]) -> None:
    print("\n| variant | colocations per seed | with enough free GPUs for the job | partner larger | "
          "score sum 0 / 1 / 2 / 3 / 4 per seed |")
    print("|---|---|---|---|---|")
    for n in names:
        log = [c for r in res[n] for c in r["colocate_log"]]
        k = len(res[n])
        if not log:
            continue
        free = np.mean([c[0] for c in log])
        larger = np.mean([c[1] for c in log])
        sums = " / ".join(f"{sum(c[2] == s for c in log) / k:.1f}" for s in range(5))
        print(f"| {n} | {len(log) / k:.1f} | {100 * free:.1f}% | {100 * larger:.1f}% | {sums} |")


def jobs_table(res: dict[str, list[dict[str, Any]]], policy: str, base: str) -> None:
    print(f"\n{policy} against {base}, per job (the group's summed run-time change over all jobs, as hours of "
          "average JCT; mean run time over solo time):\n")
    print(f"| jobs | per seed | run-time change (h of avg JCT) | {policy} run/solo | {base} run/solo |")
    print("|---|---|---|---|---|")
    rows = []
    for a, b in zip(res[policy], res[base], strict=True):
        ja, jb = a["jobs"], b["jobs"]
        q = np.quantile(ja["solo"], [1 / 3, 2 / 3])
        for g, s, ra, rb in zip(ja["gpus"], ja["solo"], ja["run"], jb["run"], strict=True):
            rows.append((g, int(np.searchsorted(q, s)), s, ra, rb))
    r = np.array(rows, dtype=float)
    k = len(res[policy])
    groups = [(f"{int(g)} GPU{'s' if g > 1 else ''}", r[:, 0] == g) for g in np.unique(r[:, 0])]
    groups += [(f"{t} third of solo run time", r[:, 1] == i) for i, t in enumerate(("shortest", "middle", "longest"))]
    groups.append(("all", np.ones(len(r), dtype=bool)))
    for label, m in groups:
        d = (r[m, 3] - r[m, 4]).sum() / len(r) / 3600
        print(f"| {label} | {m.sum() / k:.1f} | {d:+.4f} | {np.mean(r[m, 3] / r[m, 2]):.3f} | "
              f"{np.mean(r[m, 4] / r[m, 2]):.3f} |")


def seeds_arg(s: str) -> list[int]:
    out: list[int] = []
    for part in s.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def run_all(names: list[str], seeds: list[int], xi: float | None) -> dict[str, list[dict[str, Any]]]:
    res: dict[str, list[dict[str, Any]]] = {}
    for n in names:
        res[n] = [run(n, s, xi) for s in seeds]
        print(f"  ran {n} (xi={'catalog' if xi is None else xi}), {len(seeds)} seeds", file=sys.stderr)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0-19", help="development seeds, e.g. 0-19 or 0,3,5 (default 0-19)")
    ap.add_argument("--replicate", action="store_true",
                    help="run only the isolating comparisons on the held-out seeds 100-139")
    ap.add_argument("--json", help="also write every episode's metrics to this file")
    args = ap.parse_args()
    if args.replicate:
        seeds, names, names_xi1 = list(REPLICATE_SEEDS), REPLICATE, REPLICATE_XI1
    else:
        seeds = seeds_arg(args.seeds)
        if HELD_OUT & set(seeds):
            ap.error(f"held-out seeds ({HELD_OUT_TEXT}) are read only with --replicate")
        names, names_xi1 = ABLATION, XI1
    print(f"{SCENARIO}, seeds {seeds[0]}-{seeds[-1]} ({len(seeds)})\n")
    res = run_all(names, seeds, None)
    print("## The catalog's interference\n")
    table(res, names)
    comparisons(res)
    colocations(res, names)
    jobs_table(res, "lucid+gimbal", "lucid")
    if "lucid threshold=4" in res:
        jobs_table(res, "lucid threshold=4", "lucid")
    res1 = run_all(names_xi1, seeds, 1.0)
    print("\n## No interference (world xi = 1)\n")
    table(res1, names_xi1)
    comparisons(res1)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seeds": seeds, "catalog": res, "xi1": res1}, f)


if __name__ == "__main__":
    main()
