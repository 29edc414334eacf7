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
    """Append-only list of ``(time_s, kind, job, extra)`` records."""

    def __init__(self) -> None:
        self.records: list[tuple[float, str, int, dict[str, Any] | None]] = []

    def add(self, t: float, kind: str, job: int, **extra: Any) -> None:
        self.records.append((t, kind, job, extra or None))

    def record(self, t: float, kind: str, job: int, extra: dict[str, Any] | None) -> None:
        """:meth:`add` with the extra fields as a dict already (or None): the hot paths' form."""
        self.records.append((t, kind, job, extra))

    def __deepcopy__(self, memo: dict[int, Any]) -> EventLog:
        """A copy with its own list of the same records (records are never changed once added)."""
        out = EventLog()
        out.records = list(self.records)
        return out

    def __len__(self) -> int:
        return len(self.records)

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
