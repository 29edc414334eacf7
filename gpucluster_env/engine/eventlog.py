"""The episode's event log: every arrival, start, finish, preemption, calibration, fork and round, in order.

It holds enough to replay an episode exactly (which job held which GPUs when, with which accumulation) and to
check determinism (same seed, same log). Records are plain tuples while the episode runs; they become dicts
or JSON lines only when asked.

The hot records (a start, a squeeze or swell, a plain reallocation) are kept as tuples of numbers only,
``(time_s, kind, job, gpus as a tuple, accumulation or None)``, which the garbage collector stops tracking after
its first look: a month of Gavel's rounds logs some 190,000 starts, and their ``{"gpus": [...], ...}`` dicts and
lists, tracked for the whole episode, made every full collection walk them. :attr:`EventLog.records` turns them
into the ``(time_s, kind, job, extra)`` records with their dicts and lists when read, once each (the list grows
with the log), so every reader sees what it always did.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

Record = tuple[float, str, int, dict[str, Any] | None]
_Raw = tuple  # a record as kept: (t, kind, job, extra) or, for a GPU record, (t, kind, job, gpus, accumulation)


def _extra(rec: _Raw) -> dict[str, Any] | None:
    """The ``extra`` of a kept record: its dict, or a GPU record's ``{"gpus": [...]}`` (with ``accumulation``
    when it has one), a new dict and list each time."""
    if len(rec) == 4:
        return rec[3]
    if rec[4] is None:
        return {"gpus": list(rec[3])}
    return {"gpus": list(rec[3]), "accumulation": rec[4]}


class EventLog:
    """Append-only list of ``(time_s, kind, job, extra)`` records (:attr:`records`).

    A copy (``copy.deepcopy``, as :meth:`ClusterEngine.clone` takes one for a search's rollout) shares the records
    it starts from: records are never changed once added, so it keeps the original's list and how many of its
    records are its own (``_base``, ``_base_len``) and appends its new ones to a list of its own. The kept records
    are joined when first read, so a rollout that never reads its log never pays for the history it starts with."""

    def __init__(self, start: list[_Raw] | None = None) -> None:
        """An empty log, or (``start``) one whose first kept records are those of ``start`` now, shared, not
        copied."""
        self._own: list[_Raw] = []  # the records as kept (module docstring)
        self._base = start
        self._base_len = 0 if start is None else len(start)
        self._made: list[Record] = []  # records() of the kept records[:len(_made)]

    def _kept(self) -> list[_Raw]:
        """Every record as kept, in order (a copy's shared start joined to its own records on the first call)."""
        if self._base is not None:
            self._own = self._base[:self._base_len] + self._own
            self._base = None
        return self._own

    @property
    def records(self) -> list[Record]:
        """Every record so far as ``(time_s, kind, job, extra)``, ``extra`` a dict or None (the same list object
        from call to call, grown with the log; do not change it)."""
        made, kept = self._made, self._kept()
        if len(made) < len(kept):
            made.extend(r if len(r) == 4 else (r[0], r[1], r[2], _extra(r)) for r in kept[len(made):])
        return made

    @records.setter
    def records(self, value: list[Record]) -> None:
        self._own, self._base, self._base_len, self._made = list(value), None, 0, list(value)

    def add(self, t: float, kind: str, job: int, **extra: Any) -> None:
        self._own.append((t, kind, job, extra or None))

    def record(self, t: float, kind: str, job: int, extra: dict[str, Any] | None) -> None:
        """:meth:`add` with the extra fields as a dict already (or None)."""
        self._own.append((t, kind, job, extra))

    def gpus(self, t: float, kind: str, job: int, gl: list[int], accumulation: int | None = None) -> None:
        """A record whose extra is ``{"gpus": gl}`` (a copy of ``gl``), with ``"accumulation"`` unless it is
        None: the hot paths' form (a start, a share step), kept as numbers only (module docstring)."""
        self._own.append((t, kind, job, tuple(gl), accumulation))

    def gpu_events(self) -> Iterator[tuple[str, int, tuple[int, ...] | list[int] | None]]:
        """``(kind, job, gpus)`` of every record, ``gpus`` None where the record names none: what a reader of
        the GPUs held needs, without building the records' dicts."""
        for r in self._kept():
            if len(r) == 5:
                yield r[1], r[2], r[3]
            else:
                extra = r[3]
                yield r[1], r[2], (extra.get("gpus") if extra else None)

    def __deepcopy__(self, memo: dict[int, Any]) -> EventLog:
        """A copy that shares this log's records so far (they never change) and keeps its new ones apart."""
        return EventLog(self._kept())  # joined first if this log is itself a copy, so copies never chain

    def __getstate__(self) -> dict[str, Any]:
        return {"records": self.records}  # pickled as the records themselves, never a shared list

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.records = state["records"]

    def __len__(self) -> int:
        return len(self._own) + (self._base_len if self._base is not None else 0)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for r in self._kept():
            d: dict[str, Any] = {"t": r[0], "kind": r[1], "job": r[2]}
            extra = _extra(r)
            if extra:
                d.update(extra)
            yield d

    def to_jsonl(self) -> str:
        """One JSON object per line (times as exact floats, so a replay reproduces them bit for bit)."""
        return "\n".join(json.dumps(d, separators=(",", ":")) for d in self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EventLog) and self.records == other.records
