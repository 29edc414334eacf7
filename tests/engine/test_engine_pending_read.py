"""The engine's queue read (``pending_jobs``, worked out from its last answer while no job was preempted) gives
the queue in its order after any mix of arrivals, starts, colocations and preemptions, read after every action
or only now and then, on an engine and on its clones."""

from __future__ import annotations

import numpy as np
import pytest

from gpucluster_env.engine import ActionError
from gpucluster_env.engine.actions import Colocate, Place, Preempt
from gpucluster_env.engine.build import make_engine
from gpucluster_env.engine.simulator import PENDING, RUNNING, ClusterEngine
from gpucluster_env.scenarios import SCENARIOS


def queue(eng: ClusterEngine) -> list[int]:
    """The queue as the engine keeps it (its dict, in order)."""
    return list(eng.state.pending_queue)


def play(eng: ClusterEngine, rng: np.random.Generator, steps: int, read_every: float) -> dict[str, int]:
    """Random waits, places, colocations and preemptions; the queue read and compared with probability
    ``read_every`` after each."""
    seen = {"reads": 0, "preempt": 0}
    for _ in range(steps):
        if eng.done:
            break
        kind = int(rng.integers(6))
        pend, run = np.flatnonzero(eng.status == PENDING), np.flatnonzero(eng.status == RUNNING)
        try:
            if kind <= 1 or not len(pend):
                eng.advance()
            elif kind == 2 or not len(run):
                eng.apply(Place(int(rng.choice(pend))))
            elif kind == 3:
                eng.apply(Colocate(int(rng.choice(pend)), int(rng.choice(run)), None))
            else:
                eng.apply(Preempt(int(rng.choice(run))))
                seen["preempt"] += 1
        except ActionError:
            pass
        if rng.random() < read_every:
            got = eng.pending_jobs()
            assert got.tolist() == queue(eng)
            got[:] = -1  # a fresh array: writing it changes no later answer
            seen["reads"] += 1
    return seen


@pytest.mark.parametrize("scenario", ["tiny", "castor-philly", "gimbal-philly"])
@pytest.mark.parametrize("read_every", [1.0, 0.2])
def test_pending_jobs_is_the_queue(scenario: str, read_every: float) -> None:
    eng = make_engine(SCENARIOS[scenario], 0)
    eng.advance()
    seen = play(eng, np.random.default_rng(3), 800, read_every)
    assert seen["reads"] > 50 and seen["preempt"] > 20, seen
    twin = eng.clone()  # a clone reads its own queue from there on
    play(twin, np.random.default_rng(4), 200, read_every)
    assert eng.pending_jobs().tolist() == queue(eng)
    eng.reset()
    eng.advance()
    assert eng.pending_jobs().tolist() == queue(eng)
