"""Learned and random policies in the same interface as the reference agents (``act(observation, env)``).

* ``random``: uniformly random among the valid actions (the floor every scheduler should beat).
* ``rl:DIR``: a model trained by ``gpucluster train`` (``DIR/model.zip`` and ``DIR/meta.json``).
* ``rl-castor-philly``: the model shipped in the package (``gpucluster_env/agents/models/``), trained by the
  command in ``docs/rl.md``.

This module stays light: torch and stable-baselines3 are imported when a model is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gpucluster_env.policy import Policy, register_policy

if TYPE_CHECKING:
    from gpucluster_env.scenarios import Scenario

SHIPPED_DIR = Path(__file__).with_name("models") / "rl-castor-philly"
ENV_KEYS = ("n_pending", "n_running", "action_layout", "observation", "min_run_s", "pending_order")
"""Environment arguments a model was trained with, recorded in meta.json and reused to evaluate it."""


@register_policy
class RandomMasked(Policy):
    """Uniformly random among the actions the mask allows (wait included): the floor of the benchmark."""

    name: ClassVar[str] = "random"
    description: ClassVar[str] = "Uniformly random valid action of the masked Discrete space (the floor)"
    paper: ClassVar[str] = "-"

    def __init__(self, seed: int = 0) -> None:
        """``seed`` is mixed with the episode's own seed, so every episode of a run differs and repeats."""
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)

    def reset(self, env: Any) -> None:
        eng = env.unwrapped.engine
        self._rng = np.random.default_rng([self.seed, int(eng.submit.sum() * 1000) % 2**31, eng.n_jobs])

    def act(self, observation: Any, env: Any) -> int:
        valid = np.flatnonzero(env.unwrapped.action_masks())
        return int(valid[self._rng.integers(len(valid))])


def read_meta(model_dir: str | Path) -> dict[str, Any]:
    """The ``meta.json`` saved beside a model (algorithm, environment arguments, seeds, versions)."""
    path = Path(model_dir) / "meta.json"
    if not path.is_file():
        raise FileNotFoundError(f"{model_dir}: no meta.json (not a directory written by `gpucluster train`)")
    from gpucluster_env.input_files import parse_json, read_text

    meta = parse_json(read_text(path), str(path))
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: expected a JSON object of metadata, got {type(meta).__name__}")
    return meta


def load_model(model_dir: str | Path, zip_name: str = "model.zip") -> tuple[Any, dict[str, Any]]:
    """The trained SB3 model of ``model_dir`` (on the CPU; ``zip_name``: another file of the run, e.g. a
    checkpoint) and its metadata."""
    meta = read_meta(model_dir)
    zip_path = Path(model_dir) / zip_name
    if not zip_path.is_file():
        raise FileNotFoundError(f"{model_dir}: no {zip_name}")
    algo = meta.get("algo")
    if algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO as cls
    elif algo == "ppo":
        from stable_baselines3 import PPO as cls
    elif algo == "dqn":
        from stable_baselines3 import DQN as cls
    else:
        raise ValueError(f"{model_dir}: unknown algorithm {algo!r} in meta.json")
    return cls.load(str(zip_path), device="cpu"), meta


class RLPolicy(Policy):
    """A trained model acting greedily (deterministic) inside the mask."""

    name: ClassVar[str] = "rl"
    description: ClassVar[str] = "A policy trained with stable-baselines3 (gpucluster train)"
    paper: ClassVar[str] = "-"
    needs_observation: ClassVar[bool] = True

    def __init__(self, model_dir: str | Path, deterministic: bool = True, zip_name: str = "model.zip") -> None:
        self.model_dir = str(model_dir)
        self.deterministic = deterministic
        self.model, self.meta = load_model(model_dir, zip_name)
        self.masked = self.meta["algo"] == "maskable_ppo"

    def env_kwargs(self) -> dict[str, Any]:
        """The environment the model was trained in (window sizes, layout, observation form)."""
        env = self.meta.get("env_kwargs", {})
        return {k: env[k] for k in ENV_KEYS if k in env}

    def step_limit(self, n_jobs: int) -> int:
        """The registered ids' ``max_episode_steps`` for ``n_jobs`` jobs (what training episodes ran under)."""
        from gpucluster_env.registration import max_episode_steps

        return max_episode_steps(n_jobs)

    def act(self, observation: Any, env: Any) -> int:
        mask = env.unwrapped.action_masks()
        if self.masked:
            a, _ = self.model.predict(observation, action_masks=mask, deterministic=self.deterministic)
        else:
            a, _ = self.model.predict(observation, deterministic=self.deterministic)
        a = int(np.asarray(a).item())
        return a if mask[a] else 0  # a model without masks may ask for an invalid action: wait instead


@register_policy
class ShippedRL(RLPolicy):
    """The MaskablePPO policy shipped with the package (trained on castor-philly; docs/rl.md)."""

    name: ClassVar[str] = "rl-castor-philly"
    description: ClassVar[str] = (
        "MaskablePPO on castor-philly and sjfbsbf-philly windows, warm-started by cloning SRSF with DAgger "
        "(docs/rl.md)"
    )
    paper: ClassVar[str] = "this package (issue 13)"

    def __init__(self, deterministic: bool = True) -> None:
        super().__init__(SHIPPED_DIR, deterministic)

    @classmethod
    def applies_to(cls, scenario: Scenario) -> bool:
        """Clusters with as many GPU types as the training scenarios (the spaces depend on that number)."""
        trained = read_meta(SHIPPED_DIR)["gpu_types"]
        return len({n.gpu_type for n in scenario.cluster.nodes}) == trained

    @classmethod
    def not_applicable_because(cls, scenario: Scenario) -> str:
        """Why the shipped model cannot run on ``scenario``: its number of GPU types."""
        trained = read_meta(SHIPPED_DIR)["gpu_types"]
        have = len({n.gpu_type for n in scenario.cluster.nodes})
        return f"trained on clusters with {trained} GPU type(s), this one has {have}"


def model_mismatch(model_dir: str | Path, scenario: Scenario) -> str | None:
    """Why the model trained into ``model_dir`` cannot act on ``scenario`` (its spaces depend on the number of
    GPU types), or None when it can."""
    trained = read_meta(model_dir).get("gpu_types")
    have = len({n.gpu_type for n in scenario.cluster.nodes})
    if trained is None or trained == have:
        return None
    return f"the model in {model_dir} was trained on clusters with {trained} GPU type(s), {scenario.name} has {have}"


def make_rl_policy(spec: str) -> RLPolicy:
    """``rl:DIR`` -> the policy of the model trained into ``DIR``."""
    path = spec.split(":", 1)[1]
    if not path:
        raise ValueError("policy 'rl:DIR' needs a directory written by `gpucluster train`")
    pol = RLPolicy(path)
    pol._options = {"model_dir": path}
    return pol
