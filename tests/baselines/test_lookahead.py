"""The search expert (baselines/lookahead.py): its choice is never worse than the heuristic's own on the
rollouts it compares, it leaves the real episode untouched while searching, and its options are checked."""

from __future__ import annotations

import numpy as np
import pytest
from gpucluster_env.baselines.lookahead import Lookahead, rollout_cost

from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.policy import check_policy_options, make_policy, run_episode
from gpucluster_env.settings import SettingError


def test_choice_is_the_least_rollout_cost_and_the_env_is_untouched() -> None:
    env = GPUClusterEnv("sjfbsbf-philly", scenario_options={"num_jobs": 60}, observation="none")
    env.reset(seed=5)
    pol = Lookahead(horizon_s=1800.0, candidates=2)
    pol.reset(env)
    eng = env.engine
    searched = 0
    for _ in range(400):
        if eng.done:
            break
        view = pol.view(env)
        own = make_policy("srsf").act(None, env)
        cands = pol.candidate_actions(view, own, env.min_run_s)
        before = (eng.now, eng.remaining.copy(), len(eng.log))
        chosen = pol.act(None, env)
        assert (eng.now, len(eng.log)) == (before[0], before[2]) and np.array_equal(eng.remaining, before[1])
        assert chosen in cands and cands[0] == own
        if len(cands) > 1:
            searched += 1
            costs = [rollout_cost(eng.clone(), a, make_policy("srsf"), 1800.0, tail=True) for a in cands]
            assert rollout_cost(eng.clone(), own, make_policy("srsf"), 1800.0) <= costs[0]  # the tail adds
            assert costs[cands.index(chosen)] == min(costs) <= costs[0]
        env.step(chosen)
    assert searched > 10 and pol.episode_stats()["searches"] == searched


def test_deterministic_and_finishes_every_job() -> None:
    a = run_episode("tiny", Lookahead(horizon_s=1200.0), 2)
    b = run_episode("tiny", Lookahead(horizon_s=1200.0), 2)
    assert a["jobs_done"] == a["jobs"] and not a["truncated"]
    for k in a:
        if k != "wall_s":
            assert a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]), k  # NaN: undefined in both


def test_options_are_declared_and_checked() -> None:
    assert check_policy_options("lookahead", {"horizon_s": 1800, "candidates": 2}) == {
        "horizon_s": 1800.0, "candidates": 2}
    with pytest.raises(SettingError, match="candidates"):
        check_policy_options("lookahead", {"candidates": 0})
    with pytest.raises(ValueError, match="rollout must be one of"):
        Lookahead(rollout="tiresias")  # stateful: a fresh copy would not know the attained service


def test_blind_rollouts_see_no_arrival(monkeypatch: pytest.MonkeyPatch) -> None:
    """``arrivals=False``: no job is submitted to a rollout's copy, while the real episode still gets every
    job; with arrivals (the default) the copies do see later submissions."""
    import gpucluster_env.baselines.lookahead as la

    real = la.play_rollout
    arrived: list[int] = []

    def spy(engine, first, base, end, tail, max_events=None):  # type: ignore[no-untyped-def]
        n0 = len(engine.log)
        rec = real(engine, first, base, end, tail, max_events)
        arrived.append(sum(1 for i, e in enumerate(engine.log) if i >= n0 and e["kind"] == "arrive"))
        return rec

    monkeypatch.setattr(la, "play_rollout", spy)
    opts = {"num_jobs": 40}
    blind = run_episode("sjfbsbf-philly", Lookahead(horizon_s=3600.0, arrivals=False), 3, scenario_options=opts)
    assert len(arrived) > 20 and sum(arrived) == 0
    assert blind["jobs_done"] == blind["jobs"] == 40 and not blind["truncated"]
    arrived.clear()
    run_episode("sjfbsbf-philly", Lookahead(horizon_s=3600.0), 3, scenario_options=opts)
    assert sum(arrived) > 0


def test_a_rollout_copy_is_freed_without_the_garbage_collector() -> None:
    """An engine copy scheduled through ``EngineEnv`` holds no reference cycle, so it is freed as soon as its
    rollout drops it (a cycle left every copy of a long trace to the collector: hundreds alive at once)."""
    import gc
    import weakref

    from gpucluster_env.baselines.parts.rollouts import EngineEnv

    env = GPUClusterEnv("tiny", scenario_options={"num_jobs": 20})
    env.reset(seed=0)
    copy = EngineEnv(env.unwrapped.engine.clone())
    assert copy.unwrapped is copy and copy.unwrapped.engine is copy.engine
    gone = (weakref.ref(copy), weakref.ref(copy.engine))
    gc.disable()
    try:
        del copy
        assert gone[0]() is None and gone[1]() is None
    finally:
        gc.enable()
