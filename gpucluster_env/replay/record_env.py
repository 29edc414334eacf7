"""The environment and the policy a record's header describes (what ``replay --verify`` replays in), and the
files a record may make a replay open: a record someone sends you names its own trace file, so only a regular
file beside the record or in the current folder is opened (:func:`named_file_allowed`)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpucluster_env.env.cluster_env import GPUClusterEnv
from gpucluster_env.replay.record_schema import RecordError
from gpucluster_env.scenarios import Scenario

if TYPE_CHECKING:
    from gpucluster_env.policy import Policy


def header_error(where: str, key: str, e: BaseException) -> RecordError:
    """A :class:`RecordError` naming the file, line 1 and the header ``key`` the replay could not use."""
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return RecordError(f"{where}: line 1: header {key!r}: {text}")


BAD_INPUT = (ValueError, TypeError, KeyError, IndexError, AttributeError, OSError)
"""What a header value the environment refuses raises (reported as a :class:`RecordError`)."""


def named_file_allowed(path: str, where: str) -> str | None:
    """Why a record (file ``where``) may not make a replay open ``path``, or None. A record someone sends you
    names its trace file; the replay opens it only when it is a regular file (not a FIFO or a device, checked
    before any open) under the record's own folder or the current folder."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return f"trace file {path} not found"
    if not stat.S_ISREG(st.st_mode):
        return f"trace file {path} is not a regular file"
    real = p.resolve()
    roots = {Path.cwd().resolve(), *([Path(where).resolve().parent] if where != "record" else [])}
    if not any(real.is_relative_to(r) for r in roots):
        return (f"trace file {path} lies outside the record's folder and the current folder; a replay opens "
                "only files there (run it from the trace's folder)")
    return None


def _scenario(header: dict[str, Any], where: str) -> Scenario:
    sc = _named_scenario(header, where)
    tf = getattr(sc, "trace_file", None)
    if isinstance(tf, str):
        why = named_file_allowed(tf, where)
        if why:
            raise header_error(where, "scenario_spec" if "scenario_spec" in header else "scenario_options",
                                ValueError(why))
    return sc


def _named_scenario(header: dict[str, Any], where: str) -> Scenario:
    spec = header.get("scenario_spec")
    if isinstance(spec, str):  # the whole scenario (a scenario file, or a trace file on a given cluster)
        from gpucluster_env.scenario_files import scenario_from_toml

        try:
            return scenario_from_toml(spec, source="the record's scenario")
        except BAD_INPUT as e:
            raise header_error(where, "scenario_spec", e) from None
    from gpucluster_env.scenarios import get_scenario

    try:
        sc = get_scenario(header["scenario"])
    except BAD_INPUT as e:
        raise header_error(where, "scenario", e) from None
    try:
        return sc.with_options(**header["scenario_options"]) if header["scenario_options"] else sc
    except BAD_INPUT as e:
        raise header_error(where, "scenario_options", e) from None


def header_policy(header: dict[str, Any], where: str = "record") -> Policy | None:
    """The policy the header names, built with its options, or None when the name is not a registered policy
    (an RL agent, a hand-written rollout: its actions can only be replayed as recorded). A registered name
    with options it refuses is a :class:`RecordError` naming ``policy_options``."""
    from gpucluster_env.policy import make_policy, policy_names

    if header["policy"] not in policy_names():
        return None
    try:
        return make_policy(header["policy"], **header["policy_options"])
    except BAD_INPUT as e:
        raise header_error(where, "policy_options", e) from None


def build_env(header: dict[str, Any], where: str = "record", policy: Policy | None = None) -> GPUClusterEnv:
    """A fresh environment as the record's header describes it (scenario and options, settings, catalog);
    ``policy``: the header's (:func:`header_policy`), for a ``policy`` catalog. A header value the environment
    refuses is a :class:`RecordError` naming the file (``where``), line 1 and the key."""
    settings = dict(header.get("env") or {})
    if settings.get("actions") is not None:
        settings["actions"] = tuple(settings["actions"])
    catalog = header.get("catalog", "default")
    if catalog == "policy":
        settings["catalog"] = policy.env_kwargs().get("catalog") if policy is not None else None
        if settings["catalog"] is None:
            raise header_error(where, "catalog", ValueError(
                f"'policy' needs a registered policy that brings its own catalog; {header['policy']!r} does not"))
    elif catalog != "default":
        raise header_error(where, "catalog", ValueError(
            f"record was made with a {catalog!r} catalog, which a replay cannot rebuild"))
    sc = _scenario(header, where)
    try:
        return GPUClusterEnv(sc, **settings)
    except BAD_INPUT as e:
        key = "scenario_spec" if isinstance(e, OSError) and "scenario_spec" in header else "env"
        raise header_error(where, key, e) from None
