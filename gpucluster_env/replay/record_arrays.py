"""A record as the viewer holds it: compact arrays instead of one Python object per line, so that a replay of
100,000 jobs fits in a small, bounded memory (docs/replay.md, "Speed").

* :class:`JobTable`: the header's job table as columns (model codes, GPUs, submit times, iterations).
* :class:`EventArrays`: every event's time, kind, job and GPUs (flat, with offsets) and its file line.
* :class:`RateArrays`: every rate sample entry, grouped by job in time order.
* :class:`RecordArrays`: the three with the header and metrics; :func:`~.record.open_record` streams a file
  into one, :func:`as_arrays` converts a :class:`~.record.Record` already in memory.

Nothing here checks a record: :mod:`.record` does, line by line, before a line is added.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpucluster_env.replay.record_schema import EVENT_KIND_NAMES, FROM_EVENT_KINDS, GPU_EVENT_KINDS, RecordInfo

if TYPE_CHECKING:
    from gpucluster_env.replay.record import Record

KIND_CODE = {k: i for i, k in enumerate(EVENT_KIND_NAMES)}
_CHUNK = 1 << 15
"""Events turned into Python values at a time when they are walked (:meth:`EventArrays.rows`)."""

Row = tuple[float, str, int, list[int] | None, list[int] | None]
"""An event as :meth:`EventArrays.rows` gives it: time, kind, job, its ``gpus`` and its ``from`` (None when the
event has none)."""


def _frozen(a: array) -> np.ndarray:
    """The numpy view of a filled :class:`array.array` (no copy)."""
    return np.frombuffer(a, dtype=a.typecode) if len(a) else np.zeros(0, dtype=a.typecode)


class JobTable:
    """The header's jobs as columns: ``len()`` of it, and ``table[j]`` gives job ``j`` as the header's dict
    of ``model``, ``gpus``, ``submit_s`` and ``iterations`` (its ``id`` is not kept)."""

    def __init__(self, jobs: list[dict[str, Any]]) -> None:
        names: dict[str, int] = {}
        self.model_code = np.array([names.setdefault(j["model"], len(names)) for j in jobs], dtype=np.int32)
        self.models = list(names)
        self.gpus = np.array([j["gpus"] for j in jobs], dtype=np.int64)
        self.submit_s = np.array([j["submit_s"] for j in jobs], dtype=np.float64)
        self.iterations = np.array([j["iterations"] for j in jobs], dtype=np.float64)

    def __len__(self) -> int:
        return len(self.submit_s)

    def __getitem__(self, j: int) -> dict[str, Any]:
        return {"model": self.models[self.model_code[j]], "gpus": int(self.gpus[j]),
                "submit_s": float(self.submit_s[j]), "iterations": float(self.iterations[j])}

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays."""
        return sum(a.nbytes for a in (self.model_code, self.gpus, self.submit_s, self.iterations))


class EventArrays:
    """The events, in order: ``t``, ``kind`` (codes of :data:`~.record_schema.EVENT_KIND_NAMES`), ``job``,
    ``gpu_off``/``gpus`` (event ``i``'s GPUs are ``gpus[gpu_off[i]:gpu_off[i + 1]]``), ``line`` (the file's
    line, 0 when not from a file); ``moved_from``: the ``from`` of the few events that have one. Filled with
    :meth:`add`, then :meth:`freeze` makes the columns numpy arrays. ``events[i]`` is event ``i`` as the
    record's dict (its time, kind, job, ``gpus`` and ``from``)."""

    def __init__(self) -> None:
        self._cols = {"t": array("d"), "kind": array("b"), "job": array("i"), "gpu_off": array("q", [0]),
                      "gpus": array("i"), "line": array("i")}
        self.moved_from: dict[int, list[int]] = {}
        self.t = self.kind = self.job = self.gpu_off = self.gpus = self.line = np.zeros(0)

    def add(self, d: dict[str, Any], line: int) -> None:
        """Append event ``d`` (a checked event line) read from line ``line``."""
        c = self._cols
        kind = d["kind"]
        if "from" in d and kind in FROM_EVENT_KINDS:
            self.moved_from[len(c["t"])] = list(d["from"])
        c["t"].append(d["t"])
        c["kind"].append(KIND_CODE[kind])
        c["job"].append(d["job"])
        if kind in GPU_EVENT_KINDS:
            c["gpus"].extend(d["gpus"])
        c["gpu_off"].append(len(c["gpus"]))
        c["line"].append(line)

    def freeze(self) -> EventArrays:
        """Make the columns numpy arrays; returns itself."""
        for name, a in self._cols.items():
            setattr(self, name, _frozen(a))
        return self

    def __len__(self) -> int:
        return len(self.t)

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays (the few ``from`` lists not counted)."""
        return sum(getattr(self, name).nbytes for name in self._cols)

    def rows(self, start: int, stop: int) -> Iterator[Row]:
        """Events ``start`` to ``stop`` (excluded) as plain Python values, a chunk at a time."""
        for a in range(start, stop, _CHUNK):
            b = min(stop, a + _CHUNK)
            off = self.gpu_off[a:b + 1].tolist()
            base = off[0]
            flat = self.gpus[base:off[-1]].tolist()
            kinds = self.kind[a:b].tolist()
            for k, (t, code, j) in enumerate(zip(self.t[a:b].tolist(), kinds, self.job[a:b].tolist(), strict=True)):
                kind = EVENT_KIND_NAMES[code]
                gpus = flat[off[k] - base:off[k + 1] - base] if kind in GPU_EVENT_KINDS else None
                yield t, kind, j, gpus, self.moved_from.get(a + k)

    def __getitem__(self, i: int) -> dict[str, Any]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"event {i} of {len(self)}")
        t, kind, j, gpus, frm = next(self.rows(i % len(self), i % len(self) + 1))
        d: dict[str, Any] = {"t": t, "kind": kind, "job": j}
        if gpus is not None:
            d["gpus"] = gpus
        if frm is not None:
            d["from"] = frm
        return d

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[i] for i in range(len(self)))


class RateArrays:
    """The rate samples' entries ``[job, remaining, rate, xi, active_from]`` with their sample's time, grouped
    by job (each job's in time order): job ``j``'s are rows ``off[j]:off[j + 1]`` of ``t``, ``remaining``,
    ``rate``, ``xi`` (NaN for null) and ``active_from``. Filled with :meth:`add`, then :meth:`freeze`."""

    _NAMES = ("job", "t", "remaining", "rate", "xi", "active_from")

    def __init__(self) -> None:
        self._cols = {name: array("i" if name == "job" else "d") for name in self._NAMES}
        self.lines = 0
        self.off = np.zeros(1, dtype=np.int64)
        self.t = self.remaining = self.rate = self.xi = self.active_from = np.zeros(0)

    def add(self, d: dict[str, Any]) -> None:
        """Append the entries of rate sample ``d`` (a checked rate line)."""
        c = self._cols
        t = d["t"]
        for j, rem, rate, xi, af in d["jobs"]:
            c["job"].append(j)
            c["t"].append(t)
            c["remaining"].append(rem)
            c["rate"].append(rate)
            c["xi"].append(math.nan if xi is None else xi)
            c["active_from"].append(af)
        self.lines += 1

    def freeze(self, n_jobs: int) -> RateArrays:
        """Group the entries by job (a stable sort keeps each job's in time order); returns itself."""
        job = _frozen(self._cols.pop("job"))
        order = np.argsort(job, kind="stable")
        for name, a in self._cols.items():
            setattr(self, name, _frozen(a)[order])
        self.off = np.concatenate([[0], np.cumsum(np.bincount(job, minlength=n_jobs))]).astype(np.int64)
        self._cols = {}
        return self

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays."""
        return sum(getattr(self, name).nbytes for name in self._NAMES[1:]) + self.off.nbytes

    def sample(self, j: int, t: float) -> tuple[float, float, float, float | None, float] | None:
        """Job ``j``'s last rate sample at or before ``t``: (its time, remaining, rate, xi or None,
        active_from); None when it has none by then."""
        lo, hi = int(self.off[j]), int(self.off[j + 1])
        k = lo + int(np.searchsorted(self.t[lo:hi], t, side="right")) - 1
        if k < lo:
            return None
        xi = float(self.xi[k])
        return (float(self.t[k]), float(self.remaining[k]), float(self.rate[k]), None if math.isnan(xi) else xi,
                float(self.active_from[k]))


@dataclass
class RecordArrays(RecordInfo):
    """A checked record held compactly for viewing (no action, and no event or rate sample, as a Python
    object). ``header`` is the record's, with ``jobs`` the :class:`JobTable`; ``num_actions``: how many
    actions the record holds; ``metrics``: its metrics line."""

    header: dict[str, Any]
    path: str = ""
    events: EventArrays = field(default_factory=EventArrays)
    rates: RateArrays = field(default_factory=RateArrays)
    metrics: dict[str, Any] = field(default_factory=dict)
    num_actions: int = 0

    @classmethod
    def start(cls, header: dict[str, Any], path: str) -> RecordArrays:
        """An empty one for a checked ``header`` (its job table made columns)."""
        return cls({**header, "jobs": JobTable(header["jobs"])}, path)

    @property
    def jobs(self) -> JobTable:
        """The job table."""
        return self.header["jobs"]

    @property
    def event_lines(self) -> np.ndarray:  # type: ignore[override]
        """The file line of each event."""
        return self.events.line

    @property
    def num_events(self) -> int:
        """How many events the record holds."""
        return len(self.events)

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays: what holding the record costs beyond its header's other keys."""
        return self.jobs.nbytes + self.events.nbytes + self.rates.nbytes

    def freeze(self) -> RecordArrays:
        """Make the filled columns numpy arrays; returns itself."""
        self.events.freeze()
        self.rates.freeze(len(self.jobs))
        return self


def as_arrays(rec: Record | RecordArrays) -> RecordArrays:
    """``rec`` as :class:`RecordArrays` (itself when it is one; a :class:`~.record.Record` converted)."""
    if isinstance(rec, RecordArrays):
        return rec
    out = RecordArrays.start(rec.header, rec.path)
    lines = rec.event_lines if len(rec.event_lines) == len(rec.events) else [0] * len(rec.events)
    for d, n in zip(rec.events, lines, strict=True):
        out.events.add(d, n)
    for d in rec.rates:
        out.rates.add(d)
    out.metrics, out.num_actions = rec.metrics, len(rec.actions)
    return out.freeze()
