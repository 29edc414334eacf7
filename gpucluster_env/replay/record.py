"""The episode record: a versioned JSON Lines file that says what a scheduler did and lets anyone replay it.

Format ``gpucluster-replay`` version 2 (docs/replay.md has the full description). One JSON object per line:

* line 1, the **header**: ``format``, ``version``, ``package_version``, ``scenario``, ``scenario_options``,
  ``seed``, ``policy``, ``policy_options``, ``env`` (the environment's keyword arguments that change what an
  action does), ``catalog`` (``default``, ``policy``: the one the policy's ``env_kwargs`` builds, or
  ``custom``), ``trace``, ``cluster`` (``[gpu_type, gpus]`` per node), ``jobs`` (per job: ``id``, ``model``,
  ``gpus``, ``submit_s``, ``iterations``).
* then, in the order they happened, **actions** ``{"kind": "act", "a": ...}`` (an int of the action space or a
  typed action as ``{"type": "place", "job": 3, "gpus": [0, 1], ...}``), **events** exactly as the engine's
  event log writes them (``{"t", "kind", "job", ...}``: arrive, start, finish, preempt, squeeze, swell, fork,
  round, reallocate, drop_copy, move_copy), and **rate samples** ``{"kind": "rate", "t": ..., "jobs": [[job,
  remaining, rate, xi, active_from], ...]}`` for the running jobs whose rate changed at ``t`` (what the
  replay's progress and xi columns show).
* last line, the **metrics**: ``{"kind": "metrics", ...}`` (the engine's episode metrics, plus ``steps``,
  ``actions``, ``events``). A file without it is incomplete.

A record is written to a temporary name beside its target and renamed when complete, so a reader never sees
half a file under the real name (:mod:`gpucluster_env.atomic_write`). A ``.gz`` suffix writes gzip; a reader
takes gzip by content, and reads a record once, within :data:`~gpucluster_env.input_files.MAX_INPUT_BYTES`,
a line at a time. Both readers check every line with the same rules: :func:`read_record` keeps every line as
a Python object (what ``--verify`` compares), :func:`open_record` keeps compact arrays (what the viewer holds:
:mod:`.record_arrays`).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any

from gpucluster_env.atomic_write import atomic_output
from gpucluster_env.engine import (
    Action,
    Colocate,
    DropCopy,
    Fork,
    MoveCopy,
    Place,
    Preempt,
    Reallocate,
    SetStealing,
    Squeeze,
    Swell,
    Wait,
)
from gpucluster_env.input_files import InputFileError, input_lines
from gpucluster_env.replay.record_arrays import RecordArrays
from gpucluster_env.replay.record_schema import (
    EVENT_KIND_NAMES,
    FROM_EVENT_KINDS,
    GPU_EVENT_KINDS,
    RECORD_FORMAT,
    RecordError,
    RecordInfo,
    check_header,
    is_int,
    is_num,
)

EVENT_KINDS = frozenset(EVENT_KIND_NAMES)

_TYPED: dict[str, type] = {"wait": Wait, "place": Place, "colocate": Colocate, "squeeze": Squeeze,
                           "swell": Swell, "preempt": Preempt, "fork": Fork, "reallocate": Reallocate,
                           "drop_copy": DropCopy, "move_copy": MoveCopy, "set_stealing": SetStealing}
_TYPE_NAME = {cls: name for name, cls in _TYPED.items()}


@dataclass
class Record(RecordInfo):
    """An episode record in memory, every line a Python object (what ``--verify`` compares; the viewer holds
    the compact :class:`~.record_arrays.RecordArrays` of :func:`open_record`). ``events`` are the event log's
    dicts; ``actions`` the actions in the form :func:`action_from_json` reads; ``steps[i]`` is how many
    events had been logged before action ``i`` (so action ``i`` caused events ``steps[i]:steps[i + 1]``);
    ``rates`` the rate samples. The header's keys and types are those of :data:`HEADER_FIELDS`."""

    header: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    rates: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    path: str = ""
    event_lines: list[int] = field(default_factory=list)
    """The file's line number of each event (for errors found when the events are replayed)."""
    rate_steps: list[int] = field(default_factory=list)
    """``rate_steps[i]``: how many actions came before rate sample ``i`` in the file."""

    @property
    def num_actions(self) -> int:
        """How many actions the record holds."""
        return len(self.actions)

    @property
    def num_events(self) -> int:
        """How many events the record holds."""
        return len(self.events)


def action_to_json(action: Any) -> Any:
    """An action as the record stores it: an int stays an int, a typed action becomes a dict with ``type``."""
    if isinstance(action, Action.__args__):  # type: ignore[attr-defined]
        out: dict[str, Any] = {"type": _TYPE_NAME[type(action)]}
        for f in fields(action):
            v = getattr(action, f.name)
            if v is not None:
                out[f.name] = [int(g) for g in v] if isinstance(v, tuple) else v
        return out
    try:
        return int(action)
    except (TypeError, ValueError):
        raise ValueError(f"cannot record action {action!r}: not an int or a typed action") from None


def action_from_json(a: Any) -> Any:
    """The action :func:`action_to_json` stored: an int, or the typed action."""
    if isinstance(a, int) and not isinstance(a, bool):
        return a
    if isinstance(a, dict) and a.get("type") in _TYPED:
        bad = next((k for k, v in a.items() if k != "type" and not _action_field_ok(k, v)), None)
        if bad is not None:
            raise ValueError(f"bad {a['type']} action {a}: {bad!r} must be "
                             f"{_ACTION_FIELD_TYPES.get(bad, 'an integer >= 0')}")
        kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in a.items() if k != "type"}
        try:
            return _TYPED[a["type"]](**kw)
        except TypeError as e:
            raise ValueError(f"bad {a['type']} action {a}: {e}") from None
    raise ValueError(f"not an action: {a!r}")


_ACTION_FIELD_TYPES = {"gpus": "a list of GPU indices", "gpu_type": "a GPU type name", "on": "true or false"}


def _action_field_ok(name: str, v: Any) -> bool:
    """Whether ``v`` is of the type a typed action's field ``name`` holds (every other field is an index or a
    count: an integer >= 0)."""
    if name == "gpus":
        return isinstance(v, list) and all(is_int(g) for g in v)
    if name == "gpu_type":
        return isinstance(v, str)
    if name == "on":
        return isinstance(v, bool)
    return is_int(v)


def event_dict(t: float, kind: str, job: int, extra: dict[str, Any] | None) -> dict[str, Any]:
    """An engine event-log record ``(t, kind, job, extra)`` as the record's event line (as ``EventLog`` writes
    it)."""
    d: dict[str, Any] = {"t": t, "kind": kind, "job": job}
    if extra:
        d.update(extra)
    return d


def jsonable(v: Any) -> Any:
    """``v`` with numpy scalars as Python numbers and NaN/inf as None (JSON has neither)."""
    if hasattr(v, "item") and not isinstance(v, list | dict | str):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def write_lines(path: str | Path, lines: list[dict[str, Any]]) -> Path:
    """Write ``lines`` as JSON Lines to ``path`` with :func:`~gpucluster_env.atomic_write.atomic_output` (a
    temporary file beside it, renamed when complete; a device or pipe is written straight into); gzip when
    ``path`` ends in ``.gz``. Returns the path."""
    path = Path(path)
    if not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as raw:
        out: IO[bytes] = raw
        with contextlib.ExitStack() as stack:
            if path.suffix == ".gz":
                out = stack.enter_context(gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0))
            for d in lines:
                out.write(json.dumps(d, separators=(",", ":"), allow_nan=False).encode())
                out.write(b"\n")
    return path


def read_record(path: str | Path) -> Record:
    """Read and check a record into memory, every line a Python object (what ``--verify`` compares);
    :class:`RecordError` names the file and the first bad line. :func:`open_record` holds less."""
    path = Path(path)
    rec = Record(header={}, path=str(path))
    for n, kind, d in _checked_lines(path, keep_actions=True):
        if kind == "act":
            rec.actions.append(d)
            rec.steps.append(len(rec.events))
        elif kind == "rate":
            rec.rates.append(d)
            rec.rate_steps.append(len(rec.actions))
        elif kind == "metrics":
            rec.metrics = d
        elif kind == "header":
            rec.header = d
        else:
            rec.events.append(d)
            rec.event_lines.append(n)
    return rec


def open_record(path: str | Path) -> RecordArrays:
    """Read and check a record as :func:`read_record` does, line by line, into compact arrays
    (:class:`~.record_arrays.RecordArrays`): what the viewer holds, a few dozen bytes per event instead of a
    few KB per job, and never the whole file."""
    path = Path(path)
    out = RecordArrays({}, str(path))
    for n, kind, d in _checked_lines(path, keep_actions=False):
        if kind == "act":
            out.num_actions += 1
        elif kind == "rate":
            out.rates.add(d)
        elif kind == "metrics":
            out.metrics = d
        elif kind == "header":
            out = RecordArrays.start(d, str(path))
        else:
            out.events.add(d, n)
    return out.freeze()


_LINE_KEYS = {"act": frozenset({"kind", "a"}), "rate": frozenset({"kind", "t", "jobs"})}
_METRIC_TYPES = {"end": "'terminated', 'truncated' or 'wrapper'"}
_SAME_ACTIONS = 4096
"""At most this many distinct short action lines (``{"kind":"act","a":{"type":"wait"}}``, …) are remembered
as checked, so a line seen before is not parsed again when its action is not kept."""


def _checked_lines(path: Path, keep_actions: bool) -> Iterator[tuple[int, str, Any]]:
    """The lines of the record at ``path``, each checked, as (line number, kind, content): ``("header",
    header)`` first, then in file order ``("act", a)`` (None unless ``keep_actions``), ``("rate", line)``, the
    events (their kind and dict), and last ``("metrics", metrics)``; :class:`RecordError` names the file and
    the first bad line. The file is streamed (:func:`~gpucluster_env.input_files.input_lines`)."""
    name = str(path)
    check: _LineCheck | None = None
    seen: set[str] = set()
    n = 0
    try:
        for n, raw in enumerate(input_lines(path, gunzip=True), start=1):
            if check is not None and check.metrics:
                raise RecordError(f"{name}: line {n}: content after the final metrics line")
            if raw in seen:
                yield n, "act", None
                continue
            d = _parse(raw, name, n)
            if check is None:
                check = _LineCheck(check_header(d, name), name)
                yield n, "header", d
                continue
            kind = check.line(d, n)
            if kind == "act" and not keep_actions and len(raw) < 120 and len(seen) < _SAME_ACTIONS:
                seen.add(raw)
            yield n, kind, check.metrics if kind == "metrics" else d["a"] if kind == "act" else d
    except InputFileError as e:
        raise RecordError(str(e)) from None
    if check is None:
        raise RecordError(f"{name}: line 1: empty file, expected a {RECORD_FORMAT} header")
    if not check.metrics:
        raise RecordError(f"{name}: line {n}: file ends without its metrics line (truncated record?)")


def _parse(raw: str, name: str, n: int) -> dict[str, Any]:
    """Line ``n`` as a JSON object."""
    try:
        d = json.loads(raw)
    except json.JSONDecodeError as e:
        raise RecordError(f"{name}: line {n}: not valid JSON ({e.msg}, column {e.colno})") from None
    except RecursionError:
        raise RecordError(f"{name}: line {n}: not valid JSON (nested too deeply)") from None
    if not isinstance(d, dict):
        raise RecordError(f"{name}: line {n}: expected a JSON object, got {type(d).__name__}")
    return d


def _metric_ok(key: str, v: Any) -> bool:
    """A version 2 metrics line's value: the engine's metrics and the counts are numbers (NaN written null),
    ``end`` says how the episode ended."""
    if key == "end":
        return v in ("terminated", "truncated", "wrapper")
    return v is None or is_num(v)


def _rate_entry_ok(x: Any, n_jobs: int) -> bool:
    """``[job, remaining, rate, xi, active_from]`` of a rate sample."""
    return (isinstance(x, list) and len(x) == 5 and is_int(x[0]) and x[0] < n_jobs and is_num(x[1])
            and is_num(x[2]) and (x[3] is None or is_num(x[3])) and is_num(x[4]))


class _LineCheck:
    """The checks of a record's lines after its header, with what they need to remember: the header's job
    and GPU counts and version, the time of the last event, and the metrics once read."""

    def __init__(self, header: dict[str, Any], name: str) -> None:
        self.name = name
        self.n_jobs = len(header["jobs"])
        self.n_gpus = sum(int(node[1]) for node in header["cluster"])
        self.version = int(header["version"])
        self.last_t: float | None = None
        self.metrics: dict[str, Any] = {}

    def line(self, d: dict[str, Any], n: int) -> str:
        """The kind of line ``d`` (line ``n``) once checked: ``act``, ``rate``, ``metrics`` or an event's."""
        name, kind = self.name, d.get("kind")
        if kind in _LINE_KEYS and not d.keys() <= _LINE_KEYS[kind]:
            extra = ", ".join(repr(k) for k in d if k not in _LINE_KEYS[kind])
            raise RecordError(f"{name}: line {n}: {kind} line with unknown key(s) {extra}")
        if kind == "act":
            if "a" not in d:
                raise RecordError(f"{name}: line {n}: action line without 'a'")
            try:
                action_from_json(d["a"])
            except ValueError as e:
                raise RecordError(f"{name}: line {n}: {e}") from None
        elif kind == "rate":
            self._rate(d, n)
        elif kind == "metrics":
            self._metrics(d, n)
        elif kind in EVENT_KINDS:
            self._event(d, n, kind)
        else:
            raise RecordError(f"{name}: line {n}: unknown line kind {kind!r}")
        return kind

    def _rate(self, d: dict[str, Any], n: int) -> None:
        if not is_num(d.get("t")) or not isinstance(d.get("jobs"), list):
            raise RecordError(f"{self.name}: line {n}: rate sample needs 't' and 'jobs'")
        bad = next((i for i, x in enumerate(d["jobs"]) if not _rate_entry_ok(x, self.n_jobs)), None)
        if bad is not None:
            raise RecordError(f"{self.name}: line {n}: rate sample entry {bad} is not [job, remaining, rate, xi, "
                              f"active_from] (a job index, numbers, xi a number or null): "
                              f"{json.dumps(d['jobs'][bad])[:80]}")

    def _metrics(self, d: dict[str, Any], n: int) -> None:
        if self.version >= 2:
            bad = next((k for k, v in d.items() if k != "kind" and not _metric_ok(k, v)), None)
            if bad is not None:
                raise RecordError(f"{self.name}: line {n}: metric {bad!r}: expected "
                                  f"{_METRIC_TYPES.get(bad, 'a number or null')}, got {json.dumps(d[bad])[:80]}")
        self.metrics = {k: v for k, v in d.items() if k != "kind"}

    def _event(self, d: dict[str, Any], n: int, kind: str) -> None:
        name = self.name
        t, job = d.get("t"), d.get("job")
        if not isinstance(t, int | float) or not isinstance(job, int) or not -1 <= job < self.n_jobs:
            raise RecordError(f"{name}: line {n}: {kind} event needs a time 't' and a job index 'job'")
        if self.last_t is not None and t < self.last_t:
            raise RecordError(f"{name}: line {n}: event time {t} goes back in time")
        self.last_t = t
        if kind in GPU_EVENT_KINDS:
            for key in ("gpus", "from") if "from" in d and kind in FROM_EVENT_KINDS else ("gpus",):
                gpus = d.get(key)
                if not isinstance(gpus, list) or not gpus:
                    raise RecordError(f"{name}: line {n}: {kind} event without its {key!r}" if key == "gpus" else
                                      f"{name}: line {n}: {kind} event's 'from' is not a list of GPUs")
                if not all(isinstance(g, int) and 0 <= g < self.n_gpus for g in gpus):
                    raise RecordError(f"{name}: line {n}: {kind} event names a GPU outside the cluster's "
                                      f"{self.n_gpus}")
