"""Learned and random policies in the same interface as the reference agents (``act(observation, env)``).

* ``random``: uniformly random among the valid actions (the floor every scheduler should beat).
* ``rl:DIR``: a model trained by ``gpucluster train`` (``DIR/model.zip`` and ``DIR/meta.json``).
* ``rl-castor-philly``: the model shipped in the package (``gpucluster_env/agents/models/``), trained by the
  command in ``docs/rl.md``.

This module stays light: torch and stable-baselines3 are imported when a model is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import numpy as np
from gpucluster_env.agents.model_meta import load_model, play_on_one_thread, read_meta  # load_model re-exported

from gpucluster_env.policy import Policy, register_policy
from gpucluster_env.policy_options import NON_NEGATIVE

if TYPE_CHECKING:
    from gpucluster_env.scenarios import Scenario

SHIPPED_DIR = Path(__file__).with_name("models") / "rl-castor-philly"
ENV_KEYS = ("n_pending", "n_running", "action_layout", "observation", "min_run_s", "pending_order", "hint")
"""Environment arguments a model was trained with, recorded in meta.json and reused to evaluate it."""


@register_policy
class RandomMasked(Policy):
    """Uniformly random among the actions the mask allows (wait included): the floor of the benchmark."""

    name: ClassVar[str] = "random"
    kind: ClassVar[str] = "random"
    description: ClassVar[str] = "Uniformly random valid action of the masked Discrete space (the floor)"
    paper: ClassVar[str] = "-"

    def __init__(self, seed: Annotated[int, NON_NEGATIVE] = 0) -> None:
        """``seed`` is mixed with the episode's own seed, so every episode of a run differs and repeats."""
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)

    def reset(self, env: Any) -> None:
        eng = env.unwrapped.engine
        self._rng = np.random.default_rng([self.seed, int(eng.submit.sum() * 1000) % 2**31, eng.n_jobs])

    def act(self, observation: Any, env: Any) -> int:
        valid = np.flatnonzero(env.unwrapped.action_masks())
        return int(valid[self._rng.integers(len(valid))])


class RLPolicy(Policy):
    """A trained model acting greedily (deterministic) inside the mask."""

    name: ClassVar[str] = "rl"
    kind: ClassVar[str] = "RL from scratch"  # "imitation + RL" for a run that cloned first (set per model)
    description: ClassVar[str] = "A policy trained with stable-baselines3 (gpucluster train)"
    paper: ClassVar[str] = "-"
    needs_observation: ClassVar[bool] = True

    def __init__(self, model_dir: str | Path, deterministic: bool = True, zip_name: str = "model.zip") -> None:
        self.model_dir = str(model_dir)
        self.deterministic = deterministic
        self.model, self.meta = load_model(model_dir, zip_name)
        play_on_one_thread()
        self.masked = self.meta["algo"] == "maskable_ppo"
        if self.meta.get("config", {}).get("bc_episodes"):
            self.kind = "imitation + RL"

    def reset(self, env: Any) -> None:
        """Check that the model can act on ``env`` (same observation and action shapes): a one-line
        ``ValueError`` naming both shapes and why, instead of the network's own error at the first step."""
        why = space_mismatch(self.model, env, self.meta)
        if why:
            raise ValueError(f"{self.name if self.name != 'rl' else self.model_dir} cannot run on "
                             f"{env.unwrapped.scenario.name}: {why}")
        self._checked = env.unwrapped
        trained = self.meta.get("trained_actions")
        if trained is not None:
            from gpucluster_env.agents.trained_actions import trained_mask

            self._trained = trained_mask(env, trained)

    def env_kwargs(self) -> dict[str, Any]:
        """The environment the model was trained in (window sizes, layout, observation form)."""
        env = self.meta.get("env_kwargs", {})
        return {k: env[k] for k in ENV_KEYS if k in env}

    def step_limit(self, n_jobs: int, tick_s: float | None = None) -> int:
        """The registered ids' ``max_episode_steps`` for ``n_jobs`` jobs and calibration tick ``tick_s`` (what
        training episodes ran under)."""
        from gpucluster_env.registration import max_episode_steps

        return max_episode_steps(n_jobs, tick_s)

    _checked: Any = None
    """The env whose spaces :meth:`reset` last checked (``act`` on another env checks it first)."""
    _trained: np.ndarray | None = None
    """The actions of that env whose kind the model's training masks allowed (``meta.json["trained_actions"]``,
    :mod:`.trained_actions`); None for a model without the record (all allowed)."""

    def act(self, observation: Any, env: Any) -> int:
        if self._checked is not env.unwrapped:
            self.reset(env)
        mask = env.unwrapped.action_masks()
        if self._trained is not None and (mask & self._trained).any():
            mask = mask & self._trained  # only what the model was trained to do (wait is always among it)
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
    kind: ClassVar[str] = "imitation + RL"
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


def model_mismatch(policy: str | RLPolicy, scenario: Scenario) -> str | None:
    """Why a trained model (``rl:DIR``, a registered model's name, or a loaded :class:`RLPolicy`) cannot act
    on ``scenario``, naming both shapes (:func:`space_mismatch`), or None when it can (and for a policy that
    is not a trained model)."""
    from gpucluster_env.env import GPUClusterEnv
    from gpucluster_env.policy import make_policy

    pol = make_policy(policy) if isinstance(policy, str) else policy
    if not isinstance(pol, RLPolicy):
        return None
    env = GPUClusterEnv(scenario, **pol.env_kwargs())
    try:
        return space_mismatch(pol.model, env, pol.meta)
    finally:
        env.close()


def _trained_sizes(model: Any, meta: dict[str, Any]) -> tuple[Any, Any, Any]:
    """GPU types, pending and running slots a model was trained with: read off its observation space where it
    is a ``Dict`` (exact), else from its metadata (``?`` where it does not say)."""
    from gymnasium import spaces

    from gpucluster_env.env.observation import CLUSTER_FEATURES, PENDING_FEATURES, RUNNING_FEATURES

    obs = model.observation_space
    if isinstance(obs, spaces.Dict) and {"cluster", "pending", "running"} <= set(obs.spaces):
        return (obs["cluster"].shape[0] // CLUSTER_FEATURES, obs["pending"].shape[0] // PENDING_FEATURES,
                obs["running"].shape[0] // RUNNING_FEATURES)
    env = meta.get("env_kwargs", {})
    return meta.get("gpu_types", "?"), env.get("n_pending", "?"), env.get("n_running", "?")


def space_mismatch(model: Any, env: Any, meta: dict[str, Any]) -> str | None:
    """Why ``model`` cannot act on ``env``, naming both shapes (observation entries and action counts that
    differ) and the sizes behind them (GPU types, pending and running slots), or None when the spaces match."""
    from gymnasium import spaces

    want, have = model.observation_space, env.observation_space
    diffs = []
    if isinstance(want, spaces.Dict) and isinstance(have, spaces.Dict):
        for k in want.spaces:
            a, b = want[k].shape, have[k].shape if k in have.spaces else None
            if a != b:
                diffs.append(f"{k!r} {a} vs {b}")
    elif want.shape != have.shape:
        diffs.append(f"observation {want.shape} vs {have.shape}")
    na, nb = getattr(model.action_space, "n", None), getattr(env.action_space, "n", None)
    if na != nb:
        diffs.append(f"actions {na} vs {nb}")
    if not diffs:
        return None
    u = env.unwrapped
    if isinstance(want, spaces.Dict) and "types" in want.spaces:
        return _sets_mismatch(want, u, diffs)
    t, p, r = _trained_sizes(model, meta)
    return (f"the model's shapes differ from the env's ({'; '.join(diffs)}, model vs env): it was trained on "
            f"{t} GPU type(s) with {p} pending and {r} running slots, this env has {len(u.engine.type_names)} "
            f"with {u.layout.n_pending} and {u.layout.n_running}; the spaces grow with the number of GPU types "
            "and slots, so a model runs only where they are the same")


def _sets_mismatch(want: Any, env: Any, diffs: list[str]) -> str:
    """:func:`space_mismatch`'s line for a model of the ``sets`` view (independent of the GPU types)."""
    from gpucluster_env.env.observation import PENDING_FEATURES, RUNNING_FEATURES
    from gpucluster_env.env.sets import MAX_TYPES

    p, r = want["pending"].shape[0] // PENDING_FEATURES, want["running"].shape[0] // RUNNING_FEATURES
    mode = env.observation_mode
    return (f"the model's shapes differ from the env's ({'; '.join(diffs)}, model vs env): it reads the 'sets' "
            f"view (any cluster of up to {MAX_TYPES} GPU types) with {p} pending and {r} running slots, this env "
            f"has observation={mode!r} with {env.layout.n_pending} and {env.layout.n_running}; make the env with "
            "observation='sets' and the model's slot counts")


def make_rl_policy(spec: str) -> Policy:
    """``rl:DIR`` -> the policy of the model trained into ``DIR``: a network of ``gpucluster train`` on the
    job-centric process (:class:`~gpucluster_env.agents.job_model.JobModelPolicy`) or the full one
    (:class:`RLPolicy`), or a rollout-advantage model of ``gpucluster train-advantage``
    (:class:`~gpucluster_env.agents.advantage.AdvantagePolicy`), as its meta.json says."""
    path = spec.split(":", 1)[1]
    if not path:
        raise ValueError("policy 'rl:DIR' needs a directory written by `gpucluster train`")
    from gpucluster_env.agents.advantage import ALGO, AdvantagePolicy
    from gpucluster_env.agents.job_model import JobModelPolicy, is_jobs_model

    meta = read_meta(path)
    pol: Policy = (AdvantagePolicy(path) if meta.get("algo") == ALGO
                   else JobModelPolicy(path) if is_jobs_model(meta) else RLPolicy(path))
    pol._options = {"model_dir": path}
    return pol
