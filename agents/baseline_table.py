"""The baseline table of ``docs/rl.md``: standard algorithms trained from scratch over several training seeds,
and fixed policies (random, the search expert, a distilled model, ...), on one scenario, each scored against a
reference heuristic on the same job tables.

**Score.** For a policy and a held-out seed, the *normalized score* is its average JCT over the reference
policy's (SRSF by default) on the same seed's job table: 1.0 is the reference, below 1 better. A trace window's
load dominates raw returns and JCTs (CompilerGym scores against ``-Oz`` on the same program for the same
reason); the ratio compares across seeds. An episode that does not finish (step limit, stall) has no average
JCT: it is left out and counted (``truncated``).

**Algorithms.** ``ALGO`` trains on the job-centric process with the project's defaults
(:class:`~gpucluster_env.agents.train.TrainConfig`: MaskablePPO with the job-scoring network, PPO and A2C with
SB3's ``MultiInputPolicy``); ``ALGO:lib`` on the same process with the library's own hyperparameters and the
plain reward; ``ALGO:full`` on the full vocabulary with the project's defaults (MaskablePPO on the masked
``Dict``, PPO and DQN on the flat ``Box`` with out-of-mask actions as counted no-ops).

**Learning curves.** Each algorithm trains ``timesteps`` in ``points`` equal chunks; after each chunk its greedy
policy plays
the ``curve_seeds`` and the mean normalized score is a point of the curve. The final model plays every
``eval_seeds``; the interval of an algorithm is over its training seeds (each seed's mean over the evaluation
seeds), the unit of an algorithm's variability; that of a fixed policy is over the evaluation seeds.
``gpucluster rl-table`` runs it; ``docs/rl.md`` has the commands and the measured table.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from gpucluster_env.agents.evaluate import t_interval
from gpucluster_env.agents.policies import RLPolicy

from gpucluster_env.task_pool import TaskFailed, in_order, run_tasks


@dataclass
class TableConfig:
    """One scenario's row group of the baseline table."""

    scenario: str
    algos: tuple[str, ...] = ("maskable_ppo", "ppo", "a2c", "maskable_ppo:lib", "ppo:lib", "a2c:lib", "dqn:full")
    train_seeds: tuple[int, ...] = (0, 1, 2)
    timesteps: int = 20_000
    points: int = 4
    curve_seeds: tuple[int, ...] = (200, 201, 202)
    eval_seeds: tuple[int, ...] = tuple(range(300, 310))
    policies: tuple[str, ...] = ("random", "lookahead")
    reference: str = "srsf"

    def __post_init__(self) -> None:
        if self.points < 1 or self.timesteps < self.points:
            raise ValueError("points must be >= 1 and timesteps >= points")
        if not self.eval_seeds:
            raise ValueError("at least one evaluation seed is needed")


class InMemoryModel(RLPolicy):
    """A model being trained, acting as :class:`RLPolicy` does (greedy, inside the mask for MaskablePPO)."""

    def __init__(self, model: Any, algo: str, env_kwargs: dict[str, Any]) -> None:
        self.model, self.meta = model, {"algo": algo, "env_kwargs": env_kwargs}
        self.model_dir = algo
        self.deterministic = True
        self.masked = algo == "maskable_ppo"


def _jct(scenario: str, policy: Any, seed: int) -> float:
    """Average JCT of one episode (NaN when it did not finish)."""
    from gpucluster_env.policy import run_episode

    res = run_episode(scenario, policy, seed)
    return float("nan") if res["truncated"] else float(res["avg_jct_s"])


def reference_jcts(cfg: TableConfig) -> dict[int, float]:
    """The reference policy's average JCT on every curve and evaluation seed."""
    return {s: _jct(cfg.scenario, cfg.reference, s) for s in sorted(set(cfg.curve_seeds) | set(cfg.eval_seeds))}


def scores(cfg: TableConfig, policy: Any, seeds: tuple[int, ...], ref: dict[int, float]) -> np.ndarray:
    """Normalized scores (JCT over the reference's) of ``policy`` on ``seeds``; NaN where it did not finish."""
    return np.array([_jct(cfg.scenario, policy, s) / ref[s] for s in seeds])


def _summary(x: np.ndarray) -> dict[str, Any]:
    """Mean and 95% t-interval of the finished values, and how many did not finish."""
    ok = x[np.isfinite(x)]
    out: dict[str, Any] = {"n": int(len(ok)), "truncated": int(len(x) - len(ok))}
    if len(ok):
        m, lo, hi = t_interval(ok)
        out.update(mean=m, ci95=[lo, hi] if len(ok) > 1 else None)
    return out


def train_config(spec: str, scenario: str, seed: int, timesteps: int) -> Any:
    """The training configuration of an algorithm spec (``ALGO``, ``ALGO:lib``, ``ALGO:full``); a
    ``ValueError`` naming a bad one."""
    from gpucluster_env.agents.train import ALGOS, TrainConfig, default_job_features

    algo, _, variant = spec.partition(":")
    if algo not in ALGOS or variant not in ("", "lib", "full"):
        raise ValueError(f"unknown algorithm {spec!r}: ALGO, ALGO:lib or ALGO:full with ALGO one of "
                         f"{', '.join(ALGOS)}")
    tc = TrainConfig(out="", algo=algo, process="full" if variant == "full" else "jobs", scenarios=(scenario,),
                     seed=seed, timesteps=timesteps, vec="dummy", progress=False, library_defaults=variant == "lib")
    if tc.process == "jobs":
        tc.env_kwargs["features"] = [list(f) for f in default_job_features(tc)]
    return tc


def train_curve(cfg: TableConfig, algo: str, seed: int, ref: dict[int, float]) -> dict[str, Any]:
    """Train ``algo`` from scratch with seed ``seed`` in ``cfg.points`` chunks; the curve and final scores."""
    import torch
    from gpucluster_env.agents.train import make_model, make_vec

    torch.set_num_threads(1)
    tc = train_config(algo, cfg.scenario, seed, cfg.timesteps)
    vec = make_vec(tc)
    t0 = time.perf_counter()
    train_s = 0.0
    curve = []
    try:
        model = make_model(tc, vec, None)
        if tc.process == "jobs":
            from gpucluster_env.agents.job_model import JobModelPolicy

            pol: Any = JobModelPolicy.of_model(model, {"algo": tc.algo, "env_kwargs": tc.env_args()})
        else:
            pol = InMemoryModel(model, tc.algo, tc.env_args())
        chunk = cfg.timesteps // cfg.points
        for k in range(cfg.points):
            t1 = time.perf_counter()
            model.learn(total_timesteps=chunk, reset_num_timesteps=k == 0)
            train_s += time.perf_counter() - t1
            pts = scores(cfg, pol, cfg.curve_seeds, ref)
            curve.append({"timesteps": int(model.num_timesteps), **_summary(pts)})
        final = scores(cfg, pol, cfg.eval_seeds, ref)
    finally:
        vec.close()
    return {"algo": algo, "seed": seed, "curve": curve, "final": final.tolist(), "train_s": train_s,
            "wall_s": time.perf_counter() - t0}


def fixed_policy(cfg: TableConfig, name: str, ref: dict[int, float]) -> dict[str, Any]:
    """A policy that does not train here (a heuristic, the search expert, a saved model): its scores."""
    t0 = time.perf_counter()
    x = scores(cfg, name, cfg.eval_seeds, ref)
    return {"policy": name, "final": x.tolist(), **_summary(x),
            "wall_s_per_episode": (time.perf_counter() - t0) / len(cfg.eval_seeds)}


def finite_mean(values: Any) -> float:
    """The mean of the finite scores among ``values`` (None and NaN: an episode that did not finish), NaN when
    there is none (without numpy's empty-slice warning)."""
    x = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    x = x[np.isfinite(x)]
    return float(x.mean()) if len(x) else float("nan")


def algo_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """An algorithm over its training seeds: the interval of the per-seed means (each over the evaluation
    seeds), the mean curve, and the mean training time."""
    per_seed = np.array([finite_mean(r["final"]) for r in runs])
    out = _summary(per_seed)
    out["truncated"] = int(sum(np.isnan(r["final"]).sum() for r in runs))
    out["episodes"] = int(sum(len(r["final"]) for r in runs))
    steps = [p["timesteps"] for p in runs[0]["curve"]]
    out["curve"] = [{"timesteps": t, "mean": finite_mean([r["curve"][k].get("mean") for r in runs]),
                     "per_seed": [r["curve"][k].get("mean") for r in runs]} for k, t in enumerate(steps)]
    out["train_s"] = float(np.mean([r["train_s"] for r in runs]))
    return out


def _task(item: tuple[str, TableConfig, str, int, dict[int, float]]) -> dict[str, Any]:
    """One task of a table: a training run (``"train"``, algorithm, seed) or a fixed policy's scores."""
    kind, cfg, name, seed, ref = item
    return train_curve(cfg, name, seed, ref) if kind == "train" else fixed_policy(cfg, name, ref)


def run_table(cfg: TableConfig, log: Any = print, workers: int = 1, backend: str = "local",
              address: str | None = None) -> dict[str, Any]:
    """The whole row group: reference JCTs, every algorithm over its seeds, every fixed policy. The training
    runs and fixed policies are independent tasks (:func:`gpucluster_env.task_pool.run_tasks`: ``workers``
    local processes, or Ray tasks on ``backend="ray"``); the result does not depend on where they ran."""
    t0 = time.perf_counter()
    ref = reference_jcts(cfg)
    result: dict[str, Any] = {"config": asdict(cfg), "reference_jct_s": {str(k): v for k, v in ref.items()},
                              "algos": {}, "policies": {}}
    items = [("train", cfg, algo, seed, ref) for algo in cfg.algos for seed in cfg.train_seeds]
    items += [("policy", cfg, name, 0, ref) for name in cfg.policies]

    def said(i: int, out: dict[str, Any]) -> None:
        kind, _, name, seed, _ = items[i]
        if kind == "train":
            final = finite_mean(out["final"])
            what = f"final {final:.3f}" if np.isfinite(final) else "no held-out episode finished"
            log(f"{cfg.scenario} {name} seed {seed}: {what} ({out['train_s']:.0f} s training)")
        else:
            log(f"{cfg.scenario} {name}: {out.get('mean', float('nan')):.3f}")

    try:
        outs = in_order(run_tasks(_task, items, workers, backend, address), len(items), said)
    except TaskFailed as e:
        kind, _, name, seed, _ = items[e.index]
        what = f"training {name} seed {seed}" if kind == "train" else f"playing {name}"
        raise ValueError(f"rl-table: {what} failed: {type(e.cause).__name__}: {e.cause}") from e
    for algo in cfg.algos:
        runs = [o for it, o in zip(items, outs, strict=True) if it[0] == "train" and it[2] == algo]
        result["algos"][algo] = {"runs": runs, **algo_summary(runs)}
    for it, o in zip(items, outs, strict=True):
        if it[0] == "policy":
            result["policies"][it[2]] = o
    result["wall_s"] = time.perf_counter() - t0
    return result


MERGE_KEYS = ("scenario", "timesteps", "points", "curve_seeds", "eval_seeds", "reference")
"""The settings two row groups must share to be merged: the same runs but for their training seeds."""


def merge_tables(results: list[dict[str, Any]], names: list[str] | None = None) -> dict[str, Any]:
    """Row groups of one scenario run over different training seeds (e.g. seeds 0-2, then 3-4) as one: every
    algorithm's runs together and summarized again over all its seeds; a fixed policy from the first group that
    has it (its scores do not depend on training seeds); the reference JCTs must agree seed by seed. A
    ``ValueError`` naming the group (``names``: e.g. file names) and the setting where they differ, or where
    two groups train one algorithm on the same seed."""
    if not results:
        raise ValueError("nothing to merge")
    names = names or [f"group {i + 1}" for i in range(len(results))]
    first = results[0]["config"]
    out: dict[str, Any] = {"config": dict(first), "reference_jct_s": {}, "algos": {}, "policies": {},
                           "merged_from": list(names)}
    runs: dict[str, list[dict[str, Any]]] = {}
    for res, name in zip(results, names, strict=True):
        cfg = res["config"]
        for key in MERGE_KEYS:
            if cfg[key] != first[key]:
                raise ValueError(f"{name}: {key} {cfg[key]!r} differs from {names[0]}'s {first[key]!r}")
        for seed, jct in res["reference_jct_s"].items():
            if out["reference_jct_s"].setdefault(seed, jct) != jct:
                raise ValueError(f"{name}: the reference's JCT on seed {seed} differs from an earlier group's "
                                 "(another version of the code?)")
        for algo, a in res["algos"].items():
            have = {r["seed"] for r in runs.get(algo, [])}
            for r in a["runs"]:
                if r["seed"] in have:
                    raise ValueError(f"{name}: {algo} seed {r['seed']} is in an earlier group too")
                runs.setdefault(algo, []).append(r)
        for pname, pol in res["policies"].items():
            out["policies"].setdefault(pname, pol)
    for algo, rs in runs.items():
        rs.sort(key=lambda r: r["seed"])
        out["algos"][algo] = {"runs": rs, **algo_summary(rs)}
    out["config"]["algos"] = list(runs)
    out["config"]["train_seeds"] = sorted({r["seed"] for rs in runs.values() for r in rs})
    out["config"]["policies"] = list(out["policies"])
    out["wall_s"] = float(sum(r.get("wall_s", 0.0) for r in results))
    return out


def _cell(s: dict[str, Any]) -> str:
    if "mean" not in s:
        return "did not finish"
    ci = s.get("ci95")
    txt = f"{s['mean']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
    return txt + (f" ({s['truncated']} unfinished)" if s.get("truncated") else "")


def markdown(result: dict[str, Any]) -> str:
    """The row group as a Markdown table (score: JCT over the reference's; lower is better)."""
    cfg = result["config"]
    lines = [f"| {cfg['scenario']} | score vs {cfg['reference']} (95% CI) | n | curve (mean score at steps) | "
             "time |", "|---|---|---|---|---|"]
    for algo, s in result["algos"].items():
        curve = ", ".join(f"{p['timesteps'] // 1000}k: " + (f"{p['mean']:.2f}" if np.isfinite(p["mean"]) else
                                                             "unfinished") for p in s["curve"])
        seeds = len(s.get("runs", ())) or s["n"]
        lines.append(f"| {algo} | {_cell(s)} | {seeds} training seeds | {curve} | {s['train_s']:.0f} s "
                     "training per seed |")
    for name, s in result["policies"].items():
        lines.append(f"| {name} | {_cell(s)} | {s['n']} seeds | - | {s['wall_s_per_episode']:.1f} s per "
                     "episode |")
    return "\n".join(lines)
