"""What an episode record's header may hold (:mod:`gpucluster_env.replay.record`; docs/replay.md): the format's
name and versions, every header field of version 2 with its type (and the keys of version 1), the check that
names the first field that is not as it should be, the JSON value checks the readers of a record's other lines
share, and :class:`RecordError`, what a bad record raises."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

RECORD_FORMAT = "gpucluster-replay"
RECORD_VERSION = 2
READABLE_VERSIONS = (1, 2)
EVENT_KIND_NAMES = ("arrive", "start", "finish", "preempt", "squeeze", "swell", "fork", "round", "reallocate",
                    "drop_copy", "move_copy")
"""The kinds of event a record holds (the engine's event log), in the order their codes number them."""
GPU_EVENT_KINDS = frozenset({"start", "fork", "squeeze", "swell", "reallocate", "drop_copy", "move_copy"})
"""The kinds of event that name the GPUs they act on (``gpus``)."""
FROM_EVENT_KINDS = frozenset({"drop_copy", "move_copy"})
"""The kinds of event that may name the GPUs they leave (``from``; without it, a copy leaves its ``gpus``)."""


class RecordError(ValueError):
    """A record that cannot be read: the message names the file and the line."""


class RecordInfo:
    """What every form of a read record answers from its header (``header``), its ``path`` and the file line
    of each event (``event_lines``): the in-memory :class:`~.record.Record` and the viewer's compact
    :class:`~.record_arrays.RecordArrays`."""

    header: dict[str, Any]
    path: str
    event_lines: Any

    @property
    def num_gpus(self) -> int:
        """The GPUs of the recorded cluster."""
        return sum(int(n[1]) for n in self.header["cluster"])

    @property
    def version(self) -> int:
        """The record format's version."""
        return int(self.header["version"])

    @property
    def title(self) -> str:
        """``scenario · policy · seed N``: what the record is of, in one line."""
        h = self.header
        return f"{h['scenario']} · {h['policy']} · seed {h['seed']}"

    def error(self, event: int, message: str) -> RecordError:
        """A :class:`RecordError` about event ``event``, naming its line when the record came from a file."""
        line = int(self.event_lines[event]) if event < len(self.event_lines) else 0
        where = f"line {line}" if line > 0 else f"event {event}"
        return RecordError(f"{self.path or 'record'}: {where}: {message}")


def is_int(v: Any, lo: int = 0) -> bool:
    """An integer (not a bool) of at least ``lo``, as JSON gives it."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def is_num(v: Any) -> bool:
    """A finite number (not a bool), as JSON gives it."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def is_dict(v: Any) -> bool:
    """A JSON object."""
    return isinstance(v, dict)


def is_str(v: Any) -> bool:
    """A JSON string."""
    return isinstance(v, str)


@dataclass(frozen=True)
class _Field:
    """One header key: whether every version 2 record has it, the check of its value, and what it accepts."""

    required: bool
    ok: Any
    accepts: str


_ENV_FIELDS: dict[str, _Field] = {
    "n_pending": _Field(True, lambda v: is_int(v, 1), "a positive integer"),
    "n_running": _Field(True, lambda v: is_int(v, 1), "a positive integer"),
    "n_accum": _Field(True, lambda v: is_int(v, 1), "a positive integer"),
    "observation": _Field(True, is_str, "a string"),
    "objective": _Field(True, is_str, "a string"),
    "reward_scale": _Field(True, lambda v: is_num(v) and v > 0, "a positive number"),
    "invalid_action": _Field(True, is_str, "a string"),
    "actions": _Field(True, lambda v: isinstance(v, list) and all(map(is_str, v)), "a list of action kinds"),
    "max_sim_time_s": _Field(True, lambda v: v is None or (is_num(v) and v > 0), "a positive number or null"),
    # written since the record carried them; a record without them was made with the environment's defaults
    "action_layout": _Field(False, is_str, "a string"),
    "min_run_s": _Field(False, lambda v: is_num(v) and v >= 0, "a number >= 0"),
    "pending_order": _Field(False, is_str, "a string"),
    "max_steps": _Field(False, lambda v: is_int(v, 1), "a positive integer"),  # only in step-limited runs
}
"""The environment settings a record's ``env`` holds (:func:`~gpucluster_env.replay.recorder.env_settings`)."""

_JOB_FIELDS: dict[str, _Field] = {
    "id": _Field(True, lambda v: v is None or is_str(v) or is_int(v, -(2**63)), "a string or an integer"),
    "model": _Field(True, is_str, "a model name"),
    "gpus": _Field(True, lambda v: is_int(v, 1), "a positive integer"),
    "submit_s": _Field(True, lambda v: is_num(v) and v >= 0, "a number of seconds >= 0"),
    "iterations": _Field(True, lambda v: is_num(v) and v > 0, "a positive number"),
}


def _is_node(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 2 and is_str(v[0]) and is_int(v[1], 1)


HEADER_FIELDS: dict[str, _Field] = {
    "format": _Field(True, lambda v: v == RECORD_FORMAT, f"{RECORD_FORMAT!r}"),
    "version": _Field(True, lambda v: is_int(v) and v in READABLE_VERSIONS, "a record version"),
    "package_version": _Field(True, is_str, "a version string"),
    "versions": _Field(False, lambda v: is_dict(v) and all(x is None or is_str(x) for x in v.values()),
                       "an object of package versions"),
    "scenario": _Field(True, is_str, "a scenario name"),
    "scenario_options": _Field(True, is_dict, "an object of scenario options"),
    "scenario_spec": _Field(False, is_str, "a scenario as TOML text"),
    "seed": _Field(True, lambda v: v is None or is_int(v), "an integer >= 0 or null"),
    "rng_state": _Field(False, lambda v: is_dict(v) and is_str(v.get("bit_generator")),
                        "a numpy bit generator state"),
    "policy": _Field(True, is_str, "a policy name"),
    "policy_options": _Field(True, is_dict, "an object of policy options"),
    "env": _Field(True, is_dict, "an object of environment settings"),
    "catalog": _Field(True, lambda v: v in ("default", "policy", "custom"), "'default', 'policy' or 'custom'"),
    "trace": _Field(True, lambda v: v is None or is_str(v), "a string"),
    "cluster": _Field(True, lambda v: isinstance(v, list) and len(v) > 0 and all(map(_is_node, v)),
                      "a list of [gpu_type, gpus] nodes"),
    "share_step": _Field(False, lambda v: is_num(v) and 0 < v <= 1, "a number in (0, 1]"),
    "jobs": _Field(True, lambda v: isinstance(v, list) and all(map(is_dict, v)), "a list of job objects"),
}
"""Every key of a version 2 header, typed: a key not here is refused by name (docs/replay.md)."""

_V1_KEYS = ("format", "version", "scenario", "options", "policy", "policy_options", "seed", "trace", "cluster",
            "jobs")


def _check_fields(d: dict[str, Any], spec: dict[str, _Field], where: str) -> None:
    """Every key of ``d`` known to ``spec``, the required ones there, each value of its type; else
    :class:`RecordError` naming the first key that is not."""
    unknown = [k for k in d if k not in spec]
    if unknown:
        raise RecordError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(spec)}")
    missing = [k for k, f in spec.items() if f.required and k not in d]
    if missing:
        raise RecordError(f"{where}: lacks {', '.join(map(repr, missing))}")
    for k, f in spec.items():
        if k in d and not f.ok(d[k]):
            raise RecordError(f"{where}: {k!r}: expected {f.accepts}, got {json.dumps(d[k])[:80]}")


def check_header(d: dict[str, Any], name: str) -> dict[str, Any]:
    """The header ``d`` if every key is known and of its type (version 1: the keys a replay reads); else
    :class:`RecordError` naming the file, line 1 and the key."""
    if d.get("format") != RECORD_FORMAT:
        raise RecordError(f"{name}: line 1: not a {RECORD_FORMAT} record (format {d.get('format')!r})")
    if not HEADER_FIELDS["version"].ok(d.get("version")):
        raise RecordError(f"{name}: line 1: record version {d.get('version')!r} is not one this reader knows "
                          f"({', '.join(map(str, READABLE_VERSIONS))})")
    where = f"{name}: line 1: header"
    if d["version"] == 1:
        spec = {k: HEADER_FIELDS.get(k, _Field(True, is_dict, "an object")) for k in _V1_KEYS}
        spec = {k: _Field(k in ("scenario", "seed", "policy", "cluster", "jobs"), f.ok, f.accepts)
                for k, f in spec.items()}
        _check_fields({k: v for k, v in d.items() if k in spec}, spec, where)
    else:
        _check_fields(d, HEADER_FIELDS, where)
        _check_fields(d["env"], _ENV_FIELDS, f"{where} 'env'")
    for i, job in enumerate(d["jobs"]):
        _check_fields(job, _JOB_FIELDS, f"{where} 'jobs': job {i}")
    return d
