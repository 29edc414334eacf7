"""The viewer holds a record in bounded memory (issue #43): opening a record keeps no Python object per event
or per job (the timeline's storage is numpy arrays, counted), and the peak while opening a synthetic
20,000-job record stays far below what reading it whole took. Sizes and counts only, never times (speed is in
``gpucluster bench``: ``replay_open_ms``)."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from gpucluster_env.replay.cluster_state import ClusterState
from gpucluster_env.replay.record import open_record, read_record, write_lines
from gpucluster_env.replay.record_arrays import RecordArrays
from gpucluster_env.replay.timeline import Timeline

JOBS = 20_000
NODES = 64
PEAK_BYTES = 40 << 20
"""The most the opening of the synthetic record may allocate at its peak: it measures 15 MB; reading the record
whole and building its timeline as the code before this test did, 114 MB (276,000 Python containers kept)."""


def _header(n_jobs: int) -> dict[str, Any]:
    env = {"n_pending": 16, "n_running": 32, "n_accum": 1, "observation": "none", "objective": "jct",
           "reward_scale": 1.0, "invalid_action": "wait", "actions": ["place"], "max_sim_time_s": None}
    jobs = [{"id": f"j{i}", "model": ("bert", "resnet50", "ncf")[i % 3], "gpus": 1 + i % 4, "submit_s": 2.0 * i,
             "iterations": 1000.0 + i} for i in range(n_jobs)]
    return {"format": "gpucluster-replay", "version": 2, "package_version": "0", "scenario": "synthetic",
            "scenario_options": {}, "seed": 0, "policy": "agent", "policy_options": {}, "env": env,
            "catalog": "default", "trace": None, "cluster": [["V100", 8]] * NODES, "jobs": jobs}


def synthetic_record(path: Path, n_jobs: int = JOBS) -> Path:
    """A record of ``n_jobs`` jobs on 64 nodes of 8 GPUs: job ``i`` arrives at ``2i``, starts a second later
    on node ``i % 64`` (its rate sample beside it) and finishes at ``2i + 100``, one action per event."""
    timed: list[tuple[float, int, dict[str, Any]]] = []
    for i in range(n_jobs):
        gpus = [8 * (i % NODES) + g for g in range(1 + i % 4)]
        t = 2.0 * i
        timed += [(t, 0, {"t": t, "kind": "arrive", "job": i}),
                  (t + 1, 1, {"t": t + 1, "kind": "start", "job": i, "gpus": gpus, "accumulation": 1}),
                  (t + 1, 2, {"kind": "rate", "t": t + 1, "jobs": [[i, 1000.0 + i, 10.0, 1.0, t + 1]]}),
                  (t + 100, 3, {"t": t + 100, "kind": "finish", "job": i})]
    timed.sort(key=lambda x: (x[0], x[1]))
    lines: list[dict[str, Any]] = [_header(n_jobs)]
    for _, _, d in timed:
        if d["kind"] != "rate":
            lines.append({"kind": "act", "a": {"type": "wait"}})
        lines.append(d)
    lines.append({"kind": "metrics", "jobs_done": n_jobs, "actions": 3 * n_jobs, "events": 3 * n_jobs,
                  "end": "terminated"})
    return write_lines(path, lines)


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_record(tmp_path_factory.mktemp("mem") / "big.jsonl.gz")


def test_the_viewer_holds_no_python_object_per_event(record: Path) -> None:
    gc.collect()
    before = len(gc.get_objects())
    tl = Timeline(open_record(record))
    gc.collect()
    held = len(gc.get_objects()) - before
    assert len(tl.events) == 3 * JOBS and tl.record.num_actions == 3 * JOBS
    assert held < 1_000, f"{held} Python containers held for {JOBS} jobs ({len(tl.events)} events)"
    assert isinstance(tl.record, RecordArrays)
    per_event = tl.nbytes / len(tl.events)
    assert 20 < per_event < 300, per_event  # the arrays it keeps, counted: about 170 bytes an event here
    assert tl.metrics(tl.t_end)["jobs_done"] == JOBS
    st = tl.state(len(tl.events) // 2)
    assert 49 <= len(st.running) <= 50 and all(len(s) <= 1 for s in st.slots)


def test_opening_peaks_far_below_reading_whole(record: Path) -> None:
    gc.collect()
    tracemalloc.start()
    try:
        tl = Timeline(open_record(record))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(tl.events) == 3 * JOBS
    assert peak < PEAK_BYTES, f"opening {JOBS} jobs peaked at {peak / 1e6:.0f} MB"


def test_the_compact_timeline_shows_what_the_whole_record_does(record: Path) -> None:
    """The same states, metrics and progress from the record opened compactly and read whole."""
    rec = read_record(record)
    compact, whole = Timeline(open_record(record)), Timeline(rec)
    n = len(compact.events)
    for i in (n // 3 + 1, n // 3, 1, n, n // 2, 0, n - 1, n // 2 + 3):  # forward, back, far and near
        a, b = compact.state(i), whole.state(i)
        assert (a.slots, a.status, list(a.pending.items()), list(a.running), a.gpus, a.share) == \
            (b.slots, b.status, list(b.pending.items()), list(b.running), b.gpus, b.share), i
        t = float(compact.events[max(0, i - 1)]["t"]) + 0.5
        assert compact.metrics(t) == whole.metrics(t)
        assert [compact.progress(j, t, a) for j in a.running] == [whole.progress(j, t, b) for j in b.running]
    assert compact.events[5] == {k: v for k, v in rec.events[5].items() if k != "accumulation"}


def test_snapshots_are_arrays_that_give_the_state_back(record: Path) -> None:
    tl = Timeline(open_record(record))
    st = tl.state(len(tl.events) // 2 + 7)
    back = ClusterState.restore(st.snapshot(), st.share_units)
    assert back == st and back is not st


def test_snapshots_over_their_budget_are_thinned_and_states_stay_exact(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots hold the queue; a record whose snapshots pass :data:`SNAPSHOT_BYTES` keeps every other one
    (twice as far apart) until they fit, and any state is still the one applying every event gives."""
    import gpucluster_env.replay.timeline as timeline

    path = synthetic_record(tmp_path / "small.jsonl", 1_000)
    free = Timeline(open_record(path))
    monkeypatch.setattr(timeline, "SNAPSHOT_BYTES", 30_000)
    tl = Timeline(open_record(path))
    assert sum(s.nbytes for s in tl._checkpoints) <= 30_000 < sum(s.nbytes for s in free._checkpoints)
    assert tl._every > free._every and len(tl._checkpoints) < len(free._checkpoints)
    st = tl.empty_state()
    for i, e in enumerate(tl.events):
        if i % 7 == 0 or i % tl._every in (0, 1, tl._every - 1):
            got = tl.state(i)
            assert (got.slots, got.status, got.pending, got.running, got.gpus, got.share) == (
                st.slots, st.status, st.pending, st.running, st.gpus, st.share), i
        st.apply(e)
