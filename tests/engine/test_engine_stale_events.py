"""Cancelled completions retired from the event heap (``EventQueue.retire``) are still times the clock stops at:
an engine that retires them at every wait gives, bit for bit, what one that never does gives (event log, clock,
utilization sums, metrics), under a policy that preempts and restarts jobs all the time."""

from __future__ import annotations

import numpy as np
import pytest

from gpucluster_env.engine import ActionError, clock, events
from gpucluster_env.engine.actions import Place, Preempt
from gpucluster_env.engine.build import make_engine
from gpucluster_env.engine.simulator import PENDING, RUNNING
from gpucluster_env.scenarios import SCENARIOS


def seen(eng) -> tuple:
    """What the clock's stops decide: the log, the time, the utilization sums and the metrics (``repr`` keeps
    numpy and Python floats apart)."""
    s = eng.state
    return (repr(eng.log.records), repr(eng.now), repr(s.busy_gpu_s), repr(s.shared_gpu_s), repr(s.sm_active_gpu_s),
            eng.status.tobytes(), eng.remaining.tobytes(), dict(eng.counts), repr(eng.metrics()))


def play(eng, seed: int, limit: float | None) -> list[tuple]:
    rng = np.random.default_rng(seed)
    out = []
    eng.advance()
    while not eng.done:
        for j in np.flatnonzero(eng.status == RUNNING).tolist():
            if rng.random() < 0.5:
                eng.apply(Preempt(j))
        for j in rng.permutation(np.flatnonzero(eng.status == PENDING)).tolist():
            try:
                eng.apply(Place(j))
            except ActionError:
                pass
        if eng.advance(limit) == ("limit",):
            break
        out.append(seen(eng))
    return out


@pytest.mark.parametrize(("scenario", "limit"), [("tiny", None), ("tiny", 20_000.0)])
def test_retiring_cancelled_completions_changes_nothing(monkeypatch, scenario: str, limit: float | None) -> None:
    keep = make_engine(SCENARIOS[scenario], 0)
    keep.clock.compact_at = 10**12  # never retires
    want = play(keep, 1, limit)
    monkeypatch.setattr(clock, "COMPACT_MIN", 1)
    retire = make_engine(SCENARIOS[scenario], 0)
    retire.clock.compact_at = 1  # retires at every wait
    got = play(retire, 1, limit)
    assert got == want
    assert retire.state.events.stale_at > 0  # stale times were retired and passed


@pytest.mark.parametrize(("scenario", "limit"), [("tiny", None), ("tiny", 20_000.0)])
def test_far_retired_times_change_nothing(monkeypatch, scenario: str, limit: float | None) -> None:
    """Retired times kept two at a time in ``stale``, the rest waiting in ``far`` (``EventQueue.refill``), give
    what one list of them gives."""
    monkeypatch.setattr(clock, "COMPACT_MIN", 1)
    whole = make_engine(SCENARIOS[scenario], 0)
    whole.clock.compact_at = 1
    want = play(whole, 1, limit)
    monkeypatch.setattr(events, "STALE_NEAR", 2)
    near = make_engine(SCENARIOS[scenario], 0)
    near.clock.compact_at = 1
    filled = []
    refill = events.EventQueue.refill

    def counted(q: events.EventQueue) -> None:
        had = len(q.far)
        refill(q)
        filled.append(had - len(q.far))
    monkeypatch.setattr(events.EventQueue, "refill", counted)
    got = play(near, 1, limit)
    assert got == want
    assert any(filled)  # times waited in far and came back
