"""Episode metrics, the per-job table and the event log, on small episodes worked out by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gpucluster_env.engine import Colocate, Place

REL = 1e-9


def run_fifo(eng):
    eng.advance()
    while not eng.done:
        for j in eng.pending_jobs():
            if eng.plan_place(int(j)) is not None:
                eng.apply(Place(int(j)))
        eng.advance()
    return eng


@pytest.fixture
def fifo_episode(build):
    """Two fast GPUs, FIFO. j0: 100 s alone from 0; j1: 40 s from 0 (deadline 50, met); j2 arrives at 10,
    waits for j1 until 40, runs 30 s to 70 (deadline 65, missed). JCTs 100, 40, 60."""
    rows = [{"iterations": 625}, {"iterations": 250, "deadline_s": 50.0},
            {"iterations": 187.5, "submit_s": 10.0, "deadline_s": 65.0}]
    return run_fifo(build([("fast", 1, 2)], rows))


def test_metrics_by_hand(fifo_episode):
    m = fifo_episode.metrics()
    assert m["jobs"] == 3 and m["jobs_done"] == 3
    assert m["avg_jct_s"] == pytest.approx(200 / 3, rel=REL)
    assert m["median_jct_s"] == pytest.approx(60.0, rel=REL)
    assert m["p95_jct_s"] == pytest.approx(60 + 0.9 * 40, rel=REL)  # linear interpolation at rank 1.9
    assert m["makespan_s"] == pytest.approx(100.0, rel=REL)
    assert m["avg_queue_s"] == pytest.approx(10.0, rel=REL)
    assert m["gpu_occupancy"] == pytest.approx((100 + 40 + 30) / (2 * 100), rel=REL)
    assert m["sharing_utilization"] == 0.0
    assert m["deadline_satisfaction"] == pytest.approx(0.5)
    assert m["avg_slowdown"] == pytest.approx((1 + 1 + 2) / 3, rel=REL)
    assert m["colocations"] == 0 and m["preemptions"] == 0 and m["forks"] == 0
    assert math.isnan(m["sharing_benefit"])
    assert all(isinstance(v, int | float) for v in m.values())


def test_job_table(fifo_episode):
    t = fifo_episode.job_table()
    assert list(t.columns) == ["job_id", "model", "num_gpus", "submit_s", "start_s", "finish_s", "jct_s",
                               "queue_s", "solo_s", "deadline_s", "preemptions", "max_copies", "gpus",
                               "sharers"]
    assert list(t["job_id"]) == ["j0", "j1", "j2"]
    assert t["start_s"].tolist() == pytest.approx([0.0, 0.0, 40.0])
    assert t["jct_s"].tolist() == pytest.approx([100.0, 40.0, 60.0])
    assert t["queue_s"].tolist() == pytest.approx([0.0, 0.0, 30.0])
    assert t["solo_s"].tolist() == pytest.approx([100.0, 40.0, 30.0])
    assert t["gpus"].tolist() == [[0], [1], [1]]
    assert t["sharers"].tolist() == [[], [], []]
    assert np.isnan(t["deadline_s"][0]) and t["deadline_s"][2] == 65.0


def test_event_log(fifo_episode):
    lines = fifo_episode.log.to_jsonl().splitlines()
    recs = [json.loads(x) for x in lines]
    assert len(recs) == len(fifo_episode.log) == 9
    assert [(r["kind"], r["job"]) for r in recs] == [
        ("arrive", 0), ("arrive", 1), ("start", 0), ("start", 1), ("arrive", 2), ("finish", 1), ("start", 2),
        ("finish", 2), ("finish", 0)]
    starts = [r for r in recs if r["kind"] == "start"]
    assert [(r["gpus"], r["accumulation"]) for r in starts] == [([0], 1), ([1], 1), ([1], 1)]
    assert [r["t"] for r in recs if r["kind"] == "finish"] == [40.0, 70.0, 100.0]
    assert recs == list(fifo_episode.log)  # floats survive the round trip exactly


def test_sharing_metrics(build):
    """One fast GPU, xi 1.5. j0 (100 s alone) and j1 (40 s alone) colocated at 0: both at 0.24 s/it; j1 done
    at 60 s (250 it), j0 has 375 it left alone: 60 s more, done at 120 s. Sharing benefit of j1's colocation:
    waiting for j0 (100 s) then 40 s alone = 140 s, over 60 s colocated."""
    eng = build([("fast", 1, 1)], [{"iterations": 625}, {"iterations": 250}])
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Colocate(1, 0))
    while not eng.done:
        eng.advance()
    m = eng.metrics()
    assert (eng.finish_t - eng.submit).tolist() == pytest.approx([120.0, 60.0])
    assert m["makespan_s"] == pytest.approx(120.0)
    assert m["gpu_occupancy"] == pytest.approx(1.0)
    assert m["sharing_utilization"] == pytest.approx(60 / 120)
    assert m["sharing_benefit"] == pytest.approx(140 / 60)
    assert m["colocations"] == 1
    assert m["avg_slowdown"] == pytest.approx((1.2 + 1.5) / 2)
    assert math.isnan(m["deadline_satisfaction"])
    t = eng.job_table()
    assert t["sharers"].tolist() == [["j1"], ["j0"]]


def test_metrics_mid_episode_and_late_first_submit(build):
    """Utilization counts from the first submission: nothing is busy before it. Mid-episode only finished jobs
    count."""
    rows = [{"iterations": 625, "submit_s": 50.0}, {"iterations": 250, "submit_s": 50.0}]
    eng = build([("fast", 1, 2)], rows)
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Place(1))
    eng.advance()  # j1 done at 90
    m = eng.metrics()
    assert m["jobs_done"] == 1 and m["avg_jct_s"] == pytest.approx(40.0)
    while not eng.done:
        eng.advance()
    m = eng.metrics()
    assert m["makespan_s"] == pytest.approx(100.0)
    assert m["gpu_occupancy"] == pytest.approx(140 / 200)
