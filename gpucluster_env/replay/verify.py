"""Validation of a record by replay (as CompilerGym validates an episode state): rebuild the environment the
header describes, reset it with the header's seed, re-run the header's policy (when it is a registered one)
or else the recorded actions, and capture the episode with the same code that wrote the record. The record
verifies when the two agree exactly: every header field a replay derives, every action and where it falls
among the events, every event, every rate sample and every metric (docs/replay.md, "Verification")."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from gpucluster_env.env.cluster_env import GPUClusterEnv
from gpucluster_env.replay.record import Record, action_from_json, action_to_json, event_dict
from gpucluster_env.replay.record_env import BAD_INPUT, build_env, header_error, header_policy
from gpucluster_env.replay.recorder import EpisodeCapture, header_of
from gpucluster_env.versions import package_versions

INFORMATIONAL = frozenset({"package_version", "versions"})
"""Header keys a replay does not check: what made the record (a failure's note names those that differ)."""
ABSENT_MEANS = {"share_step": 0.1}
"""Header keys older writers left out, and the value a record without them meant."""


@dataclass(frozen=True)
class VerifyResult:
    """The outcome of :func:`verify_record`. ``mismatch_event`` is the index of the first event (0-based, in
    the record's event order) that differs, or None; ``message`` says what happened in one line."""

    ok: bool
    message: str
    events_checked: int
    actions_replayed: int
    mismatch_event: int | None = None


def _reset(env: GPUClusterEnv, header: dict[str, Any], where: str) -> Any:
    if header.get("seed") is not None:
        obs, _ = env.reset(seed=header["seed"])
        return obs
    import numpy as np

    try:
        rng = np.random.Generator(getattr(np.random, header["rng_state"]["bit_generator"])())
        rng.bit_generator.state = header["rng_state"]
    except BAD_INPUT as e:
        raise header_error(where, "rng_state", e) from None
    env.np_random = rng
    obs, _ = env.reset()
    return obs


def _json(v: Any) -> Any:
    """``v`` as it reads back from the record's JSON (tuples become lists, ...)."""
    return json.loads(json.dumps(v))


def _show(v: Any) -> str:
    s = json.dumps(v)
    return s if len(s) <= 90 else s[:87] + "…"


def first_difference(rec: Any, rep: Any, where: str) -> str | None:
    """Where the record's value ``rec`` and the replay's ``rep`` first differ, in one line starting with
    ``where`` (None when identical). Strict: same JSON types (``1`` is not ``1.0`` nor ``true``), same keys,
    same lengths; NaN equals NaN."""
    if isinstance(rec, dict) and isinstance(rep, dict):
        for k in rec:
            if k not in rep:
                return f"{where}.{k}: the replay has no such field (record has {_show(rec[k])})"
        for k in rep:
            if k not in rec:
                return f"{where}.{k}: the record lacks it (replay has {_show(rep[k])})"
            d = first_difference(rec[k], rep[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(rec, list) and isinstance(rep, list):
        for i, (a, b) in enumerate(zip(rec, rep, strict=False)):
            d = first_difference(a, b, f"{where}[{i}]")
            if d:
                return d
        if len(rec) != len(rep):
            return f"{where}: record has {len(rec)} entries, replay has {len(rep)}"
        return None
    if type(rec) is type(rep) and (rec == rep or (isinstance(rec, float) and math.isnan(rec) and math.isnan(rep))):
        return None
    if isinstance(rec, str) and isinstance(rep, str) and "\n" in rec + rep:
        a, b = rec.splitlines(), rep.splitlines()
        n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        return (f"{where}: line {n + 1} differs: record has {_show(a[n] if n < len(a) else None)}, replay has "
                f"{_show(b[n] if n < len(b) else None)}")
    return f"{where}: record has {_show(rec)}, replay has {_show(rep)}"


def _describe(d: dict[str, Any] | None) -> str:
    if d is None:
        return "nothing"
    rest = ", ".join(f"{k}={v}" for k, v in d.items() if k not in ("t", "kind", "job"))
    return f"{d.get('kind')} of job {d.get('job')} at t={d.get('t')!r}" + (f" ({rest})" if rest else "")


def _header_difference(rec: Record, derived: dict[str, Any]) -> str | None:
    """The first header field the replay derives otherwise than the record says."""
    h = rec.header
    for k in [*derived, *(k for k in h if k not in derived)]:
        if k in INFORMATIONAL:
            continue
        if k not in derived:
            return f"header {k}: the replay has no such field (record has {_show(h[k])})"
        if k not in h and k not in ABSENT_MEANS:
            continue  # scenario_spec in a record written before it existed: the scenario came from name+options
        want = h.get(k, ABSENT_MEANS.get(k))
        if k == "env":  # settings written since: a record without them was made with the defaults
            want = {**{s: v for s, v in derived["env"].items() if s not in want}, **want}
        d = first_difference(want, derived[k], f"header {k}")
        if d:
            return d
    return None


def _placements(lines: list[dict[str, Any]]) -> tuple[list[int], list[int]]:
    """For captured ``lines``: events before each action, actions before each rate sample."""
    steps: list[int] = []
    rate_steps: list[int] = []
    n_events = 0
    for d in lines[1:]:
        kind = d.get("kind")
        if kind == "act":
            steps.append(n_events)
        elif kind == "rate":
            rate_steps.append(len(steps))
        elif kind != "metrics":
            n_events += 1
    return steps, rate_steps


def _version_note(header: dict[str, Any]) -> str:
    """``; note: recorded with numpy 1.26.4 (here 2.1.3)`` for the package versions that differ from this
    installation's, or empty."""
    made = header.get("versions")
    if not isinstance(made, dict):
        return ""
    here = package_versions()
    diff = [f"{k} {made[k]} (here {here.get(k)})" for k in made if made[k] != here.get(k)]
    return f"; note: recorded with {', '.join(diff)}" if diff else ""


def verify_record(rec: Record) -> VerifyResult:
    """Replay ``rec`` from its header and compare everything it holds with what the replay gives; the first
    difference fails it (its message names the field, action, event, rate sample or metric, and the package
    versions that differ from the ones that made the record). A header the replay cannot use (a policy
    option, a setting or a generator state the environment refuses) is a :class:`RecordError`."""
    res = _verify(rec)
    if not res.ok:
        note = _version_note(rec.header)
        if note:
            res = VerifyResult(False, res.message + note, res.events_checked, res.actions_replayed,
                               res.mismatch_event)
    return res


def _verify(rec: Record) -> VerifyResult:
    h = rec.header
    where = rec.path or "record"
    if rec.version < 2:
        return VerifyResult(False, f"record version {rec.version} holds no actions; only version 2 records "
                                   "can be verified", 0, 0)
    if h.get("seed") is None and not h.get("rng_state"):
        return VerifyResult(False, "record has neither a seed nor the generator state: it cannot be replayed", 0, 0)
    policy = header_policy(h, where)
    env = build_env(h, where, policy)
    obs = _reset(env, h, where)
    if policy is not None:
        policy.reset(env)
    capture = EpisodeCapture(env, _json(header_of(env, h["seed"], h["policy"], h["policy_options"], h["catalog"],
                                                  h.get("rng_state"))))
    diff = _header_difference(rec, capture.lines[0])
    if diff:
        return VerifyResult(False, diff, 0, 0)
    expected = rec.events
    events = _EventCheck(env.engine.log, expected)
    done_actions = 0
    bad = events.upto(done_actions)
    if bad:
        return bad
    info: dict[str, Any] = {}
    ended = term = False
    chosen: list[Any] = []  # the policy's actions still to take at this decision point
    for i, a in enumerate(rec.actions):
        if ended:
            return VerifyResult(False, f"action {i}: the replayed episode had already ended", events.checked, i,
                                events.checked if events.checked < len(expected) else None)
        if policy is not None:
            bad = _check_choice(policy, obs, env, chosen, i, a, h["policy"], events.checked)
            if bad:
                return bad
        try:
            action = action_from_json(a)
            obs, _, term, trunc, info = env.step(action)
        except (ValueError, TypeError, IndexError, KeyError) as e:  # an action the environment refuses
            return VerifyResult(False, f"action {i} ({a}) failed on replay: {str(e).splitlines()[0]}",
                                events.checked, i, events.checked)
        capture.step(action)
        done_actions = i + 1
        ended = term or trunc
        bad = events.upto(done_actions)
        if bad:
            return bad
    checked = events.checked
    if checked != len(expected):
        return VerifyResult(False, f"event {checked}: record has {_describe(expected[checked])}, replay ended "
                                   "without it", checked, done_actions, checked)
    end = ("terminated" if term else "truncated") if ended else None
    return _finish(rec, env, capture, policy is not None, info["metrics"] if ended else None, end, checked,
                   done_actions)


class _EventCheck:
    """The replayed engine's event log compared, as it grows, with the record's events in order."""

    def __init__(self, log: Any, expected: list[dict[str, Any]]) -> None:
        self.log, self.expected, self.checked = log, expected, 0

    def upto(self, done_actions: int) -> VerifyResult | None:
        """Compare the events logged since the last call; the first that differs (or that the record lacks) as
        a failed result, else None."""
        recs, expected = self.log.records, self.expected
        while self.checked < len(recs):
            got = _json(event_dict(*recs[self.checked]))
            want = expected[self.checked] if self.checked < len(expected) else None
            if want is None or first_difference(want, got, ""):
                return VerifyResult(False, f"event {self.checked}: record has {_describe(want)}, replay has "
                                           f"{_describe(got)}", self.checked, done_actions, self.checked)
            self.checked += 1
        return None


def _check_choice(policy: Any, obs: Any, env: Any, chosen: list[Any], i: int, a: Any, name: str,
                  checked: int) -> VerifyResult | None:
    """Whether the header's policy, asked at this decision point (its actions still to take there in ``chosen``,
    asked again when none is left), chooses the recorded action ``a`` (number ``i``); None when it does."""
    while not chosen:
        try:
            acts = policy.act(obs, env)
        except Exception as e:  # e.g. a header whose settings the policy cannot act in
            text = str(e).splitlines()[0] if str(e) else ""
            return VerifyResult(False, f"action {i}: policy {name!r} of the header cannot act in the "
                                       f"replay ({type(e).__name__}: {text})", checked, i)
        chosen.extend(acts if isinstance(acts, list) else [acts])
    want = _json(action_to_json(chosen.pop(0)))
    if first_difference(a, want, ""):
        return VerifyResult(False, f"action {i}: record has {_show(a)}, policy {name!r} of the "
                                   f"header chooses {_show(want)}", checked, i)
    return None


def _finish(rec: Record, env: Any, capture: Any, derived: bool, metrics: dict[str, Any] | None, end: str | None,
            checked: int, done_actions: int) -> VerifyResult:
    """The verdict once every recorded action was replayed and every event matched: the episode must have ended
    (``end``: terminated or truncated, with its ``metrics``) or have been ended by an outer wrapper, and the
    actions' places among the events, the rate samples and the metrics must match the record's."""
    h = rec.header
    if end is None and rec.metrics.get("end") == "wrapper":  # an outer wrapper ended the episode early
        metrics, end = env.engine.metrics(), "wrapper"
    elif end is None:
        return VerifyResult(False, "replay did not reach the end of the episode after the recorded actions",
                            checked, done_actions)
    lines = _json(capture.finish(metrics, end))
    env.close()
    late = _later_difference(rec, lines)
    if late:
        return VerifyResult(False, late, checked, done_actions)
    how = (f"as policy {h['policy']!r} chooses them" if derived else
           f"as recorded (policy {h['policy']!r} is not a registered one, so its choices are not re-derived)")
    return VerifyResult(True, f"ok: {done_actions} actions replayed {how}; the header, all {checked} events, "
                              f"{len(rec.rates)} rate samples and {len(rec.metrics)} metrics match",
                        checked, done_actions)


def _later_difference(rec: Record, lines: list[dict[str, Any]]) -> str | None:
    """After the events matched: where actions fall among the events, the rate samples, the metrics."""
    steps, rate_steps = _placements(lines)
    for i, (a, b) in enumerate(zip(rec.steps, steps, strict=False)):
        if a != b:
            return f"action {i}: record has it after event {a}, replay after event {b}"
    rates = [d for d in lines if d.get("kind") == "rate"]
    for i, (want, got) in enumerate(zip(rec.rates, rates, strict=False)):
        d = first_difference(want, got, f"rate sample {i} (t={got['t']!r})")
        if d:
            return d
        if rec.rate_steps[i] != rate_steps[i]:
            return f"rate sample {i} (t={got['t']!r}): record has it after action {rec.rate_steps[i]}, replay " \
                   f"after action {rate_steps[i]}"
    if len(rec.rates) != len(rates):
        return f"rate samples: record has {len(rec.rates)}, replay has {len(rates)}"
    tail = {k: v for k, v in lines[-1].items() if k != "kind"}
    d = first_difference(rec.metrics, tail, "metric")
    return d.replace("metric.", "metric ", 1) if d else None
