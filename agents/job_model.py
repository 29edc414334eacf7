"""A model trained on the job-centric decision process, playing through the common runner.

:func:`gpucluster_env.policy.run_episode` steps a :class:`~gpucluster_env.env.GPUClusterEnv`; this policy asks
for that env with the windows and masks of the model's job-centric view
(:meth:`~gpucluster_env.env.jobs_env.JobsView.env_kwargs`), builds the model's observation from it by the feature
names recorded in ``meta.json`` (the model pins its features), and answers with the layout int of the chosen job
action, or ``wait`` for "nothing more now". Where no job action is legal it waits without asking the network,
as the job-centric env runs the clock itself there: the episode is the one the model plays in ``JobsEnv``.

It runs on any cluster and trace: the rows and the features do not depend on the number of GPU types.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar

import numpy as np

from gpucluster_env.env.jobs_env import PREEMPT_WHEN
from gpucluster_env.policy import Policy, register_policy
from gpucluster_env.policy_options import OptionSpec

PreemptWhen = Annotated[str, OptionSpec(choices=PREEMPT_WHEN)]


def is_jobs_model(meta: dict[str, Any]) -> bool:
    """Whether ``meta.json`` describes a model of the job-centric process."""
    return meta.get("config", {}).get("process") == "jobs"


class JobModelPolicy(Policy):
    """A trained job-centric model acting greedily (``deterministic``) inside the mask."""

    name: ClassVar[str] = "rl"
    kind: ClassVar[str] = "RL from scratch"
    description: ClassVar[str] = "RL from scratch on the job-centric decision process (gpucluster train)"
    paper: ClassVar[str] = "-"
    needs_observation: ClassVar[bool] = False  # it builds its own observation from the env

    def __init__(self, model_dir: str | Path, deterministic: bool = True, zip_name: str = "model.zip",
                 preempt_when: Annotated[str | None, OptionSpec(choices=PREEMPT_WHEN)] = None) -> None:
        """``preempt_when``: the process rule the model plays under (:class:`JobsView`; None: the one it was
        trained with, from its meta.json)."""
        from gpucluster_env.agents.model_meta import load_model, play_on_one_thread

        model, meta = load_model(model_dir, zip_name)
        play_on_one_thread()
        self._setup(model, meta, str(model_dir), deterministic, preempt_when)

    @classmethod
    def of_model(cls, model: Any, meta: dict[str, Any], deterministic: bool = True) -> JobModelPolicy:
        """The policy of a model in memory (e.g. one being trained) with its run's ``meta`` (algo, env_kwargs)."""
        pol = cls.__new__(cls)
        pol._setup(model, meta, "the model in memory", deterministic)
        return pol

    def _setup(self, model: Any, meta: dict[str, Any], model_dir: str, deterministic: bool,
               preempt_when: str | None = None) -> None:
        from gpucluster_env.env.jobs_env import DEFAULT_PENDING, DEFAULT_RUNNING, JobsView

        self.model_dir = model_dir
        self.deterministic = deterministic
        self.model, self.meta = model, meta
        if isinstance(meta.get("kind"), str):  # e.g. "RL from scratch, continued from rl-scratch" (.init_model)
            self.kind = meta["kind"]
        kw = self.meta.get("env_kwargs", {})
        feats = kw.get("features")
        if not feats or len(feats) != 2:
            raise ValueError(f"{model_dir}: meta.json has no job-centric feature names (env_kwargs.features)")
        n_r = int(kw.get("n_running", DEFAULT_RUNNING))
        self.view = JobsView(int(kw.get("n_pending", DEFAULT_PENDING)), n_r, tuple(feats[0]), tuple(feats[1]),
                             preempt=n_r > 0, work_conserving=bool(kw.get("work_conserving", True)),
                             fork=bool(kw.get("fork", False)),
                             preempt_when=kw.get("preempt_when", "always") if preempt_when is None else preempt_when)
        self.pending_order = kw.get("pending_order", "remaining")
        self.masked = self.meta["algo"] == "maskable_ppo"
        want = self.model.observation_space
        have = self.view.space()
        if (any(want[k].shape != have[k].shape for k in have.spaces)
                or self.model.action_space.n != self.view.n_actions):
            raise ValueError(f"{model_dir}: the model's spaces do not match its meta.json's job-centric view")

    def env_kwargs(self) -> dict[str, Any]:
        """The windows and masks the model's view reads (and the run's ``min_run_s`` if it set one)."""
        kw = self.view.env_kwargs(self.pending_order)
        if "min_run_s" in self.meta.get("env_kwargs", {}):
            kw["min_run_s"] = self.meta["env_kwargs"]["min_run_s"]
        return kw

    def step_limit(self, n_jobs: int, tick_s: float | None = None) -> int | None:
        return None  # the env's own bounds end every episode

    def act(self, observation: Any, env: Any) -> int:
        u = env.unwrapped
        ints = self.view.layout_ints(u)
        mask = self.view.mask(u, ints)
        if not mask[1:].any():
            return 0
        obs = self.view.observe(u, mask)
        if self.masked:
            a, _ = self.model.predict(obs, action_masks=mask, deterministic=self.deterministic)
        else:
            a, _ = self.model.predict(obs, deterministic=self.deterministic)
        a = int(np.asarray(a).item())
        a = a if mask[a] else self.view.fallback(mask)  # a model without masks may ask for an illegal action
        return int(ints[a]) if a else 0


SHIPPED_JOBS_DIR = Path(__file__).with_name("models") / "rl-scratch"


@register_policy
class ShippedJobsRL(JobModelPolicy):
    """The RL-from-scratch model shipped with the package: MaskablePPO with the job-scoring network, trained by
    ``gpucluster train --scenario castor-philly --seed 0`` with every other option at its default (docs/rl.md)."""

    name: ClassVar[str] = "rl-scratch"
    description: ClassVar[str] = (
        "MaskablePPO from scratch on the job-centric process (castor-philly, 300k steps, reward relative to SRSF "
        "on the same trace, discounted by simulated time; docs/rl.md); runs on any cluster"
    )
    paper: ClassVar[str] = "this package (issue 41); Decima / RLScheduler-style job scoring"

    def __init__(self, deterministic: bool = True) -> None:
        super().__init__(SHIPPED_JOBS_DIR, deterministic)


SHIPPED_MIXED_DIR = Path(__file__).with_name("models") / "rl-scratch-mixed"


@register_policy
class ShippedMixedJobsRL(JobModelPolicy):
    """The RL-from-scratch model shipped for clusters of several GPU types: MaskablePPO with the job-scoring
    network, trained on castor-philly and tiny together with the ``pace`` feature (a job's rate where it runs or
    would start over its best), the checkpoint chosen on validation seeds; its command is in docs/rl.md."""

    name: ClassVar[str] = "rl-scratch-mixed"
    description: ClassVar[str] = (
        "MaskablePPO from scratch on the job-centric process across castor-philly and tiny (one and three GPU "
        "types, 400k steps, reward relative to SRSF, the pace feature; docs/rl.md); runs on any cluster; played "
        "without preempting a full-pace job while every waiting job can start (preempt_when=blocked)"
    )
    paper: ClassVar[str] = "this package (issue 41); Decima / RLScheduler-style job scoring"

    def __init__(self, deterministic: bool = True, preempt_when: PreemptWhen = "blocked") -> None:
        """Played by default without preemptions of full-pace jobs while every waiting job can start
        (``preempt_when="blocked"``, a rule of the process it was not trained with: docs/rl.md measures each)."""
        super().__init__(SHIPPED_MIXED_DIR, deterministic, preempt_when=preempt_when)
