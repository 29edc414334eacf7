"""Train an RL agent on a scenario: MaskablePPO with the project's job-scoring policy on the job-centric ``tiny``
process, for a few hundred steps, then play it greedily on held-out job tables beside a random masked policy.

A few hundred steps only show the loop; docs/rl.md gives the budgets that learn (20,000 steps on ``tiny`` for the
README's figures, 300,000 on the paper scenarios). Run: ``python train_tiny_agent.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch
from gpucluster_env.agents.job_policy import JobScorePolicy
from sb3_contrib import MaskablePPO

import gpucluster_env  # noqa: F401  (registers the gpucluster_env/... ids with Gymnasium)

Pick = Callable[[np.ndarray, np.ndarray], int]


def train(steps: int = 512, seed: int = 0) -> MaskablePPO:
    """MaskablePPO with :class:`JobScorePolicy` (one network scores every job with shared weights) trained for
    ``steps`` environment steps on ``gpucluster_env/TinyJobs-v1``; rollouts of 128 steps keep each update small."""
    torch.set_num_threads(1)  # the networks are small: one thread is the fastest
    env = gym.make("gpucluster_env/TinyJobs-v1")  # each step starts or preempts one job, or lets time run
    model = MaskablePPO(JobScorePolicy, env, n_steps=128, batch_size=64, seed=seed, verbose=0)
    return model.learn(steps)  # the masks come from env.action_masks()


def greedy(model: MaskablePPO) -> Pick:
    """The trained policy's most likely legal action."""
    return lambda obs, mask: int(model.predict(obs, action_masks=mask, deterministic=True)[0])


def random_masked(seed: int = 0) -> Pick:
    """A uniformly random legal action (the floor any learner should beat)."""
    rng = np.random.default_rng(seed)
    return lambda obs, mask: int(rng.choice(np.flatnonzero(mask)))


def play(pick: Pick, seeds: range = range(100, 103)) -> list[dict[str, float]]:
    """The final ``info["metrics"]`` of one episode per seed (held-out job tables: training drew its own)."""
    env = gym.make("gpucluster_env/TinyJobs-v1")
    out = []
    for seed in seeds:
        (obs, info), done = env.reset(seed=seed), False
        while not done:
            mask = env.unwrapped.action_masks()
            obs, reward, terminated, truncated, info = env.step(pick(obs, mask))
            done = terminated or truncated
        out.append(info["metrics"])
    env.close()
    return out


if __name__ == "__main__":
    model = train()
    for name, pick in (("random", random_masked()), ("PPO, 512 steps", greedy(model))):
        jct = np.mean([m["avg_jct_s"] for m in play(pick)])
        print(f"{name:15} avg JCT {jct:,.0f} s over seeds 100-102")
