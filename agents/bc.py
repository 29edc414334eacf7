"""Warm start by behaviour cloning: the policy learns Castor's decisions (as int actions of the flat space,
:mod:`.expert`) by maximum likelihood under the mask, and the value head learns the discounted return of those
episodes, before reinforcement learning starts."""

from __future__ import annotations

from typing import Any

import numpy as np


def demonstrations(cfg: Any) -> tuple[list[list[Any]], list[np.ndarray]]:
    """``cfg.bc_episodes`` episodes of each scenario's expert on the training scenarios and windows (seeds from
    ``cfg.seed``): their recorded ``[obs, action, mask, reward]`` rows and each episode's discounted
    returns-to-go under ``cfg.gamma``."""
    from ..scenarios import get_scenario
    from .expert import play

    rng = np.random.default_rng([cfg.seed, 7])
    rows: list[list[Any]] = []
    returns: list[np.ndarray] = []
    for k in range(cfg.bc_episodes):
        sc = cfg.scenarios[k % len(cfg.scenarios)]
        expert = cfg.expert_for(k % len(cfg.scenarios))
        window = cfg.windows[(k // len(cfg.scenarios)) % len(cfg.windows)] or get_scenario(sc).window
        ep: list[list[Any]] = []
        play(sc, expert, int(rng.integers(2**31 - 1)), env_kwargs=cfg.env_args(), record=ep,
             scenario_options={"window": window})
        r = np.array([row[3] for row in ep])
        g = np.zeros(len(r))
        acc = 0.0
        for t in range(len(r) - 1, -1, -1):
            acc = r[t] + cfg.gamma * acc
            g[t] = acc
        rows += ep
        returns.append(g)
    return rows, returns


def behaviour_clone(model: Any, cfg: Any, batch_size: int = 256) -> dict[str, Any]:
    """Fit ``model``'s policy (MaskablePPO) to the expert's actions and its value head to their returns;
    returns the number of samples, the final loss and the accuracy of the greedy action on the samples."""
    import torch

    if cfg.algo != "maskable_ppo":
        raise ValueError("behaviour cloning warm-starts MaskablePPO (the masked Dict policy)")
    rows, returns = demonstrations(cfg)
    g = np.concatenate(returns).astype(np.float32)
    keys = rows[0][0].keys()
    obs = {k: np.stack([r[0][k] for r in rows]) for k in keys}
    acts = np.array([r[1] for r in rows], dtype=np.int64)
    masks = np.stack([r[2] for r in rows])
    policy = model.policy
    opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
    rng = np.random.default_rng(cfg.seed)
    n = len(acts)
    loss_v = 0.0
    for _ in range(cfg.bc_epochs):
        order = rng.permutation(n)
        for lo in range(0, n, batch_size):
            idx = order[lo:lo + batch_size]
            o, _ = policy.obs_to_tensor({k: v[idx] for k, v in obs.items()})
            dist = policy.get_distribution(o, action_masks=masks[idx])
            logp = dist.log_prob(torch.as_tensor(acts[idx]))
            value = policy.predict_values(o).flatten()
            loss = -logp.mean() + 0.5 * torch.nn.functional.mse_loss(value, torch.as_tensor(g[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_v = float(loss.detach())
    with torch.no_grad():
        hits = 0
        for lo in range(0, n, 1024):
            o, _ = policy.obs_to_tensor({k: v[lo:lo + 1024] for k, v in obs.items()})
            dist = policy.get_distribution(o, action_masks=masks[lo:lo + 1024])
            hits += int((dist.mode().numpy() == acts[lo:lo + 1024]).sum())
    experts = {sc: cfg.expert_for(k) for k, sc in enumerate(cfg.scenarios)}
    return {"samples": n, "episodes": cfg.bc_episodes, "experts": experts, "loss": loss_v, "accuracy": hits / n}
