"""The episode's counts of decisions, actions and the changes they made (``EngineState.counts``, read by the
metrics and the environment as ``eng.counts``). :class:`Counters` is their one writer: the other parts count
through its named methods."""

from __future__ import annotations

from .state import EngineState


class Counters:
    """The one writer of ``EngineState.counts``: one method per thing counted."""

    def __init__(self, state: EngineState) -> None:
        self.state = state

    def decision(self) -> None:
        """The clock was asked for the next decision point (``advance``)."""
        self.state.counts["decisions"] += 1

    def action(self) -> None:
        """An action was sent to the engine (applied or refused)."""
        self.state.counts["actions"] += 1

    def colocation(self) -> None:
        """A job started, or moved by a reallocation, on GPUs another job holds."""
        self.state.counts["colocations"] += 1

    def preemption(self) -> None:
        """A running job went back to the queue."""
        self.state.counts["preemptions"] += 1

    def forks(self, n: int) -> None:
        """``n`` more copies of a job started (one ``Fork`` action)."""
        self.state.counts["forks"] += n

    def share_step(self, step: int) -> None:
        """A squeeze (``step`` -1) or a swell (+1) of a job's MPS share."""
        self.state.counts["squeezes" if step < 0 else "swells"] += 1

    def reallocation(self) -> None:
        """A running job moved to other GPUs (or resized), paying a restart."""
        self.state.counts["reallocations"] += 1

    def copy_drop(self) -> None:
        """A copy of a forked job stopped."""
        self.state.counts["copy_drops"] += 1

    def copy_move(self) -> None:
        """A copy of a forked job moved to other GPUs."""
        self.state.counts["copy_moves"] += 1
