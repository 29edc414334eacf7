"""The event queue a clone gets (``EventQueue.__deepcopy__``): its own heap and list of passed-over times, with
the same events, so the clone and the original run on apart bit for bit as one episode would."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from gpucluster_env.engine.events import FINISH, ROUND, EventQueue
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.policy import make_policy


def test_a_copied_queue_has_its_own_lists_of_the_same_events() -> None:
    q = EventQueue()
    for i, t in enumerate((5.0, 1.0, np.float64(3.0), 2.0, 4.0)):
        q.push_finish(float(t), i, 0) if i % 2 else q.push(t, ROUND, -1, 0)
    q.retire([e[1] == FINISH and e[3] == 1 for e in q.heap])  # one cancelled completion to the stale list
    q.pass_stale(0.5)
    c = copy.deepcopy(q)
    assert (c.heap, c.seq, c.stale, c.stale_at) == (q.heap, q.seq, q.stale, q.stale_at) == (c.heap, 5, [1.0], 0)
    assert c.heap is not q.heap and c.stale is not q.stale
    first = c.pop_due(10.0)
    c.pass_stale(10.0)
    c.push(9.0, ROUND, -1, 0)
    assert first == q.heap[0] and len(q.heap) == 4 and q.stale_at == 0 and q.seq == 5  # the original unchanged


class _Shim:
    def __init__(self, eng: Any) -> None:
        self.engine = eng
        self.unwrapped = self


def _run(eng: Any, steps: int | None = None) -> None:
    """Step ``eng`` with SRSF (stateless: a fresh one on a clone acts as on the original) ``steps`` times."""
    pol, shim, n = make_policy("srsf"), _Shim(eng), 0
    while not eng.done and (steps is None or n < steps):
        eng.apply(pol.act(None, shim))
        n += 1


def _engine() -> Any:
    env = GPUClusterEnv("castor-philly", scenario_options={"num_jobs": 120}, observation="none")
    env.reset(seed=4)
    return env.engine


def test_a_clone_mid_episode_runs_as_the_original() -> None:
    ref = _engine()
    _run(ref)
    eng = _engine()
    _run(eng, 150)
    assert not eng.done and len(eng.events.heap) > 3
    twin = eng.clone()
    assert twin.events.heap == eng.events.heap and twin.events.heap is not eng.events.heap
    _run(twin)
    _run(eng)
    assert twin.log == eng.log == ref.log and twin.metrics()["avg_jct_s"] == ref.metrics()["avg_jct_s"]
