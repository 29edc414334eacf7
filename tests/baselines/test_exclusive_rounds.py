"""The exclusive round-based policies (Gavel without packing, Hadar, HadarE) never put two jobs on one GPU, not
even for the instant between two actions of a round: a job their round sends through the queue to break a cycle of
moves is preempted before the moves that take its GPUs (``gavel_rounds.order_moves``)."""

from __future__ import annotations

from typing import Any

import pytest

from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.policy import Policy, run_episode


class _AloneOnEveryGpu:
    """Steps the environment and, after every action, checks that no GPU's second slot holds a job."""

    def __init__(self, env: GPUClusterEnv, policy: Policy) -> None:
        self.env = env
        self.policy = policy

    def reset(self, **kwargs: Any) -> Any:
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        out = self.env.step(action)
        view = self.policy.view(self.env)
        shared = view.tenants()[:, 1] >= 0
        assert not shared.any(), f"after {action} at t={view.now}: GPUs {shared.nonzero()[0]} shared"
        return out


# each case had a round whose cycle of moves went through the queue (the goldens of these episodes)
@pytest.mark.parametrize("scenario,policy,seed", [
    ("tiny", "gavel-ftf", 0), ("tiny", "gavel-makespan", 1), ("tiny", "hadar", 1), ("tiny", "hadare", 1),
    ("sjfbsbf-philly", "hadar", 0),
])
def test_exclusive_rounds_never_share_a_gpu(scenario: str, policy: str, seed: int) -> None:
    result = run_episode(scenario, policy, seed, wrap=_AloneOnEveryGpu)
    assert result["jobs_done"] == result["jobs"]
    assert result["colocations"] == 0 and result["sharing_utilization"] == 0.0
