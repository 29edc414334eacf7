"""The configuration of a training run (:class:`TrainConfig`, saved whole in ``meta.json``) and its defaults per
decision process; :mod:`.train` runs it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALGOS = ("maskable_ppo", "ppo", "a2c", "dqn")
PROCESSES = ("jobs", "full")
"""The decision process a run trains on: the job-centric one (default) or the full action vocabulary."""
PROCESS_DEFAULTS: dict[str, dict[str, Any]] = {
    "jobs": {"learning_rate": 1e-3, "gamma": 1.0, "gae_lambda": 0.99, "time_discount_s": 7200.0,
             "timesteps": 300_000, "vec": "dummy"},
    "full": {"learning_rate": 3e-4, "gamma": 0.995, "gae_lambda": 0.95, "time_discount_s": 0.0,
             "timesteps": 100_000, "vec": "subproc"},
}
"""The settings whose defaults differ between the two processes (docs/rl.md measures the job-centric ones)."""
EVAL_SEED = 1_000_000
"""Evaluation episodes during training draw their traces from seeds from here on, never used for training."""


@dataclass
class TrainConfig:
    """Everything a training run depends on (saved in meta.json)."""

    out: str
    algo: str = "maskable_ppo"
    process: str = "jobs"
    """``jobs``: the job-centric decision process (:mod:`gpucluster_env.env.jobs_env`); ``full``: the full
    action vocabulary of ``GPUClusterEnv``."""
    reference: str | None = "srsf"
    """``jobs`` only: the reward is relative to this heuristic on the same trace (:mod:`.reference_reward`);
    None for the plain reward."""
    time_discount_s: float | None = None
    """``jobs`` with MaskablePPO only: discount the bootstrap by ``exp(-dt / time_discount_s)`` of simulated time
    on top of ``gamma`` (:mod:`.time_discount`); 0 for a per-step ``gamma`` alone; None: the process's default
    (:data:`PROCESS_DEFAULTS`)."""
    input_baseline: bool = False
    """``jobs`` with MaskablePPO: Decima's per-time input-dependent baseline (:mod:`.input_baseline`): the
    ``n_envs`` envs (>= 2, in one process) play the same job table each episode, and a step's advantage is its
    return-to-go minus the other envs' mean return-to-go at the same simulated time."""
    library_defaults: bool = False
    """``jobs`` only: the algorithm with its library's own hyperparameters (SB3's defaults; MaskablePPO still with
    the job-scoring network) and the plain reward, as a newcomer would run it (the baseline table's ``:lib``)."""
    job_dim: int = 64
    """``jobs`` with MaskablePPO: the width of the job-scoring network (:mod:`.job_policy`)."""
    scenarios: tuple[str, ...] = ("castor-philly",)
    windows: tuple[str, ...] = ("busiest", "random")
    size_curriculum: tuple[int, float] | None = None
    """``(first, fraction)``: a curriculum over episode size: an episode of the run's first steps has ``first``
    jobs (a shorter window of the same trace, the load unchanged), growing linearly to the scenario's own number
    over the first ``fraction`` of the run's steps (:class:`.model_build.TraceWindows`); None: every episode
    whole."""
    timesteps: int | None = None
    seed: int = 0
    n_envs: int = 2
    vec: str | None = None
    """``subproc`` or ``dummy`` (in-process: faster on 2 cores); None: the process's default."""
    learning_rate: float | None = None
    """None: the process's default (:data:`PROCESS_DEFAULTS`), as for ``gamma`` and ``gae_lambda``."""
    n_steps: int = 1024
    batch_size: int = 256
    n_epochs: int = 4
    gamma: float | None = None
    gae_lambda: float | None = None
    ent_coef: float = 0.003
    clip_range: float = 0.1
    target_kl: float | None = None
    """PPO stops an update's epochs early once the approximate KL to the rollout policy passes this."""
    critic_warmup: int = 0
    """Timesteps at the start of PPO during which only the value head learns (the cloned policy is frozen), so
    the first policy updates use advantages from a critic fitted to the policy's own returns."""
    net_arch: tuple[int, ...] = (128, 128)
    bc_episodes: int = 0
    bc_epochs: int = 20
    bc_experts: tuple[str, ...] = ("castor",)
    """The reference policy cloned on each scenario (one for all, or one per scenario in order); a name with
    options after colons (``lookahead:horizon_s=1800``, :func:`.expert.make_expert`)."""
    dagger_rounds: int = 0
    """DAgger rounds after behaviour cloning: the policy plays, the expert labels its states, refit."""
    dagger_episodes: int = 10
    departure_weight: float = 1.0
    bc_workers: int = 1
    """Processes that play the cloning and DAgger episodes (same labels as one process; :mod:`.bc`)."""
    """With the ``hint`` entry: the weight of a cloning label where the expert departs from the hinted action
    (the rare decisions that carry the expert's margin over the heuristic; :func:`.bc._fit`)."""
    init_model: str | None = None
    """``jobs`` with MaskablePPO: start from this model's weights (a ``gpucluster train`` folder or a shipped
    model's name; :mod:`.init_model`), inputs it lacks at zero; None: from a fresh initialization."""
    select_seeds: tuple[int, ...] = ()
    """Validation seeds: after training, the best saved model on them becomes model.zip (:mod:`.select`)."""
    eval_freq: int = 20_000
    eval_episodes: int = 2
    checkpoint_freq: int = 50_000
    threads: int = 1
    progress: bool = True
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.library_defaults:  # the plain reward and per-step discount, as the library's own defaults
            self.reference, self.time_discount_s = None, 0.0
        for key, value in PROCESS_DEFAULTS.get(self.process, {}).items():
            if getattr(self, key) is None:
                setattr(self, key, value)
        if self.algo not in ALGOS:
            raise ValueError(f"unknown algorithm {self.algo!r}; known: {', '.join(ALGOS)}")
        if self.process not in PROCESSES:
            raise ValueError(f"unknown decision process {self.process!r}; known: {', '.join(PROCESSES)}")
        if self.library_defaults and self.process != "jobs":
            raise ValueError("library_defaults is a variant of the job-centric process (process 'jobs')")
        if self.process == "jobs" and (self.bc_episodes or self.env_kwargs.get("observation")):
            raise ValueError("behaviour cloning and the 'observation' argument belong to process 'full'")
        if self.process == "jobs" and self.algo == "dqn":
            raise ValueError("DQN has no action masks; on the job-centric process use maskable_ppo, ppo or a2c")
        if self.process == "full" and self.algo == "a2c":
            raise ValueError("a2c trains on the job-centric process (process 'jobs')")
        if self.input_baseline and (self.process != "jobs" or self.algo != "maskable_ppo" or self.library_defaults
                                    or self.vec != "dummy"):
            raise ValueError("input_baseline is for maskable_ppo on the job-centric process (process 'jobs'), "
                             "with the project's hyperparameters and the envs in one process (vec 'dummy')")
        if not self.time_discount_s >= 0:
            raise ValueError(f"time_discount_s must be >= 0 (0: off), got {self.time_discount_s}")
        if self.reference is not None:
            from gpucluster_env.agents.reference_reward import REFERENCES

            if self.reference not in REFERENCES:
                raise ValueError(f"unknown reference {self.reference!r}; known: {', '.join(REFERENCES)}")
        if self.timesteps < 1 or self.n_envs < 1:
            raise ValueError("timesteps and n_envs must be positive")
        if self.vec not in ("subproc", "dummy"):
            raise ValueError(f"vec must be 'subproc' or 'dummy', got {self.vec!r}")
        if not self.scenarios:
            raise ValueError("at least one scenario is needed")
        if self.process == "full" and len(self.scenarios) > 1:
            from gpucluster_env.scenarios import get_scenario

            counts = {s: len(get_scenario(s).cluster.gpu_types) for s in self.scenarios}
            if len(set(counts.values())) > 1:
                raise ValueError("scenarios of the full vocabulary need the same number of GPU types (its actions "
                                 "name them): " + ", ".join(f"{s} {n}" for s, n in counts.items())
                                 + "; the job-centric process trains across any clusters")
        if self.env_kwargs.get("observation") == "sets" and self.algo != "maskable_ppo":
            raise ValueError("observation 'sets' (the permutation-invariant network) trains with maskable_ppo")
        if self.init_model and (self.process != "jobs" or self.algo != "maskable_ppo" or self.library_defaults
                                or self.bc_episodes):
            raise ValueError("init_model continues a maskable_ppo run of the job-centric process (process 'jobs', "
                             "the project's hyperparameters, no behaviour cloning)")
        self._check_cloning()
        self._check_curriculum()

    def _check_curriculum(self) -> None:
        """The size curriculum's checks (a tuple again when read back from meta.json's list)."""
        if self.size_curriculum is None:
            return
        first, fraction = self.size_curriculum
        self.size_curriculum = (int(first), float(fraction))
        if self.process != "jobs" or self.input_baseline:
            raise ValueError("size_curriculum is for the job-centric process (process 'jobs') without input_baseline")
        if int(first) < 1 or not 0 < float(fraction) <= 1:
            raise ValueError(f"size_curriculum needs first >= 1 jobs and 0 < fraction <= 1, got {first}, {fraction}")

    def _check_cloning(self) -> None:
        """The behaviour-cloning and DAgger options' checks (a bad expert fails before any training)."""
        if self.dagger_rounds < 0 or self.dagger_episodes < 1:
            raise ValueError("dagger_rounds must be >= 0 and dagger_episodes >= 1")
        if self.bc_workers < 1:
            raise ValueError(f"bc_workers must be >= 1, got {self.bc_workers}")
        if not self.departure_weight > 0:
            raise ValueError(f"departure_weight must be positive, got {self.departure_weight}")
        if self.dagger_rounds and not self.bc_episodes:
            raise ValueError("DAgger rounds refine behaviour cloning: give bc_episodes too")
        if len(self.bc_experts) not in (1, len(self.scenarios)):
            raise ValueError("give one behaviour-cloning expert, or one per scenario")
        if self.bc_episodes:
            from gpucluster_env.agents.expert import make_expert

            for spec in self.bc_experts:
                make_expert(spec)  # a bad name or option fails before any training

    def expert_for(self, k: int) -> str:
        """The expert cloned on ``scenarios[k]``."""
        return self.bc_experts[k if len(self.bc_experts) > 1 else 0]

    def env_args(self) -> dict[str, Any]:
        """Keyword arguments of every environment of the run (the flat variant for PPO and DQN on the full
        process; the job-centric env takes them as given)."""
        if self.process == "jobs":
            return dict(self.env_kwargs)
        kw = {"observation": "dict" if self.algo == "maskable_ppo" else "box"}
        kw.update(self.env_kwargs)
        return kw


SHIPPED: dict[str, Any] = {
    "process": "full",
    "reference": None,
    "scenarios": ("castor-philly", "sjfbsbf-philly"),
    "bc_experts": ("srsf",),
    "env_kwargs": {"pending_order": "remaining"},
    "learning_rate": 3e-5,
    "gamma": 1.0,
    "target_kl": 0.01,
    "n_steps": 2048,
}
"""The PPO configuration of the shipped policy that differs from :class:`TrainConfig`'s defaults; its whole command
(behaviour cloning, DAgger, ``--critic-warmup 20000``, ``--vec dummy``, selection) is in docs/rl.md and its
meta.json. ``gpucluster bench`` times training in it, past the critic warm-up (a tenth of the shipped run)."""
