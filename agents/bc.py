"""Warm start by imitation: behaviour cloning of a reference policy's decisions (as int actions of the flat
space, :mod:`.expert`) by maximum likelihood under the mask, then DAgger rounds (Ross et al., AISTATS 2011):
the cloned policy plays episodes, the reference policy labels every state it visits, and the policy is fitted
again on all the labels so far. The value head learns the discounted return of the recorded episodes. All of
it before reinforcement learning starts."""

from __future__ import annotations

from typing import Any

import numpy as np


def _returns(rows: list[list[Any]], gamma: float) -> np.ndarray:
    """Discounted returns-to-go of one episode's recorded rewards."""
    g = np.zeros(len(rows))
    acc = 0.0
    for t in range(len(rows) - 1, -1, -1):
        acc = rows[t][3] + gamma * acc
        g[t] = acc
    return g


_SHARED: dict[str, Any] = {}
"""What forked workers read instead of receiving it pickled: the run's env arguments and the acting model."""


def _play_one(job: tuple[str, str, int, dict[str, Any], bool]) -> list[list[Any]]:
    """One episode's recorded rows (:func:`gpucluster_env.agents.expert.play`) of ``(scenario, expert, seed,
    scenario options, driven by the shared actor)``."""
    from gpucluster_env.agents.expert import play

    sc, expert, seed, options, by_actor = job
    ep: list[list[Any]] = []
    play(sc, expert, seed, env_kwargs=_SHARED["env"], record=ep, scenario_options=options,
         actor=_SHARED["actor"] if by_actor else None)
    return ep


def _play_all(jobs: list[tuple[str, str, int, dict[str, Any], bool]], workers: int) -> list[list[list[Any]]]:
    """Every job's rows, in order; with ``workers`` > 1 in that many forked processes (the episodes are
    independent and each is deterministic by its seed, so the rows are the same as one process's)."""
    if workers <= 1 or len(jobs) <= 1:
        return [_play_one(j) for j in jobs]
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(min(workers, len(jobs)), initializer=_one_thread) as pool:
        return pool.map(_play_one, jobs, chunksize=1)


def _one_thread() -> None:
    """A worker's torch runs on one thread (the parent's may use more for the fits)."""
    import torch

    torch.set_num_threads(1)


def _episodes(cfg: Any, n: int, salt: int, actor: Any | None = None) -> tuple[list[list[Any]], list[np.ndarray]]:
    """``n`` episodes cycling over the training scenarios and windows, labelled by each scenario's expert and
    driven by the expert itself or by ``actor``; seeds from ``(cfg.seed, salt)``; ``cfg.bc_workers``
    processes play them."""
    from gpucluster_env.scenarios import get_scenario, samples_trace

    rng = np.random.default_rng([cfg.seed, salt])
    jobs = []
    for k in range(n):
        sc = cfg.scenarios[k % len(cfg.scenarios)]
        window = cfg.windows[(k // len(cfg.scenarios)) % len(cfg.windows)] or get_scenario(sc).window
        options = {"window": window} if samples_trace(get_scenario(sc)) else {}  # tiny: no windows
        jobs.append((sc, cfg.expert_for(k % len(cfg.scenarios)), int(rng.integers(2**31 - 1)), options,
                     actor is not None))
    _SHARED.update(env=cfg.env_args(), actor=actor)
    try:
        eps = _play_all(jobs, getattr(cfg, "bc_workers", 1))
    finally:
        _SHARED.clear()
    rows = [row for ep in eps for row in ep]
    return rows, [_returns(ep, cfg.gamma) for ep in eps]


def demonstrations(cfg: Any) -> tuple[list[list[Any]], list[np.ndarray]]:
    """``cfg.bc_episodes`` episodes of each scenario's expert on the training scenarios and windows (seeds from
    ``cfg.seed``): their recorded ``[obs, action, mask, reward]`` rows and each episode's discounted
    returns-to-go under ``cfg.gamma``."""
    return _episodes(cfg, cfg.bc_episodes, 7)


def departure_weights(obs: dict[str, np.ndarray], acts: np.ndarray, weight: float) -> np.ndarray:
    """Each label's weight: ``weight`` where it departs from the observation's ``hint`` (the heuristic's action;
    no hint entry: none departs), else 1."""
    if "hint" not in obs or weight == 1.0:
        return np.ones(len(acts), dtype=np.float32)
    hint = obs["hint"]
    hinted = np.where(hint.any(1), hint.argmax(1), -1)
    return np.where(acts != hinted, weight, 1.0).astype(np.float32)


def _fit(policy: Any, rows: list[list[Any]], g: np.ndarray, epochs: int, seed: int,
         batch_size: int = 256, departure_weight: float = 1.0) -> tuple[float, float]:
    """Fit ``policy`` (a MaskablePPO policy) to the rows' actions (each weighted by :func:`departure_weights`)
    and its value head to ``g``; returns the final batch loss and the greedy accuracy on the rows."""
    import torch

    keys = rows[0][0].keys()
    obs = {k: np.stack([r[0][k] for r in rows]) for k in keys}
    acts = np.array([r[1] for r in rows], dtype=np.int64)
    masks = np.stack([r[2] for r in rows])
    w = torch.as_tensor(departure_weights(obs, acts, departure_weight))
    g = g.astype(np.float32)
    opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
    rng = np.random.default_rng(seed)
    n = len(acts)
    loss_v = 0.0
    for _ in range(epochs):
        order = rng.permutation(n)
        for lo in range(0, n, batch_size):
            idx = order[lo:lo + batch_size]
            o, _ = policy.obs_to_tensor({k: v[idx] for k, v in obs.items()})
            dist = policy.get_distribution(o, action_masks=masks[idx])
            logp = dist.log_prob(torch.as_tensor(acts[idx]))
            value = policy.predict_values(o).flatten()
            actor = -logp.mean() if departure_weight == 1.0 else -(logp * w[idx]).sum() / w[idx].sum()
            loss = actor + 0.5 * torch.nn.functional.mse_loss(value, torch.as_tensor(g[idx]))
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
    return loss_v, hits / n


def behaviour_clone(model: Any, cfg: Any) -> dict[str, Any]:
    """Fit ``model``'s policy (MaskablePPO) to the experts' actions and its value head to their returns, then
    run ``cfg.dagger_rounds`` DAgger rounds of ``cfg.dagger_episodes`` episodes each; returns the sample
    counts, the final loss, the greedy accuracy on all samples after each fit, and ``seen_mask``: the union of
    the recorded states' action masks (which actions the fits ever saw allowed)."""
    if cfg.algo != "maskable_ppo":
        raise ValueError("behaviour cloning warm-starts MaskablePPO (the masked Dict policy)")
    rows, returns = demonstrations(cfg)
    dw = cfg.departure_weight
    loss, acc = _fit(model.policy, rows, np.concatenate(returns), cfg.bc_epochs, cfg.seed, departure_weight=dw)
    history = [{"round": 0, "samples": len(rows), "loss": loss, "accuracy": acc}]
    for r in range(1, cfg.dagger_rounds + 1):
        # the policy's own states, labelled by the expert: accuracy on them before refitting says how far
        # the policy drifts from the expert where it actually goes
        new, new_returns = _episodes(cfg, cfg.dagger_episodes, 100 + r, actor=model)
        agree = _agreement(model, new)
        rows += new
        returns += new_returns
        loss, acc = _fit(model.policy, rows, np.concatenate(returns), max(cfg.bc_epochs // 2, 1), cfg.seed + r,
                         departure_weight=dw)
        history.append({"round": r, "samples": len(rows), "new_samples": len(new),
                        "agreement_before_fit": agree, "loss": loss, "accuracy": acc})
    experts = {sc: cfg.expert_for(k) for k, sc in enumerate(cfg.scenarios)}
    return {"samples": len(rows), "episodes": cfg.bc_episodes, "dagger_rounds": cfg.dagger_rounds,
            "dagger_episodes": cfg.dagger_episodes, "experts": experts, "loss": loss, "accuracy": acc,
            "history": history, "seen_mask": np.stack([r[2] for r in rows]).any(0)}


def _agreement(model: Any, rows: list[list[Any]]) -> float:
    """Fraction of ``rows`` where the model's greedy masked action is the expert's label."""
    import torch

    if not rows:
        return 1.0
    policy = model.policy
    keys = rows[0][0].keys()
    hits = 0
    with torch.no_grad():
        for lo in range(0, len(rows), 1024):
            chunk = rows[lo:lo + 1024]
            o, _ = policy.obs_to_tensor({k: np.stack([r[0][k] for r in chunk]) for k in keys})
            dist = policy.get_distribution(o, action_masks=np.stack([r[2] for r in chunk]))
            hits += int((dist.mode().numpy() == np.array([r[1] for r in chunk])).sum())
    return hits / len(rows)
