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


def test_it_plays_under_a_preemption_rule_of_its_own() -> None:
    """Its default is the process rule ``preempt_when="blocked"`` (a policy option, recorded as one); the plain
    rule stays one option away, and the model's own meta.json still says what it was trained with."""
    pol = make_policy("rl-scratch-mixed")
    assert pol.view.preempt_when == "blocked"
    assert "preempt_when" not in pol.meta["env_kwargs"]  # trained with the default process
    plain = make_policy("rl-scratch-mixed", preempt_when="always")
    assert plain.view.preempt_when == "always" and plain.options == {"preempt_when": "always"}
    assert make_policy("rl-scratch").view.preempt_when == "always"  # the other models keep their training's rule


def test_playing_a_model_runs_torch_on_one_thread() -> None:
    """A played model predicts one observation at a time: its policy sets torch to one intra-op thread (more only
    contend for the cores; agents.model_meta.play_on_one_thread)."""
    import torch

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        make_policy("rl-scratch-mixed")
        assert torch.get_num_threads() == 1
        torch.set_num_threads(2)
        make_policy("rl-scratch")
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
