"""Why HadarE's total-time gain on HadarE's mixes is smaller than the paper's (docs/causes/hadare-gain.md).

Runs policies on ``hadare-aws`` and ``hadare-testbed``, every workload mix (hadar-hadare §VI-B), one episode at a
time (the mixes are fixed batches: every seed is the same episode, so seed 0 is used), and prints per mix the
makespan (s), average JCT (s) and GPU occupancy of each policy, and the mean over the seven mixes of the
reference policy's makespan over each policy's (the paper's "mean speedup over all seven workload mixes", §VI-C).

With ``--bounds`` it also prints, per mix, two lower bounds on the makespan computed from each job's time alone on
each node (the engine's ``solo_iter_time`` times its iterations), with no restart, start-up or consolidation
cost: ``fork``, the fluid optimum when a job may run on every node at once (perfect forking, an LP), and
``nofork``, the preemptive optimum when a job runs on at most one node at a time (R|pmtn|Cmax, exact as an LP,
Lawler and Labetoulle 1978). ``nofork / fork`` is the most forking can gain over the best non-forking schedule;
``gavel / fork`` the most any forking schedule can gain over our Gavel.

    .venv/bin/python docs/_scripts/hadare_gain.py gavel hadar hadare --bounds
    .venv/bin/python docs/_scripts/hadare_gain.py gavel hadare hadare:estimate=oracle --option consolidation_s=0
    .venv/bin/python docs/_scripts/hadare_gain.py gavel hadar hadare --ic resnet18 --bounds

A policy argument is ``NAME[:KEY=VALUE,...]`` (the policy's own options). ``--option KEY=VALUE`` sets a scenario
option for every run (engine settings such as ``round_s``, ``consolidation_s``, ``copy_startup_s``).
``--cluster SPEC`` runs another cluster (e.g. ``V100:5x1,net=1.25``: five equally fast nodes). ``--ic MODEL``
is a counterfactual workload: the mixes' image-classification job (``IC``) as ``MODEL`` instead of the catalog's
mapping; ``--size-s CLASS=SECONDS`` changes a size class's reference run time (both patch the
mix builder for this process only; the shipped traces are not changed).
"""

from __future__ import annotations

import argparse
import ast
from typing import Any

import gpucluster_env.traces.annotate as annotate
import gpucluster_env.traces.trace_sources as trace_sources
import numpy as np
from scipy.optimize import linprog

from gpucluster_env.policy import make_policy, run_episode

MIXES = ("M-1", "M-3", "M-4", "M-5", "M-8", "M-10", "M-12")
SCENARIOS = ("hadare-aws", "hadare-testbed")


def parse_kv(text: str) -> dict[str, Any]:
    """``KEY=VALUE,...`` as a dict (values as Python literals, ``true``/``false`` as booleans, else strings)."""
    out: dict[str, Any] = {}
    for part in filter(None, text.split(",")):
        key, _, val = part.partition("=")
        if val.lower() in ("true", "false"):
            out[key] = val.lower() == "true"
            continue
        try:
            out[key] = ast.literal_eval(val)
        except (ValueError, SyntaxError):
            out[key] = val
    return out


def solo_matrix(env: Any) -> tuple[np.ndarray, list[str]]:
    """Each job's time alone (s) on each node of the cluster (rows: jobs; columns: nodes), and the nodes' types."""
    eng = env.engine
    st = eng.state
    node_types = [st.type_names[int(st.gpu_type[int(st.node_start[n])])] for n in range(st.num_nodes)]
    m = np.array([[eng.solo_iter_time(j, t) * st.iterations[j] for t in node_types] for j in range(st.n_jobs)])
    return m, node_types


def lp_makespan(solo: np.ndarray, fork: bool) -> float:
    """The least makespan with preemption and no overheads: x[j, i] seconds of job j on node i, each node busy at
    most T, each job's work done (sum x / solo >= 1), and without forking each job at most T in all."""
    nj, nn = solo.shape
    nv = nj * nn + 1
    c = np.zeros(nv)
    c[-1] = 1.0
    a, b = [], []
    for j in range(nj):  # work: -sum_i x[j, i] / solo[j, i] <= -1
        row = np.zeros(nv)
        row[j * nn:(j + 1) * nn] = -1.0 / solo[j]
        a.append(row)
        b.append(-1.0)
        if not fork:  # one node at a time: sum_i x[j, i] <= T
            row = np.zeros(nv)
            row[j * nn:(j + 1) * nn] = 1.0
            row[-1] = -1.0
            a.append(row)
            b.append(0.0)
    for i in range(nn):  # node capacity: sum_j x[j, i] <= T
        row = np.zeros(nv)
        row[i:nj * nn:nn] = 1.0
        row[-1] = -1.0
        a.append(row)
        b.append(0.0)
    res = linprog(c, A_ub=np.array(a), b_ub=np.array(b), bounds=[(0, None)] * nv, method="highs")
    return float(res.x[-1])


def patch_workload(ic: str | None, sizes: dict[str, float]) -> None:
    """Counterfactual workload for this process: ``IC`` as model ``ic``; size classes' run times ``sizes``."""
    if ic:
        annotate.MIX_ABBREVIATIONS["IC"] = ic
        if ic not in annotate.MODEL_SIZE:
            annotate.MODEL_SIZE[ic] = "Small"
    annotate.MIX_DURATION_S.update(sizes)
    trace_sources.mix_raw = annotate.mix_raw


def run(scenario: str, mix: str, arg: str, options: dict[str, Any], bounds: bool) -> dict[str, Any]:
    """One episode of the policy argument ``arg`` on ``scenario`` with ``mix``, and the LP bounds if asked."""
    name, _, rest = arg.partition(":")
    pol = make_policy(name, **parse_kv(rest))

    def extra(env: Any) -> dict[str, Any]:
        if not bounds:
            return {}
        solo, types = solo_matrix(env)
        return {"solo": solo, "types": types, "fork": lp_makespan(solo, True), "nofork": lp_makespan(solo, False)}

    return run_episode(scenario, pol, 0, {"mix": mix, **options}, extra=extra)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("policies", nargs="+", help="NAME[:KEY=VALUE,...]; the first is the reference of the ratios")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--mixes", default=",".join(MIXES))
    ap.add_argument("--option", action="append", default=[], help="scenario option KEY=VALUE (repeatable)")
    ap.add_argument("--cluster", default=None, help="counterfactual cluster, e.g. V100:5x1,net=1.25 (equal nodes)")
    ap.add_argument("--bounds", action="store_true", help="print the LP lower bounds and the jobs' solo times")
    ap.add_argument("--ic", default=None, help="counterfactual: the IC job's model (Table III: resnet18)")
    ap.add_argument("--size-s", action="append", default=[], help="counterfactual: CLASS=SECONDS (reference run)")
    args = ap.parse_args()
    options: dict[str, Any] = {}
    for o in args.option:
        options.update(parse_kv(o))
    if args.cluster:
        options["cluster"] = args.cluster
    patch_workload(args.ic, {k: float(v) for k, v in parse_kv(",".join(args.size_s)).items()})
    for scenario in args.scenarios.split(","):
        print(f"\n## {scenario}  options {options or '-'}  IC={args.ic or 'catalog'}")
        head = "mix    " + "".join(f"{p[:22]:>24}" for p in args.policies)
        print(head + ("   fork  nofork  nofork/fork  ref/fork" if args.bounds else ""))
        ms: dict[str, list[float]] = {p: [] for p in args.policies}
        lp: dict[str, list[float]] = {"fork": [], "nofork": []}
        for mix in args.mixes.split(","):
            rows = [run(scenario, mix, p, options, args.bounds and k == 0) for k, p in enumerate(args.policies)]
            cells = "".join(f"{r['makespan_s']:8.0f}/{r['avg_jct_s']:6.0f}/{r['gpu_occupancy']:.2f}"
                            for r in rows)
            line = f"{mix:5s}  {cells}"
            for p, r in zip(args.policies, rows, strict=True):
                ms[p].append(r["makespan_s"])
            if args.bounds:
                b = rows[0]
                lp["fork"].append(b["fork"])
                lp["nofork"].append(b["nofork"])
                line += (f"  {b['fork']:6.0f}  {b['nofork']:6.0f}  {b['nofork'] / b['fork']:11.2f}  "
                         f"{rows[0]['makespan_s'] / b['fork']:8.2f}")
            print(line)
            if args.bounds:
                for j, s in enumerate(b["solo"]):
                    print(f"         job {j}: alone on " + ", ".join(f"{t} {v:.0f}" for t, v in
                                                                   zip(b["types"], s, strict=True)))
        print("cells: makespan_s/avg_jct_s/occupancy. Mean over the mixes of A's makespan over B's (B's gain vs A):")
        for k, a in enumerate(args.policies):
            gains = {b: float(np.mean(np.array(ms[a]) / np.array(ms[b]))) for b in [*args.policies[k + 1:]]}
            gains.update({f"LP {b}": float(np.mean(np.array(ms[a]) / np.array(v))) for b, v in lp.items() if v})
            if gains:
                print(f"  vs {a}: " + ", ".join(f"{b} {g:.3f}x" for b, g in gains.items()))


if __name__ == "__main__":
    main()
