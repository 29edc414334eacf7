"""The shared-weight, job-centric policy for the job-centric decision process (:mod:`gpucluster_env.env.jobs_env`).

One network scores every job from its own features and the cluster's context, with the same weights for every
row (DeepSets, Zaheer et al. 2017; the per-job scoring of Decima and RLScheduler's kernel network):

* each real row ``x_j`` (job features) is embedded with the context ``c``: ``h_j = phi([x_j, c])``;
* the state embedding ``s = rho([mean_j h_j, max_j h_j, c])`` pools the real rows (padding contributes nothing);
* job ``j``'s score is ``psi([h_j, s])``; "nothing more now" is scored from ``s``; the value is ``v(s)``.

So a job's score does not depend on its row, nor the state on the rows' order, and the parameters do not grow
with the number of rows: a model trained with 32 + 32 rows acts with any other count. The masked softmax over the
scores is sb3-contrib's (``MaskablePPO(JobScorePolicy, env)``).

**Initial preference.** At initialization the scores are near zero except a learned bias per kind of row, set so
that a preemption starts ``PREEMPT_PRIOR`` nats less likely than a start: a uniform policy over the mask preempts
about as often as it starts, a regime (twice the makespan, many more decisions) far from any useful scheduler
(docs/rl.md, "The job-centric decision process"). The biases are trained like every other weight.

**Fork rows** (``JobsEnv(fork=True)``: the running jobs again, whose action forks the job, HadarE's mechanism) get
a third bias, ``-FORK_PRIOR`` = 0 nats at initialization: the untrained policy picks a fork row as often as a start
row. A fork, like a start, only puts free GPUs to work (one more copy of a running job on other nodes): it undoes
no work and pays no restart, so it lacks the reason for the preemption prior; and on gavel-hetero forking is where
the gains are
(random play with place + preempt + fork 0.85x SRSF's average JCT, "start by SJF, else fork the shortest running
job" 0.71x; docs/_scripts/gavel_hetero_fork.py). Without this bias a fork row (``pending`` = 0) would take the
preemption's -3 nats and the untrained policy would almost never try one (issue 41). The network finds the fork rows
by the ``fork`` feature's column (``fork_col``, from the observation's feature names: :func:`fork_column`); a
policy without it (no fork rows) has exactly the two-bias parameters of before. (A model trained with fork rows
before the third bias, two biases, does not load into this network: its loader refuses it in one line.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from gpucluster_env.agents.sets_policy import mlp
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

DEFAULT_DIM = 64
PREEMPT_PRIOR = 3.0
"""How many nats less likely a preemption starts than a start, before training (the row-kind biases' init)."""
FORK_PRIOR = 0.0
"""How many nats less likely a fork starts than a start, before training (module docstring: as likely)."""


def fork_column(job_features: Sequence[str]) -> int | None:
    """The column of the ``fork`` feature among a job-centric observation's job feature names (the env's
    ``features[0]``), or ``None`` where the observation has no such column (no fork rows)."""
    names = list(job_features)
    return names.index("fork") if "fork" in names else None


def job_space_sizes(space: spaces.Dict) -> tuple[int, int, int]:
    """Rows, job features and context features of a job-centric observation space; a ``ValueError`` for
    another space."""
    if not (isinstance(space, spaces.Dict) and {"jobs", "job_mask", "context"} <= set(space.spaces)):
        raise ValueError("JobScorePolicy needs the job-centric observation (gpucluster_env/<Scenario>Jobs-v1, "
                         "JobsEnv): a Dict with 'jobs', 'job_mask' and 'context'")
    rows = int(space["job_mask"].shape[0])
    return rows, int(space["jobs"].shape[0]) // rows, int(space["context"].shape[0])


class JobExtractor(BaseFeaturesExtractor):
    """Embeds every row and the pooled state; outputs ``[h_1 .. h_R, s, pending flags]`` flattened, then the
    rows' fork flags (job feature ``fork_col``) where ``fork_col`` is set."""

    def __init__(self, observation_space: spaces.Dict, dim: int = DEFAULT_DIM, fork_col: int | None = None) -> None:
        rows, f, c = job_space_sizes(observation_space)
        if fork_col is not None and not 0 < fork_col < f:
            raise ValueError(f"JobExtractor: fork_col {fork_col} is not a job feature column (1 .. {f - 1})")
        super().__init__(observation_space, rows * dim + dim + rows * (1 if fork_col is None else 2))
        self.rows, self.dim, self.f, self.fork_col = rows, dim, f, fork_col
        self.phi = mlp(f + c, dim)
        self.rho = mlp(2 * dim + c, dim)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        valid, ctx = obs["job_mask"].unsqueeze(-1), obs["context"]
        b, r = valid.shape[0], self.rows
        x = obs["jobs"].view(b, r, self.f)
        h = self.phi(torch.cat([x, ctx[:, None].expand(b, r, ctx.shape[1])], dim=-1)) * valid
        n = valid.sum(1).clamp(min=1.0)
        s = self.rho(torch.cat([h.sum(1) / n, h.amax(1), ctx], dim=-1))
        flags = [x[..., 0]] if self.fork_col is None else [x[..., 0], x[..., self.fork_col]]
        return torch.cat([h.flatten(1), s, *flags], dim=1)  # job feature 0 is the 'pending' flag


class _Split(nn.Module):
    def __init__(self, rows: int, dim: int) -> None:
        super().__init__()
        self.rows, self.dim = rows, dim

    def split(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        r, d = self.rows, self.dim
        return z[:, :r * d].view(-1, r, d), z[:, r * d:r * d + d], z[:, r * d + d:]


class JobScores(_Split):
    """Action logits: "nothing more now" from the state, then one score per row from ``[h_j, s]`` plus the
    bias of its kind: start or preempt, and with ``fork`` (the extractor appends the fork flags) fork."""

    def __init__(self, rows: int, dim: int, fork: bool = False) -> None:
        super().__init__(rows, dim)
        self.fork = fork
        self.psi = mlp(2 * dim, dim, 1)
        self.nothing = nn.Linear(dim, 1)
        prior = [0.0, -PREEMPT_PRIOR] + ([0.0 - FORK_PRIOR] if fork else [])
        self.kind_bias = nn.Parameter(torch.tensor(prior))  # start, preempt[, fork]
        for head in (self.psi[-1], self.nothing):
            nn.init.normal_(head.weight, std=0.01)
            nn.init.zeros_(head.bias)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h, s, flags = self.split(z)
        scores = self.psi(torch.cat([h, s[:, None].expand_as(h)], dim=-1)).squeeze(-1)
        pending, bias = flags[:, :self.rows], self.kind_bias
        scores = scores + pending * bias[0] + (1.0 - pending) * bias[1]
        if self.fork:  # a fork row (pending 0, fork 1) trades the preempt bias for its own
            scores = scores + flags[:, self.rows:] * (bias[2] - bias[1])
        return torch.cat([self.nothing(s), scores], dim=1)


class JobValue(_Split):
    """The state value from the pooled state."""

    def __init__(self, rows: int, dim: int) -> None:
        super().__init__(rows, dim)
        self.net = mlp(dim, dim, 1)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(self.split(z)[1])


class JobScorePolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy over the job-centric observation: :class:`JobExtractor`, :class:`JobScores`,
    :class:`JobValue` (``dim``: the width of every layer; ``fork_col``: the ``fork`` feature's column where the
    observation has fork rows, :func:`fork_column`, which gives them their own kind bias; saved with the model)."""

    def __init__(self, observation_space: spaces.Dict, action_space: spaces.Discrete, lr_schedule: Any,
                 dim: int = DEFAULT_DIM, fork_col: int | None = None, **kwargs: Any) -> None:
        rows, _, _ = job_space_sizes(observation_space)
        if action_space.n != rows + 1:
            raise ValueError(f"JobScorePolicy: {action_space.n} actions for {rows} rows (want rows + 1)")
        self.job_dim, self.fork_col = dim, fork_col
        kwargs.update(net_arch={"pi": [], "vf": []}, features_extractor_class=JobExtractor,
                      features_extractor_kwargs={"dim": dim, "fork_col": fork_col}, ortho_init=False)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        rows, _, _ = job_space_sizes(self.observation_space)
        self.action_net = JobScores(rows, self.job_dim, fork=self.fork_col is not None)
        self.value_net = JobValue(rows, self.job_dim)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["dim"] = self.job_dim
        if self.fork_col is not None:
            data["fork_col"] = self.fork_col
        for key in ("net_arch", "features_extractor_class", "features_extractor_kwargs", "ortho_init"):
            data.pop(key, None)
        return data
