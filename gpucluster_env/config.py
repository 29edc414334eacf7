"""The engine's settings as plain data (model layer): a scenario holds them, the engine reads them.

They live below the engine so that :mod:`gpucluster_env.scenarios` and scenario files can state them without
importing the simulator; :mod:`gpucluster_env.engine` re-exports :class:`EngineConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineConfig:
    """Per-scenario settings of the simulation.

    ``round_s``: length of scheduling rounds (a decision point at each boundary; forking needs rounds).
    ``restart_s``: overhead a preempted job pays when it starts again, and a job pays on every ``Reallocate``.
    ``consolidation_s``: overhead a forked job pays at every round boundary. ``tick_s``: period of calibration
    ticks (decision points for Gimbal-style coordination). ``idle_tick_s``: how far time moves when the agent
    waits and nothing else is due.
    ``sample_stealing``: LISS, per-worker batches rebalanced so a job on unequal workers is not paced by the
    slowest. ``calibration_overhead_s``: pause a job pays when its share changes (Gimbal's LGRR switch).
    ``max_idle_ticks``: consecutive decision points with nothing running and no arrival or completion (idle,
    round or calibration ticks) after which the episode is stalled.
    ``restart_on_allocation``: Hadar's rule, ``restart_s`` on *every* new allocation, a job's first start
    included (without it: only a start after a preemption and a ``Reallocate`` pay it).
    ``copy_startup_s``: time a new copy of a forked job (``Fork``, ``MoveCopy``) makes no progress after it
    starts (HadarE: the copy loads the job's consolidated parameters).
    """

    round_s: float | None = None
    restart_s: float = 0.0
    consolidation_s: float = 0.0
    tick_s: float | None = None
    idle_tick_s: float = 60.0
    sample_stealing: bool = False
    calibration_overhead_s: float = 0.0
    max_idle_ticks: int = 100_000
    restart_on_allocation: bool = False
    copy_startup_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("round_s", "tick_s"):
            v = getattr(self, name)
            if v is not None and not (v > 0):
                raise ValueError(f"EngineConfig.{name} must be positive or None, got {v!r}")
        for name in ("restart_s", "consolidation_s", "calibration_overhead_s", "copy_startup_s"):
            if not (getattr(self, name) >= 0):
                raise ValueError(f"EngineConfig.{name} must be >= 0")
        if not (self.idle_tick_s > 0):
            raise ValueError("EngineConfig.idle_tick_s must be positive")
