"""The search expert's compute budget (baselines/lookahead.py: ``budget``, ``bank``): it searches while its bank
holds any rollout job-events, earns them by simulated time, and where the bank is empty takes the heuristic's own
actions unsearched; the default never binds on the 240-job paper scenarios (their decisions are the unbounded
search's) and ``budget=None`` is the unbounded search."""

from __future__ import annotations

from typing import Any

import pytest
from gpucluster_env.baselines.lookahead import BUDGET_BANK, Lookahead

from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.policy import make_policy, run_episode

OPTS = {"num_jobs": 60}


class Counting(Lookahead):
    """The search, keeping the job-events each search's rollouts spent (``spent``)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.spent: list[int] = []

    def rollout_costs(self, env: Any, cands: list) -> list[float]:
        out = super().rollout_costs(env, cands)
        self.spent.append(sum(rec.work for rec, off in self._played if off == 0))
        return out


def _log(env: GPUClusterEnv) -> dict[str, Any]:
    return {"log": env.unwrapped.engine.log.records}


def test_the_default_budget_does_not_bind_on_a_paper_scenario_and_none_is_the_unbounded_search() -> None:
    a, b = Lookahead(), Lookahead(budget=None)
    ra = run_episode("sjfbsbf-philly", a, 1, scenario_options=OPTS, extra=_log)
    rb = run_episode("sjfbsbf-philly", b, 1, scenario_options=OPTS, extra=_log)
    assert ra["log"] == rb["log"] and ra["avg_jct_s"] == rb["avg_jct_s"]
    assert a.episode_stats() == b.episode_stats() and a.episode_stats()["unsearched"] == 0
    assert a.episode_stats()["searches"] > 20


def test_an_empty_bank_takes_the_heuristics_own_actions() -> None:
    """A bank of one job-event and no earning: the first search spends it, and from then on every decision is
    SRSF's own, unsearched; the episode still ends, and its actions after that search are SRSF's."""
    pol = Lookahead(budget=0.0, bank=1.0)
    env = GPUClusterEnv("sjfbsbf-philly", scenario_options=OPTS, observation="none")
    env.reset(seed=2)
    pol.reset(env)
    srsf, steps = make_policy("srsf"), 0
    while not env.engine.done:
        searched = pol.episode_stats()["searches"]
        own = srsf.act(None, env)
        a = pol.act(None, env)
        if searched:  # the bank was spent by the first search
            assert a == own
        env.step(a)
        steps += 1
    stats = pol.episode_stats()
    assert stats["searches"] == 1 and stats["unsearched"] > 50 and steps > stats["unsearched"]


def test_the_bank_earns_by_simulated_time_and_bounds_what_is_spent() -> None:
    """What the rollouts spend stays within the bank plus what it earned over the episode plus one search; a
    larger earning rate searches more."""
    runs = []
    for budget in (200.0, 5_000.0):
        pol = Counting(budget=budget, bank=1_000.0)
        r = run_episode("sjfbsbf-philly", pol, 3, scenario_options=OPTS)
        earned = budget * r["makespan_s"] / 3600.0
        assert sum(pol.spent) <= 1_000.0 + earned + max(pol.spent)
        assert r["jobs_done"] == 60
        runs.append((pol.episode_stats()["searches"], pol.episode_stats()["unsearched"]))
    assert runs[0][0] < runs[1][0] and runs[0][1] > runs[1][1] and runs[0][1] > 0


@pytest.mark.slow
def test_the_default_budget_never_binds_on_a_paper_episode() -> None:
    """castor-philly seed 0 (240 jobs): the default search searches every decision point with a choice (none
    unsearched) and spends about 2 million job-events, well under the default bank (3x the most costly 240-job
    episode measured, castor-venus seed 1: 3.7 million)."""
    pol = Counting()
    run_episode("castor-philly", pol, 0)
    assert pol.episode_stats()["unsearched"] == 0 and pol.episode_stats()["searches"] == 741
    assert 0 < sum(pol.spent) < BUDGET_BANK / 4
