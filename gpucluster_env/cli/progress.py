"""Progress and limits of a long ``gpucluster run``: a policy wrapper that shows a rich progress bar (jobs
finished, simulated time) on a terminal and stops the run at a stated number of steps; the simulated-time
limit is the environment's own ``max_sim_time_s`` truncation."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from gpucluster_env.baselines.base import Policy

UPDATE_EVERY = 512


class LimitReached(ValueError):
    """A run stopped at its stated step limit."""


@dataclass(frozen=True)
class EpisodeLimits:
    """Where a run stops: simulated seconds (the episode is then truncated) and env steps."""

    max_sim_s: float
    max_steps: int

    def describe(self) -> str:
        return f"{self.max_sim_s / 86400:g} simulated days (--max-sim-days), {self.max_steps:,} steps (--max-steps)"


class ProgressPolicy(Policy):
    """``inner`` as seen by the runner (same name, options, environment and actions), counting steps, drawing
    the progress bar and raising :class:`LimitReached` past ``limits.max_steps``."""

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
        return self.inner.env_kwargs()

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
        if self.steps > self.limits.max_steps:
            self.close()
            raise LimitReached(f"stopped after {self.limits.max_steps:,} env steps (--max-steps) with "
                               f"{env.unwrapped.engine.n_done} of {env.unwrapped.engine.n_jobs} jobs finished; "
                               "raise --max-steps to run on")
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
