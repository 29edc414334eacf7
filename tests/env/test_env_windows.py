"""Without observation the environment works out its queue-ordered pending and running windows only where they are
read (the mask, an int action, ``decode_action``); the episode must be the one of an environment that builds them,
with its observation, at every step."""

from __future__ import annotations

import numpy as np
import pytest

from gpucluster_env.engine import Wait
from gpucluster_env.env import GPUClusterEnv


@pytest.mark.parametrize("scenario", ["tiny", "hadar-philly"])
def test_windows_read_lazily_give_the_eager_episode(scenario: str) -> None:
    lazy = GPUClusterEnv(scenario, observation="none")
    eager = GPUClusterEnv(scenario, observation="dict")
    lazy.reset(seed=3)
    eager.reset(seed=3)
    eng = lazy.engine
    rng = np.random.default_rng(3)
    for i in range(300):
        if i % 4 == 0:  # a typed wait: the lazy environment reads no window before the next step
            a: int | Wait = Wait()
        else:
            mask = lazy.action_masks()
            assert np.array_equal(mask, eager.action_masks())
            a = int(rng.choice(np.flatnonzero(mask)))
            assert lazy.decode_action(a) == eager.decode_action(a)
            assert np.array_equal(lazy.pending_window, eng.pending_head(lazy.layout.n_pending))
            assert np.array_equal(lazy.running_window, eng.running_head(lazy.layout.n_running))
        _, r1, t1, u1, _ = lazy.step(a)
        _, r2, t2, u2, _ = eager.step(a)
        assert (r1, t1, u1) == (r2, t2, u2)
        if t1 or u1:
            break
    assert lazy.engine.log == eager.engine.log
