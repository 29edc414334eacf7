"""Gimbal's topology rule as an engine check (``EngineConfig.topology_rule``), one test per clause, and the
environment's masks under it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpucluster_env.engine import ActionError, Colocate, Place
from gpucluster_env.env import GPUClusterEnv

TWO_NODES = [("fast", 2, 4)]  # GPUs 0-3 on node 0, 4-7 on node 1


def _eng(build, rows, rule=True):
    eng = build(TWO_NODES, rows, topology_rule=rule)
    eng.advance()
    return eng


def test_fewest_nodes(build):
    """A 2-GPU job fits one 4-GPU node, so GPUs (3, 4) over two nodes break the rule; (0, 1) keep it. A 4-GPU
    job when node 0 has 2 busy GPUs: the placement rule would take 2 + 2 over both nodes (allowed without the
    rule), while one node is the fewest possible."""
    eng = _eng(build, [{"num_gpus": 2}, {"num_gpus": 2}, {"num_gpus": 4}])
    with pytest.raises(ActionError, match=r"topology rule: job 0 \(2 GPUs\) would span 2 nodes; the fewest "
                                          r"possible is 1"):
        eng.apply(Place(0, gpus=(3, 4)))
    eng.apply(Place(0, gpus=(0, 1)))
    eng.apply(Place(1, gpus=(4, 5)))
    with pytest.raises(ActionError, match=r"topology rule: job 2 \(4 GPUs\) would span 2 nodes"):
        eng.apply(Place(2))
    free = _eng(build, [{"num_gpus": 2}, {"num_gpus": 2}, {"num_gpus": 4}], rule=False)
    free.apply(Place(0, gpus=(0, 1)))
    free.apply(Place(1, gpus=(4, 5)))
    free.apply(Place(2))
    assert sorted(free.gpus_of(2).tolist()) == [2, 3, 6, 7]


def test_smaller_packs_on_one_larger_job_only(build):
    """A (3 GPUs) on GPUs 0-2; B (2) on A's GPUs 0-1 and C (1) on A's GPU 2: both smaller than A, all their GPUs
    held by A. D (2) on GPU 2 (A's) and free GPU 3, one node: partly on free GPUs, refused."""
    rows = [{"num_gpus": 3}, {"num_gpus": 2}, {"num_gpus": 1}, {"num_gpus": 2}]
    eng = _eng(build, rows)
    eng.apply(Place(0, gpus=(0, 1, 2)))
    with pytest.raises(ActionError, match=r"topology rule: job 3 would run partly on free GPUs beside job 0"):
        eng.apply(Colocate(3, 0, gpus=(2, 3)))
    eng.apply(Colocate(1, 0, gpus=(0, 1)))
    eng.apply(Colocate(2, 0, gpus=(2,)))
    assert eng.held_shared.tolist()[:3] == [3, 2, 1]


def test_larger_never_packs_on_smaller_and_one_partner_only(build):
    """Reached without the rule, then the rule switched on: S (1 GPU) alone on GPU 0, T (1 GPU) on GPU 1. A
    2-GPU job over GPUs 0 and 1 would share with two jobs; over GPU 0 and free GPU 2 it would be larger than its
    partner S."""
    eng = _eng(build, [{"num_gpus": 1}, {"num_gpus": 1}, {"num_gpus": 2}], rule=False)
    eng.apply(Place(0, gpus=(0,)))
    eng.apply(Place(1, gpus=(1,)))
    eng.state.config = dataclasses.replace(eng.config, topology_rule=True)
    with pytest.raises(ActionError, match=r"topology rule: job 2 would share GPUs with jobs \[0, 1\]"):
        eng.apply(Colocate(2, 0, gpus=(0, 1)))
    with pytest.raises(ActionError, match=r"topology rule: job 2 \(2 GPUs\) would colocate with smaller job 0 "
                                          r"\(1 GPUs\)"):
        eng.apply(Colocate(2, 0, gpus=(0, 2)))


def test_partner_packed_with_a_larger_job_takes_no_more(build):
    """Without the rule: A (4) on GPUs 0-3, B (2) on GPUs 3 and 4 (A's GPU 3, free GPU 4). With the rule on, C (1)
    on B's GPU 4 would pack with B, itself packed with the larger A."""
    eng = _eng(build, [{"num_gpus": 4}, {"num_gpus": 2}, {"num_gpus": 1}], rule=False)
    eng.apply(Place(0, gpus=(0, 1, 2, 3)))
    eng.apply(Colocate(1, 0, gpus=(3, 4)))
    eng.state.config = dataclasses.replace(eng.config, topology_rule=True)
    with pytest.raises(ActionError, match=r"topology rule: job 1 is packed with job 0 \(not smaller than it\)"):
        eng.apply(Colocate(2, 1, gpus=(4,)))


def test_equal_world_sizes_only_balanced(build):
    """A (2) on GPUs 0-1. B (2) on GPUs 1-2 (half A's, half free): unbalanced, refused. B on exactly 0-1:
    balanced, allowed."""
    eng = _eng(build, [{"num_gpus": 2}, {"num_gpus": 2}])
    eng.apply(Place(0, gpus=(0, 1)))
    with pytest.raises(ActionError, match=r"topology rule: job 1 and job 0 have the same world size \(2 GPUs\): "
                                          r"only balanced packing"):
        eng.apply(Colocate(1, 0, gpus=(1, 2)))
    eng.apply(Colocate(1, 0, gpus=(0, 1)))
    assert sorted(eng.gpus_of(1).tolist()) == [0, 1]


def test_rule_off_changes_nothing(build):
    eng = _eng(build, [{"num_gpus": 2}, {"num_gpus": 2}], rule=False)
    eng.apply(Place(0, gpus=(3, 4)))
    eng.apply(Colocate(1, 0, gpus=(4, 5)))
    assert eng.held_shared.tolist() == [1, 1]


@pytest.mark.parametrize("layout", ["compact", "full"])
def test_masks_respect_the_rule(layout):
    """Random masked actions on 'tiny' with the rule on and invalid actions raising: every action the mask
    allows is accepted, and the episode's starts all keep the rule (fewest nodes, packing structure)."""
    env = GPUClusterEnv("tiny", scenario_options={"num_jobs": 20, "topology_rule": True}, invalid_action="raise",
                        action_layout=layout)
    rng = np.random.default_rng(5)
    env.reset(seed=1)
    eng = env.engine
    assert eng.config.topology_rule
    starts = 0
    for _ in range(400):
        valid = np.flatnonzero(env.action_masks())
        a = int(rng.choice(valid))
        _, _, term, trunc, _ = env.step(a)
        starts = eng.counts["colocations"] + int((eng.status >= 2).sum())
        if term or trunc:
            break
    assert starts > 0
    for j in eng.running_jobs().tolist():
        g = eng.gpus_of(j)
        sizes = np.sort(eng.node_size[np.isin(eng.node_type, eng.gpu_type[g])])[::-1]
        assert len(set(eng.gpu_node[g].tolist())) == int(np.searchsorted(np.cumsum(sizes), len(g))) + 1
        for p in eng.partners_of(j):
            small, large = sorted((j, p), key=lambda x: eng.req_gpus[x])
            assert set(eng.gpus_of(small).tolist()) <= set(eng.gpus_of(large).tolist())
