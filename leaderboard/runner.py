"""Run one policy on one scenario for one seed, through the environment: the single code path by which
reference agents and RL policies are scored."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..baselines.base import Policy, make_policy
from ..engine import Wait
from ..env import GPUClusterEnv

WAIT = Wait()
"""What an empty list of actions stands for."""


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
    result (e.g. per-class statistics a harness wants beside the standard metrics). The record is written by
    :class:`gpucluster_env.replay.RecordingWrapper` (format in docs/replay.md).

    A policy's answer is an action or a list of actions for the decision point; an empty list means ``wait``.
    The episode always ends: the environment bounds the steps at one instant (``env.rules``: a run of rejected
    actions forces a ``wait``), stops a run that only waits with nothing running (``max_idle_ticks``), and
    ``env_kwargs`` may set ``max_sim_time_s`` and ``max_steps`` (``truncated`` at the limit)."""
    pol = make_policy(policy) if isinstance(policy, str) else policy
    kwargs: dict[str, Any] = {"observation": "dict" if pol.needs_observation else "none"}
    kwargs.update(pol.env_kwargs())
    kwargs.update(env_kwargs or {})
    env = GPUClusterEnv(scenario, scenario_options=scenario_options, **kwargs)
    stepper: Any = env  # the env, or a recording wrapper around it
    if record is not None:
        from ..replay.recorder import RecordingWrapper

        stepper = RecordingWrapper(env, record, pol.name, pol.options)
    t0 = time.perf_counter()
    obs, info = stepper.reset(seed=seed)
    pol.reset(env)
    steps = 0
    terminated = truncated = False
    while not (terminated or truncated):
        acts = pol.act(obs, env)
        if isinstance(acts, list) and not acts:
            acts = WAIT
        for a in acts if isinstance(acts, list) else (acts,):  # a list: the decision point's actions in turn
            obs, _, terminated, truncated, info = stepper.step(a)
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
    if truncated:
        result["truncated_by"] = truncation_cause(env, info)
    if extra is not None:
        result.update(extra(env))
    env.close()
    return result


def truncation_cause(env: Any, info: dict[str, Any]) -> str:
    """Which limit stopped a truncated episode: ``stalled`` (the policy kept waiting with jobs queued and nothing
    running, ``max_idle_ticks``), ``max_sim_time_s`` (the simulated-time limit) or ``max_steps`` (the step
    limit)."""
    u = env.unwrapped
    if info.get("stalled"):
        return "stalled"
    if u.max_sim_time_s is not None and u.engine.now >= u.max_sim_time_s:
        return "max_sim_time_s"
    return "max_steps"

