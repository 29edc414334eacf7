"""The shipped ``rl-scratch-mixed`` model (RL from scratch across one- and three-type clusters, with the opt-in
``pace`` feature): it loads through the safe loader, pins its features, and plays whole episodes inside the
job-centric mask on clusters of one and of several GPU types."""

from __future__ import annotations

import pytest

from gpucluster_env.policy import make_policy, run_episode


def test_it_pins_the_pace_feature_and_says_what_it_is() -> None:
    pol = make_policy("rl-scratch-mixed")
    assert pol.kind == "RL from scratch"
    assert "pace" in pol.view.job_features and "free_type2" in pol.view.context_features
    assert pol.meta["config"]["scenarios"] == ["castor-philly", "tiny"]


@pytest.mark.parametrize("scenario", ["tiny", "hadar-philly"])
def test_it_finishes_every_job(scenario: str) -> None:
    r = run_episode(scenario, "rl-scratch-mixed", 0, scenario_options={"num_jobs": 60})
    assert not r["truncated"] and r["jobs_done"] == r["jobs"]
