"""A policy may return a list of typed actions for the current decision point; the runner applies them in turn,
each one env step."""

from __future__ import annotations

from typing import Any, ClassVar

from gpucluster_env.baselines.fifo import FIFO

from gpucluster_env.engine import Action, Wait
from gpucluster_env.policy import Policy, run_episode


class ListFIFO(Policy):
    """FIFO's action wrapped in a list, with a wait after every start: one start per decision point."""

    name: ClassVar[str] = "list-fifo"

    def __init__(self) -> None:
        self.fifo = FIFO()
        self.lists = 0

    def act(self, observation: Any, env: Any) -> list[Action]:
        a = self.fifo.act(observation, env)
        self.lists += 1
        return [a] if isinstance(a, Wait) else [a, Wait()]


class OneElement(FIFO):
    """FIFO returning one-element lists: the same episode as FIFO."""

    def act(self, observation: Any, env: Any) -> list[Action]:
        return [super().act(observation, env)]


def test_one_element_lists_play_the_same_episode() -> None:
    a = run_episode("tiny", FIFO(), 0)
    b = run_episode("tiny", OneElement(), 0)
    for k in ("avg_jct_s", "makespan_s", "steps", "jobs_done"):
        assert a[k] == b[k], k


def test_lists_are_applied_one_action_per_step() -> None:
    pol = ListFIFO()
    r = run_episode("tiny", pol, 0)
    assert r["jobs_done"] > 0 and not r["truncated"]
    assert pol.lists < r["steps"] <= 2 * pol.lists  # every list of two took two steps
