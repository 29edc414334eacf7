"""The engine's settings as plain data (model layer): a scenario holds them, the engine reads them.

They live below the engine so that :mod:`gpucluster_env.scenarios` and scenario files can state them without
importing the simulator; :mod:`gpucluster_env.engine` re-exports :class:`EngineConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass

INTERFERENCE_SCOPES = ("iteration", "compute")
"""What xi multiplies: the whole iteration (Castor eq. 4-5) or only the compute term."""

DEFAULT_SHARE_STEP = 0.1
"""The engine's MPS share grid by default: 10% of the GPU, the granularity Gimbal §7.4 found best."""
MAX_SHARE_UNITS = 20
"""The finest share grid the engine keeps: 20 steps of 5% per GPU (Gimbal §7.4 studies 5% to 30%)."""


def share_grid_problem(step: float) -> str | None:
    """Why ``step`` cannot be the engine's MPS share grid, or None: the step must cut a GPU into a whole number
    of equal parts, 2 to :data:`MAX_SHARE_UNITS` (e.g. 0.1 or 0.05)."""
    n = round(1.0 / step) if step > 0 else 0
    if not (2 <= n <= MAX_SHARE_UNITS) or abs(n * step - 1.0) > 1e-9:
        return (f"must cut a GPU into a whole number of equal steps, 2 to {MAX_SHARE_UNITS} (1/step an integer: "
                f"0.1, 0.05 ...), got {step!r}")
    return None


@dataclass(frozen=True)
class EngineConfig:
    """Per-scenario settings of the simulation.

    ``round_s``: length of scheduling rounds (a decision point at each boundary; forking needs rounds).
    ``restart_s``: overhead a preempted job pays when it starts again, and a job pays on every ``Reallocate``.
    ``consolidation_s``: overhead a forked job pays at every round boundary. ``tick_s``: period of calibration
    ticks (decision points for Gimbal-style coordination). ``idle_tick_s``: how far time moves when the agent
    waits and nothing else is due.
    ``sample_stealing``: LISS, per-worker batches rebalanced so a job on unequal workers is not paced by the
    slowest: every job's initial setting (``SetStealing`` changes one job's). ``calibration_overhead_s``: pause
    a job pays when its share changes (Gimbal's LGRR switch).
    ``interference_scope``: what a colocated worker's interference ratio xi multiplies: ``"iteration"`` (the
    default, Castor eq. 4-5: ``t_iter * xi``, all-reduce included) or ``"compute"`` (only the compute term of
    eq. 1; the all-reduce runs at its solo speed, so large gangs barely feel sharing).
    ``topology_rule``: Gimbal's topology constraints as an engine check (``engine.action_checks``): every job on the
    fewest nodes its GPU types allow, a job colocates only with one larger job (world size), and equal world
    sizes only in balanced packing (the very same GPUs).
    ``max_idle_ticks``: consecutive decision points with nothing running and no arrival or completion (idle,
    round or calibration ticks) after which the episode is stalled.
    ``restart_on_allocation``: Hadar's rule, ``restart_s`` on *every* new allocation, a job's first start
    included (without it: only a start after a preemption and a ``Reallocate`` pay it).
    ``copy_startup_s``: time a new copy of a forked job (``Fork``, ``MoveCopy``) makes no progress after it
    starts (HadarE: the copy loads the job's consolidated parameters).
    ``share_step``: the MPS active-thread share grid, as a fraction of the GPU: every worker's share is a whole
    number of steps (:attr:`share_units` of them make 100%, one step is the least), and ``Squeeze`` / ``Swell``
    move a share by one step. 0.1 (10%, the default) or 0.05 (5%, for Gimbal §7.4's granularity study); any
    step cutting the GPU into 2 to :data:`MAX_SHARE_UNITS` equal parts is accepted.
    """

    round_s: float | None = None
    restart_s: float = 0.0
    consolidation_s: float = 0.0
    tick_s: float | None = None
    idle_tick_s: float = 60.0
    sample_stealing: bool = False
    calibration_overhead_s: float = 0.0
    max_idle_ticks: int = 100_000
    interference_scope: str = "iteration"
    topology_rule: bool = False
    restart_on_allocation: bool = False
    copy_startup_s: float = 0.0
    share_step: float = DEFAULT_SHARE_STEP

    @property
    def share_units(self) -> int:
        """Share steps in a whole GPU (``round(1 / share_step)``: 10 at 10%, 20 at 5%); the engine keeps every
        share as an integer number of steps, from 1 to this."""
        return round(1.0 / self.share_step)

    def __post_init__(self) -> None:
        for name in ("round_s", "tick_s"):
            v = getattr(self, name)
            if v is not None and not (v > 0):
                raise ValueError(f"EngineConfig.{name} must be positive or None, got {v!r}")
        for name in ("restart_s", "consolidation_s", "calibration_overhead_s", "copy_startup_s"):
            if not (getattr(self, name) >= 0):
                raise ValueError(f"EngineConfig.{name} must be >= 0")
        if self.interference_scope not in INTERFERENCE_SCOPES:
            raise ValueError(f"EngineConfig.interference_scope must be one of {', '.join(INTERFERENCE_SCOPES)}, "
                             f"got {self.interference_scope!r}")
        problem = share_grid_problem(self.share_step)
        if problem is not None:
            raise ValueError(f"EngineConfig.share_step {problem}")
        if not (self.idle_tick_s > 0):
            raise ValueError("EngineConfig.idle_tick_s must be positive")
