"""Why the random masked policy of the full vocabulary beats SRSF on ``gavel-hetero`` (docs/rl.md, "Forking on
gavel-hetero").

Per development seed, one episode each of: the heuristics ``srsf``, ``sjf``, ``gavel`` and ``hadare`` (HadarE: it
forks); the random masked policy of the full vocabulary (``GPUClusterEnv``, compact layout) and of three of its
sub-vocabularies (``actions=``: without fork; place and preempt; place, preempt and fork); and, in the job-centric
process with fork rows (``JobsEnv(fork=True)``), a one-line rule: start the startable pending job of least
remaining work, else fork the forkable running job of least remaining work (at most one fork per decision point),
else "nothing more now". Prints each variant's mean average JCT (s), its ratio to SRSF's (mean over seeds of the
per-seed ratio) and the mean forks, preemptions and shares per episode.

    .venv/bin/python docs/_scripts/gavel_hetero_fork.py --seeds 0-5

Only development seeds: the held-out ones of docs/rl.md's tables (3000-3019) are refused.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
from held_out import parse_seeds

from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.env.jobs_env import JobsEnv
from gpucluster_env.policy import run_episode

SCENARIO = "gavel-hetero"
RANDOM_VOCABULARIES: dict[str, dict[str, Any]] = {
    "random, full vocabulary": {},
    "random, without fork": {"actions": ("place", "colocate", "preempt")},
    "random, place + preempt": {"actions": ("place", "preempt")},
    "random, place + preempt + fork": {"actions": ("place", "preempt", "fork")},
}
HEURISTICS = ("srsf", "sjf", "gavel", "hadare")


def random_episode(seed: int, env_kwargs: dict[str, Any]) -> dict[str, float]:
    """One episode of the uniformly random masked policy (its own generator, seeded from ``seed``)."""
    env = GPUClusterEnv(SCENARIO, **env_kwargs)
    env.reset(seed=seed)
    rng = np.random.default_rng([seed, 7])
    kinds = {"fork": 0, "preempt": 0, "share": 0}
    while True:
        a = int(rng.choice(np.flatnonzero(env.action_masks())))
        kind = env.describe_action(a).split("(")[0]
        if kind in kinds:
            kinds[kind] += 1
        _, _, term, trunc, info = env.step(a)
        if term or trunc:
            break
    env.close()
    return {"avg_jct_s": info["metrics"]["avg_jct_s"], **{k: float(v) for k, v in kinds.items()}}


def sjf_fork_episode(seed: int) -> dict[str, float]:
    """The one-line forking rule in the job-centric process with fork rows (see the module's docstring)."""
    env = JobsEnv(SCENARIO, fork=True)
    obs, _ = env.reset(seed=seed)
    v = env.view
    col = env.features[0].index("remaining_10h")
    f0 = 1 + v.n_pending + v.n_running
    forks = preempts = 0
    forked_at = -1.0
    while True:
        mask = env.action_masks()
        rows = obs["jobs"].reshape(v.rows, -1)
        start = np.flatnonzero(mask[1:1 + v.n_pending])
        fork = np.flatnonzero(mask[f0:f0 + v.n_fork])
        if len(start):
            a = 1 + int(start[np.argmin(rows[start, col])])
        elif len(fork) and forked_at != env.engine.now:
            a = f0 + int(fork[np.argmin(rows[v.n_pending + v.n_running + fork, col])])
            forked_at = env.engine.now
            forks += 1
        else:
            a = 0 if mask[0] else int(np.flatnonzero(mask)[0])
            preempts += a != 0
        obs, _, term, trunc, info = env.step(a)
        if term or trunc:
            break
    env.close()
    return {"avg_jct_s": info["metrics"]["avg_jct_s"], "fork": float(forks), "preempt": float(preempts),
            "share": 0.0}


def heuristic_episode(policy: str, seed: int) -> dict[str, float]:
    """One episode of a registered heuristic through the common runner."""
    res = run_episode(SCENARIO, policy, seed)
    return {"avg_jct_s": res["avg_jct_s"], "fork": float(res["forks"]), "preempt": float(res["preemptions"]),
            "share": np.nan}


def development_seeds(text: str) -> list[int]:
    """``0-5`` or ``0,3,4``; held-out seeds refused."""
    seeds = parse_seeds(text)
    if any(3000 <= s < 3020 for s in seeds):
        raise SystemExit("--seeds: 3000-3019 are docs/rl.md's held-out seeds; use development seeds")
    return seeds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0-5")
    args = ap.parse_args()
    seeds = development_seeds(args.seeds)
    variants: dict[str, Callable[[int], dict[str, float]]] = {
        **{p: (lambda s, p=p: heuristic_episode(p, s)) for p in HEURISTICS},
        **{name: (lambda s, kw=kw: random_episode(s, kw)) for name, kw in RANDOM_VOCABULARIES.items()},
        "SJF start, else fork the shortest (job-centric, fork rows)": sjf_fork_episode,
    }
    rows = {name: [fn(s) for s in seeds] for name, fn in variants.items()}
    srsf = np.array([r["avg_jct_s"] for r in rows["srsf"]])
    print(f"{SCENARIO}, development seeds {args.seeds}\n")
    print("| policy | avg JCT (s) | vs SRSF | forks | preemptions | shares |\n|---|---|---|---|---|---|")
    for name, rs in rows.items():
        jct = np.array([r["avg_jct_s"] for r in rs])

        def mean(key: str, rs: list[dict[str, float]] = rs) -> str:
            v = np.array([r[key] for r in rs])
            return "-" if np.isnan(v).all() else f"{np.nanmean(v):,.0f}"

        print(f"| {name} | {jct.mean():,.0f} | {np.mean(jct / srsf):.3f} | {mean('fork')} | {mean('preempt')} | "
              f"{mean('share')} |")


if __name__ == "__main__":
    main()
