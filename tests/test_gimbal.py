"""Lucid, Gandiva and Gimbal's coordination (gimbal §5, Algorithm 1, eq. 1-6) on hand-built cases.

Hand-built cases use the test catalog of conftest.py (model ``a``: 0.16 s/iteration on a ``fast`` GPU, 4.2 GB
at batch 32, GPU demand 0.9; model ``b``: demand 0.6, 2.6 GB).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from gpucluster_env.baselines import make_policy
from gpucluster_env.baselines.gimbal_rules import (
    can_host,
    colocation_allowed,
    optimal_topology,
    packing_sets,
    violations,
)
from gpucluster_env.baselines.gimbal_search import local_objective, priority
from gpucluster_env.baselines.lucid import sharing_score
from gpucluster_env.engine.view import ClusterView

from gpucluster_env.engine import Colocate, Place, Wait


class StubPredictor:
    """Predicts the same free-competition ratio for every pair."""

    def __init__(self, xi: float) -> None:
        self.xi = xi

    def predict_pair(self, model_a: Any, model_b: Any, gpu_type: str) -> tuple[float, float]:
        return self.xi, self.xi


class EngEnv:
    """The env surface white-box policies read: ``env.unwrapped.engine``."""

    def __init__(self, eng: Any) -> None:
        self.engine = eng
        self.unwrapped = self


def play(eng: Any, policy: Any, max_steps: int = 100_000, check: Any = None) -> list[tuple[float, Any]]:
    """Play an episode on a bare engine (lists of actions applied in turn); return the non-wait actions with
    their times. ``check(view)`` runs after every action."""
    env = EngEnv(eng)
    policy.reset(env)
    view = ClusterView(eng)
    eng.advance()
    out: list[tuple[float, Any]] = []
    for _ in range(max_steps):
        if eng.done:
            return out
        acts = policy.act(None, env)
        for a in acts if isinstance(acts, list) else [acts]:
            if not isinstance(a, Wait):
                out.append((eng.now, a))
            eng.apply(a)
            if check is not None:
                check(view)
    raise AssertionError("episode did not finish")


# ---------------------------------------------------------------- eq. 1-6 (pure)
def test_local_objectives_by_hand() -> None:
    rem, rate = np.array([100.0, 300.0]), np.array([1.0, 2.0])  # 100 s and 150 s to go
    assert local_objective("jct", rem, rate) == pytest.approx(125.0)  # eq. 1: (100 + 150) / 2
    assert local_objective("makespan", rem, rate) == pytest.approx(150.0)  # eq. 5: max
    # eq. 3: deadlines 120 s and 100 s away: lateness max(0, 100 - 120) = 0 and max(0, 150 - 100) = 50
    assert local_objective("deadline", rem, rate, np.array([120.0, 100.0])) == pytest.approx(50.0)
    # no deadline (inf slack) is never late
    assert local_objective("deadline", rem, rate, np.array([math.inf, math.inf])) == 0.0
    with pytest.raises(ValueError, match="unknown kind"):
        local_objective("fairness", rem, rate)


def test_priorities_by_hand() -> None:
    # eq. 2: -utilization, the less utilized job is favoured
    assert priority("jct", 100.0, 1.0, 0.7) == -0.7 > priority("jct", 100.0, 1.0, 0.9)
    # eq. 6: the longer job (300 / 2 = 150 s) is favoured over the shorter (100 s)
    assert priority("makespan", 300.0, 2.0, 0.9) == pytest.approx(150.0)
    # eq. 4: headroom = slack - remaining/rate: 100 - 150 = -50 -> urgency 50; 400 - 150 = 250 -> -250
    assert priority("deadline", 300.0, 2.0, 0.9, 100.0) == pytest.approx(50.0)
    assert priority("deadline", 300.0, 2.0, 0.9, 400.0) == pytest.approx(-250.0)
    assert priority("deadline", 300.0, 2.0, 0.9, math.inf) == -math.inf


def test_lucid_sharing_score_tiers() -> None:
    assert [sharing_score(u) for u in (0.2, 0.5, 0.79, 0.8, 1.0)] == [0, 1, 1, 2, 2]


# ---------------------------------------------------------------- the topology rule (gimbal §5.1)
def two_nodes(build: Any, rows: list[dict]) -> Any:
    """2 nodes x 2 fast GPUs (GPUs 0-1 on node 0, 2-3 on node 1)."""
    return build([("fast", 2, 2)], rows, xi=1.5, tick_s=30.0)


def test_topology_rule_by_hand(build: Any) -> None:
    rows = [{"num_gpus": 2, "iterations": 1e6}, {"num_gpus": 1}, {"num_gpus": 2}, {"num_gpus": 1}]
    eng = two_nodes(build, rows)
    eng.advance()
    v = ClusterView(eng)
    eng.apply(Place(0, gpus=(0, 1)))
    assert optimal_topology(v, [0, 1]) and not optimal_topology(v, [1, 2])  # 2 GPUs fit on one node
    assert colocation_allowed(v, 1, [0])  # a smaller job beside the 2-GPU job
    assert colocation_allowed(v, 2, [0, 1])  # same size: balanced co-location on the very same GPUs
    assert not colocation_allowed(v, 2, [1, 2])  # spans two nodes
    assert colocation_allowed(v, 2, [2, 3])  # free GPUs
    eng.apply(Colocate(1, 0, gpus=(0,)))
    assert packing_sets(v)[0].jmax == 0 and packing_sets(v)[0].others == (1,)
    assert can_host(v, 0) and not can_host(v, 1)  # job 1 already shares with a larger job
    assert not colocation_allowed(v, 2, [0, 1])  # GPU 0 holds two jobs: not balanced any more
    assert colocation_allowed(v, 3, [1])  # J_max may take a second small partner
    assert violations(v) == []


@pytest.mark.parametrize("name", ["lucid+gimbal", "gandiva+gimbal"])
def test_coordination_never_violates_topology(build: Any, name: str) -> None:
    # 4 nodes x 2 GPUs; a mix of 1-, 2- and 4-GPU jobs arriving together, so unequal packing is tried
    rows = [{"num_gpus": n, "model": m, "iterations": it, "submit_s": float(i)}
            for i, (n, m, it) in enumerate([(4, "a", 4000), (2, "b", 3000), (1, "a", 2000), (1, "b", 2500),
                                             (2, "a", 1500), (4, "b", 3000), (1, "a", 800), (2, "b", 1200),
                                             (1, "b", 900), (2, "a", 700), (4, "a", 600), (1, "a", 500)])]
    eng = build([("fast", 4, 2)], rows, xi=1.4, tick_s=30.0)
    seen: list[int] = []

    def check(view: ClusterView) -> None:
        assert violations(view) == []
        seen.append(len(packing_sets(view)))

    pol = make_policy(name, predictor=StubPredictor(1.4))
    acts = play(eng, pol, check=check)
    assert max(seen) >= 1  # packing happened
    assert any(isinstance(a, Colocate) for _, a in acts)
    assert pol.coordinator.stats.searches > 0 and eng.counts["squeezes"] > 0  # coordination ran
    assert eng.n_done == len(rows)
