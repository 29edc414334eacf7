"""The engine's fast entry points (place_job, colocate_job, calibrate_job, preempt_job, fork_job) do exactly
what ``apply`` does with the typed actions they stand for: the same state after every action, bit for bit,
and the same ActionError messages for invalid ones."""

from __future__ import annotations

import numpy as np
import pytest

from gpucluster_env.engine import ActionError
from gpucluster_env.engine.actions import Colocate, Fork, Place, Preempt, Squeeze, Swell
from gpucluster_env.engine.build import make_engine
from gpucluster_env.engine.simulator import PENDING, RUNNING
from gpucluster_env.scenarios import SCENARIOS

ARRAYS = ("status", "remaining", "rate", "last_t", "active_from", "version", "accum", "footprint", "queue_s",
          "pending_since", "n_preempt", "n_colocated", "max_copies", "held", "held_shared", "job_min_mem",
          "share_lo", "share_hi", "solo_rate", "slot_job", "slot_share", "free_nt", "busy_t", "shared_t")


def state(eng):
    """Everything an observer can see, as comparable values (``repr`` keeps numpy and Python floats apart)."""
    return (
        tuple(getattr(eng, a).tobytes() for a in ARRAYS),
        repr(eng.log.records), repr(eng.sharing_benefits), repr(sorted(eng.events.heap)), dict(eng.counts),
        eng.queue_version, eng.gpu_version, eng.busy_gpus, eng.shared_gpus, repr(eng.now),
        list(eng.state.pending_queue), list(eng.state.running_set), sorted(eng.state.forked_set),
        {j: {p: k for p, k in d.items()} for j, d in eng.state.shared_map.items()},
        {j: [g.tolist() for g in gs] for j, gs in eng.copies.items()},
    )


def pair(scenario, seed=0):
    a, b = (make_engine(SCENARIOS[scenario], seed) for _ in range(2))
    a.advance()
    b.advance()
    return a, b


def both(a, b, typed, method, args):
    """``a.apply(typed)`` and ``b.method(*args)``: the same error (or none) and the same state after."""
    errs = []
    for run in (lambda: a.apply(typed), lambda: getattr(b, method)(*args)):
        try:
            run()
            errs.append(None)
        except ActionError as e:
            errs.append(str(e))
    assert errs[0] == errs[1], (typed, errs)
    assert state(a) == state(b), typed
    return errs[0]


def random_actions(a, b, rng, steps):
    """A random mix of valid and invalid actions through both entry points, with waits in between."""
    n, types = a.n_jobs, len(a.type_names)
    outcomes = {"ok": 0, "error": 0}

    def pick(status):
        js = np.flatnonzero(a.status == status)
        if len(js) and rng.random() < 0.85:
            return int(rng.choice(js))
        return int(rng.integers(n))

    for _ in range(steps):
        if a.done:
            break
        kind = int(rng.integers(7))
        if kind == 0:
            a.advance()
            b.advance()
            assert state(a) == state(b)
            continue
        if kind == 1:
            j = pick(PENDING)
            t = None if rng.random() < 0.5 else int(rng.integers(types))
            err = both(a, b, Place(j, None if t is None else a.type_names[t]), "place_job", (j, t))
        elif kind == 2:
            j, p = pick(PENDING), pick(RUNNING)
            acc = [None, 1, 2, 4, 3][int(rng.integers(5))]
            err = both(a, b, Colocate(j, p, acc), "colocate_job", (j, p, acc))
        elif kind == 3:
            j = pick(RUNNING)
            err = both(a, b, Squeeze(j), "calibrate_job", (j, -1))
        elif kind == 4:
            j = pick(RUNNING)
            err = both(a, b, Swell(j), "calibrate_job", (j, 1))
        elif kind == 5:
            j = pick(RUNNING)
            err = both(a, b, Preempt(j), "preempt_job", (j,))
        else:
            j = pick(RUNNING)
            err = both(a, b, Fork(j), "fork_job", (j,))
        outcomes["ok" if err is None else "error"] += 1
    return outcomes


@pytest.mark.parametrize("scenario", ["tiny", "castor-philly", "hadar-philly", "gimbal-philly"])
def test_fast_entry_points_match_apply(scenario):
    a, b = pair(scenario)
    outcomes = random_actions(a, b, np.random.default_rng(7), 600)
    assert outcomes["ok"] > 50 and outcomes["error"] > 50, outcomes
    assert a.counts["actions"] == b.counts["actions"] > 0


def _running_pair():
    """Engines on tiny with two jobs running (job 0 placed, job 1 colocated with it when it fits)."""
    a, b = pair("tiny")
    while a.num_pending < 2:
        a.advance()
        b.advance()
    pending = [int(j) for j in a.pending_jobs()]
    j0 = pending[0]
    both(a, b, Place(j0), "place_job", (j0, None))
    return a, b, j0, pending[1:]


def test_invalid_cases_name_the_typed_action():
    a, b, j0, pending = _running_pair()
    j1 = pending[0]
    future = int(np.flatnonzero(a.status == 0)[0])
    cases = [
        (Place(j0), "place_job", (j0, None), "not pending"),
        (Place(future, "V100"), "place_job", (future, 0), "is future, not pending"),
        (Place(a.n_jobs), "place_job", (a.n_jobs, None), "no job with index"),
        (Place(-1), "place_job", (-1, None), "no job with index"),
        (Place(True), "place_job", (True, None), "no job with index"),
        (Colocate(j1, j1, 1), "colocate_job", (j1, j1, 1), "not running"),
        (Colocate(j0, j0, None), "colocate_job", (j0, j0, None), "not pending"),
        (Colocate(j1, a.n_jobs, 2), "colocate_job", (j1, a.n_jobs, 2), "no job with index"),
        (Colocate(j1, j0, 3), "colocate_job", (j1, j0, 3), "power of two"),
        (Swell(j0), "calibrate_job", (j0, 1), "already at the maximum"),
        (Squeeze(j1), "calibrate_job", (j1, -1), "not running"),
        (Preempt(j1), "preempt_job", (j1,), "not running"),
        (Preempt(a.n_jobs + 5), "preempt_job", (a.n_jobs + 5,), "no job with index"),
        (Fork(j0), "fork_job", (j0,), "forking needs a round-based scenario"),
    ]
    for typed, method, args, match in cases:
        err = both(a, b, typed, method, args)
        assert err is not None and match in err, (typed, err)
        assert err.startswith(repr(typed) + ":") or err.startswith(str(typed) + ":")
    # down to the minimum share, then one squeeze too many
    for _ in range(9):
        assert both(a, b, Squeeze(j0), "calibrate_job", (j0, -1)) is None
    err = both(a, b, Squeeze(j0), "calibrate_job", (j0, -1))
    assert "already at the minimum" in err


def test_numpy_indices_and_counts():
    """numpy integers are accepted as by apply (the same messages, which show them as given)."""
    a, b, j0, pending = _running_pair()
    j1 = pending[0]
    both(a, b, Colocate(np.int64(j1), np.int64(j0)), "colocate_job", (np.int64(j1), np.int64(j0), None))
    assert both(a, b, Preempt(np.int64(j0)), "preempt_job", (np.int64(j0),)) is None
    both(a, b, Place(np.int64(j0), a.type_names[1]), "place_job", (np.int64(j0), np.int64(1)))
    err = both(a, b, Preempt(np.int64(a.n_jobs)), "preempt_job", (np.int64(a.n_jobs),))
    bad = np.int64(a.n_jobs)
    assert err == f"{Preempt(bad)}: no job with index {bad!r} (episode has {a.n_jobs} jobs)"
    assert a.counts["actions"] == b.counts["actions"] == 5
    # the records name jobs as Python ints whichever entry point and index type was used
    assert all(type(r[2]) is int for r in b.log.records)


def test_bad_type_index_and_step():
    a, b, j0, pending = _running_pair()
    for t in (len(a.type_names), -1, 1.0, True):
        with pytest.raises(ActionError, match="no GPU type with index"):
            b.place_job(pending[0], t)
    for step in (0, 2, -2):
        with pytest.raises(ActionError, match="step must be -1"):
            b.calibrate_job(j0, step)
    assert b.counts["actions"] == a.counts["actions"] + 7
    assert state(a)[0] == state(b)[0]


def test_fork_matches_apply():
    a, b = pair("hadar-philly")
    rng = np.random.default_rng(3)
    forks = 0
    for _ in range(400):
        if a.done:
            break
        running = [int(j) for j in a.running_jobs()]
        pending = [int(j) for j in a.pending_head(4)]
        if pending:
            j = pending[0]
            both(a, b, Place(j), "place_job", (j, None))
        if running:
            j = running[int(rng.integers(len(running)))]
            if both(a, b, Fork(j), "fork_job", (j,)) is None:
                forks += 1
        a.advance()
        b.advance()
        assert state(a) == state(b)
    assert forks > 0
