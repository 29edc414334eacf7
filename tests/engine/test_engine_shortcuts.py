"""The engine's per-action shortcuts against the plain computations they replace: a one-worker iteration-time
estimate from a float, the accumulation that fits beside tenants from per-GPU lists, a job's GPU type and node
count from its copies, the topology rule's fewest-nodes bound kept per argument, and a reallocation's memory
check over lists (its refusals and messages)."""

from __future__ import annotations

import numpy as np
import pytest

from gpucluster_env.engine import ActionError, Colocate, Fork, Place, Reallocate
from gpucluster_env.performance import copy_iter_time, fit_accumulation


def test_one_worker_iteration_time_is_the_array_formula(build):
    """``iter_time_for`` with one worker's ratio in an array gives the bits of ``copy_iter_time`` on that array,
    for ordinary, huge, zero, negative and NaN ratios."""
    eng = build([("fast", 1, 2), ("slow", 1, 2)], [{}, {"num_gpus": 2}])
    g = np.array([2], dtype=np.int64)
    k = eng.rates.copy_model(eng.state.model_l[0], eng.state.batch_l[0], 1, [2], 1, 1, False)
    with np.errstate(divide="ignore", invalid="ignore"):
        for x in (1.0, 1.37, 2.5, 1e300, 0.0, -2.0, np.nan):
            xa = np.array([x])
            want = copy_iter_time(k, xa)
            got = eng.rates.iter_time_for(0, g, 1, xa)
            assert np.array_equal(np.float64(got), np.float64(want), equal_nan=True), x
            got_scalar = eng.rates.iter_time_for(0, g, 1, np.float64(x))
            assert np.array_equal(np.float64(got_scalar), np.float64(want), equal_nan=True), x


def _accumulation_by_arrays(eng, j: int, g: np.ndarray) -> int | None:
    """The accumulation rule over numpy arrays, per GPU type (the formulation the engine used before)."""
    st = eng.state
    p, batch = st.profiles[st.model_l[j]], st.batch_l[j]
    sj = st.slot_job[g, 0]
    other = np.where(sj >= 0, st.footprint[np.maximum(sj, 0)], 0.0)
    types = st.gpu_type[g]
    best = 1
    for t in np.unique(types):
        s = fit_accumulation(p, batch, float(st.type_mem[t]) - float(other[types == t].max()))
        if s is None:
            return None
        best = max(best, s)
    return best


def test_accumulation_and_type_and_nodes_agree_with_arrays(build):
    eng = build([("fast", 2, 2), ("slow", 2, 2)],
                [{"num_gpus": 2}, {"num_gpus": 3, "iterations": 1e6}, {"model": "b"}, {"num_gpus": 2}],
                round_s=10.0)
    eng.advance()
    eng.apply(Place(0, gpus=(0, 4)))  # fast GPU 0 and slow GPU 4
    eng.apply(Place(1, gpus=(1, 2, 3)))  # two fast nodes
    for g in ([0, 4], [1, 2], [4, 5], [5], [0, 1, 4, 5]):
        ga = np.array(g, dtype=np.int64)
        for j in (2, 3):
            assert eng.rates.accumulation_for(j, ga) == _accumulation_by_arrays(eng, j, ga)
    eng.apply(Colocate(2, 0, gpus=(4,)))
    for j in (0, 1, 2):
        g = eng.gpus_of(j)
        assert eng.type_and_nodes(j) == (int(eng.gpu_type[g[0]]), len(np.unique(eng.gpu_node[g])))
    assert eng.type_and_nodes(3) is None
    eng.apply(Fork(2))  # one more copy on another node
    g = eng.gpus_of(2)
    assert len(eng.copies[2]) == 2
    assert eng.type_and_nodes(2) == (int(eng.gpu_type[g[0]]), len(np.unique(eng.gpu_node[g])))


def test_fewest_nodes_is_kept_per_argument(build):
    eng = build([("fast", 2, 4), ("fast", 1, 2), ("slow", 3, 2)], [{}], topology_rule=True)
    st = eng.state
    for types in ({0}, {1}, {0, 1}):
        for n in (1, 2, 4, 5, 7, 9):
            sizes = np.sort(st.node_size[np.isin(st.node_type, sorted(types))])[::-1]
            want = int(np.searchsorted(np.cumsum(sizes), n)) + 1
            assert eng.checks.fewest_nodes(frozenset(types), n) == want
            assert eng.checks._fewest[(frozenset(types), n)] == want


def test_reallocate_memory_checks_over_lists(build):
    """A reallocation's refusals read the tenants beside each named GPU: two other jobs, a named accumulation
    that does not fit, and the same GPUs, accumulation and batch."""
    eng = build([("fast", 1, 3)], [{"iterations": 1e6}, {"iterations": 1e6}, {"iterations": 1e6}])
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    eng.apply(Place(1, gpus=(1,)))
    eng.apply(Colocate(2, 1, gpus=(1,)))
    with pytest.raises(ActionError, match="already holds two other jobs"):
        eng.apply(Reallocate(0, gpus=(1,)))
    with pytest.raises(ActionError, match="already runs on those GPUs"):
        eng.apply(Reallocate(0, gpus=(0,), accumulation=int(eng.accum[0])))
    eng.apply(Reallocate(0, gpus=(2,)))
    assert eng.gpus_of(0).tolist() == [2]
    assert eng.accum[0] == fit_accumulation(eng.state.profiles[eng.state.model_l[0]], eng.state.batch_l[0],
                                            float(eng.state.type_mem[0]))


def test_near_picks_is_pick_nodes_on_the_partner_nodes():
    """The colocation top-up's picks among the partner's nodes equal ``pick_nodes`` on an array that is zero
    elsewhere (the formulation it replaces), over random free counts."""
    from gpucluster_env.engine.placement import near_picks, pick_nodes

    rng = np.random.default_rng(7)
    for _ in range(500):
        free = rng.integers(0, 5, size=int(rng.integers(1, 9)))
        nodes = sorted(set(rng.integers(0, len(free), size=int(rng.integers(1, len(free) + 1))).tolist()))
        need = int(rng.integers(1, 9))
        near = np.zeros_like(free)
        near[nodes] = free[nodes]
        want = pick_nodes(near, min(int(near.sum()), need))
        assert near_picks(nodes, [int(free[k]) for k in nodes], need) == want


def test_accumulations_for_reads_the_room_beside_each_tenant(build):
    from gpucluster_env.engine.view import ClusterView
    from gpucluster_env.performance import accumulations

    eng = build([("fast", 1, 2), ("slow", 1, 2)], [{"model": "big"}, {"model": "b"}, {}, {"model": "big"}])
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    eng.apply(Place(1, gpus=(2,)))
    view = ClusterView(eng)
    for g in ([0], [1], [2], [0, 2], [1, 3], [0, 1, 2, 3]):
        for j in (2, 3):
            room = float(view._room(np.array(g)).min())
            assert view.accumulations_for(j, np.array(g)) == accumulations(view.model(j), view.batch(j), room)


def test_exact_start_checks_over_ints(build):
    """A start on named GPUs checks the slots and memory per GPU as ints: each refusal, its message, and the
    starts that pass."""
    from gpucluster_env.performance import footprint_gb

    eng = build([("fast", 1, 2), ("slow", 1, 2)],
                [{"iterations": 1e6}, {"iterations": 1e6}, {}, {"model": "big"}, {"iterations": 1e6}])
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    with pytest.raises(ActionError, match="place needs free GPUs; use colocate to share"):
        eng.apply(Place(1, gpus=(0,)))
    with pytest.raises(ActionError, match="not every GPU named is a fast"):
        eng.apply(Place(1, gpus=(1, 2), gpu_type="fast"))
    with pytest.raises(ActionError, match="the GPU set shares no GPU with partner 0"):
        eng.apply(Colocate(1, 0, gpus=(1,)))
    eng.apply(Colocate(1, 0, gpus=(0,)))
    with pytest.raises(ActionError, match="a GPU of the set already holds two jobs"):
        eng.apply(Colocate(2, 0, gpus=(0,)))
    big = footprint_gb(eng.state.profiles[eng.state.model_l[3]], 32, 1)
    with pytest.raises(ActionError, match=f"memory does not fit on GPU 1: {big:.1f} GB \\+ 0.0 GB > 16 GB"):
        eng.apply(Place(3, gpus=(1,), accumulation=1))
    eng.apply(Place(4, gpus=(1,)))
    beside = float(eng.footprint[4])
    with pytest.raises(ActionError, match=f"{big:.1f} GB \\+ {beside:.1f} GB > 16 GB"):
        eng.apply(Colocate(3, 4, gpus=(1,), accumulation=1))
    eng.apply(Colocate(3, 4, gpus=(1,), accumulation=2))
    assert sorted(eng.partners_of(4)) == [3] and int(eng.accum[3]) == 2
