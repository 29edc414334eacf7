"""Pollux's sparse search (``baselines/parts/pollux_sparse.py``): every candidate it returns is valid, its
fitness is the dense fitness of the same allocations to the bit, it is deterministic, its gap draws choose each
position with the stated chance, and ``search="dense"`` (and the default on small clusters) still makes version
3's decisions."""

from __future__ import annotations

import numpy as np
import pytest
from gpucluster_env.baselines.pollux_search import SearchSpace, Speedups, evolve_sparse

from gpucluster_env.policy import make_policy, run_episode


def _problem(seed: int, n_jobs: int = 12, n_nodes: int = 9) -> tuple[SearchSpace, Speedups]:
    """A random search: nodes of two types, a mix of running elastic jobs and waiting gangs."""
    rng = np.random.default_rng(seed)
    capacity = rng.integers(1, 5, n_nodes)
    node_type = (np.arange(n_nodes) >= n_nodes - 3).astype(np.int64)
    fixed = np.where(rng.random(n_jobs) < 0.5, rng.integers(1, 6, n_jobs), 0)
    max_gpus = np.where(fixed > 0, fixed, rng.integers(1, 9, n_jobs))
    min_gpus = np.where(fixed > 0, fixed, 1)
    base = np.zeros((n_jobs, n_nodes), dtype=np.int64)
    left = capacity.copy()
    for j in np.flatnonzero(fixed == 0)[:4]:  # a few running jobs, each on one node with room
        h = int(np.argmax(left))
        base[j, h] = g = min(int(left[h]), int(max_gpus[j]))
        left[h] -= g
    space = SearchSpace(capacity, node_type, max_gpus, min_gpus, fixed, base)
    good = rng.random((n_jobs, 2, n_nodes + 1, int(max_gpus.max()) + 1)) + 0.5
    score = Speedups(good, rng.random(n_jobs) + 0.5, rng.random(n_jobs), 0.7, node_type, base)
    return space, score


def _dense(nd: np.ndarray, ct: np.ndarray, nz: np.ndarray, n_nodes: int) -> np.ndarray:
    out = np.zeros(nz.shape + (n_nodes,), dtype=np.int64)
    for s, j in np.ndindex(*nz.shape):
        for e in range(nz[s, j]):
            out[s, j, nd[s, j, e]] += ct[s, j, e]
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sparse_search_gives_valid_candidates_scored_as_the_dense_fitness(seed):
    space, score = _problem(seed)
    (nd, ct, nz), fit = evolve_sparse(space.base, None, score, space, 16, 10, np.random.default_rng(seed))
    assert (ct[np.arange(ct.shape[2])[None, None, :] < nz[..., None]] > 0).all()  # entries hold GPUs
    out = _dense(nd, ct, nz, len(space.capacity))
    assert (out.sum(axis=1) <= space.capacity).all()
    size = out.sum(axis=2)
    assert (size <= space.max_gpus).all() and ((size == 0) | (size >= space.min_gpus)).all()
    assert ((size == 0) | (space.fixed == 0) | (size == space.fixed)).all()
    distributed = np.count_nonzero(out, axis=2) > 1
    assert (((out > 0) & distributed[:, :, None]).sum(axis=1) <= 1).all()
    assert all(len({int(space.node_type[h]) for h in np.flatnonzero(row)}) <= 1 for cand in out for row in cand)
    assert np.array_equal(fit, score(out)) and (np.diff(fit) <= 0).all()  # the same fitness, best first
    assert size.sum() > space.base.sum()  # the search starts waiting gangs


def test_sparse_search_is_deterministic_and_carries_a_population():
    space, score = _problem(5)
    a = evolve_sparse(space.base, None, score, space, 8, 6, np.random.default_rng(7))
    b = evolve_sparse(space.base, None, score, space, 8, 6, np.random.default_rng(7))
    assert all(np.array_equal(x, y) for x, y in zip(a[0], b[0], strict=True)) and np.array_equal(a[1], b[1])
    c = evolve_sparse(space.base, a[0], score, space, 8, 6, np.random.default_rng(8))
    assert c[1][0] >= a[1][0]  # warm-started from the last population, the best is kept


def test_gaps_and_hit_counts_have_the_stated_distribution():
    from gpucluster_env.baselines.parts import pollux_pcg as pcg
    from gpucluster_env.baselines.parts import pollux_sparse_ops as ops

    stream, table = pcg.load(np.random.default_rng(0))
    surv = ops.survival(0.1, 400)
    gaps = np.array([ops.gap(stream, table, surv) for _ in range(20_000)])
    assert abs(gaps.mean() - 9.0) < 0.3 and (gaps >= 0).all()  # geometric: (1 - p) / p failures
    cdf = ops.hits_table(np.zeros((10, ops.TAIL + 1)), 8)
    assert abs(cdf[0] - (7 / 8) ** 8) < 1e-15 and abs(cdf[-1] - 1.0) < 1e-12
    assert ops.hits_table(np.zeros((3, ops.TAIL + 1)), 1)[1] == 1.0  # one node with room: always hit


@pytest.mark.parametrize("search", ["dense", "auto"])
def test_dense_search_and_small_clusters_make_version_3_decisions(search):
    res = run_episode("tiny", make_policy("pollux", search=search), 0)
    assert res["avg_jct_s"] == 2254.7274369559027  # version 3 on tiny, seed 0 (at 5535a85, before the change)


def test_a_sparse_search_plays_an_episode_to_the_end_with_valid_actions():
    res = run_episode("tiny", make_policy("pollux", search="sparse"), 1, env_kwargs={"invalid_action": "raise"})
    assert not res["truncated"] and res["jobs_done"] == res["jobs"]
