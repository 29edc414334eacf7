"""Pollux's compiled search draws from the generator's own PCG64 stream and skips what it does not read: the
numbers it reads and the state it leaves must be NumPy's to the bit, and the compiled genetic loop must give the
populations of the loop that calls a numpy fitness once per generation."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from gpucluster_env.baselines.parts import pollux_pcg as pcg
from gpucluster_env.baselines.pollux_search import EPS_SPEEDUP, SearchSpace, Speedups, evolve, fitness, repair


@numba.njit
def _doubles(stream, table, n):
    out = np.empty(n)
    for i in range(n):
        out[i] = pcg.next_double(stream, table)
    return out


@numba.njit
def _integers(stream, table, rng, n):
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = pcg.bounded(stream, table, rng)
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_stream_reads_skips_and_leaves_numpys_pcg64_state(seed):
    ours, theirs = np.random.default_rng([seed, 7]), np.random.default_rng([seed, 7])
    stream, table = pcg.load(ours)
    for step, rng in enumerate([1, 2, 31, 32, 600, 1001, 2**31 + 5]):
        assert np.array_equal(_doubles(stream, table, 37 + step), theirs.random(37 + step))
        # odd counts leave half a 64-bit draw buffered for the next integers
        assert np.array_equal(_integers(stream, table, rng, 2 * step + 1), theirs.integers(0, rng + 1, 2 * step + 1))
        pcg.skip(stream, 1000 * step + 3)
        theirs.random(1000 * step + 3)
        forked = pcg.fork(stream, 5)
        ahead = theirs.bit_generator.state
        theirs.random(5)
        assert pcg.next_double(forked, table) == theirs.random()
        theirs.bit_generator.state = ahead
    pcg.store(ours, stream, table)
    assert ours.bit_generator.state == theirs.bit_generator.state
    assert ours.integers(0, 9, 3).tolist() == theirs.integers(0, 9, 3).tolist()
    with pytest.raises(TypeError, match="PCG64"):
        pcg.load(np.random.Generator(np.random.MT19937(0)))


def test_row_sum_is_numpys_mean_to_the_bit():
    # the fitness's power mean divides a row sum by the jobs: NumPy sums a row pairwise in blocks of eight
    from gpucluster_env.baselines.parts.pollux_evolve import _row_sum

    gen = np.random.default_rng(3)
    for n in [*range(1, 140), 255, 256, 257, 1000, 1025, 4099]:
        x = 1.0 / (gen.random((3, n)) * gen.random((3, n)) * 10 + EPS_SPEEDUP)
        assert [(0.0 + _row_sum(r, 0, n)) / n for r in x] == np.mean(x, axis=1).tolist(), n


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_loop_matches_the_generation_by_generation_loop(seed):
    gen = np.random.default_rng(200 + seed)
    n_pop, n_jobs, n_nodes = 12 + seed % 2, 23, 7  # an odd population drops the last winner
    capacity = gen.integers(0, 9, size=n_nodes)
    node_type = np.where(capacity > 0, gen.integers(0, 2, size=n_nodes), -1)
    fixed = np.where(gen.random(n_jobs) < 0.5, gen.integers(1, 6, size=n_jobs), 0)
    base = np.where(gen.random((n_jobs, n_nodes)) < 0.08, 1, 0)
    max_g = np.maximum(fixed, gen.integers(1, 10, size=n_jobs))
    space = SearchSpace(capacity, node_type, max_g, np.maximum(fixed, 1), fixed, base)
    good = gen.random((n_jobs, 2, n_nodes + 1, int(max_g.max()) + 1)) * 4
    speed = Speedups(good, gen.random(n_jobs) + 0.5, gen.random(n_jobs), 0.25, node_type, base)
    rows = np.arange(n_jobs)[None, :]

    def numpy_fitness(pop):
        r, m, k = pop.sum(axis=2), np.count_nonzero(pop, axis=2), np.maximum(node_type[np.argmax(pop > 0, 2)], 0)
        s = np.where(r > 0, good[rows, k, m, r] / speed.fair[None, :], 0.0)
        return fitness(pop, s, base, speed.penalty, speed.scale)

    start = repair(np.where(gen.random((n_pop, n_jobs, n_nodes)) < 0.2, 1, 0), space, gen)
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    assert np.array_equal(speed(start), numpy_fitness(start))
    pop, fit = evolve(start, speed, space, 15, ours)
    twin, twin_fit = evolve(start, numpy_fitness, space, 15, theirs)
    assert np.array_equal(pop, twin) and np.array_equal(fit, twin_fit)
    assert ours.bit_generator.state == theirs.bit_generator.state


def test_operators_on_many_nodes_match_the_numpy_oracle():
    # above 32 nodes the trims and the gang fill order nodes with merge sorts instead of insertion sorts
    import pollux_ga_oracle as oracle

    gen = np.random.default_rng(9)
    n_pop, n_jobs, n_nodes = 10, 30, 45
    capacity = gen.integers(0, 5, size=n_nodes)
    node_type = np.where(capacity > 0, gen.integers(0, 2, size=n_nodes), -1)
    fixed = np.where(gen.random(n_jobs) < 0.6, gen.integers(1, 9, size=n_jobs), 0)
    base = np.where(gen.random((n_jobs, n_nodes)) < 0.03, 1, 0)
    space = SearchSpace(capacity, node_type, np.maximum(fixed, gen.integers(1, 6, size=n_jobs)),
                        np.maximum(fixed, 1), fixed, base)
    pop = np.where(gen.random((n_pop, n_jobs, n_nodes)) < 0.1, gen.integers(0, 4, size=(n_pop, n_jobs, n_nodes)), 0)
    assert len(list(oracle.checked_rounds(pop, space, gen, 4))) == 3
