"""Validation of a record by replay (as CompilerGym validates an episode state): rebuild the environment the
header describes, apply the recorded actions one by one, and check every event and the final metrics."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..env.cluster_env import GPUClusterEnv
from .record import Record, action_from_json, event_dict, jsonable


@dataclass(frozen=True)
class VerifyResult:
    """The outcome of :func:`verify_record`. ``mismatch_event`` is the index of the first event (0-based, in
    the record's event order) that differs, or None; ``message`` says what happened in one line."""

    ok: bool
    message: str
    events_checked: int
    actions_replayed: int
    mismatch_event: int | None = None


def build_env(header: dict[str, Any]) -> GPUClusterEnv:
    """A fresh environment as the record's header describes it (scenario, options, settings, catalog)."""
    from ..baselines.base import make_policy

    settings = dict(header.get("env") or {})
    if "actions" in settings and settings["actions"] is not None:
        settings["actions"] = tuple(settings["actions"])
    catalog = header.get("catalog", "default")
    if catalog == "policy":
        settings["catalog"] = make_policy(header["policy"], **header.get("policy_options", {})).env_kwargs()["catalog"]
    elif catalog != "default":
        raise ValueError(f"record was made with a {catalog!r} catalog, which a replay cannot rebuild")
    spec = header.get("scenario_spec")
    if isinstance(spec, str):  # the whole scenario (a scenario file, or a trace file on a given cluster)
        from ..scenario_files import scenario_from_toml

        return GPUClusterEnv(scenario_from_toml(spec, source="the record's scenario"), **settings)
    return GPUClusterEnv(header["scenario"], scenario_options=header.get("scenario_options") or None, **settings)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _describe(d: dict[str, Any] | None) -> str:
    if d is None:
        return "nothing"
    rest = ", ".join(f"{k}={v}" for k, v in d.items() if k not in ("t", "kind", "job"))
    return f"{d['kind']} of job {d['job']} at t={d['t']!r}" + (f" ({rest})" if rest else "")


def verify_record(rec: Record) -> VerifyResult:
    """Re-run ``rec``'s actions in a fresh environment; the first event that differs (or a metric) fails it."""
    h = rec.header
    if rec.version < 2:
        return VerifyResult(False, f"record version {rec.version} holds no actions; only version 2 records "
                                   "can be verified", 0, 0)
    if h.get("seed") is None and not h.get("rng_state"):
        return VerifyResult(False, "record has neither a seed nor the generator state: it cannot be replayed", 0, 0)
    env = build_env(h)
    if h.get("seed") is None:
        import numpy as np

        rng = np.random.Generator(getattr(np.random, h["rng_state"]["bit_generator"])())
        rng.bit_generator.state = h["rng_state"]
        env.np_random = rng
        env.reset()
    else:
        env.reset(seed=int(h["seed"]))
    eng = env.engine
    expected = rec.events
    checked = 0

    def check_upto() -> VerifyResult | None:
        nonlocal checked
        recs = eng.log.records
        while checked < len(recs):
            got = event_dict(*recs[checked])
            want = expected[checked] if checked < len(expected) else None
            if want != got:
                return VerifyResult(False, f"event {checked}: record has {_describe(want)}, replay has "
                                           f"{_describe(got)}", checked, done_actions, checked)
            checked += 1
        return None

    done_actions = 0
    bad = check_upto()
    if bad:
        return bad
    info: dict[str, Any] = {}
    ended = False
    for i, a in enumerate(rec.actions):
        if ended:
            return VerifyResult(False, f"action {i}: the replayed episode had already ended", checked, i,
                                checked if checked < len(expected) else None)
        try:
            _, _, term, trunc, info = env.step(action_from_json(a))
        except ValueError as e:
            return VerifyResult(False, f"action {i} ({a}) failed on replay: {str(e).splitlines()[0]}", checked, i,
                                checked)
        done_actions = i + 1
        ended = term or trunc
        bad = check_upto()
        if bad:
            return bad
    if checked != len(expected):
        return VerifyResult(False, f"event {checked}: record has {_describe(expected[checked])}, replay ended "
                                   "without it", checked, done_actions, checked)
    cut = rec.metrics.get("end") == "wrapper"  # an outer wrapper ended the episode early
    if not ended and not cut:
        return VerifyResult(False, "replay did not reach the end of the episode after the recorded actions",
                            checked, done_actions)
    got = {k: jsonable(v) for k, v in (eng.metrics() if cut else info["metrics"]).items()}
    for k, v in got.items():
        if k in rec.metrics and not _same(rec.metrics[k], v):
            return VerifyResult(False, f"metric {k}: record has {rec.metrics[k]!r}, replay has {v!r}", checked,
                                done_actions)
    env.close()
    return VerifyResult(True, f"ok: {done_actions} actions replayed, all {checked} events and "
                              f"{len(got)} metrics match", checked, done_actions)
