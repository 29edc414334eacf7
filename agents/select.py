"""Choosing the model a training run keeps: model selection on validation seeds.

PPO's returns are noisy and a late update can undo earlier gains, so the last weights are not always the best.
:func:`select_model` plays every saved candidate of a run -- the behaviour-cloned start (``bc_model.zip``), the
periodic checkpoints, the evaluation callback's best and the final model -- greedily on validation seeds of
every training scenario and scores each by the geometric mean over scenarios of its mean average JCT. The first
candidate (the cloned start when there is one) is kept unless a later one beats it *significantly*: its paired
relative difference to the first over all (scenario, seed) episodes has a 95% Student-t interval entirely below
zero. Among those that do, the lowest score wins. (Taking the plain minimum of a dozen noisy scores picks noise:
on castor-philly a checkpoint 0.4% better on 5 validation seeds was 3% worse on 10 held-out ones.) The chosen
model becomes the run's ``model.zip``; the last weights stay in ``final_model.zip``. The validation seeds must
differ from the seeds a model is finally evaluated on (``gpucluster evaluate`` defaults to 100-109).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np


def candidates(out: Path) -> dict[str, str]:
    """The saved models of the run in ``out``, by name: file name relative to ``out``."""
    found: dict[str, str] = {}
    if (out / "bc_model.zip").is_file():
        found["bc"] = "bc_model.zip"
    ckpts = sorted((out / "checkpoints").glob("model_*_steps.zip"), key=lambda p: int(p.stem.split("_")[1]))
    for p in ckpts:
        found[f"step {int(p.stem.split('_')[1])}"] = f"checkpoints/{p.name}"
    if (out / "best" / "best_model.zip").is_file():
        found["eval best"] = "best/best_model.zip"
    if (out / "model.zip").is_file():
        found["final"] = "model.zip"
    return found


def select_model(out: str | Path, scenarios: tuple[str, ...], seeds: list[int],
                 metric: str = "avg_jct_s") -> dict[str, Any]:
    """Score every candidate of the run in ``out`` on ``scenarios`` x ``seeds`` (lower ``metric`` is better),
    copy the chosen one (see the module's docstring) to ``model.zip`` (the final weights to ``final_model.zip``
    first) and return the scores: ``{"seeds", "metric", "scores": {name: {"file", scenario: mean, "score",
    "vs_first"}}, "first", "chosen"}``."""
    from gpucluster_env.agents.evaluate import t_interval
    from gpucluster_env.agents.job_model import JobModelPolicy, is_jobs_model
    from gpucluster_env.agents.model_meta import read_meta
    from gpucluster_env.agents.policies import RLPolicy

    from gpucluster_env.policy import run_episode

    out = Path(out)
    if (out / "final_model.zip").is_file():  # selected before: the candidates are the run's own files
        shutil.copyfile(out / "final_model.zip", out / "model.zip")
    found = candidates(out)
    if not found:
        raise FileNotFoundError(f"{out}: no model to select from")
    scores: dict[str, dict[str, Any]] = {}
    episodes: dict[str, np.ndarray] = {}
    policy_class = JobModelPolicy if is_jobs_model(read_meta(out)) else RLPolicy  # the process it was trained on
    for name, rel in found.items():
        pol = policy_class(out, zip_name=rel)
        row: dict[str, Any] = {"file": rel}
        logs, flat = [], []
        for sc in scenarios:
            vals = []
            for seed in seeds:
                r = run_episode(sc, pol, seed)
                vals.append(math.inf if r["truncated"] else float(r[metric]))
            row[sc] = float(np.mean(vals))
            flat += vals
            logs.append(math.log(row[sc]) if math.isfinite(row[sc]) and row[sc] > 0 else math.inf)
        row["score"] = float(math.exp(np.mean(logs))) if all(map(math.isfinite, logs)) else math.inf
        scores[name] = row
        episodes[name] = np.array(flat)
    first = next(iter(found))
    qualified = [first]
    for name in found:
        if name == first:
            continue
        rel_diff = episodes[name] / episodes[first] - 1.0
        if not np.isfinite(rel_diff).all():
            scores[name]["vs_first"] = None
            continue
        m, lo, hi = t_interval(rel_diff)
        scores[name]["vs_first"] = {"mean": m, "ci95": [lo, hi]}
        if hi < 0:
            qualified.append(name)
    chosen = min(qualified, key=lambda n: scores[n]["score"])
    if "final" in found:
        shutil.copyfile(out / "model.zip", out / "final_model.zip")
    if scores[chosen]["file"] != "model.zip":
        shutil.copyfile(out / scores[chosen]["file"], out / "model.zip")
    return {"seeds": list(seeds), "metric": metric, "scores": scores, "first": first, "chosen": chosen}
