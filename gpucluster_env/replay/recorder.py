"""Capturing an episode as a record while it runs: :class:`RecordingWrapper`, a Gymnasium wrapper that the
benchmark runner puts around its environment when asked to record, and that RL rollouts can use directly::

    env = RecordingWrapper(gym.make("gpucluster_env/Tiny-v1"), "rollouts/ep{episode:03d}.jsonl.gz",
                           policy="maskable-ppo")

Every ``reset`` starts a new record and every episode end (terminated or truncated) writes it, atomically.
Policies keep reading ``env.unwrapped``; the wrapper changes no observation, reward or action.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import gymnasium as gym

from gpucluster_env import __version__
from gpucluster_env.env.cluster_env import ACTION_KINDS, GPUClusterEnv
from gpucluster_env.replay.record import action_to_json, event_dict, jsonable, write_lines
from gpucluster_env.replay.record_schema import RECORD_FORMAT, RECORD_VERSION
from gpucluster_env.scenarios import SCENARIOS, Scenario
from gpucluster_env.versions import package_versions

_SCALARS = (int, float, str, bool, type(None))


def _canonical(scenario: Scenario) -> Scenario:
    """``scenario`` with its trace file (if any) by absolute path (``os.path.abspath``, as the trace's note
    names it: a pipe ``/dev/fd/N`` stays itself): what the record describes."""
    import os
    from dataclasses import replace

    tf = getattr(scenario, "trace_file", None)
    return replace(scenario, trace_file=os.path.abspath(tf)) if isinstance(tf, str) else scenario


def scenario_options_of(scenario: Scenario) -> dict[str, Any]:
    """The plain-valued options (numbers, strings, booleans, null) that turn the named scenario
    ``scenario.name`` into ``scenario``: the fields that differ, as ``get_scenario(name, **options)`` takes them.
    Options that are not plain values (a cluster, a model list) and scenarios that are not named are described
    by :func:`scenario_spec`, from which a replay builds the scenario; a replay re-derives these options from
    the scenario it built, so they must be what this function says."""
    base = SCENARIOS.get(scenario.name)
    if base is None:
        return {}
    scenario = _canonical(scenario)
    out: dict[str, Any] = {}
    for obj, ref in ((scenario, base), (scenario.config, base.config)):
        for f in fields(obj):
            if f.name == "config":
                continue
            v, v0 = getattr(obj, f.name), getattr(ref, f.name)
            if v != v0 and isinstance(v, _SCALARS):
                out[f.name] = v
    return out


def scenario_spec(scenario: Scenario) -> str:
    """The whole scenario as TOML (what ``gpucluster scenarios show --toml`` prints; a trace file by its
    absolute path), so a record of a scenario file or of ``run --trace FILE --cluster SPEC`` verifies too."""
    from gpucluster_env.scenario_files import scenario_to_toml

    return scenario_to_toml(_canonical(scenario))


def env_settings(env: GPUClusterEnv) -> dict[str, Any]:
    """The environment's keyword arguments that matter for replaying its actions (all JSON values)."""
    L = env.layout
    return {
        "n_pending": L.n_pending, "n_running": L.n_running, "n_accum": L.n_accum,
        "observation": env.observation_mode, "objective": env.objective, "reward_scale": env.reward_scale,
        "invalid_action": env.invalid_action, "actions": [k for k in ACTION_KINDS if k in env.allowed],
        "max_sim_time_s": env.max_sim_time_s, "action_layout": env.action_layout, "min_run_s": env.min_run_s,
        "pending_order": env.pending_order,
        **({"max_steps": env.max_steps} if env.max_steps is not None else {}),  # a step-limited run
    }


def header_of(env: GPUClusterEnv, seed: int | None, policy: str, policy_options: dict[str, Any], catalog: str,
              rng_state: dict[str, Any] | None = None) -> dict[str, Any]:
    """The record's first line for the episode ``env`` has just been reset to. ``rng_state``: the env's random
    generator state before a reset without a seed (what a replay needs to draw the same episode). Everything
    but the arguments is read off ``env``, so a replay re-derives it (``--verify`` checks that it does)."""
    eng = env.engine
    return {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "package_version": __version__,
        "versions": package_versions(),
        "scenario": env.scenario.name,
        "scenario_options": scenario_options_of(env.scenario),
        "scenario_spec": scenario_spec(env.scenario),
        "seed": seed,
        **({"rng_state": rng_state} if seed is None and rng_state is not None else {}),
        "policy": policy,
        "policy_options": policy_options,
        "env": env_settings(env),
        "catalog": catalog,
        "trace": env.trace_note,
        "cluster": [[eng.type_names[eng.node_type[n]], int(eng.node_size[n])] for n in range(eng.num_nodes)],
        "share_step": eng.share_step,
        "jobs": [
            {"id": jsonable(eng.job_ids[j]), "model": eng.model_names[eng.job_model[j]], "gpus": int(eng.req_gpus[j]),
             "submit_s": float(eng.submit[j]), "iterations": float(eng.iterations[j])}
            for j in range(eng.n_jobs)
        ],
    }


class EpisodeCapture:
    """The lines of one episode's record, gathered step by step from the environment's engine."""

    def __init__(self, env: GPUClusterEnv, header: dict[str, Any]) -> None:
        self.env = env
        self.lines: list[dict[str, Any]] = [header]
        self._n_events = 0
        self._rates: dict[int, tuple[float, float]] = {}
        self.n_actions = 0
        self._flush()

    def step(self, action: Any) -> None:
        """Record ``action`` (just applied) and what followed it."""
        self.lines.append({"kind": "act", "a": action_to_json(action)})
        self.n_actions += 1
        self._flush()

    def _flush(self) -> None:
        eng = self.env.engine
        recs = eng.log.records
        self.lines.extend(event_dict(*r) for r in recs[self._n_events:])
        self._n_events = len(recs)
        self._sample_rates(eng)

    def _sample_rates(self, eng: Any) -> None:
        """A rate line for the running jobs whose rate (or start of progress) changed since the last sample:
        ``[job, remaining iterations now, iterations per second, xi = solo rate / rate, active_from]``."""
        now = eng.now
        changed = []
        seen: dict[int, tuple[float, float]] = {}
        for j in eng.running_head(eng.num_running).tolist():
            key = (eng.rate.item(j), eng.active_from.item(j))
            seen[j] = key
            if self._rates.get(j) != key:
                rate, af = key
                rem = eng.remaining.item(j) - rate * max(0.0, now - max(eng.last_t.item(j), af))
                solo = eng.solo_rate.item(j)
                xi = solo / rate if rate > 0 and solo > 0 else None
                changed.append([j, float(f"{max(rem, 0.0):.9g}"), float(f"{rate:.9g}"),
                                None if xi is None else round(xi, 4), af])
        self._rates = seen
        if changed:
            self.lines.append({"kind": "rate", "t": now, "jobs": changed})

    def finish(self, metrics: dict[str, Any], end: str) -> list[dict[str, Any]]:
        """All lines, ending with the metrics line; ``end`` says how the episode ended: ``terminated``,
        ``truncated`` (by the environment) or ``wrapper`` (by an outer wrapper such as a time limit)."""
        tail = {"kind": "metrics", **{k: jsonable(v) for k, v in metrics.items()},
                "actions": self.n_actions, "events": self._n_events, "end": end}
        return [*self.lines, tail]


def recording(path: str | Path) -> Callable[[GPUClusterEnv, Any], RecordingWrapper]:
    """For :func:`gpucluster_env.policy.run_episode`'s ``wrap``: record the episode to ``path``, named by the
    policy that plays it (its name and options)."""
    return lambda env, policy: RecordingWrapper(env, path, policy.name, policy.options)


class RecordingWrapper(gym.Wrapper):
    """Records every episode of the wrapped :class:`GPUClusterEnv` to ``path`` (``{episode}`` in it is
    replaced by the episode number, from 0; without it each episode overwrites the last). ``policy`` and
    ``policy_options`` name what acted. A registered policy name is a claim that ``--verify`` checks: it
    rebuilds that policy (and its own environment settings, e.g. the time-slicing catalog) and requires it to
    choose every recorded action; name an RL agent or a hand-written rollout otherwise (default ``"agent"``),
    and its actions are replayed as recorded. The scenario and its options are read off the environment. The
    written paths are in :attr:`written`."""

    def __init__(self, env: gym.Env, path: str | Path, policy: str = "agent",
                 policy_options: dict[str, Any] | None = None, catalog: str | None = None) -> None:
        super().__init__(env)
        if not isinstance(env.unwrapped, GPUClusterEnv):
            raise TypeError("RecordingWrapper wraps a GPUClusterEnv (or a wrapper of one)")
        self.path = str(path)
        self.policy = policy
        self.policy_options = dict(policy_options or {})
        self.catalog = catalog
        self.episode = -1
        self.written: list[Path] = []
        self._capture: EpisodeCapture | None = None

    def _catalog_kind(self, base: GPUClusterEnv) -> str:
        if self.catalog is not None:
            return self.catalog
        if base.catalog is None:
            return "default"
        from gpucluster_env.policy import make_policy, registered_policies

        if self.policy in registered_policies() and make_policy(
                self.policy, **self.policy_options).env_kwargs().get("catalog"):
            return "policy"
        return "custom"

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        base: GPUClusterEnv = self.env.unwrapped  # type: ignore[assignment]
        # without a seed the episode is drawn from the env's generator: keep its state so a replay can redraw it
        rng_state = base.np_random.bit_generator.state if seed is None else None
        obs, info = self.env.reset(seed=seed, options=options)
        self.episode += 1
        header = header_of(base, seed, self.policy, self.policy_options, self._catalog_kind(base), rng_state)
        self._capture = EpisodeCapture(base, header)
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        if self._capture is None:
            raise RuntimeError("call reset() before step()")
        out = self.env.step(action)
        self._capture.step(action)
        _, _, terminated, truncated, info = out
        if terminated or truncated:
            if "metrics" in info:  # the env itself ended the episode
                metrics, end = info["metrics"], "terminated" if terminated else "truncated"
            else:  # an outer wrapper (e.g. gymnasium's TimeLimit) cut it short
                metrics, end = self.env.unwrapped.engine.metrics(), "wrapper"
            path = self.path.format(episode=self.episode) if "{episode" in self.path else self.path
            self.written.append(write_lines(path, self._capture.finish(metrics, end)))
            self._capture = None
        return out
