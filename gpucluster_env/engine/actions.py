"""The typed action vocabulary every agent speaks (DESIGN.md, "The action vocabulary").

Jobs are named by their engine index (the row of the episode's job table, sorted by submit time). GPU sets are
tuples of global GPU indices. ``accumulation=None`` lets the engine pick the smallest power-of-two gradient
accumulation factor whose memory fits.
"""

from __future__ import annotations

from dataclasses import dataclass


class ActionError(ValueError):
    """An action the engine cannot apply now; the message names the action and the reason."""


class StalledError(RuntimeError):
    """The episode cannot make progress: unfinished jobs, nothing running, and the agent keeps waiting."""


@dataclass(frozen=True)
class Wait:
    """Let time run to the next decision point."""


@dataclass(frozen=True)
class Place:
    """Start a pending job exclusively on free GPUs (gang). ``gpus`` names an exact set; otherwise the engine
    picks by its placement rule (fewest nodes first) among GPUs of ``gpu_type`` (``None``: the fastest type
    that fits, mixed types only if no single type has room)."""

    job: int
    gpu_type: str | None = None
    gpus: tuple[int, ...] | None = None
    accumulation: int | None = None


@dataclass(frozen=True)
class Colocate:
    """Start a pending job on GPUs already running one job (MPS sharing). Without ``gpus`` the engine takes
    the partner's GPUs (and free GPUs, if the partner has fewer than the job needs)."""

    job: int
    partner: int
    accumulation: int | None = None
    gpus: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Squeeze:
    """Lower a running job's MPS active-thread share by one 10% step (on ``gpus``, or all its GPUs)."""

    job: int
    gpus: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Swell:
    """Raise a running job's MPS active-thread share by one 10% step (on ``gpus``, or all its GPUs)."""

    job: int
    gpus: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Preempt:
    """Checkpoint a running job and return it to the queue; its next start pays the restart overhead."""

    job: int


@dataclass(frozen=True)
class Fork:
    """HadarE: start ``copies`` more copies of a running job on free GPUs of other nodes; progress adds up and
    every round boundary pays the consolidation overhead. ``gpus`` names the exact set of one copy."""

    job: int
    copies: int = 1
    gpus: tuple[int, ...] | None = None


@dataclass(frozen=True)
class SetStealing:
    """Gimbal's LISS for one job: turn lossless input sample stealing on or off (faster workers take samples
    from slower ones). A parameter change, so no pause; turning it on for a running job re-checks memory for
    the larger per-worker batches its faster workers then hold."""

    job: int
    on: bool



@dataclass(frozen=True)
class Reallocate:
    """Move a running, unforked job to another GPU set or GPU type in one action (Gavel's and Hadar's
    per-round allocations): its progress is kept, its old GPUs are freed and the new ones taken at once (a set
    overlapping the old one is allowed), and it pays ``restart_s`` of no progress. ``gpus`` names the exact
    set, whose size may differ from the job's only within its ``[min_gpus, max_gpus]`` (elastic jobs; see
    ``docs/engine.md``); without it the engine picks ``len(current GPUs)`` GPUs of ``gpu_type`` (``None``:
    the fastest type that fits) by its placement rule, counting the job's own GPUs as free.
    ``accumulation=None``: the smallest that fits there. ``batch``: a new per-GPU batch (Pollux's batch-size
    adaptation), its total on the new GPUs within the model's validated range
    (:func:`~gpucluster_env.catalog.pollux_efficiency.batch_range`); the job's work is stated at the batch it
    asked for, and at another total batch it progresses at its throughput times the statistical-efficiency
    gain (:func:`~gpucluster_env.catalog.pollux_efficiency.progress_gain`). A ``Reallocate`` to the job's own
    GPUs that only changes its batch (and accumulation) is a parameter change: no restart (AdaptDL rescales
    the batch in place). The batch holds until the job is preempted;
    ``Place`` starts a job at the batch it asked for."""

    job: int
    gpus: tuple[int, ...] | None = None
    gpu_type: str | None = None
    accumulation: int | None = None
    batch: int | None = None


@dataclass(frozen=True)
class DropCopy:
    """HadarE: stop copy ``copy`` (an index into the job's copies, ``ClusterView.copies_of``) of a forked job;
    its GPUs are freed and the job's remaining steps are split again among the copies left."""

    job: int
    copy: int


@dataclass(frozen=True)
class MoveCopy:
    """HadarE: move copy ``copy`` of a forked job to the free GPUs ``gpus`` (as many as the copy has, on nodes
    the job's other copies do not use, any GPU type); the moved copy pays ``copy_startup_s`` and the job's
    remaining steps are split again among its copies."""

    job: int
    copy: int
    gpus: tuple[int, ...]


Action = (Wait | Place | Colocate | Squeeze | Swell | Preempt | Fork | SetStealing | Reallocate | DropCopy
          | MoveCopy)
