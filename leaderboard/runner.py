"""Run one policy on one scenario for one seed, through the environment: the single code path by which
reference agents and RL policies are scored."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..baselines.base import Policy, make_policy
from ..env import GPUClusterEnv

RECORD_FORMAT = "gpucluster-replay"
RECORD_VERSION = 1


def run_episode(
    scenario: str,
    policy: str | Policy,
    seed: int,
    scenario_options: dict[str, Any] | None = None,
    record: str | Path | None = None,
    env_kwargs: dict[str, Any] | None = None,
    extra: Callable[[GPUClusterEnv], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Play one episode to the end and return its metrics with ``scenario``, ``policy``, ``seed``, ``trace``,
    ``steps`` and ``wall_s``. With ``record``, write the episode as JSON lines for ``gpucluster replay``.

    The environment is built with the policy's own :meth:`~gpucluster_env.baselines.base.Policy.env_kwargs`
    (e.g. ``castor-timeslice`` runs in the time-slicing world), then ``env_kwargs``, which win where both set
    a key. ``extra``, when given, is called on the finished environment and its entries are added to the
    result (e.g. per-class statistics a harness wants beside the standard metrics)."""
    pol = make_policy(policy) if isinstance(policy, str) else policy
    kwargs: dict[str, Any] = {"observation": "dict" if pol.needs_observation else "none"}
    kwargs.update(pol.env_kwargs())
    kwargs.update(env_kwargs or {})
    env = GPUClusterEnv(scenario, scenario_options=scenario_options, **kwargs)
    t0 = time.perf_counter()
    obs, info = env.reset(seed=seed)
    pol.reset(env)
    steps = 0
    terminated = truncated = False
    while not (terminated or truncated):
        acts = pol.act(obs, env)
        for a in acts if isinstance(acts, list) else (acts,):  # a list: the decision point's actions in turn
            obs, _, terminated, truncated, info = env.step(a)
            steps += 1
            if terminated or truncated:
                break
    wall = time.perf_counter() - t0
    result: dict[str, Any] = {
        "scenario": env.scenario.name,
        "policy": pol.name,
        "policy_options": pol.options,
        "seed": seed,
        "trace": env.trace_note,
        **info["metrics"],
        "steps": steps,
        "truncated": bool(truncated),
        "wall_s": wall,
    }
    if extra is not None:
        result.update(extra(env))
    if record is not None:
        write_record(Path(record), env, result, scenario_options)
    env.close()
    return result


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def write_record(path: Path, env: GPUClusterEnv, result: dict[str, Any], options: dict[str, Any] | None) -> None:
    """A replay file: a header (scenario, cluster, jobs), the event log, and the metrics, one JSON per line."""
    eng = env.engine
    header = {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "scenario": env.scenario.name,
        "options": options or {},
        "policy": result["policy"],
        "policy_options": result.get("policy_options", {}),
        "seed": result["seed"],
        "trace": env.trace_note,
        "cluster": [[eng.type_names[eng.node_type[n]], int(eng.node_size[n])] for n in range(eng.num_nodes)],
        "jobs": [
            {"id": str(eng.job_ids[j]), "model": eng.model_names[eng.job_model[j]], "gpus": int(eng.req_gpus[j]),
             "submit_s": float(eng.submit[j]), "iterations": float(eng.iterations[j])}
            for j in range(eng.n_jobs)
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        f.write(json.dumps(header) + "\n")
        log = eng.log.to_jsonl()
        if log:
            f.write(log + "\n")
        f.write(json.dumps({"kind": "metrics", **{k: _jsonable(v) for k, v in result.items()}}) + "\n")
