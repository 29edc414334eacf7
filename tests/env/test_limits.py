"""Limits applied at the limit, and no agent can stall time (issue #25): the clock stops at ``max_sim_time_s``
even when one event jump would pass it, ``max_steps`` stops at that many steps, the environment's sizes are
bounded before any work, and a policy that answers ``[]`` or only rejected actions still ends its episode."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gpucluster_env.engine.actions import Place, Preempt
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.env.rules import MAX_REJECTED_RUN, step_cap
from gpucluster_env.policy import Policy, run_episode
from gpucluster_env.settings import SettingError

CALLS_BOUND = 200_000
"""A bad policy below raises past this many calls: the episode must end long before (no wall-clock bound)."""


class _Bad(Policy):
    """A deliberately bad white-box policy: ``answer(env)`` is its action(s) at every decision point."""

    name = "bad"

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls = 0

    def act(self, observation: Any, env: Any) -> Any:
        self.calls += 1
        if self.calls > CALLS_BOUND:
            raise AssertionError("the episode did not end: the policy stalled time")
        return self.answer(env.unwrapped)


def test_sim_time_limit_stops_the_clock_at_the_limit() -> None:
    """A completion past the limit does not happen: the clock stops at the limit and the run is truncated."""
    r = run_episode("tiny", "fifo", 0, scenario_options={"num_jobs": 1}, env_kwargs={"max_sim_time_s": 30.0})
    assert r["truncated"] and r["jobs_done"] == 0 and r["jobs"] == 1
    env = GPUClusterEnv("tiny", max_sim_time_s=1800.0, observation="none")
    env.reset(seed=0)
    trunc = term = False
    while not (trunc or term):
        _, _, term, trunc, info = env.step(0)
    eng = env.engine
    assert trunc and not term and eng.now == 1800.0 and "metrics" in info
    finished = eng.finish_t[~np.isnan(eng.finish_t)]
    assert len(finished) == info["metrics"]["jobs_done"] < eng.n_jobs and (finished <= 1800.0).all()


def test_step_limit_stops_at_that_many_steps() -> None:
    """``max_steps`` truncates after exactly that many steps, lists of actions included."""
    for policy in ("fifo", "gavel"):
        r = run_episode("tiny", policy, 0, env_kwargs={"max_steps": 25})
        assert r["truncated"] and r["steps"] == 25 and r["jobs_done"] < r["jobs"]
    whole = run_episode("tiny", "fifo", 0)
    assert not whole["truncated"] and whole["jobs_done"] == whole["jobs"]


@pytest.mark.parametrize("kwargs, needle", [
    ({"n_pending": 10**8}, "'n_pending': expected an integer >= 1 and <= 1,024"),
    ({"n_running": 0}, "'n_running'"),
    ({"n_accum": 64, "action_layout": "full"}, "'n_accum'"),
    ({"max_sim_time_s": -1.0}, "'max_sim_time_s'"),
    ({"max_sim_time_s": float("inf")}, "'max_sim_time_s'"),
    ({"max_steps": 0}, "'max_steps'"),
    ({"max_steps": 2.5}, "'max_steps'"),
    ({"min_run_s": -1.0}, "'min_run_s'"),
    ({"reward_scale": 0.0}, "'reward_scale'"),
])
def test_environment_sizes_and_limits_are_bounded(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(SettingError, match=needle.replace("(", r"\(")) as e:
        GPUClusterEnv("tiny", **kwargs)
    assert "\n" not in str(e.value)


def test_an_action_kind_the_scenario_cannot_offer_is_refused() -> None:
    """``actions=("fork",)`` on a scenario without rounds was accepted and never offered."""
    with pytest.raises(SettingError, match="action kind 'fork' needs a scenario with rounds"):
        GPUClusterEnv("tiny", actions=("place", "fork"))
    env = GPUClusterEnv("hadar-philly", actions=("place", "fork"), observation="none")
    assert "fork" in env.allowed


def test_empty_list_means_wait() -> None:
    """A policy that always answers ``[]`` lets time run: the episode ends (stalled, truncated)."""
    pol = _Bad(lambda env: [])
    r = run_episode("tiny", pol, 0, scenario_options={"max_idle_ticks": 20})
    assert r["truncated"] and r["jobs_done"] == 0 and pol.calls < 1000


def test_rejected_actions_force_a_wait() -> None:
    """A policy whose typed actions are all rejected still ends its episode: a run of rejections forces a wait."""
    env_seen: list[GPUClusterEnv] = []

    def bogus(env: GPUClusterEnv) -> Any:
        env_seen.append(env)
        return Place(10**6)  # no such job: rejected every time

    pol = _Bad(bogus)
    r = run_episode("tiny", pol, 0, scenario_options={"max_idle_ticks": 20})
    assert r["truncated"] and r["jobs_done"] == 0
    assert pol.calls <= (MAX_REJECTED_RUN + 1) * r["decisions"]  # at most a run of rejections per instant
    env = GPUClusterEnv("tiny", observation="none")
    env.reset(seed=0)
    infos = [env.step(Place(10**6))[4] for _ in range(MAX_REJECTED_RUN + 1)]
    assert all("forced_wait" not in i for i in infos[:-1]) and "rejected actions in a row" in infos[-1]["forced_wait"]
    assert infos[-1]["invalid_actions"] == MAX_REJECTED_RUN + 1


@pytest.mark.parametrize("scenario", ["tiny", "castor-philly"])
def test_rejected_actions_count_toward_the_stall_bound(scenario: str) -> None:
    """The same rejected ``Place`` forever, with the default bound: stalled after about ``max_idle_ticks``
    steps (rejections and the waits they force together), not after that many forced waits of 33 steps each."""
    from gpucluster_env.scenarios import get_scenario

    bound = get_scenario(scenario).config.max_idle_ticks
    pol = _Bad(lambda env: Place(0, gpus=(0,)))  # job 0 needs other GPUs (or is not there yet): always rejected
    r = run_episode(scenario, pol, 0)
    assert r["truncated"] and r["truncated_by"] == "stalled" and r["jobs_done"] == 0
    assert r["steps"] <= 1.1 * bound + 10_000, r["steps"]


def test_undoing_typed_actions_forever_is_bounded() -> None:
    """Typed actions are not masked: a policy that starts and preempts the same job forever is stopped by the
    bound on steps at one instant, and time runs on."""
    def flip(env: GPUClusterEnv) -> Any:
        eng = env.engine
        if eng.num_running:
            return Preempt(int(eng.running_head(1)[0]))
        if eng.num_pending:
            return Place(int(eng.pending_head(1)[0]))
        return []

    pol = _Bad(flip)
    r = run_episode("tiny", pol, 0, scenario_options={"num_jobs": 3, "max_idle_ticks": 20})
    assert r["truncated"] and r["jobs_done"] == 0
    assert r["decisions"] >= 20 and pol.calls <= (step_cap(3) + 1) * r["decisions"]
    strict = GPUClusterEnv("tiny", observation="none", invalid_action="raise", scenario_options={"num_jobs": 1})
    strict.reset(seed=0)
    for _ in range(step_cap(1)):
        strict.step(flip(strict))
    with pytest.raises(ValueError, match=r"at t=0.0s: 72 non-wait steps at this instant \(at most 72 with 1 jobs\)"):
        strict.step(flip(strict))


class _Churner(_Bad):
    """A degenerate learned-like policy: preempts and restarts jobs forever, with a step limit of its own."""

    def step_limit(self, n_jobs: int, tick_s: float | None = None) -> int:
        return 3 * n_jobs

    @staticmethod
    def churn(env: Any) -> Any:
        eng = env.engine
        run = eng.running_jobs()
        if len(run) and not env.rules.must_wait(eng.num_pending + eng.num_running):
            return Preempt(int(run[0]))
        return Place(int(eng.pending_jobs()[0])) if eng.num_pending else []


def test_a_policys_own_step_limit_applies_and_is_named() -> None:
    """A policy's ``step_limit`` (a model's ``max_episode_steps``) stops the episode below the runner's own
    limit, and ``truncated_by`` names it; a runner limit below it still wins as ``max_steps``."""
    r = run_episode("tiny", _Churner(_Churner.churn), 0)
    assert r["truncated"] and r["truncated_by"] == "max_episode_steps" and r["steps"] == 3 * 40
    r = run_episode("tiny", _Churner(_Churner.churn), 0, env_kwargs={"max_steps": 30})
    assert r["truncated"] and r["truncated_by"] == "max_steps" and r["steps"] == 30


def test_a_learned_policy_takes_the_registered_step_limit() -> None:
    from gpucluster_env.agents.policies import RLPolicy

    from gpucluster_env.registration import max_episode_steps

    assert RLPolicy.step_limit(None, 240) == max_episode_steps(240)  # type: ignore[arg-type]


def test_a_calibrating_scenario_allows_its_ticks() -> None:
    """On a scenario whose calibration ticks are decision points (gimbal-alibaba: 39 s ticks), the registered
    limit leaves room for them: SJF's whole episode on seed 0 (16,005 steps) finishes under it."""
    import gymnasium as gym

    from gpucluster_env.registration import TICK_STEPS_PER_JOB, env_id, max_episode_steps
    from gpucluster_env.scenarios import SCENARIOS

    sc = SCENARIOS["gimbal-alibaba"]
    limit = gym.make(env_id("gimbal-alibaba")).unwrapped.step_limit
    assert limit == max_episode_steps(sc.num_jobs, sc.config.tick_s) == TICK_STEPS_PER_JOB * sc.num_jobs + 2000
    assert limit > 16_005
    assert gym.make(env_id("castor-philly")).unwrapped.step_limit == max_episode_steps(
        SCENARIOS["castor-philly"].num_jobs)
