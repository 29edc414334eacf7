"""Pollux's direct decision (``pollux_search.uncontended_best``): when every job's own best row fits at once, the
allocation it gives is valid and no candidate of the genetic search scores higher; when the rows contend it
leaves the decision to the search; and a policy deciding so plays an episode to the end."""

from __future__ import annotations

import numpy as np
import pytest
from gpucluster_env.baselines.pollux_search import SearchSpace, Speedups, evolve_sparse, uncontended_best

from gpucluster_env.policy import make_policy, run_episode


def _problem(seed: int, n_jobs: int, capacity: np.ndarray) -> tuple[SearchSpace, Speedups]:
    """Gang-fixed jobs (half running on one node each) on nodes of two types, goodput falling with nodes."""
    rng = np.random.default_rng(seed)
    n_nodes = len(capacity)
    node_type = (np.arange(n_nodes) >= n_nodes // 2).astype(np.int64)
    fixed = rng.integers(1, 5, n_jobs)
    base = np.zeros((n_jobs, n_nodes), dtype=np.int64)
    left = capacity.copy()
    for j in range(0, n_jobs, 2):
        h = int(np.argmax(left))
        if left[h] >= fixed[j]:
            base[j, h] = fixed[j]
            left[h] -= fixed[j]
    space = SearchSpace(capacity, node_type, fixed.copy(), fixed.copy(), fixed, base)
    per_node = np.repeat(rng.random((n_jobs, 1, 1, int(fixed.max()) + 1)) + 0.5, 2, axis=1)  # both types alike
    good = per_node / np.arange(1, n_nodes + 2)[None, None, :, None]
    good[:, :, 0] = 0.0
    score = Speedups(good, rng.random(n_jobs) + 0.5, np.ones(n_jobs) * 0.9, 0.7, node_type, base)
    return space, score


def _valid(a: np.ndarray, space: SearchSpace) -> bool:
    size = a.sum(axis=1)
    distributed = np.count_nonzero(a, axis=1) > 1
    return bool((a.sum(axis=0) <= space.capacity).all() and ((size == 0) | (size == space.fixed)).all()
                and (((a > 0) & distributed[:, None]).sum(axis=0) <= 1).all()
                and all(len({int(space.node_type[h]) for h in np.flatnonzero(row)}) <= 1 for row in a))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_with_room_for_every_job_it_scores_at_least_the_search(seed):
    space, score = _problem(seed, 10, np.full(12, 4))
    a = uncontended_best(space, score)
    assert a is not None and _valid(a, space) and (a.sum(axis=1) == space.fixed).all()  # every job runs
    kept = space.base.any(axis=1)
    assert (a[kept] == space.base[kept]).all()  # running jobs already on one node are not moved
    (nd, ct, nz), fit = evolve_sparse(space.base, None, score, space, 16, 10, np.random.default_rng(seed))
    assert score(a[None])[0] >= fit[0]


def test_a_spread_job_is_gathered_onto_one_node_where_one_has_room():
    space, score = _problem(4, 4, np.full(6, 4))
    space.base[:] = 0
    space.fixed[0] = space.max_gpus[0] = space.min_gpus[0] = 4
    space.base[0, :2] = 2  # running on two nodes; one node of its type holds it whole
    a = uncontended_best(space, score)
    assert a is not None and np.count_nonzero(a[0]) == 1 and a[0].sum() == 4


def test_contending_jobs_are_left_to_the_search():
    space, score = _problem(5, 12, np.full(3, 4))  # more GPUs asked than the cluster holds
    assert uncontended_best(space, score) is None


@pytest.mark.parametrize("seed", [0, 1])
def test_a_policy_deciding_directly_plays_an_episode_with_valid_actions(seed):
    pol = make_policy("pollux", direct=True)
    res = run_episode("tiny", pol, seed, env_kwargs={"invalid_action": "raise"})
    assert not res["truncated"] and res["jobs_done"] == res["jobs"] and pol.episode_stats()["direct"] > 0
