"""A permutation-invariant policy network for the environment's ``sets`` view (``observation="sets"``,
:mod:`gpucluster_env.env.sets`): one model acts on every cluster, whatever its number of GPU types.

DeepSets (Zaheer et al., NeurIPS 2017) over three sets -- the pending window's jobs, the running window's
jobs and the cluster's GPU types -- with per-element action scores:

* each pending job is encoded by one shared network from its 12 features and the mean and max of its
  predicted pair slowdowns beside the running jobs; each running job likewise (its 16 features and the
  pending jobs' predicted slowdowns beside it); each present GPU type from its 5 features;
* a context vector from masked mean and max pools of the three sets and the clock;
* scores: ``wait`` from the context; ``place(i, t)`` from (job i, type t, context, job i's speed on t and
  whether it may start there now), one network for every pair; ``place(i, any)`` and ``share(i)`` from (job i,
  context); ``squeeze/swell/preempt/fork(r)`` from (running job r, context); the value from the context.

So the scores of a job do not depend on its slot, nor the context on the order of any set; padded slots and
absent types contribute nothing (their actions are masked). The weights are shared across slots, so the number
of parameters does not grow with the windows. ``SetsPolicy`` is a MaskablePPO policy
(``MaskablePPO(SetsPolicy, env)``); :func:`gpucluster_env.agents.train.make_model` picks it for
``--env-arg observation=sets``.
"""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from gpucluster_env.env.observation import CLOCK_FEATURES, PENDING_FEATURES, RUNNING_FEATURES
from gpucluster_env.env.sets import JOB_TYPE_FEATURES, TYPE_FEATURES

DEFAULT_DIM = 64
HINT_GAIN = 2.0
"""The hinted action's score bonus at initialization (learned after), with the ``hint`` entry."""


def mlp(n_in: int, dim: int, n_out: int | None = None) -> nn.Sequential:
    """Two layers; ReLU after the last too unless ``n_out`` (a score head)."""
    if n_out is None:
        return nn.Sequential(nn.Linear(n_in, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU())
    return nn.Sequential(nn.Linear(n_in, dim), nn.ReLU(), nn.Linear(dim, n_out))


def set_sizes(space: spaces.Dict) -> tuple[int, int, int]:
    """Pending slots, running slots and GPU-type rows of a ``sets`` observation space."""
    return (space["pending"].shape[0] // PENDING_FEATURES, space["running"].shape[0] // RUNNING_FEATURES,
            space["types"].shape[0] // TYPE_FEATURES)


def _pool(h: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Masked mean and max over the set axis (1) of non-negative embeddings ``h``; zero for an empty set."""
    n = valid.sum(1).clamp(min=1.0)
    return torch.cat([(h * valid).sum(1) / n, (h * valid).amax(1)], dim=-1)


class SetsExtractor(BaseFeaturesExtractor):
    """Encodes the three sets and the context; its output is every element's embedding and the context,
    flattened (the head unflattens them), followed by the raw ``job_types`` block."""

    def __init__(self, observation_space: spaces.Dict, dim: int = DEFAULT_DIM) -> None:
        n, m, k = set_sizes(observation_space)
        self.n_hint = observation_space["hint"].shape[0] if "hint" in observation_space.spaces else 0
        super().__init__(observation_space, (n + m + k + 1) * dim + n * k * JOB_TYPE_FEATURES + self.n_hint)
        self.n, self.m, self.k, self.dim = n, m, k, dim
        h = 1 if self.n_hint else 0  # with a hint: its flags on each job (2 pending, 4 running) and on wait
        self.enc_pending = mlp(PENDING_FEATURES + 4 + 2 * h, dim)
        self.enc_running = mlp(RUNNING_FEATURES + 4 + 4 * h, dim)
        self.enc_type = mlp(TYPE_FEATURES, dim)
        self.enc_context = mlp(6 * dim + CLOCK_FEATURES + h, dim)

    def hint_flags(self, hint: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The hint (one-hot over the view's actions) as per-element flags: pending job i (placed anywhere,
        shared), running job r (squeeze, swell, preempt, fork) and ``wait``."""
        b, n, m, k = hint.shape[0], self.n, self.m, self.k
        share_off = 1 + n * (k + 1)
        place = hint[:, 1:share_off].view(b, n, k + 1).sum(-1, keepdim=True)
        pend = torch.cat([place, hint[:, share_off:share_off + n, None]], dim=-1)
        run = hint[:, share_off + n:].view(b, 4, m).transpose(1, 2)
        return pend, run, hint[:, :1]

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        b = obs["pending"].shape[0]
        p = obs["pending"].view(b, self.n, PENDING_FEATURES)
        r = obs["running"].view(b, self.m, RUNNING_FEATURES)
        pairs = obs["pairs"].view(b, self.n, self.m, 2)
        t = obs["types"].view(b, self.k, TYPE_FEATURES)
        vp, vr, vt = p[..., :1], r[..., :1], t[..., TYPE_FEATURES - 1:]
        # a pending job's predicted slowdowns beside the running jobs, and a running job's beside the pending
        pr = pairs * vr[:, None]
        p_agg = torch.cat([pr.sum(2) / vr.sum(1).clamp(min=1.0)[:, None], pr.amax(2)], dim=-1)
        rp = pairs * vp[:, :, None]
        r_agg = torch.cat([rp.sum(1) / vp.sum(1).clamp(min=1.0)[:, None], rp.amax(1)], dim=-1)
        p_in, r_in, c_in, tail = [p, p_agg], [r, r_agg], [obs["clock"]], []
        if self.n_hint:
            hpend, hrun, hwait = self.hint_flags(obs["hint"])
            p_in, r_in, c_in, tail = p_in + [hpend], r_in + [hrun], c_in + [hwait], [obs["hint"]]
        hp = self.enc_pending(torch.cat(p_in, dim=-1)) * vp
        hr = self.enc_running(torch.cat(r_in, dim=-1)) * vr
        ht = self.enc_type(t) * vt
        ctx = self.enc_context(torch.cat([_pool(hp, vp), _pool(hr, vr), _pool(ht, vt), *c_in], dim=-1))
        return torch.cat([hp.flatten(1), hr.flatten(1), ht.flatten(1), ctx, obs["job_types"], *tail], dim=1)


class _Unpack(nn.Module):
    """Splits the extractor's flat output back into its parts."""

    def __init__(self, n: int, m: int, k: int, dim: int) -> None:
        super().__init__()
        self.n, self.m, self.k, self.dim = n, m, k, dim

    def split(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, d, n, m, k = x.shape[0], self.dim, self.n, self.m, self.k
        ends = [n * d, (n + m) * d, (n + m + k) * d, (n + m + k + 1) * d]
        jt_end = ends[3] + n * k * JOB_TYPE_FEATURES
        return (x[:, :ends[0]].view(b, n, d), x[:, ends[0]:ends[1]].view(b, m, d),
                x[:, ends[1]:ends[2]].view(b, k, d), x[:, ends[2]:ends[3]],
                x[:, ends[3]:jt_end].view(b, n, k, JOB_TYPE_FEATURES), x[:, jt_end:])


class SetsHead(_Unpack):
    """Per-element action scores in the ``sets`` view's order (wait, place(i, t) and place(i, any) per
    pending slot, share(i), then squeeze, swell, preempt and fork over the running slots)."""

    def __init__(self, n: int, m: int, k: int, dim: int, hint: bool = False) -> None:
        super().__init__(n, m, k, dim)
        # residual on the hint: the hinted action's score gets a learned bonus, so copying the heuristic is the
        # easy default and the rest of the network learns where to depart from it
        self.hint_gain = nn.Parameter(torch.tensor(HINT_GAIN)) if hint else None
        self.wait = nn.Linear(dim, 1)
        self.place_type = mlp(3 * dim + JOB_TYPE_FEATURES, dim, 1)
        self.pending = mlp(2 * dim, dim, 2)  # place(i, any), share(i)
        self.running = mlp(2 * dim, dim, 4)  # squeeze, swell, preempt, fork

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hp, hr, ht, ctx, jt, hint = self.split(x)
        b, n, m, k, d = x.shape[0], self.n, self.m, self.k, self.dim
        pair_in = torch.cat([hp[:, :, None].expand(b, n, k, d), ht[:, None].expand(b, n, k, d),
                             ctx[:, None, None].expand(b, n, k, d), jt], dim=-1)
        by_type = self.place_type(pair_in).squeeze(-1)  # (b, n, k)
        pend = self.pending(torch.cat([hp, ctx[:, None].expand(b, n, d)], dim=-1))  # (b, n, 2)
        place = torch.cat([by_type, pend[..., :1]], dim=-1).flatten(1)
        run = self.running(torch.cat([hr, ctx[:, None].expand(b, m, d)], dim=-1))  # (b, m, 4)
        scores = torch.cat([self.wait(ctx), place, pend[..., 1], run.transpose(1, 2).flatten(1)], dim=1)
        return scores if self.hint_gain is None else scores + self.hint_gain * hint


class SetsValue(_Unpack):
    """The state value from the context."""

    def __init__(self, n: int, m: int, k: int, dim: int) -> None:
        super().__init__(n, m, k, dim)
        self.net = mlp(dim, dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(self.split(x)[3])


class SetsPolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy over the ``sets`` view: :class:`SetsExtractor`, :class:`SetsHead`, :class:`SetsValue`."""

    def __init__(self, observation_space: spaces.Dict, action_space: spaces.Discrete, lr_schedule: Any,
                 dim: int = DEFAULT_DIM, **kwargs: Any) -> None:
        if not (isinstance(observation_space, spaces.Dict) and "types" in observation_space.spaces):
            raise ValueError("SetsPolicy needs the environment's 'sets' observation (observation='sets')")
        self.set_dim = dim
        kwargs.update(net_arch={"pi": [], "vf": []}, features_extractor_class=SetsExtractor,
                      features_extractor_kwargs={"dim": dim}, ortho_init=False)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        n, m, k = set_sizes(self.observation_space)
        self.action_net = SetsHead(n, m, k, self.set_dim, hint="hint" in self.observation_space.spaces)
        self.value_net = SetsValue(n, m, k, self.set_dim)
        want = 1 + n * (k + 1) + n + 4 * m
        if self.action_space.n != want:
            raise ValueError(f"SetsPolicy: the action space has {self.action_space.n} actions, the 'sets' view of "
                             f"{n} pending and {m} running slots has {want}")
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["dim"] = self.set_dim
        for key in ("net_arch", "features_extractor_class", "features_extractor_kwargs", "ortho_init"):
            data.pop(key, None)
        return data
