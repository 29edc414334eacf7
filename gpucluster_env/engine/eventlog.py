"""The episode's event log: every arrival, start, finish, preemption, calibration, fork and round, in order.

It holds enough to replay an episode exactly (which job held which GPUs when, with which accumulation) and to
check determinism (same seed, same log). Records are plain tuples while the episode runs; they become dicts
or JSON lines only when asked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


class EventLog:
    """Append-only list of ``(time_s, kind, job, extra)`` records.

    A copy (``copy.deepcopy``, as :meth:`ClusterEngine.clone` takes one for a search's rollout) shares the records
    it starts from: records are never changed once added, so it keeps the original's list and how many of its
    records are its own (``_base``, ``_base_len``) and appends its new ones to a list of its own. ``records`` joins
    the two when first read, so a rollout that never reads its log never pays for the history it starts with."""

    def __init__(self, start: list[tuple[float, str, int, dict[str, Any] | None]] | None = None) -> None:
        """An empty log, or (``start``) one whose first records are those of ``start`` now, shared, not copied."""
        self._own: list[tuple[float, str, int, dict[str, Any] | None]] = []
        self._base = start
        self._base_len = 0 if start is None else len(start)

    @property
    def records(self) -> list[tuple[float, str, int, dict[str, Any] | None]]:
        """Every record, in order (a copy's shared start joined to its own records on the first read)."""
        if self._base is not None:
            self._own = self._base[:self._base_len] + self._own
            self._base = None
        return self._own

    @records.setter
    def records(self, value: list[tuple[float, str, int, dict[str, Any] | None]]) -> None:
        self._own, self._base, self._base_len = value, None, 0

    def add(self, t: float, kind: str, job: int, **extra: Any) -> None:
        self._own.append((t, kind, job, extra or None))

    def record(self, t: float, kind: str, job: int, extra: dict[str, Any] | None) -> None:
        """:meth:`add` with the extra fields as a dict already (or None): the hot paths' form."""
        self._own.append((t, kind, job, extra))

    def __deepcopy__(self, memo: dict[int, Any]) -> EventLog:
        """A copy that shares this log's records so far (they never change) and keeps its new ones apart."""
        return EventLog(self.records)  # joined first if this log is itself a copy, so copies never chain

    def __getstate__(self) -> dict[str, Any]:
        return {"records": self.records}  # pickled as the records themselves, never a shared list

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.records = state["records"]

    def __len__(self) -> int:
        return len(self._own) + (self._base_len if self._base is not None else 0)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for t, kind, job, extra in self.records:
            d: dict[str, Any] = {"t": t, "kind": kind, "job": job}
            if extra:
                d.update(extra)
            yield d

    def to_jsonl(self) -> str:
        """One JSON object per line (times as exact floats, so a replay reproduces them bit for bit)."""
        return "\n".join(json.dumps(d, separators=(",", ":")) for d in self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EventLog) and self.records == other.records
