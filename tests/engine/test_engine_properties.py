"""Property tests: random small mixed clusters, random job tables, random *valid* action sequences (chosen
among what the engine's own planners and state say is possible), checked against the engine's invariants
after every action and every decision point."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import make_catalog, make_jobs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucluster_env.engine import (
    RUNNING,
    ClusterEngine,
    Colocate,
    DropCopy,
    EngineConfig,
    Fork,
    MoveCopy,
    Place,
    Preempt,
    Reallocate,
    Squeeze,
    Swell,
)
from gpucluster_env.hardware import ClusterSpec
from gpucluster_env.interference import FeatureInterference
from gpucluster_env.performance import fits_memory
from gpucluster_env.workloads import ModelProfile

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def scenarios(draw):
    groups = draw(st.lists(st.tuples(st.sampled_from(["fast", "slow"]), st.integers(1, 2), st.integers(1, 3)),
                           min_size=1, max_size=3))
    total = sum(n * per for _, n, per in groups)
    rows = [
        {
            "submit_s": draw(st.sampled_from([0.0, 0.0, 3.0, 12.5, 40.0, 90.0])),
            "num_gpus": draw(st.integers(1, min(total, 4))),
            "model": draw(st.sampled_from(["a", "b", "big"])),
            "iterations": draw(st.floats(5.0, 300.0)),
            "deadline_s": draw(st.sampled_from([float("nan"), 60.0, 400.0])),
        }
        for _ in range(draw(st.integers(1, 6)))
    ]
    for r in rows:
        r["deadline_s"] = max(r["deadline_s"], r["submit_s"])
        if draw(st.booleans()):  # an elastic job (Reallocate may resize it)
            r["min_gpus"] = draw(st.integers(1, r["num_gpus"]))
            r["max_gpus"] = draw(st.integers(r["num_gpus"], min(total, 4)))
    config = EngineConfig(
        round_s=draw(st.sampled_from([None, 25.0])),
        restart_s=draw(st.sampled_from([0.0, 4.0])),
        consolidation_s=draw(st.sampled_from([0.0, 1.5])),
        tick_s=draw(st.sampled_from([None, 17.0])),
        sample_stealing=draw(st.booleans()),
        calibration_overhead_s=draw(st.sampled_from([0.0, 0.5])),
        interference_scope=draw(st.sampled_from(["iteration", "compute"])),
        restart_on_allocation=draw(st.booleans()),
        copy_startup_s=draw(st.sampled_from([0.0, 2.0])),
    )
    xi = draw(st.sampled_from([1.0, 1.6, 3.0, "feature"]))
    seed = draw(st.integers(0, 2**32 - 1))
    return groups, rows, config, xi, seed


# fits only the 16 GB "fast" GPUs: 9 + 0.1 b GB at batch 16 needs more than a "slow" GPU's 8 GB at any b
HUGE = ModelProfile("huge", batch_size=16, batch_sizes=(16,), alpha_s=0.02, beta_s=0.01, grad_mb=300.0,
                    mem_base_gb=9.0, mem_per_sample_gb=0.1, gpu_demand=0.8, speed={"fast": 2.0, "slow": 1.0})


def build(groups, rows, config, xi):
    inter = FeatureInterference(0.8) if xi == "feature" else xi
    cat = make_catalog(inter)
    cat = type(cat)(gpu_types=cat.gpu_types, models={**cat.models, "huge": HUGE}, interference=cat.interference)
    return ClusterEngine(ClusterSpec.from_groups(groups), make_jobs(rows), cat, config)


@st.composite
def large_scenarios(draw):
    """More than 64 nodes of two types, gangs of more than 32 GPUs (wider than either type alone when the
    nodes are small, so they go on mixed types), jobs that fit only the "fast" type, forks in rounds."""
    n_fast, n_slow = draw(st.integers(33, 45)), draw(st.integers(33, 45))
    per = draw(st.integers(1, 2))
    groups = [("fast", n_fast, per), ("slow", n_slow, 1)]
    rows = []
    for _ in range(draw(st.integers(2, 6))):
        model = draw(st.sampled_from(["a", "b", "big", "huge"]))
        cap = n_fast * per if model == "huge" else n_fast * per + n_slow
        rows.append({
            "submit_s": draw(st.sampled_from([0.0, 0.0, 5.0, 30.0])),
            "num_gpus": min(cap, draw(st.sampled_from([1, 2, 3, 8, 33, 40, 48, 70]))),
            "model": model,
            "iterations": draw(st.floats(5.0, 200.0)),
            "deadline_s": float("nan"),
        })
    config = EngineConfig(
        round_s=draw(st.sampled_from([None, 25.0, 25.0])),
        restart_s=draw(st.sampled_from([0.0, 4.0])),
        consolidation_s=draw(st.sampled_from([0.0, 1.5])),
        sample_stealing=draw(st.booleans()),
        calibration_overhead_s=draw(st.sampled_from([0.0, 0.5])),
        interference_scope=draw(st.sampled_from(["iteration", "compute"])),
        restart_on_allocation=draw(st.booleans()),
        copy_startup_s=draw(st.sampled_from([0.0, 2.0])),
    )
    xi = draw(st.sampled_from([1.6, "feature"]))
    return groups, rows, config, xi, draw(st.integers(0, 2**32 - 1))


def valid_actions(eng):
    """Every action the engine's state and planners say is valid now (a sample of them, for speed)."""
    out = []
    running = [int(j) for j in eng.running_jobs()]
    for j in (int(x) for x in eng.pending_jobs()):
        if eng.plan_place(j) is not None:
            out.append(Place(j))
        for t in eng.type_names:
            if eng.plan_place(j, t) is not None:
                out.append(Place(j, gpu_type=t))
        for p in running:
            g = eng.plan_colocate(j, p)
            if g is not None and (eng.slot_job[g, 1] < 0).all() and eng.accumulation_for(j, g) is not None:
                out.append(Colocate(j, p))
    for j in running:
        g = eng.gpus_of(j)
        share = eng.slot_share[g, (eng.slot_job[g, 1] == j).astype(np.int64)]
        if (share > 1).any():
            out.append(Squeeze(j))
        if (share < 10).any():
            out.append(Swell(j))
        if eng.n_preempt[j] < 2:
            out.append(Preempt(j))
        if eng.plan_fork(j) is not None and len(eng.copies[j][0]) == eng.req_gpus[j]:
            out.append(Fork(j))
        out += move_actions(eng, j)
    return out


def move_actions(eng, j):
    """Valid moves of running job ``j``: reallocations (to each type, and to each other size of an elastic
    job) of an unforked job; dropping or moving a copy of a forked one."""
    out = []
    copies = eng.copies[j]
    if len(copies) == 1:
        cur = sorted(copies[0].tolist())
        sizes = range(int(eng.min_gpus[j]), int(eng.max_gpus[j]) + 1)
        for t, n in [(t, len(cur)) for t in (*eng.type_names, None)] + [(None, n) for n in sizes if n != len(cur)]:
            g = eng.plan_reallocate(j, t, n)
            if g is not None and sorted(g.tolist()) != cur:
                out.append(Reallocate(j, gpus=tuple(g.tolist())) if n != len(cur) else Reallocate(j, gpu_type=t))
        return out
    for i in range(len(copies)):
        out.append(DropCopy(j, i))
        others = np.concatenate([c for x, c in enumerate(copies) if x != i])
        g, _ = eng.placement.plan_place(j, None, exclude_nodes=np.unique(eng.gpu_node[others]))
        if g is not None and all(fits_memory(eng.footprint[j], m) for m in eng.type_mem[eng.gpu_type[g]]):
            out.append(MoveCopy(j, i, tuple(g.tolist())))
    return out


def check_invariants(eng):
    sj = eng.slot_job
    used = sj[:, 0] >= 0
    both = used & (sj[:, 1] >= 0)
    assert not ((sj[:, 1] >= 0) & ~used).any(), "second slot used with an empty first slot"
    assert (sj[both, 0] != sj[both, 1]).all(), "a job twice on one GPU"
    expected = np.zeros_like(eng.free_nt)
    np.add.at(expected, (eng.gpu_node[~used], eng.gpu_type[~used]), 1)
    assert np.array_equal(eng.free_nt, expected), "free_nt disagrees with slot_job"
    assert eng.busy_gpus == used.sum() and eng.shared_gpus == both.sum()
    nt = len(eng.type_names)
    assert np.array_equal(eng.busy_t, np.bincount(eng.gpu_type[used], minlength=nt))
    assert np.array_equal(eng.shared_t, np.bincount(eng.gpu_type[both], minlength=nt))
    # memory: the footprints on a GPU fit its memory
    fp = np.where(sj >= 0, eng.footprint[np.maximum(sj, 0)], 0.0).sum(axis=1)
    assert (fp <= eng.type_mem[eng.gpu_type] + 1e-9).all(), "GPU memory over capacity"
    running = set(np.flatnonzero(eng.status == RUNNING).tolist())
    assert set(eng.running_jobs().tolist()) == running
    assert set(eng.pending_jobs().tolist()) == set(np.flatnonzero(eng.status == 1).tolist())
    for j in range(eng.n_jobs):
        on = np.flatnonzero((sj == j).any(axis=1))
        if j in running:
            copies = eng.copies[j]
            if len(copies) > 1:
                assert all(len(c) == eng.req_gpus[j] for c in copies), "a copy is not a full gang"
            else:
                assert eng.min_gpus[j] <= len(copies[0]) <= eng.max_gpus[j], "a gang outside the job's range"
            assert 1 <= len(copies) <= eng.max_copies[j]
            assert np.array_equal(np.sort(np.concatenate(copies)), on)
            assert eng.held[j] == len(on) and eng.held_shared[j] == both[on].sum()
            share = eng.slot_share[on, (sj[on, 1] == j).astype(np.int64)]
            assert (eng.share_lo[j], eng.share_hi[j]) == (share.min(), share.max())
            cp = eng.state.copy_progress.get(j)
            # no progress only while every copy is starting up or idle after its quota (engine.job_progress)
            assert eng.rate[j] > 0 or (cp is not None and not any(cp.rate))
        else:
            assert len(on) == 0 and eng.held[j] == 0 and eng.rate[j] == 0
    check_derived_state(eng)


def check_derived_state(eng):
    """The engine's own bookkeeping for speed agrees with its slot arrays, and its fast iteration times with the
    reference formulas (copy_iter_time), bit for bit."""
    sj = eng.slot_job
    pairs: dict[int, dict[int, int]] = {}
    for a, b in sj[(sj[:, 0] >= 0) & (sj[:, 1] >= 0)].tolist():
        pairs.setdefault(a, {})[b] = pairs.get(a, {}).get(b, 0) + 1
        pairs.setdefault(b, {})[a] = pairs.get(b, {}).get(a, 0) + 1
    assert eng.state.shared_map == pairs, "partners per job disagree with slot_job"
    assert set(eng.state.copy_consts) == set(eng.copies)
    for j, copies in eng.copies.items():
        consts = eng.state.copy_consts[j]
        assert len(consts) == len(copies) and all(c.g is g for c, g in zip(consts, copies, strict=True))
        for c, g in zip(consts, copies, strict=True):
            assert c.solo_iter == eng.copy_iter_time(j, g, np.ones(len(g)))
            assert eng.rates.copy_time(j, c) == eng.copy_iter_time(j, g)
        cp = eng.state.copy_progress.get(j)
        if cp is not None:  # per-copy progress: each copy at its (size-scaled) rate, or 0 while idle / starting
            scale = [len(g) / eng.req_gpus[j] for g in copies]
            for r, g, k in zip(cp.rate, copies, scale, strict=True):
                assert r == 0 or r == pytest.approx(k / eng.copy_iter_time(j, g), rel=1e-12)
            assert eng.rate[j] == sum(cp.rate)
            if cp.quota is not None:
                assert eng.remaining[j] == sum(cp.quota), "a forked job's progress is not its copies' sum"
            continue
        assert eng.rate[j] == sum(1.0 / eng.copy_iter_time(j, g) for g in copies) or (
            eng.held_shared[j] == 0 and eng.share_lo[j] == 10 and eng.rate[j] == eng.solo_rate[j])


def run_episode(groups, rows, config, xi, seed, check=True):
    eng = build(groups, rows, config, xi)
    rng = np.random.default_rng(seed)
    prev = eng.remaining_now()
    for _ in range(5000):
        if eng.done:
            break
        eng.advance()
        if check:
            check_invariants(eng)
            rem = eng.remaining_now()
            assert (rem <= prev * (1 + 1e-14)).all(), "progress went backwards"
            prev = rem
        for _ in range(int(rng.integers(0, 5))):
            acts = valid_actions(eng)
            if not acts:
                break
            a = acts[int(rng.integers(len(acts)))]
            eng.apply(a)  # a valid action never raises
            if check:
                check_invariants(eng)
                rem = eng.remaining_now()
                # (a forked job's steps split among its copies again are their sum: equal up to the last bits)
                assert (rem <= prev * (1 + 1e-14)).all(), f"progress went backwards after {a}"
                prev = rem
                if isinstance(a, Place | Colocate):
                    start = [r for r in eng.log if r["kind"] == "start"][-1]
                    assert start["job"] == a.job and start["t"] == eng.now
                    assert sorted(start["gpus"]) == sorted(eng.gpus_of(a.job).tolist())
                    assert len(start["gpus"]) == eng.req_gpus[a.job]
        if eng.num_running == 0 and eng.num_pending:
            # keep the episode moving: start the first pending job (it always fits an empty cluster)
            j = int(eng.pending_jobs()[0])
            assert eng.plan_place(j) is not None
            eng.apply(Place(j))
    assert eng.done
    return eng


@SETTINGS
@given(scenarios())
def test_random_valid_episodes_keep_invariants(sc):
    groups, rows, config, xi, seed = sc
    eng = run_episode(groups, rows, config, xi, seed)
    finishes = [r["job"] for r in eng.log if r["kind"] == "finish"]
    assert sorted(finishes) == list(range(eng.n_jobs)), "every job finishes exactly once"
    jct = eng.finish_t - eng.submit
    assert np.isfinite(jct).all()
    # a job never beats its solo time split over its most concurrent copies (exact up to float rounding); a job
    # resized to more GPUs than it asked for is left out (its solo time is at the asked size)
    grown = {r["job"] for r in eng.log if r["kind"] == "reallocate" and len(r["gpus"]) > eng.req_gpus[r["job"]]}
    fixed = np.array([j not in grown for j in range(eng.n_jobs)])
    assert (jct >= eng.solo_time / eng.max_copies * (1 - 1e-9))[fixed].all()
    for r in eng.log:
        if r["kind"] in ("start", "fork"):
            assert len(r["gpus"]) == eng.req_gpus[r["job"]]
    m = eng.metrics()
    assert m["jobs_done"] == eng.n_jobs
    assert 0 < m["gpu_occupancy"] <= 1 + 1e-9 and 0 <= m["sharing_utilization"] <= m["gpu_occupancy"]
    assert m["makespan_s"] >= jct.max() - 1e-9
    assert (eng.queue_s >= 0).all() and np.all(eng.first_start >= eng.submit)


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_same_seed_same_actions_same_log(sc):
    groups, rows, config, xi, seed = sc
    a = run_episode(groups, rows, config, xi, seed, check=False)
    b = run_episode(groups, rows, config, xi, seed, check=False)
    assert a.log == b.log
    assert a.log.to_jsonl() == b.log.to_jsonl()
    assert json.dumps(a.metrics()) == json.dumps(b.metrics())
    a.reset()
    assert len(a.log) == 0 and a.now == 0.0 and not a.done


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(large_scenarios())
def test_large_clusters_wide_gangs_and_type_bound_jobs_keep_invariants(sc):
    groups, rows, config, xi, seed = sc
    eng = run_episode(groups, rows, config, xi, seed)
    assert eng.num_nodes > 64
    fast = eng.type_names.index("fast")
    for r in eng.log:
        if r["kind"] in ("start", "fork"):
            gpus = np.array(r["gpus"])
            assert len(gpus) == eng.req_gpus[r["job"]]
            if eng.model_names[eng.job_model[r["job"]]] == "huge":  # fits only the fast type
                assert (eng.gpu_type[gpus] == fast).all()
