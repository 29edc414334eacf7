"""The agent interface, at the boundary between the environment and the agents: the :class:`Policy` every
agent implements, the registry of policies by name, and :func:`run_episode`, the single code path by which
reference agents and RL policies are scored. It sits below the agents (``baselines``, ``agents``) and the
harness (leaderboard, CLI, replay), which all import it; it imports only the engine and the environment.

A policy is an object with ``act(observation, env) -> action``: an int of the env's action space, a typed
action (:mod:`gpucluster_env.engine.actions`) for white-box agents that need an exact GPU set, or a list of
typed actions for the current decision point (:func:`run_episode` hands them to the env one at a time).
White-box agents read the cluster through :meth:`Policy.view` (a read-only
:class:`~gpucluster_env.engine.view.ClusterView`) and change the world only through the actions they return.

Policies register themselves with :func:`register_policy` when their module is imported; :func:`make_policy`
and :func:`policy_names` import the packages named in :data:`POLICY_PACKAGES` first (by name, as plugins: they
sit above this module).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from gpucluster_env.engine import Wait
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.policy_base import POLICIES, POLICY_KINDS, Policy, register_policy
from gpucluster_env.policy_options import check_names, check_options, declared_options
from gpucluster_env.policy_plugins import as_policy, load_entry_points, load_reference
from gpucluster_env.settings import Setting, SettingError

POLICY_PACKAGES = ("gpucluster_env.baselines", "gpucluster_env.agents.policies", "gpucluster_env.agents.advantage",
                   "gpucluster_env.agents.job_model")
"""The packages whose import registers every policy: the reference policies, then the random floor and the
shipped RL models."""
RL_POLICY_FACTORY = "gpucluster_env.agents.policies:make_rl_policy"
"""What builds ``rl:DIR`` (a model trained by ``gpucluster train``)."""
__all__ = ["POLICIES", "POLICY_KINDS", "POLICY_PACKAGES", "Policy", "check_policy_options", "make_policy",
           "option_settings", "policy_names", "register_policy", "registered_policies", "run_episode",
           "truncation_cause"]

def make_policy(name: str, **kwargs: Any) -> Policy:
    """A new policy by registered name, or ``rl:DIR`` for a model trained by ``gpucluster train``; its options
    ``kwargs`` are checked by their declared settings as it is made (:func:`register_policy`)."""
    _load_all()
    if name.startswith("rl:"):
        module, _, func = RL_POLICY_FACTORY.partition(":")
        return getattr(importlib.import_module(module), func)(name)
    if ":" in name:  # package.module:Class, a user's own policy (gpucluster_env.policy_plugins)
        load_reference(name)
    try:
        cls = POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(sorted(POLICIES))}") from None
    check_names(cls, name, kwargs)
    pol = cls(**kwargs)
    pol._options = dict(kwargs)
    return pol


def registered_policies() -> dict[str, type[Policy]]:
    """Every registered policy class by name, in registration order (the registering packages imported
    first; read :data:`POLICIES` directly only where they surely are)."""
    _load_all()
    return POLICIES


def policy_names() -> list[str]:
    """Registered policy names, in registration order."""
    _load_all()
    return list(POLICIES)


def option_settings(policy: str) -> dict[str, tuple[Setting, Any]]:
    """Each option of registered ``policy``: its setting and its default (``inspect.Parameter.empty`` when it
    has none); a one-line ``SettingError`` for an unknown policy."""
    if ":" in policy and not policy.startswith("rl:") and policy not in POLICIES:
        load_reference(policy)
    if policy not in policy_names():
        raise SettingError(f"unknown policy {policy!r}; known: {', '.join(sorted(POLICIES))}")
    return declared_options(POLICIES[policy])


def check_policy_options(policy: str, options: dict[str, Any], where: str = "") -> dict[str, Any]:
    """``options`` of registered ``policy`` (from TOML, JSON or Python data) checked by each option's setting
    and written in one canonical form, options equal to their default left out
    (:func:`gpucluster_env.policy_options.check_options`); ``rl:DIR`` policies take no options. Errors are
    one line, prefixed with ``where``."""
    if policy.startswith("rl:"):
        if options:
            raise SettingError(f"{where}policy {policy!r} takes no options, got {', '.join(sorted(options))}")
        return {}
    option_settings(policy)  # an unknown policy: a one-line error
    return check_options(POLICIES[policy], policy, options, where)


def _load_all() -> None:
    """Import the packages that register policies (by name: they sit above this module, as plugins do)."""
    global _PLUGINS_LOADED
    for module in POLICY_PACKAGES:
        importlib.import_module(module)
    if not _PLUGINS_LOADED:  # installed plugins (entry points), after the built-ins so none can take their names
        _PLUGINS_LOADED = True
        load_entry_points()


_PLUGINS_LOADED = False



WAIT = Wait()
"""What an empty list of actions stands for."""


def run_episode(
    scenario: str,
    policy: str | Policy,
    seed: int,
    scenario_options: dict[str, Any] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    extra: Callable[[GPUClusterEnv], dict[str, Any]] | None = None,
    wrap: Callable[[GPUClusterEnv, Policy], Any] | None = None,
) -> dict[str, Any]:
    """Play one episode to the end and return its metrics with ``scenario``, ``policy``, ``seed``, ``trace``,
    ``steps`` and ``wall_s``. ``policy`` is a :class:`Policy` or a name for :func:`make_policy`.

    The environment is built with the policy's own :meth:`Policy.env_kwargs`
    (e.g. ``castor-timeslice`` runs in the time-slicing world), then ``env_kwargs``, which win where both set
    a key. ``extra``, when given, is called on the finished environment and its entries are added to the
    result (e.g. per-class statistics a harness wants beside the standard metrics). ``wrap``, when given, wraps
    the environment the episode steps through (e.g. :func:`gpucluster_env.replay.recorder.recording`, which
    writes the episode for ``gpucluster replay``).

    A policy's answer is an action or a list of actions for the decision point; an empty list means ``wait``.
    The episode always ends: the environment bounds the steps at one instant (``env.rules``: a run of rejected
    actions forces a ``wait``), stops a run that only waits with nothing running (``max_idle_ticks``), and
    ``env_kwargs`` may set ``max_sim_time_s`` and ``max_steps`` (``truncated`` at the limit); a policy's own
    :meth:`Policy.step_limit` (a learned policy's ``max_episode_steps``) applies where it is lower.
    ``truncated_by`` names the limit that stopped a truncated episode (:func:`truncation_cause`)."""
    if isinstance(policy, str):
        pol = make_policy(policy)
    else:
        pol = as_policy(policy)  # a duck-typed object with act() works as documented
    env, own_limit = _episode_env(scenario, pol, scenario_options, env_kwargs)
    stepper: Any = env if wrap is None else wrap(env, pol)  # the env, or e.g. a recording wrapper around it
    env.full_info = wrap is not None  # unwrapped, only the last step's info is read: the others are left empty
    t0 = time.perf_counter()
    with episode_gc():
        steps, truncated, info = _play(stepper, pol, env, seed)
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
        cause = truncation_cause(env, info)
        result["truncated_by"] = "max_episode_steps" if cause == "max_steps" and own_limit is not None else cause
    if extra is not None:
        result.update(extra(env))
    env.close()
    return result


EPISODE_GC_GEN0 = 20_000
"""The garbage collector's first-generation threshold while :func:`run_episode` plays (Python's default: 700)."""


@contextlib.contextmanager
def episode_gc() -> Iterator[None]:
    """Raise the garbage collector's first-generation threshold to :data:`EPISODE_GC_GEN0` (where it is lower)
    for the block, and put it back after. An episode allocates a few short-lived objects per step (actions,
    copies, events, the policy's own), so at Python's default of 700 a month of Gavel's rounds ran ~1,900
    collections (~1 s of CPU); at 20,000 some 40. Collection is all it changes: no result depends on it."""
    gen0, gen1, gen2 = gc.get_threshold()
    if gen0 >= EPISODE_GC_GEN0:
        yield
        return
    gc.set_threshold(EPISODE_GC_GEN0, gen1, gen2)
    try:
        yield
    finally:
        gc.set_threshold(gen0, gen1, gen2)


def _episode_env(scenario: str, pol: Policy, scenario_options: dict[str, Any] | None,
                 env_kwargs: dict[str, Any] | None) -> tuple[GPUClusterEnv, int | None]:
    """The environment an episode of ``pol`` runs in (its own env kwargs, then the caller's), and the policy's own
    step limit where it is the one that applies (below the environment's ``max_steps``), else None."""
    kwargs: dict[str, Any] = {"observation": "dict" if pol.needs_observation else "none"}
    kwargs.update(pol.env_kwargs())
    kwargs.update(env_kwargs or {})
    env = GPUClusterEnv(scenario, scenario_options=scenario_options, **kwargs)
    limit_of = getattr(pol, "step_limit", None)  # duck-typed policies may lack it
    tick_s = env.scenario.config.tick_s  # passed only where set, so a step_limit(n_jobs) of older code still works
    own_limit = (None if limit_of is None else limit_of(env.scenario.num_jobs) if tick_s is None
                 else limit_of(env.scenario.num_jobs, tick_s=tick_s))
    if own_limit is not None and (env.max_steps is None or own_limit < env.max_steps):
        env.max_steps = own_limit
    else:
        own_limit = None
    return env, own_limit


def _play(stepper: Any, pol: Policy, env: GPUClusterEnv, seed: int) -> tuple[int, bool, dict[str, Any]]:
    """Reset ``stepper`` (the env or a wrapper around it) with ``seed`` and step it with ``pol``'s answers until
    the episode ends; returns the env steps taken, whether the episode was truncated, and the last info."""
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
    return steps, truncated, info


def truncation_cause(env: Any, info: dict[str, Any]) -> str:
    """Which limit stopped a truncated episode: ``stalled`` (the policy kept waiting with jobs queued and nothing
    running, ``max_idle_ticks``), ``max_sim_time_s`` (the simulated-time limit) or ``max_steps`` (the step
    limit; a runner names it ``max_episode_steps`` where it was the policy's own :meth:`Policy.step_limit`)."""
    u = env.unwrapped
    if info.get("stalled"):
        return "stalled"
    if u.max_sim_time_s is not None and u.engine.now >= u.max_sim_time_s:
        return "max_sim_time_s"
    return "max_steps"
