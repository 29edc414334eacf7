"""Engine paths the random property tests reach only by chance, pinned by hand: mixed-type placement, a
forked job leaving GPUs it shares with a partner, jobs that fit only some GPU types, the performance model's
single-GPU and multi-GPU interference tables agreeing with the formula they tabulate, and the read-only
view agents use."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import TEST_MODELS
from test_engine_properties import check_invariants

from gpucluster_env.engine import ActionError, Colocate, Fork, Place, Preempt, Squeeze
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.performance import (
    accumulations,
    apply_shares,
    copy_iter_time,
    fit_accumulation,
    fits_memory,
    footprint_gb,
    xi_table,
)


def test_mixed_type_placement_when_no_type_alone_has_room(build):
    # 3 fast + 3 slow GPUs on one node each; a 5-GPU job fits neither type alone: fullest nodes first
    eng = build([("fast", 1, 3), ("slow", 1, 3)], [{"num_gpus": 5}], sample_stealing=True)
    eng.advance()
    g = eng.plan_place(0)
    assert g is not None and sorted(set(eng.gpu_type[g].tolist())) == [0, 1] and len(g) == 5
    eng.apply(Place(0))
    check_invariants(eng)
    c = eng.state.copy_consts[0][0]
    assert c.t == -1 and c.n_nodes == 2
    # LISS on unequal workers: faster than pacing by the slow ones, never below alpha / v_min
    paced = (0.0 + 0.01 * 32) / 1.0
    assert eng.rates.copy_time(0, c) < paced + c.k.comm
    assert eng.rate[0] == pytest.approx(1.0 / eng.copy_iter_time(0, g))


def test_forked_job_leaving_a_gpu_it_shares(build):
    # job 0 forks onto a second node; job 1 colocates on that copy's GPU; preempting job 0 leaves job 1 alone
    # in slot 0 at its own share
    eng = build([("fast", 2, 1)], [{"iterations": 1e5}, {"iterations": 1e5, "submit_s": 1.0}], round_s=10.0)
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Fork(0))
    assert len(eng.copies[0]) == 2 and eng.free_by_type().tolist() == [0]
    eng.advance()
    eng.apply(Colocate(1, 0))
    check_invariants(eng)
    assert eng.held_shared[0] == 1 and eng.partners_of(1) == [0]
    eng.apply(Squeeze(1))
    eng.apply(Preempt(0))
    check_invariants(eng)
    g1 = int(eng.gpus_of(1)[0])
    assert eng.slot_job[g1].tolist() == [1, -1] and eng.slot_share[g1, 0] == 9
    assert eng.held_shared[1] == 0 and eng.state.shared_map == {}


def test_forked_and_shared_job_finishing_frees_every_copy(build):
    eng = build([("fast", 2, 2)], [{"iterations": 50.0}, {"iterations": 1e5, "submit_s": 0.5}], round_s=5.0)
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Fork(0))
    eng.advance()
    eng.apply(Colocate(1, 0))
    while eng.status[0] != 3:
        eng.advance()
        check_invariants(eng)
    assert eng.held[0] == 0 and eng.held_shared[1] == 0 and eng.busy_gpus == 1


def test_job_fitting_only_one_type_goes_there(build):
    from test_engine_properties import HUGE
    from test_engine_properties import build as build_big

    from gpucluster_env.engine import EngineConfig

    eng = build_big([("slow", 2, 2), ("fast", 1, 2)], [{"model": "huge", "num_gpus": 2}], EngineConfig(), 1.5)
    assert eng.fits_type[0].tolist() == [False, True] and HUGE.name == "huge"
    eng.advance()
    with pytest.raises(ActionError, match="not enough free GPUs"):
        eng.apply(Place(0, gpu_type="slow"))
    eng.apply(Place(0))
    assert eng.gpu_type[eng.gpus_of(0)].tolist() == [1, 1]


def test_interference_tables_are_the_formula():
    xi_free = np.array([[[1.3, 1.7], [1.1, 2.2]]])  # one type, two models
    demand = np.array([[0.9, 0.6]])  # [type, model]
    tab = xi_table(xi_free, demand, 10)
    for m in range(2):
        for pm in range(2):
            for own in range(1, 11):
                for other in range(11):
                    want = apply_shares(xi_free[0, m, pm], demand[0, m], own / 10, other / 10)
                    assert tab[0, m + 1, pm + 1, own, other] == want
                assert tab[0, m + 1, 0, own, 10] == apply_shares(1.0, demand[0, m], own / 10, 1.0, False)
            assert tab[0, m + 1, 0, 10, 10] == 1.0  # alone at full share


def test_memory_fit():
    p = TEST_MODELS["big"]  # 2 + 0.5 b GB
    assert footprint_gb(p, 32, 4) == 6.0
    assert fit_accumulation(p, 32, 8.0) == 4 and fit_accumulation(p, 32, 2.4) is None
    assert accumulations(p, 32, 8.0) == [4, 8, 16, 32] and accumulations(p, 32, 2.0) == []
    assert fits_memory(6.0, 6.0) and not fits_memory(6.0 + 1e-6, 6.0)
    assert fit_accumulation(p, 32, 6.0 - 1e-12) == 4 and fit_accumulation(p, 32, 6.0 - 1e-12, tol=0.0) == 8


def test_view_is_read_only_and_agrees_with_the_engine(build):
    eng = build([("fast", 1, 2), ("slow", 2, 1)], [{"num_gpus": 2}, {"model": "b", "submit_s": 1.0}], xi=1.5)
    view = ClusterView(eng)
    with pytest.raises(ValueError):
        view.req_gpus[0] = 7
    eng.advance()
    assert view.num_pending == 1 and view.pending_jobs().tolist() == [0] and view.is_pending(0)
    g = view.plan_place(0)
    eng.apply(Place(0, gpus=tuple(g.tolist())))
    eng.advance()
    assert view.is_running(0) and view.gpus_of(0).tolist() == g.tolist() and view.num_free() == 2
    assert view.single_gpus().tolist() == g.tolist() and view.single_gpus_of(0).tolist() == g.tolist()
    c = eng.state.copy_consts[0][0]
    assert view.iter_time(0, g, view.accumulation(0)) == c.solo_iter
    xi = np.array([1.5, 1.0])
    assert view.iter_time(0, g, view.accumulation(0), xi) == copy_iter_time(c.k, xi)
    gc = view.plan_colocate(1, 0)
    assert gc is not None and view.tenants(gc)[:, 0].tolist() == [0]
    assert view.accumulation_for(1, gc) == view.accumulations_for(1, gc)[0]
    assert view.fits_on(1, gc, view.batch(1)).all() and view.solo_accumulation(1, gc) == 1
    eng.apply(Colocate(1, 0, gpus=tuple(gc.tolist())))
    assert view.partners_of(1) == [0] and view.share_of(1) == 1.0 and view.num_single() == 1
    assert view.free_by_type().tolist() == [0, 2] and view.free_by_node_type().sum() == 2
    assert view.model(1).name == "b" and view.model_index(1) != view.model_index(0) and view.batch(1) == 16
    assert view.footprint(1) == eng.footprint[1] and view.remaining(0) == eng.remaining[0]
    assert view.plan_fork(0) is None and view.true_pair_xi(0, 1, "fast") == (1.5, 1.5)
    assert np.isnan(view.finish_time(0)) and view.pending_since(1) == 1.0 and view.busy_gpus == 2
    assert view.remaining_now()[0] <= eng.remaining[0] and view.now == eng.now
    assert view.running_jobs().tolist() == [0, 1] and view.pending_head(3).tolist() == []


def test_queries_on_jobs_not_running_and_after_the_end(build):
    eng = build([("fast", 1, 2), ("slow", 1, 1)], [{"iterations": 10.0}, {"submit_s": 5.0}])
    eng.advance()
    assert eng.gpus_of(0).tolist() == [] and eng.share_of(0) == 0.0 and eng.partners_of(0) == []
    assert eng.plan_colocate(0, 0) is None and eng.plan_colocate(0, 1) is None
    assert np.isnan(eng.metrics()["makespan_s"])  # nothing finished yet
    assert eng.type_order(0) == [0, 1] and eng.solo_iter_time(0, "slow") == 2 * eng.solo_iter_time(0)
    eng.apply(Place(0))
    assert ClusterView(eng).num_running == 1
    while not eng.done:
        eng.advance()
        if eng.num_pending:
            eng.apply(Place(int(eng.pending_jobs()[0])))
    assert eng.advance() == () and eng.last_reasons == ()


def test_broken_invariant_and_bad_interference_are_reported(build):
    eng = build([("fast", 1, 1)], [{}])
    eng.advance()
    eng.apply(Place(0))
    eng.events.heap.clear()  # a running job without its completion event
    with pytest.raises(RuntimeError, match="invariant broken"):
        eng.advance()
    from conftest import PairXi

    with pytest.raises(ValueError, match="< 1"):
        build([("fast", 1, 1)], [{}], xi=PairXi({}, default=0.5))


def test_fork_onto_busy_gpus_and_share_bounds_on_named_gpus(build):
    eng = build([("fast", 3, 1)], [{"iterations": 1e5}, {"iterations": 1e5}], round_s=10.0)
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    eng.apply(Place(1, gpus=(1,)))
    with pytest.raises(ActionError, match="a copy needs free GPUs"):
        eng.apply(Fork(0, gpus=(1,)))
    for _ in range(9):
        eng.apply(Squeeze(0, gpus=(0,)))
        eng.advance()
    with pytest.raises(ActionError, match="already at the minimum on those GPUs"):
        eng.apply(Squeeze(0, gpus=(0,)))


def test_engine_pickles_with_its_views(build):
    import pickle

    eng = build([("fast", 1, 2)], [{}, {"submit_s": 1.0}])
    eng.advance()
    eng.apply(Place(0))
    clone = pickle.loads(pickle.dumps(eng))
    clone.advance()
    clone.apply(Place(1))
    assert clone.state.slot_job_flat.base is clone.slot_job and clone.slot_job[1, 0] == 1 and eng.slot_job[1, 0] == -1


def test_alone_types_agree_with_the_per_job_queries(build):
    """``alone_types`` (one pass over the slots) against its definition job by job: running, no partner, every
    GPU of one type; a job on mixed types and a shared pair are -1, a pending job is not listed."""
    eng = build([("fast", 1, 2), ("slow", 2, 1)], [{"num_gpus": 2}, {"model": "b"}, {"num_gpus": 2}, {"model": "b"}])
    view = ClusterView(eng)

    def by_definition() -> list[int]:
        out = []
        for j in range(view.n_jobs):
            types = set(view.gpu_type[view.gpus_of(j)].tolist())
            ok = view.is_running(j) and not view.partners_of(j) and len(types) == 1
            out.append(types.pop() if ok else -1)
        return out

    def alone() -> list[int]:
        found = view.alone_types()
        assert set(found) == set(view.running_jobs().tolist())
        return [found.get(j, -1) for j in range(view.n_jobs)]

    eng.advance()
    eng.apply(Place(2, gpus=(1, 2)))  # fast GPU 1 and slow GPU 2
    eng.apply(Place(1, gpus=(0,)))
    assert alone() == by_definition() == [-1, 0, -1, -1]
    eng.apply(Colocate(3, 1, gpus=(0,)))
    assert alone() == by_definition() == [-1, -1, -1, -1]
    eng.apply(Preempt(2))
    eng.apply(Preempt(1))
    eng.apply(Place(0, gpus=(2, 3)))
    assert alone() == by_definition() == [1, -1, -1, 0]


def test_every_gpus_tenants_are_read_once_per_tenants_version(build):
    """``tenants()`` (every GPU's, kept per ``tenants_version``) against the GPUs' slots read afresh: the same
    read-only array while no tenant changes, a new one after each start, share or stop."""
    eng = build([("fast", 1, 2), ("slow", 2, 1)], [{"num_gpus": 2}, {"model": "b"}, {"model": "b"}])
    view = ClusterView(eng)
    every = np.arange(view.num_gpus)

    def check() -> np.ndarray:
        kept = view.tenants()
        assert not kept.flags.writeable and np.array_equal(kept, view.tenants(every))
        assert view.tenants() is kept
        return kept

    eng.advance()
    before = check()
    for act in (Place(0, gpus=(1, 2)), Place(1, gpus=(0,)), Colocate(2, 1, gpus=(0,)), Preempt(0)):
        eng.apply(act)
        now = check()
        assert now is not before and not np.array_equal(now, before)
        before = now


def test_a_policy_that_unlocks_the_view_cannot_change_the_world() -> None:
    """A policy that sets ``writeable`` back on the view's tables and rewrites job sizes writes its own copy:
    the engine, and so the episode beside it (SJF deciding from a view of its own), is unchanged."""
    from gpucluster_env.policy import make_policy, run_episode

    class Vandal:
        name = "vandal"

        def __init__(self) -> None:
            self.inner = make_policy("sjf")

        def __getattr__(self, name: str):  # noqa: ANN204
            return getattr(self.inner, name)

        def act(self, obs, env):  # noqa: ANN001, ANN202
            v = ClusterView(env.unwrapped.engine)  # a view of its own; SJF reads another
            for name in ("req_gpus", "solo_time", "submit", "iterations", "deadline", "gpu_type"):
                a = getattr(v, name)
                a.flags.writeable = True
                a[:] = 1
            return self.inner.act(obs, env)

    plain = run_episode("tiny", make_policy("sjf"), 3)
    vandal = run_episode("tiny", Vandal(), 3)
    assert vandal["avg_jct_s"] == plain["avg_jct_s"] and vandal["makespan_s"] == plain["makespan_s"]
