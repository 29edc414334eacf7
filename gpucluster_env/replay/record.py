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
takes gzip by content, and reads a record once, within :data:`~gpucluster_env.input_files.MAX_INPUT_BYTES`.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
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
from gpucluster_env.input_files import InputFileError, read_text
from gpucluster_env.replay.record_schema import (
    RECORD_FORMAT,
    RecordError,
    check_header,
    is_int,
    is_num,
)

EVENT_KINDS = frozenset({"arrive", "start", "finish", "preempt", "squeeze", "swell", "fork", "round", "reallocate",
                         "drop_copy", "move_copy"})

_TYPED: dict[str, type] = {"wait": Wait, "place": Place, "colocate": Colocate, "squeeze": Squeeze,
                           "swell": Swell, "preempt": Preempt, "fork": Fork, "reallocate": Reallocate,
                           "drop_copy": DropCopy, "move_copy": MoveCopy, "set_stealing": SetStealing}
_TYPE_NAME = {cls: name for name, cls in _TYPED.items()}


@dataclass
class Record:
    """An episode record in memory. ``events`` are the event log's dicts; ``actions`` the actions in the form
    :func:`action_from_json` reads; ``steps[i]`` is how many events had been logged before action ``i`` (so
    action ``i`` caused events ``steps[i]:steps[i + 1]``); ``rates`` the rate samples. The header's keys
    and types are those of :data:`HEADER_FIELDS`."""

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
    def num_gpus(self) -> int:
        return sum(int(n[1]) for n in self.header["cluster"])

    def error(self, event: int, message: str) -> RecordError:
        """A :class:`RecordError` about event ``event``, naming its line when the record came from a file."""
        where = f"line {self.event_lines[event]}" if event < len(self.event_lines) else f"event {event}"
        return RecordError(f"{self.path or 'record'}: {where}: {message}")

    @property
    def version(self) -> int:
        return int(self.header["version"])

    @property
    def title(self) -> str:
        """``scenario · policy · seed N``: what the record is of, in one line."""
        h = self.header
        return f"{h['scenario']} · {h['policy']} · seed {h['seed']}"


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
    """Read and check a record; :class:`RecordError` names the file and the first bad line."""
    path = Path(path)
    name = str(path)
    try:
        text = read_text(path, gunzip=True)  # once, bounded, strict UTF-8, gzip by content
    except InputFileError as e:
        raise RecordError(str(e)) from None
    rec: Record | None = None
    n = 0
    for n, raw in enumerate(io.StringIO(text), start=1):
        if rec is not None and rec.metrics:
            raise RecordError(f"{name}: line {n}: content after the final metrics line")
        try:
            d = json.loads(raw)
        except json.JSONDecodeError as e:
            raise RecordError(f"{name}: line {n}: not valid JSON ({e.msg}, column {e.colno})") from None
        except RecursionError:
            raise RecordError(f"{name}: line {n}: not valid JSON (nested too deeply)") from None
        if not isinstance(d, dict):
            raise RecordError(f"{name}: line {n}: expected a JSON object, got {type(d).__name__}")
        if rec is None:
            rec = Record(header=check_header(d, name), path=name)
            n_gpus = rec.num_gpus
        else:
            _add_line(rec, d, name, n, n_gpus)
    if rec is None:
        raise RecordError(f"{name}: line 1: empty file, expected a {RECORD_FORMAT} header")
    if not rec.metrics:
        raise RecordError(f"{name}: line {n}: file ends without its metrics line (truncated record?)")
    return rec


_LINE_KEYS = {"act": frozenset({"kind", "a"}), "rate": frozenset({"kind", "t", "jobs"})}
_METRIC_TYPES = {"end": "'terminated', 'truncated' or 'wrapper'"}


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


def _add_line(rec: Record, d: dict[str, Any], name: str, n: int, n_gpus: int) -> None:
    kind = d.get("kind")
    n_jobs = len(rec.header["jobs"])
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
        rec.actions.append(d["a"])
        rec.steps.append(len(rec.events))
    elif kind == "rate":
        if not is_num(d.get("t")) or not isinstance(d.get("jobs"), list):
            raise RecordError(f"{name}: line {n}: rate sample needs 't' and 'jobs'")
        bad = next((i for i, x in enumerate(d["jobs"]) if not _rate_entry_ok(x, n_jobs)), None)
        if bad is not None:
            raise RecordError(f"{name}: line {n}: rate sample entry {bad} is not [job, remaining, rate, xi, "
                              f"active_from] (a job index, numbers, xi a number or null): "
                              f"{json.dumps(d['jobs'][bad])[:80]}")
        rec.rates.append(d)
        rec.rate_steps.append(len(rec.actions))
    elif kind == "metrics":
        if rec.version >= 2:
            bad_metric = next((k for k, v in d.items() if k != "kind" and not _metric_ok(k, v)), None)
            if bad_metric is not None:
                raise RecordError(f"{name}: line {n}: metric {bad_metric!r}: expected "
                                  f"{_METRIC_TYPES.get(bad_metric, 'a number or null')}, got "
                                  f"{json.dumps(d[bad_metric])[:80]}")
        rec.metrics = {k: v for k, v in d.items() if k != "kind"}
    elif kind in EVENT_KINDS:
        t, job = d.get("t"), d.get("job")
        if not isinstance(t, int | float) or not isinstance(job, int) or not -1 <= job < n_jobs:
            raise RecordError(f"{name}: line {n}: {kind} event needs a time 't' and a job index 'job'")
        if rec.events and t < rec.events[-1]["t"]:
            raise RecordError(f"{name}: line {n}: event time {t} goes back in time")
        if kind in ("start", "fork", "squeeze", "swell", "reallocate", "drop_copy", "move_copy"):
            gpus = d.get("gpus")
            if not isinstance(gpus, list) or not gpus:
                raise RecordError(f"{name}: line {n}: {kind} event without its 'gpus'")
            if not all(isinstance(g, int) and 0 <= g < n_gpus for g in gpus):
                raise RecordError(f"{name}: line {n}: {kind} event names a GPU outside the cluster's {n_gpus}")
        rec.events.append(d)
        rec.event_lines.append(n)
    else:
        raise RecordError(f"{name}: line {n}: unknown line kind {kind!r}")
