"""Registration of the environment ids with Gymnasium (idempotent), without importing Gymnasium first.

``import gpucluster_env`` calls :func:`register_when_gymnasium_loads`: the ids are registered at once if
Gymnasium is already imported, else the moment it is (an import hook on ``gymnasium``). So
``import gpucluster_env; gymnasium.make("gpucluster_env/Tiny-v1")`` works in either import order, and
``import gpucluster_env.engine`` (or any other part below the environment) never loads Gymnasium.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any

from .scenarios import SCENARIOS

NAMESPACE = "gpucluster_env"
ENTRY_POINT = "gpucluster_env.env.registered:scenario_env"
JOBS_ENTRY_POINT = "gpucluster_env.env.registered:scenario_jobs_env"
"""The job-centric decision process RL trains on (:mod:`gpucluster_env.env.jobs_env`): ``<Scenario>Jobs-v1``."""
ENV_VERSION = 1
"""The version in every registered id. v1: engine v2 (interference on the whole iteration, Castor eq. 4-5; the
MPS share model that relieves the partner; per-type demand; the all-reduce fitted on multi-node runs; HadarE
copy quotas; restart on every allocation in hadar-philly): episodes differ from v0's."""
STEPS_PER_JOB = 40
"""``max_episode_steps`` of a registered id is ``STEPS_PER_JOB x jobs + 2,000``: several times the decisions of
a random masked episode (a few per job, tests/env/test_env_rl.py), so only an agent that idles for hours of
simulated time on an empty cluster meets it."""
JOBS_STEPS_PER_JOB = 80
"""``max_episode_steps`` of a job-centric id is ``JOBS_STEPS_PER_JOB x jobs + 2,000``: its steps are starts,
preemptions and decision points with a choice, never forced waits: a uniformly random masked episode takes 5.2
steps per job on castor-philly (1,250 for 240 jobs), 1.9 on gimbal-philly and 30 on hadar-philly (14,497 for 480
jobs: every 6-minute round is a decision point where a preemption is legal), seed 0; the limit is well above."""
TICK_STEPS_PER_JOB = 160
"""The steps per job of a scenario that calibrates MPS shares (``tick_s`` set: the Gimbal scenarios), where every
calibration tick is a decision point as well: SJF itself takes 53-58 steps per job on ``gimbal-alibaba`` (16,005
and 17,412 steps for 300 jobs, seeds 0 and 1: `gpucluster run --scenario gimbal-alibaba --seed N --policy sjf
--json`), above the 40 of other scenarios, so that limit cut even the reference policies short; 160 is about
three times that."""


def env_id(scenario: str) -> str:
    """``castor-philly`` -> ``gpucluster_env/CastorPhilly-v1``."""
    camel = "".join(part.capitalize() for part in scenario.replace("_", "-").split("-"))
    return f"{NAMESPACE}/{camel}-v{ENV_VERSION}"


def jobs_env_id(scenario: str) -> str:
    """``castor-philly`` -> ``gpucluster_env/CastorPhillyJobs-v1`` (the job-centric decision process)."""
    return env_id(scenario).replace(f"-v{ENV_VERSION}", f"Jobs-v{ENV_VERSION}")


def jobs_env_ids() -> list[str]:
    """The job-centric ids: the generic one (``scenario=`` any scenario or scenario file), then one per scenario."""
    return [f"{NAMESPACE}/GPUClusterJobs-v{ENV_VERSION}"] + [jobs_env_id(name) for name in SCENARIOS]


def make_id(scenario: str, process: str = "full") -> tuple[str, dict[str, Any]]:
    """The id and the keyword arguments that make ``scenario`` (a name, or a scenario file through the generic
    id) on decision process ``process`` (``full`` or ``jobs``)."""
    if scenario in SCENARIOS:
        return (jobs_env_id(scenario) if process == "jobs" else env_id(scenario)), {}
    return (jobs_env_ids() if process == "jobs" else env_ids())[0], {"scenario": scenario}


def registered_ids_text(width: int = 110, indent: str = "    ") -> str:
    """The per-scenario ids as docstring text (``Tiny-v1``, ``CastorPhilly-v1``, …), one per scenario of
    :data:`~gpucluster_env.scenarios.SCENARIOS`, wrapped for the env's docstring."""
    import textwrap

    ids = ", ".join(f"``{env_id(name).split('/', 1)[1]}``" for name in SCENARIOS)
    return textwrap.fill(ids, width, subsequent_indent=indent).strip()


def max_episode_steps(num_jobs: int, tick_s: float | None = None) -> int:
    """The step limit of a registered id whose scenario has ``num_jobs`` jobs (``tick_s``: its calibration tick,
    None where it has none)."""
    return (STEPS_PER_JOB if tick_s is None else TICK_STEPS_PER_JOB) * num_jobs + 2000


def env_ids() -> list[str]:
    """The registered ids: the generic one first, then one per scenario (computed without Gymnasium)."""
    return [f"{NAMESPACE}/GPUCluster-v{ENV_VERSION}"] + [env_id(name) for name in SCENARIOS]


def register_envs() -> list[str]:
    """Register the generic ids (on ``tiny`` unless ``scenario=`` is given), and one id and one job-centric id
    per scenario, each truncating at its scenario's step limit by itself
    (:func:`gpucluster_env.env.registered.scenario_env`; no Gymnasium ``max_episode_steps``); return the ids
    (imports Gymnasium)."""
    import gymnasium as gym

    ids = env_ids()
    if ids[0] not in gym.registry:
        gym.register(id=ids[0], entry_point=ENTRY_POINT, disable_env_checker=False)
    for i, name in zip(ids[1:], SCENARIOS, strict=True):
        if i not in gym.registry:
            gym.register(id=i, entry_point=ENTRY_POINT, kwargs={"scenario": name})
    jobs_ids = jobs_env_ids()
    if jobs_ids[0] not in gym.registry:
        gym.register(id=jobs_ids[0], entry_point=JOBS_ENTRY_POINT, disable_env_checker=False)
    for i, name in zip(jobs_ids[1:], SCENARIOS, strict=True):
        if i not in gym.registry:
            gym.register(id=i, entry_point=JOBS_ENTRY_POINT, kwargs={"scenario": name})
    return ids


class _RegisteringLoader(importlib.abc.Loader):
    """Gymnasium's own loader, then :func:`register_envs` once the ``gymnasium`` module has run."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        register_envs()


class _GymnasiumHook(importlib.abc.MetaPathFinder):
    """Finds ``gymnasium`` as the other finders would, with a loader that registers the ids after it runs
    (then leaves ``sys.meta_path``: one registration per process)."""

    def find_spec(self, name: str, path: object,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _RegisteringLoader(spec.loader)
        return spec


def register_when_gymnasium_loads() -> None:
    """Register the ids now if Gymnasium is imported, else when it is (idempotent)."""
    if "gymnasium" in sys.modules:
        register_envs()
    elif not any(isinstance(f, _GymnasiumHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _GymnasiumHook())
