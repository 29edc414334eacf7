"""Progress and limits of a long ``gpucluster run``: a policy wrapper that shows a rich progress bar (jobs
finished, simulated time) on a terminal; both limits are the environment's own truncation (``max_sim_time_s``:
the clock stops at the limit; ``max_steps``: the episode stops after that many steps), so a run cut short
still reports the metrics of the jobs finished by then, marked truncated."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from gpucluster_env.policy import Policy
from gpucluster_env.registration import STEPS_PER_JOB, TICK_STEPS_PER_JOB, max_episode_steps

UPDATE_EVERY = 512


@dataclass(frozen=True)
class EpisodeLimits:
    """Where a run stops: simulated seconds (the episode is then truncated) and env steps."""

    max_sim_s: float
    max_steps: int

    def describe(self, cause: str | None = None, num_jobs: int | None = None, tick_s: float | None = None) -> str:
        """The limit that stopped an episode (``cause``, a runner's ``truncated_by``) in words, with the flag
        that sets it; without a cause, both limits. ``num_jobs`` (the episode's jobs) gives a learned policy's
        own step limit as a number (``tick_s``: the scenario's calibration tick, which sets the steps per job)."""
        days = f"the limit of {self.max_sim_s / 86400:g} simulated days (--max-sim-days)"
        steps = f"the limit of {self.max_steps:,} steps (--max-steps)"
        if cause == "max_sim_time_s":
            return days
        if cause == "max_steps":
            return steps
        if cause == "max_episode_steps":
            count = f"{max_episode_steps(num_jobs, tick_s):,} steps, " if num_jobs is not None else ""
            per_job = STEPS_PER_JOB if tick_s is None else TICK_STEPS_PER_JOB
            return (f"the model's step limit ({count}the registered env's max_episode_steps: {per_job} "
                    f"steps per job + {max_episode_steps(0):,}, what its training episodes ran under; not "
                    "--max-steps)")
        if cause == "stalled":
            return ("stalled: the policy kept waiting while jobs were queued and nothing ran (the engine's "
                    "max_idle_ticks), not a time or step limit")
        return f"{days}, {steps}"


class ProgressPolicy(Policy):
    """``inner`` as seen by the runner (same name, options and actions; its environment arguments with the
    run's ``limits``), counting steps and drawing the progress bar."""

    def __init__(self, inner: Policy, limits: EpisodeLimits, show: bool = True) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.needs_observation = inner.needs_observation  # type: ignore[misc]
        self._options = inner.options
        self.limits = limits
        self.show = show and sys.stderr.isatty()
        self.steps = 0
        self._bar: Any = None
        self._task: Any = None

    def env_kwargs(self) -> dict[str, Any]:
        """The inner policy's environment arguments with the run's limits."""
        return {**self.inner.env_kwargs(), "max_sim_time_s": self.limits.max_sim_s,
                "max_steps": self.limits.max_steps}

    def step_limit(self, n_jobs: int, tick_s: float | None = None) -> int | None:
        """The inner policy's own step limit."""
        return self.inner.step_limit(n_jobs, tick_s)

    def reset(self, env: Any) -> None:
        self.steps = 0
        self.inner.reset(env)
        if self.show:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn(f"{self.name}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("jobs · {task.fields[sim]} simulated"), TimeElapsedColumn(),
                                 transient=True)
            self._bar.start()
            self._task = self._bar.add_task("run", total=int(env.unwrapped.engine.n_jobs), sim="0 h")

    def act(self, observation: Any, env: Any) -> Any:
        self.steps += 1
        if self._bar is not None and self.steps % UPDATE_EVERY == 0:
            eng = env.unwrapped.engine
            self._bar.update(self._task, completed=int(eng.n_done), sim=f"{eng.now / 3600:,.1f} h")
            if eng.n_done == eng.n_jobs:
                self.close()
        return self.inner.act(observation, env)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
