"""Training the rollout-advantage policy (:mod:`.advantage`): label states by search, fit, play, repeat.

Round 0 plays the search expert ``lookahead`` on the training seeds of each scenario and records, at every
decision point with a choice, each candidate action's features and its rollout cost minus SRSF's own
(job-hours; negative = better than SRSF). By default the rollouts see no arrival (``arrivals=False``: the
labels depend only on what the policy's features describe); with ``see_arrivals`` they see the trace's
arrivals within their horizon, and the model can only learn their expectation from the recent load (measured
worse: the labels get noisier; docs/rl.md).
An XGBoost regressor is fitted to all labels so far. Each later round plays the newest model on the same seeds,
labels the states *it* visits with the same rollouts (DAgger's answer to the learner drifting off the expert's
states), adds them and refits. Every round's model is kept in ``OUT/rounds/N`` with its meta.json; the last is
``OUT/model.json``.

Deterministic: the labels are exact functions of (scenario, seed, model) and the fit runs on one thread with a
fixed seed, so the same command writes the same model.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gpucluster_env.agents.advantage import ALGO, AdvantagePolicy
from gpucluster_env.agents.advantage_features import FEATURE_NAMES, candidate_features
from gpucluster_env.baselines.lookahead import Lookahead

from gpucluster_env.engine import Action
from gpucluster_env.policy import Policy, run_episode
from gpucluster_env.task_pool import TaskFailed, in_order, run_tasks

LABEL_UNIT_S = 3600.0
"""Labels are rollout-cost differences in job-seconds divided by this: job-hours."""
XGB_PARAMS = {"max_depth": 6, "eta": 0.05, "subsample": 0.8, "colsample_bytree": 0.8, "min_child_weight": 5,
              "objective": "reg:pseudohubererror", "huber_slope": 0.1, "tree_method": "hist", "nthread": 1, "seed": 0}
"""The regressor's settings (pseudo-Huber: a few huge rollout differences must not dominate the fit)."""


@dataclass(frozen=True)
class AdvantageConfig:
    """One ``gpucluster train-advantage`` run."""

    out: str
    scenarios: tuple[str, ...] = ("castor-philly", "sjfbsbf-philly", "castor-venus")
    episodes: int = 80
    """Training seeds per scenario (``seed`` .. ``seed + episodes - 1``), played every round."""
    rounds: int = 0
    """Rounds that play the learned model after the expert's round 0."""
    seed: int = 0
    horizon_s: float = 3600.0
    starts: int = 3
    trees: int = 600
    threshold: float = 0.0
    workers: int = 2
    see_arrivals: bool = False
    """Label with rollouts that see the trace's arrivals within the horizon (``lookahead``'s ``arrivals``)."""

    def __post_init__(self) -> None:
        for key, low in (("episodes", 1), ("rounds", 0), ("seed", 0), ("starts", 1), ("trees", 1), ("workers", 1)):
            if getattr(self, key) < low:
                raise ValueError(f"--{key} {getattr(self, key)}: must be at least {low}")
        if not self.horizon_s > 0:
            raise ValueError(f"--horizon-s {self.horizon_s}: must be > 0")
        if not self.threshold >= 0:
            raise ValueError(f"--threshold {self.threshold}: must be >= 0")
        if not self.scenarios:
            raise ValueError("--scenario: give at least one scenario")


class Labeller(Policy):
    """Plays the search expert (its rollouts blind to arrivals unless ``see_arrivals``), or ``actor``, and records
    every searched decision point's candidate features and rollout advantages over the heuristic's own action."""

    name = "advantage-labeller"

    def __init__(self, horizon_s: float, starts: int, actor: AdvantagePolicy | None = None,
                 see_arrivals: bool = False) -> None:
        # every decision point labelled: the search without its compute budget (which binds only on long loaded
        # traces, where it would leave decision points unlabelled)
        self.search_policy = Lookahead(horizon_s=horizon_s, candidates=starts, arrivals=see_arrivals, budget=None)
        self.actor = actor
        self.rows: list[np.ndarray] = []
        self.labels: list[np.ndarray] = []

    def reset(self, env: Any) -> None:
        self.search_policy.reset(env)
        if self.actor is not None:
            self.actor.reset(env)

    def act(self, observation: Any, env: Any) -> Action:
        cands, costs = self.search_policy.search(env)
        if costs is not None:
            self.rows.append(candidate_features(self.view(env), cands[0], cands[1:]))
            self.labels.append((np.asarray(costs[1:]) - costs[0]) / LABEL_UNIT_S)
        if self.actor is not None:
            best = self.actor.act(observation, env)
        else:
            best = cands[0] if costs is None else cands[int(np.argmin(costs))]
        self.search_policy.note(env, best)
        return best


Job = tuple[str, int, float, int, str | None, bool]
"""One labelled episode: scenario, seed, horizon_s, starts, the acting model's folder (None: the expert),
see_arrivals."""


def label_episode(job: Job) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """One episode's rows and labels (:data:`Job`); the third item is the episode's summary (average JCT,
    decision points labelled, CPU seconds)."""
    scenario, seed, horizon_s, starts, model_dir, see_arrivals = job
    t0 = time.process_time()
    actor = AdvantagePolicy(model_dir) if model_dir else None
    lab = Labeller(horizon_s, starts, actor, see_arrivals)
    result = run_episode(scenario, lab, seed)
    width = len(FEATURE_NAMES)
    rows = np.concatenate(lab.rows) if lab.rows else np.zeros((0, width))
    labels = np.concatenate(lab.labels) if lab.labels else np.zeros(0)
    info = {"scenario": scenario, "seed": seed, "avg_jct_s": result["avg_jct_s"], "points": len(lab.rows),
            "cpu_s": round(time.process_time() - t0, 2)}
    return rows, labels, info


def _label_all(jobs: list[Job], workers: int, say: Any, backend: str = "local",
               address: str | None = None) -> list[Any]:
    """Every job's :func:`label_episode`, in order: in ``workers`` spawned processes, or as Ray tasks
    (:func:`gpucluster_env.task_pool.run_tasks`; the labels do not depend on where they ran)."""
    try:
        return in_order(run_tasks(label_episode, jobs, workers, backend, address), len(jobs),
                        lambda _i, res: say(res[2]))
    except TaskFailed as e:
        scenario, seed = jobs[e.index][:2]
        raise ValueError(f"labelling {scenario} seed {seed} failed: {type(e.cause).__name__}: {e.cause}") from e


def fit(rows: np.ndarray, labels: np.ndarray, trees: int) -> Any:
    """The XGBoost regressor of ``labels`` on ``rows`` (:data:`XGB_PARAMS`, ``trees`` rounds)."""
    import xgboost as xgb

    return xgb.train(XGB_PARAMS, xgb.DMatrix(rows, labels, feature_names=list(FEATURE_NAMES)), trees)


def save_model(booster: Any, folder: Path, cfg: AdvantageConfig, extra: dict[str, Any]) -> None:
    """Write ``model.json`` and ``meta.json`` (what :func:`~.advantage.load_advantage_model` reads)."""
    from gpucluster_env.atomic_write import write_bytes_atomic
    from gpucluster_env.versions import package_versions

    folder.mkdir(parents=True, exist_ok=True)
    booster.save_model(str(folder / "model.json"))
    meta = {"algo": ALGO, "base": "srsf", "starts": cfg.starts, "threshold": cfg.threshold,
            "horizon_s": cfg.horizon_s, "labels_see_arrivals": cfg.see_arrivals, "label_unit_s": LABEL_UNIT_S,
            "features": list(FEATURE_NAMES),
            "xgb_params": XGB_PARAMS, "trees": cfg.trees, "config": asdict(cfg), "versions": package_versions(),
            **extra}
    write_bytes_atomic(folder / "meta.json", (json.dumps(meta, indent=2) + "\n").encode())


def train_advantage(cfg: AdvantageConfig, command: str = "", say: Any = None, backend: str = "local",
                    address: str | None = None) -> Path:
    """Run the rounds of ``cfg`` and return the output folder (``model.json``, ``meta.json``, ``rounds/``); the
    labelling episodes run on ``backend`` (``ray``: a local Ray instance, or the cluster at ``address``)."""
    say = say or (lambda info: None)
    out = Path(cfg.out)
    t0 = time.perf_counter()
    seeds = range(cfg.seed, cfg.seed + cfg.episodes)
    rows: list[np.ndarray] = []
    labels: list[np.ndarray] = []
    history: list[dict[str, Any]] = []
    model_dir: str | None = None
    for rnd in range(cfg.rounds + 1):
        jobs = [(s, n, cfg.horizon_s, cfg.starts, model_dir, cfg.see_arrivals) for n in seeds for s in cfg.scenarios]
        results = _label_all(jobs, cfg.workers, say, backend, address)
        rows += [r[0] for r in results]
        labels += [r[1] for r in results]
        X, y = np.concatenate(rows), np.concatenate(labels)
        booster = fit(X, y, cfg.trees)
        episodes = [r[2] for r in results]
        history.append({"round": rnd, "actor": "expert" if model_dir is None else f"rounds/{rnd - 1}",
                        "labels": int(sum(len(r[1]) for r in results)), "labels_total": int(len(y)),
                        "episodes": episodes, "wall_s": round(time.perf_counter() - t0, 1)})
        model_dir = str(out / "rounds" / str(rnd))
        save_model(booster, Path(model_dir), cfg, {"round": rnd, "command": command})
    save_model(booster, out, cfg, {"rounds": history, "command": command,
                                   "wall_s": round(time.perf_counter() - t0, 1)})
    return out
