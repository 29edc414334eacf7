"""Registration of the environment ids with Gymnasium (idempotent)."""

from __future__ import annotations

import gymnasium as gym

from .scenarios import SCENARIOS

NAMESPACE = "gpucluster_env"
ENTRY_POINT = "gpucluster_env.env.cluster_env:GPUClusterEnv"
ENV_VERSION = 1
"""The version in every registered id. v1: engine v2 (interference on the whole iteration, Castor eq. 4-5; the
MPS share model that relieves the partner; per-type demand; the all-reduce fitted on multi-node runs; HadarE
copy quotas; restart on every allocation in hadar-philly): episodes differ from v0's."""
STEPS_PER_JOB = 40
"""``max_episode_steps`` of a registered id is ``STEPS_PER_JOB x jobs + 2,000``: several times the decisions of
a random masked episode (a few per job, tests/test_env_rl.py), so only an agent that idles for hours of
simulated time on an empty cluster meets it."""


def env_id(scenario: str) -> str:
    """``castor-philly`` -> ``gpucluster_env/CastorPhilly-v1``."""
    camel = "".join(part.capitalize() for part in scenario.replace("_", "-").split("-"))
    return f"{NAMESPACE}/{camel}-v{ENV_VERSION}"


def registered_ids_text(width: int = 110, indent: str = "    ") -> str:
    """The per-scenario ids as docstring text (``Tiny-v1``, ``CastorPhilly-v1``, …), one per scenario of
    :data:`~gpucluster_env.scenarios.SCENARIOS`, wrapped for the env's docstring."""
    import textwrap

    ids = ", ".join(f"``{env_id(name).split('/', 1)[1]}``" for name in SCENARIOS)
    return textwrap.fill(ids, width, subsequent_indent=indent).strip()


def max_episode_steps(num_jobs: int) -> int:
    """The step limit of a registered id whose scenario has ``num_jobs`` jobs."""
    return STEPS_PER_JOB * num_jobs + 2000


def register_envs() -> list[str]:
    """Register the generic id (on ``tiny`` unless ``scenario=`` is given) and one id per scenario, each with
    its ``max_episode_steps``; return the ids."""
    ids = [f"{NAMESPACE}/GPUCluster-v{ENV_VERSION}"]
    if ids[0] not in gym.registry:
        gym.register(id=ids[0], entry_point=ENTRY_POINT, disable_env_checker=False,
                     max_episode_steps=max_episode_steps(SCENARIOS["tiny"].num_jobs))
    for name, sc in SCENARIOS.items():
        i = env_id(name)
        ids.append(i)
        if i not in gym.registry:
            gym.register(id=i, entry_point=ENTRY_POINT, kwargs={"scenario": name},
                         max_episode_steps=max_episode_steps(sc.num_jobs))
    return ids
