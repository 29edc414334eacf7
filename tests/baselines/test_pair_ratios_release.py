"""A finished run of a Gimbal host frees its engine: the per-run table of predicted pair ratios
(``pair_ratios._RUN_RATIOS``, keyed weakly by the run's view) must not hold the view through its value, or every
run's engine stays alive (a leaderboard worker grew by ~10 MB a cell of gavel-packed+gimbal)."""

from __future__ import annotations

import gc

from gpucluster_env.baselines.parts import pair_ratios

from gpucluster_env.engine.state import EngineState
from gpucluster_env.policy import make_policy, run_episode


def _alive_states() -> int:
    gc.collect()
    return sum(type(o) is EngineState for o in gc.get_objects())  # type(): isinstance wakes lazy modules


def test_a_finished_gimbal_run_leaves_no_engine_behind() -> None:
    before = _alive_states()
    for seed in (0, 1):
        run_episode("tiny", make_policy("lucid+gimbal"), seed)
    assert _alive_states() == before
    assert len(pair_ratios._RUN_RATIOS) == 0


def test_the_ratios_are_shared_within_a_run() -> None:
    from gpucluster_env.engine.build import make_engine
    from gpucluster_env.engine.view import ClusterView
    from gpucluster_env.scenarios import get_scenario

    eng = make_engine(get_scenario("tiny"), 0)
    view = ClusterView(eng)
    r = pair_ratios.run_ratios(view)
    assert pair_ratios.run_ratios(view) is r and r.view is view
    del r, view, eng
    gc.collect()
    assert len(pair_ratios._RUN_RATIOS) == 0
