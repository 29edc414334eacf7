"""Bad input: job tables the engine must refuse (JobTableError naming row and field, or a counted SkipReport),
unknown names, bad configs, and every kind of invalid action (ActionError naming the action and the reason),
none of which may change the engine's state."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import make_catalog, make_jobs

from gpucluster_env.engine import (
    ActionError,
    ClusterEngine,
    Colocate,
    EngineConfig,
    Fork,
    Place,
    Preempt,
    Squeeze,
    StalledError,
    Swell,
)
from gpucluster_env.hardware import ClusterSpec
from gpucluster_env.jobs import JobTableError

CLUSTER = ClusterSpec.from_groups([("fast", 1, 2), ("slow", 1, 2)])


def engine(rows, cluster=CLUSTER, **kw):
    return ClusterEngine(cluster, make_jobs(rows), make_catalog(1.5), **kw)


# ---------------------------------------------------------------- job tables
@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("num_gpus", 5, r"row 1 \(job j1\): field 'num_gpus': asks for 5 GPUs but the cluster has 4"),
        ("num_gpus", 0, r"row 1 .*field 'num_gpus'"),
        ("num_gpus", 1.5, r"row 1 .*field 'num_gpus'"),
        ("iterations", -10.0, r"row 1 .*field 'iterations'"),
        ("iterations", 0.0, r"row 1 .*field 'iterations'"),
        ("iterations", math.nan, r"row 1 .*field 'iterations'.*nan"),
        ("iterations", math.inf, r"row 1 .*field 'iterations'"),
        ("submit_s", -1.0, r"row 1 .*field 'submit_s'"),
        ("submit_s", math.nan, r"row 1 .*field 'submit_s'"),
        ("batch_size", 0, r"row 1 .*field 'batch_size'"),
        ("batch_size", 99_999_999_999, r"row 1 .*field 'batch_size': must be an integer from 1 to 1,048,576"),
        ("model", "resnet-nope", r"row 1 .*field 'model': unknown model 'resnet-nope'"),
        ("deadline_s", -5.0, r"row 1 .*field 'deadline_s'"),
    ],
)
def test_bad_row_is_named(field, value, match):
    rows = [{}, {field: value}, {}]
    with pytest.raises(JobTableError, match=match):
        engine(rows)


def test_not_a_number_and_missing_column():
    with pytest.raises(JobTableError, match=r"row 0: field 'iterations': not a number: 'lots'"):
        engine([{"iterations": "lots"}])
    df = make_jobs([{}]).drop(columns=["model"])
    with pytest.raises(JobTableError, match="missing column.*model"):
        ClusterEngine(CLUSTER, df, make_catalog())
    df = make_jobs([{}, {}])
    df.loc[1, "job_id"] = "j0"
    with pytest.raises(JobTableError, match="row 1: field 'job_id': duplicate id 'j0'"):
        ClusterEngine(CLUSTER, df, make_catalog())


def test_skip_bad_rows_counts_and_keeps_the_rest():
    rows = [{"submit_s": 5.0}, {"num_gpus": 99}, {"iterations": -1.0}, {"model": "nope"}, {"submit_s": 1.0}]
    eng = engine(rows, skip_bad_rows=True)
    rep = eng.skip_report
    assert rep.count == 3
    assert [i for i, _ in rep.skipped] == [1, 2, 3]
    for (_, why), field in zip(rep.skipped, ["num_gpus", "iterations", "model"], strict=True):
        assert f"field '{field}'" in why
    assert eng.n_jobs == 2
    assert list(eng.job_ids) == ["j4", "j0"]  # sorted by submit time
    with pytest.raises(JobTableError, match="every row was skipped"):
        engine([{"num_gpus": 99}], skip_bad_rows=True)


def test_unknown_gpu_type():
    with pytest.raises(ValueError, match="unknown GPU type 'h9000'"):
        engine([{}], cluster=ClusterSpec.from_groups([("h9000", 1, 2)]))
    eng = engine([{}])
    eng.advance()
    with pytest.raises(ActionError, match="unknown GPU type 'h9000'"):
        eng.apply(Place(0, gpu_type="h9000"))


@pytest.mark.parametrize("kw", [{"round_s": 0.0}, {"tick_s": -1.0}, {"restart_s": -1.0}, {"idle_tick_s": 0.0},
                                {"consolidation_s": math.nan}])
def test_bad_config(kw):
    with pytest.raises(ValueError, match="EngineConfig"):
        EngineConfig(**kw)


# ---------------------------------------------------------------- actions
def _snapshot(eng):
    return (eng.slot_job.copy(), eng.slot_share.copy(), eng.free_nt.copy(), eng.status.copy(),
            eng.rate.copy(), len(eng.log), dict(eng.counts, actions=0))


def _same(a, b):
    return all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
               for x, y in zip(a, b, strict=True))


@pytest.fixture
def busy():
    """GPUs 0-1 fast (node 0), 2-3 slow (node 1). Job 0 (a, 1 GPU) on GPU 0 with job 1 (a) colocated; job 2
    (2 GPUs) on the slow node; jobs 3 (1 GPU) and 4 (2 GPUs) pending."""
    eng = engine([{}, {}, {"num_gpus": 2}, {}, {"num_gpus": 2}])
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    eng.apply(Colocate(1, 0))
    eng.apply(Place(2, gpus=(2, 3)))
    return eng


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (Place(0), "job 0 is running, not pending"),
        (Place(0, gpus=(1,)), "job 0 is running, not pending"),
        (Place(3, gpus=(0,)), "place needs free GPUs"),
        (Place(4), r"not enough free GPUs \(any type\) for job 4"),
        (Place(4, gpu_type="fast"), r"not enough free GPUs \(fast\)"),
        (Place(3, gpus=(7,)), r"GPU indices must lie in \[0, 4\)"),
        (Place(3, gpus=(-1,)), r"GPU indices must lie in \[0, 4\)"),
        (Place(3, gpus=()), r"GPU indices must lie"),
        (Place(4, gpus=(1, 1)), "repeats a GPU"),
        (Place(3, gpus=(1,), accumulation=3), "accumulation must be a power of two"),
        (Place(3, gpus=(1,), accumulation=64), "accumulation must be a power of two"),
        (Place(9), "no job with index 9"),
        (Colocate(3, 1, gpus=(0,)), "already holds two jobs"),
        (Colocate(3, 0), "partner 0 has no room for job 3"),
        (Colocate(3, 4), "partner 4 is pending, not running"),
        (Colocate(0, 2), "job 0 is running, not pending"),
        (Colocate(3, 2, gpus=(1,)), "shares no GPU with partner 2"),
        (Colocate(4, 2, gpus=(2,)), "job 4 needs 2 GPUs, got 1"),
        (Squeeze(3), "job 3 is pending, not running"),
        (Squeeze(0, gpus=(2,)), "does not run on every GPU named"),
        (Swell(0), "already at the maximum"),
        (Preempt(4), "job 4 is pending, not running"),
        (Fork(0), "forking needs a round-based scenario"),
    ],
)
def test_invalid_action_names_itself_and_changes_nothing(busy, action, match):
    before = _snapshot(busy)
    with pytest.raises(ActionError, match=match) as info:
        busy.apply(action)
    assert str(info.value).startswith(type(action).__name__ + "(")
    assert isinstance(info.value, ValueError)
    assert _same(before, _snapshot(busy))


def test_wrong_gpu_count_place(busy):
    busy.apply(Preempt(2))
    with pytest.raises(ActionError, match="job 4 needs 2 GPUs, got 1"):
        busy.apply(Place(4, gpus=(2,)))
    with pytest.raises(ActionError, match="job 3 needs 1 GPUs, got 2"):
        busy.apply(Place(3, gpus=(2, 3)))


def test_squeeze_at_minimum_share(busy):
    for _ in range(9):
        busy.apply(Squeeze(1))
    assert busy.share_of(1) == pytest.approx(0.1)
    before = _snapshot(busy)
    with pytest.raises(ActionError, match="Squeeze.*share is already at the minimum"):
        busy.apply(Squeeze(1))
    assert _same(before, _snapshot(busy))
    assert busy.counts["squeezes"] == 9


def test_colocate_refused_when_memory_does_not_fit():
    """``big`` on a fast GPU at s = 2 takes 10 GB of 16; a second ``big`` fits only at s = 4 (6 GB): explicit
    s = 1 or 2 is refused naming the GPU and sizes, s = None picks 4 (the smallest power of two that fits)."""
    eng = engine([{"model": "big"}, {"model": "big"}, {"model": "big"}])
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    assert eng.accum[0] == 2 and eng.footprint[0] == pytest.approx(10.0)
    for s, need in ((1, 18.0), (2, 10.0)):
        msg = rf"memory does not fit on GPU 0: {need:.1f} GB \+ 10.0 GB > 16 GB"
        with pytest.raises(ActionError, match=msg):
            eng.apply(Colocate(1, 0, accumulation=s))
    assert eng.accumulation_for(1, np.array([0])) == 4
    eng.apply(Colocate(1, 0))
    assert eng.accum[1] == 4
    assert [r for r in eng.log if r["kind"] == "start"][-1]["accumulation"] == 4
    # on a slow GPU (8 GB) with a big at s = 4 (6 GB) another big fits at no accumulation
    eng.apply(Place(2, gpus=(2,)))
    assert eng.accum[2] == 4
    eng.apply(Preempt(1))
    with pytest.raises(ActionError, match="does not fit in GPU memory there at any accumulation"):
        eng.apply(Colocate(1, 2))


def test_fork_errors():
    eng = engine([{}, {"num_gpus": 2}], config=EngineConfig(round_s=60.0))
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    for action, match in [
        (Fork(1), "job 1 is pending, not running"),
        (Fork(0, copies=0), "copies must be >= 1"),
        (Fork(0, copies=2, gpus=(2,)), "names one copy"),
        (Fork(0, gpus=(1,)), "nodes the job does not use"),
        (Fork(0, gpus=(2, 3)), "a copy of job 0 needs 1 GPUs"),
        (Fork(0, gpus=(5,)), "GPU indices must lie"),
    ]:
        before = _snapshot(eng)
        with pytest.raises(ActionError, match=match):
            eng.apply(action)
        assert _same(before, _snapshot(eng))
    eng.apply(Fork(0, gpus=(2,)))
    with pytest.raises(ActionError, match="no free node for another copy"):
        eng.apply(Fork(0))


def test_future_and_done_jobs_are_not_startable():
    eng = engine([{"iterations": 10}, {"submit_s": 50.0}])
    eng.advance()
    with pytest.raises(ActionError, match="job 1 is future, not pending"):
        eng.apply(Place(1))
    eng.apply(Place(0))
    eng.advance()
    assert eng.status[0] == 3
    with pytest.raises(ActionError, match="job 0 is done, not pending"):
        eng.apply(Place(0))
    with pytest.raises(ActionError, match="job 0 is done, not running"):
        eng.apply(Preempt(0))
    with pytest.raises(ActionError, match="unknown action"):
        eng.apply("wait")  # type: ignore[arg-type]


def test_waiting_forever_stalls():
    eng = engine([{}], config=EngineConfig(idle_tick_s=10.0, max_idle_ticks=5))
    eng.advance()
    with pytest.raises(StalledError, match="1 pending jobs, nothing running"):
        for _ in range(10):
            eng.advance()
    assert eng.now == pytest.approx(60.0)
