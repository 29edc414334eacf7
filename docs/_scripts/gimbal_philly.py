"""Why Gimbal's gains on ``gimbal-philly`` are small (claims gimbal-f9-queue-ph, gimbal-f8-gandiva-ph) or larger than
the paper's ablation step (gimbal-f12-uneq-dl); docs/causes/gimbal-philly.md.

Runs ``gimbal-philly`` episodes one at a time on the development seeds (default 0-19) and prints, per part:

1. **lucid** (claim gimbal-f9-queue-ph, average queueing): ``lucid``, ``lucid+gimbal`` and its parts (LGRR off,
   LGRR and LISS off, Lucid's own packing rule under Gimbal), Lucid with the relaxed threshold alone, Gimbal
   deciding on the world's own pair ratios (``WorldRatios`` of docs/_scripts/gimbal_lucid_alibaba.py), and the
   Alibaba page's counterfactual **free GPUs first** (pack only when the job cannot start alone). Per Colocate:
   whether the job could have started alone on free GPUs.
2. **gandiva** (claims gimbal-f8-gandiva-ph and gimbal-f12-uneq-dl, deadline satisfaction): ``gandiva``,
   ``gandiva+gimbal`` and its parts (the Fig. 12 steps: unequal packing alone = ``lgrr=false,liss=false``, then
   + LISS = ``lgrr=false``), Gandiva with unequal packing and no coordination at all, Gimbal on
   the world's own ratios. Per job: met its deadline, missed it already in the queue (its first start came later
   than deadline minus solo run time), or missed it while running.
3. **worlds** beside the scenario, each changing one thing: no interference (world xi = 1; Gimbal on Castor's
   predictor, and on the world's ratios), arrivals at half the rate (``load=0.5, max_span_h=9``: the same
   windows of the trace, spread over twice the time), and the paper's ablation testbed
   (gimbal §7.3: 16 GPUs = 8 nodes x 2 A40, 100 Philly jobs).

Per variant: means of the claim metric, average JCT, queueing, run time (JCT minus queueing), colocations,
squeezes, GPU occupancy; the improvement on the baseline as the claims page computes it (lower-is-better metrics:
1 - mean policy / mean baseline; deadline satisfaction: mean policy / mean baseline - 1) with a paired bootstrap
95% interval over seeds, and the seeds where the policy is better.

    .venv/bin/python docs/_scripts/gimbal_philly.py                    # seeds 0-19, both parts, about 25 minutes
    .venv/bin/python docs/_scripts/gimbal_philly.py --part lucid       # one part
    .venv/bin/python docs/_scripts/gimbal_philly.py --seeds 0-4        # a quicker look
    .venv/bin/python docs/_scripts/gimbal_philly.py --replicate        # held-out seeds 100-139 (and --seeds 200-239)

Nothing is read from the held-out seeds (100-179, 200-279) unless ``--replicate`` is given; ``--replicate`` runs
only the isolating comparisons and tunes nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

import numpy as np
from gimbal_lucid_alibaba import ProbedLucid, WorldRatios, seeds_arg  # docs/_scripts
from gpucluster_env.baselines.gandiva import Gandiva
from gpucluster_env.baselines.gandiva_gimbal import GandivaGimbal
from gpucluster_env.baselines.parts.gimbal_layer import GimbalOptions, WithGimbal
from held_out import HELD_OUT, HELD_OUT_TEXT

from gpucluster_env.catalog import default_catalog
from gpucluster_env.hardware import ClusterSpec
from gpucluster_env.interference import ConstantInterference
from gpucluster_env.policy import Policy, run_episode
from gpucluster_env.scenarios import get_scenario

SCENARIO = "gimbal-philly"
RELAXED = {"threshold": 4, "unequal": True}  # lucid+gimbal's host (baselines/lucid_gimbal.py)

# name: (host kind, host options, Gimbal options or None for the host alone, free GPUs first)
VARIANTS: dict[str, tuple[str, dict[str, Any], dict[str, Any] | None, bool]] = {
    "lucid": ("lucid", {}, None, False),
    "lucid+gimbal": ("lucid", RELAXED, {}, False),
    "lucid+gimbal lgrr=false": ("lucid", RELAXED, {"lgrr": False}, False),
    "lucid+gimbal lgrr=liss=false": ("lucid", RELAXED, {"lgrr": False, "liss": False}, False),
    "lucid+gimbal threshold=2 unequal=false": ("lucid", {}, {}, False),
    "lucid threshold=4": ("lucid", {"threshold": 4}, None, False),
    "lucid+gimbal, world's ratios": ("lucid", RELAXED, {"world": True}, False),
    "lucid+gimbal, free GPUs first": ("lucid", RELAXED, {}, True),
    "gandiva": ("gandiva", {}, None, False),
    "gandiva+gimbal": ("gandiva", {}, {}, False),
    "gandiva+gimbal lgrr=false": ("gandiva", {}, {"lgrr": False}, False),
    "gandiva+gimbal lgrr=liss=false": ("gandiva", {}, {"lgrr": False, "liss": False}, False),
    "gandiva unequal=true": ("gandiva", {"unequal": True}, None, False),
    "gandiva+gimbal, world's ratios": ("gandiva", {}, {"world": True}, False),
}
HALF_LOAD = {"load": 0.5, "max_span_h": 9.0}  # the same windows (4.5 h on the trace's clock), spread 2x
TESTBED = "testbed"  # gimbal §7.3's ablation testbed: 16 GPUs (8 nodes x 2 A40), 100 Philly jobs
# part: (metric, baseline, [(world, variants)]); world: (xi or None, scenario options or TESTBED or None)
PARTS: dict[str, tuple[str, str, list[tuple[str, list[str]]]]] = {
    "lucid": ("avg_queue_s", "lucid", [
        ("scenario", [n for n in VARIANTS if n.startswith("lucid")]),
        ("xi=1", ["lucid", "lucid+gimbal", "lucid+gimbal lgrr=false", "lucid+gimbal, world's ratios"]),
        ("load=0.5", ["lucid", "lucid+gimbal", "lucid+gimbal lgrr=false"]),
    ]),
    "gandiva": ("deadline_satisfaction", "gandiva", [
        ("scenario", [n for n in VARIANTS if n.startswith("gandiva")]),
        ("xi=1", ["gandiva", "gandiva+gimbal", "gandiva+gimbal lgrr=false", "gandiva+gimbal, world's ratios"]),
        ("load=0.5", ["gandiva", "gandiva+gimbal", "gandiva+gimbal lgrr=liss=false"]),
        ("testbed", ["gandiva", "gandiva+gimbal", "gandiva+gimbal lgrr=liss=false"]),
    ]),
}
REPLICATE: dict[str, list[tuple[str, list[str]]]] = {
    "lucid": [("scenario", ["lucid", "lucid+gimbal", "lucid+gimbal lgrr=false"])],
    "gandiva": [("scenario", ["gandiva", "gandiva+gimbal", "gandiva+gimbal lgrr=false",
                              "gandiva+gimbal lgrr=liss=false"])],
}


def make(name: str, catalog: Any) -> tuple[Policy, ProbedLucid | None]:
    """The variant's policy and, for Lucid hosts, the host whose Colocate log is read after the episode."""
    kind, host_opts, gimbal_opts, free_first = VARIANTS[name]
    g = dict(gimbal_opts or {})
    predictor = WorldRatios(catalog) if g.pop("world", False) else None
    if kind == "lucid":
        host = ProbedLucid(free_first=free_first, **host_opts)
        if gimbal_opts is None:
            return host, host
        pol = WithGimbal(host, "jct", GimbalOptions(**g, predictor=predictor))
        pol.name = "lucid+gimbal"
        return pol, host
    if gimbal_opts is None:
        return Gandiva(**host_opts), None
    return GandivaGimbal(**g, predictor=predictor), None


def per_job(env: Any) -> dict[str, Any]:
    e = env.engine
    return {"jobs": {"gpus": e.req_gpus.tolist(), "solo": e.solo_time.tolist(), "submit": e.submit.tolist(),
                     "deadline": e.deadline.tolist(), "start": e.first_start.tolist(), "finish": e.finish_t.tolist()}}


def scenario_of(world: str) -> tuple[Any, float | None]:
    if world == "xi=1":
        return SCENARIO, 1.0
    if world == "load=0.5":
        return get_scenario(SCENARIO).with_options(**HALF_LOAD), None
    if world == TESTBED:
        sc = get_scenario(SCENARIO)
        cluster = ClusterSpec.homogeneous("A40", 8, 2, inter_node_bw_gbps=12.5, name="gimbal-8x2")
        return dataclasses.replace(sc, cluster=cluster, num_jobs=100), None
    return SCENARIO, None


def run(name: str, seed: int, world: str) -> dict[str, Any]:
    scenario, xi = scenario_of(world)
    catalog = default_catalog() if xi is None else default_catalog().with_interference(ConstantInterference(xi))
    pol, host = make(name, catalog)
    r = run_episode(scenario, pol, seed, None, {"catalog": catalog}, extra=per_job)
    r["colocate_log"] = host.log if host is not None else []
    return r


def improvement(p: np.ndarray, b: np.ndarray, lower: bool, n: int = 10_000) -> tuple[float, float, float]:
    """The claims page's improvement of p on b over seeds, with its paired bootstrap 95% interval."""
    rng = np.random.default_rng(0)
    i = rng.integers(0, len(p), size=(n, len(p)))

    def f(pm: Any, bm: Any) -> Any:
        return 1.0 - pm / bm if lower else pm / bm - 1.0
    boot = f(p[i].mean(axis=1), b[i].mean(axis=1))
    return float(f(p.mean(), b.mean())), float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))


def deadline_split(rs: list[dict[str, Any]]) -> tuple[float, float, float]:
    """Per seed: jobs that met their deadline, missed it already in the queue (first start later than deadline
    minus solo run time), missed it while running."""
    met = queue = running = 0
    for r in rs:
        j = {k: np.array(v, dtype=float) for k, v in r["jobs"].items()}
        fin = np.where(np.isnan(j["finish"]), np.inf, j["finish"])
        start = np.where(np.isnan(j["start"]), np.inf, j["start"])
        ok = fin <= j["deadline"]
        late_start = start > j["deadline"] - j["solo"]
        met += int(ok.sum())
        queue += int((~ok & late_start).sum())
        running += int((~ok & ~late_start).sum())
    k = len(rs)
    return met / k, queue / k, running / k


def table(res: dict[str, list[dict[str, Any]]], names: list[str], metric: str, base: str) -> None:
    lower = metric != "deadline_satisfaction"
    b = np.array([r[metric] for r in res[base]])
    dl = metric == "deadline_satisfaction"
    extra = " | met / missed in queue / missed running (jobs per seed)" if dl else " | packs with free GPUs"
    print(f"| variant | {metric} | avg JCT (h) | queueing (h) | run (h) | colocations | squeezes | GPU occupancy "
          f"| vs {base} | 95% interval | seeds better{extra} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in names:
        rs = res[n]
        x = np.array([r[metric] for r in rs])
        jct = np.array([r["avg_jct_s"] for r in rs])
        q = np.array([r["avg_queue_s"] for r in rs])
        imp, lo, hi = improvement(x, b, lower)
        better = int(((x < b) if lower else (x > b)).sum())

        def mean(k: str, rs: list[dict[str, Any]] = rs) -> float:
            return float(np.mean([r[k] for r in rs]))
        if dl:
            m, qq, rr = deadline_split(rs)
            tail = f"{m:.1f} / {qq:.1f} / {rr:.1f}"
        else:
            log = [c for r in rs for c in r["colocate_log"]]
            tail = f"{100 * np.mean([c[0] for c in log]):.0f}% of {len(log) / len(rs):.0f}" if log else "-"
        val = f"{x.mean():.3f}" if dl else f"{x.mean() / 3600:.3f} h"
        print(f"| {n} | {val} | {jct.mean() / 3600:.3f} | {q.mean() / 3600:.3f} | {(jct - q).mean() / 3600:.3f} | "
              f"{mean('colocations'):.0f} | {mean('squeezes'):.0f} | {mean('gpu_occupancy'):.2f} | "
              f"{100 * imp:+.1f}% | [{100 * lo:+.1f}, {100 * hi:+.1f}] | {better}/{len(b)} | {tail} |")


def pairs(res: dict[str, list[dict[str, Any]]], metric: str, rows: list[tuple[str, str]]) -> None:
    lower = metric != "deadline_satisfaction"
    print(f"\n| {metric}: policy vs baseline | improvement | 95% interval | seeds better |")
    print("|---|---|---|---|")
    for p, b in rows:
        if p in res and b in res:
            x = np.array([r[metric] for r in res[p]])
            y = np.array([r[metric] for r in res[b]])
            imp, lo, hi = improvement(x, y, lower)
            better = int(((x < y) if lower else (x > y)).sum())
            print(f"| {p} vs {b} | {100 * imp:+.1f}% | [{100 * lo:+.1f}, {100 * hi:+.1f}] | {better}/{len(x)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default=None, help="seeds, e.g. 0-19 or 0,3,5 (default 0-19; 100-139 with "
                    "--replicate)")
    ap.add_argument("--part", choices=list(PARTS), action="append", help="lucid, gandiva (default: both)")
    ap.add_argument("--replicate", action="store_true",
                    help="run only the isolating comparisons, on the held-out seeds (default 100-139)")
    ap.add_argument("--json", help="also write every episode's metrics to this file")
    args = ap.parse_args()
    seeds = seeds_arg(args.seeds or ("100-139" if args.replicate else "0-19"))
    if not args.replicate and HELD_OUT & set(seeds):
        ap.error(f"held-out seeds ({HELD_OUT_TEXT}) are read only with --replicate")
    if args.replicate and not set(seeds) <= HELD_OUT:
        ap.error("--replicate runs on held-out seeds only")
    out: dict[str, Any] = {"seeds": seeds}
    for part in args.part or list(PARTS):
        metric, base, worlds = PARTS[part]
        if args.replicate:
            worlds = REPLICATE[part]
        for world, names in worlds:
            res: dict[str, list[dict[str, Any]]] = {}
            for n in names:
                res[n] = [run(n, s, world) for s in seeds]
                print(f"  ran {n} ({world}), {len(seeds)} seeds", file=sys.stderr)
            print(f"\n## {part}: {SCENARIO}, world {world}, seeds {seeds[0]}-{seeds[-1]} ({len(seeds)})\n")
            table(res, names, metric, base)
            rows = [(n, base) for n in names if n != base]
            rows += [(n, f"{base}+gimbal") for n in names if n.startswith(f"{base}+gimbal") and n != f"{base}+gimbal"]
            rows += [(f"{base}+gimbal", f"{base}+gimbal lgrr=liss=false")]
            pairs(res, metric, rows)
            out[f"{part} {world}"] = {n: [{k: v for k, v in r.items() if k != "jobs"} for r in rs]
                                      for n, rs in res.items()}
            sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
