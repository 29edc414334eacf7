"""One cell of a board run as one episode, and the provenance that goes with its record.

:func:`run_cell` is what a worker process (or a Ray task) executes: it builds the policy, calls the one runner
(:func:`~gpucluster_env.policy.run_episode`) and returns the episode's metrics plus the per-job
results the plots and the per-size tables need. :func:`env_spec` is the environment the cell runs in, as
JSON data; a record made under another spec or package version is not mixed with current ones.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

from gpucluster_env.leaderboard.board import Cell

from gpucluster_env.engine.metric_specs import METRICS
from gpucluster_env.engine.metrics import sharing_benefit_ratios

JOB_DECIMALS = 2
"""Per-job times are stored rounded to 10 ms: compact, and far below any effect the leaderboard reports."""


def _jsonable(v: Any) -> Any:
    """Strict JSON data: tuples as lists, numpy scalars as numbers, NaN and infinities as None, other objects
    by their type's name."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _jsonable(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if hasattr(v, "item") and callable(v.item):
        v = v.item()
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if v is None or isinstance(v, bool | int | str):
        return v
    return type(v).__name__


def env_spec(cell: Cell) -> dict[str, Any]:
    """The environment of ``cell`` as JSON data: the registered id, the scenario with its options applied
    (cluster, trace recipe, engine settings) and the env options. Computed without running anything."""
    from gpucluster_env.registration import env_id
    from gpucluster_env.scenarios import get_scenario

    sc = get_scenario(cell.scenario, **cell.scenario_options)
    return {"id": env_id(cell.scenario), "scenario": _jsonable(sc), "env_options": cell.env_options}


def versions() -> dict[str, str | None]:
    """The versions a record carries (:func:`gpucluster_env.versions.package_versions`)."""
    from gpucluster_env.versions import package_versions

    return package_versions()


def package_version() -> str:
    """The installed package's version."""
    from gpucluster_env import __version__

    return __version__


@cache
def git_revision() -> str:
    """The source tree's git commit (``+dirty`` with uncommitted changes), or ``unknown`` outside a checkout."""
    root = Path(__file__).resolve().parent.parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if rev.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)
        return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def policy_version(name: str) -> str:
    """A policy's version: its class's ``version`` attribute where it has one (an RL policy may name its
    checkpoint), else the package version (reference policies change with the package)."""
    from gpucluster_env.policy import registered_policies

    cls = registered_policies().get(name)
    v = getattr(cls, "version", None) if cls is not None else None
    return str(v) if v else package_version()


def _env_kwargs(cell: Cell) -> dict[str, Any]:
    kwargs = {k: v for k, v in cell.env_options.items() if k != "xi"}
    if "xi" in cell.env_options:
        from gpucluster_env.catalog import default_catalog
        from gpucluster_env.interference import ConstantInterference

        kwargs["catalog"] = default_catalog().with_interference(ConstantInterference(float(cell.env_options["xi"])))
    return kwargs


def _round(values: Any) -> list[float | None]:
    return [None if not math.isfinite(x) else round(float(x), JOB_DECIMALS) for x in values]


def _per_job(env: Any) -> dict[str, Any]:
    """Per-job results of a finished episode, compact: JCT and queueing (s, None if unfinished) and GPUs."""
    eng = env.unwrapped.engine
    return {"jobs_detail": {"jct_s": _round(eng.finish_t - eng.submit), "queue_s": _round(eng.queue_s),
                            "gpus": [int(g) for g in eng.req_gpus]}}


SB_METRICS = tuple(n for n, m in METRICS.items() if m.source == "leaderboard")  # sb_median, sb_frac_gt1, sb_decisions
"""The sharing-benefit metrics :func:`run_cell` adds for policies that keep a performance model."""


@cache
def engine_metric_names() -> frozenset[str]:
    """The names of the metrics every episode reports (those of a fresh engine's metrics)."""
    from gpucluster_env.engine.build import make_engine
    from gpucluster_env.engine.metrics import episode_metrics
    from gpucluster_env.scenarios import get_scenario

    return frozenset(episode_metrics(make_engine(get_scenario("tiny"), 0)))


def metric_names(policies: set[str]) -> set[str]:
    """The metrics a record of one of ``policies`` may have: the engine's, the sharing-benefit ones and the
    policies' own :attr:`~gpucluster_env.policy.Policy.stat_names`."""
    from gpucluster_env.policy import registered_policies

    names = set(engine_metric_names()) | set(SB_METRICS)
    for p in policies:
        names |= set(getattr(registered_policies().get(p), "stat_names", ()))
    return names


def run_cell(cell: Cell) -> dict[str, Any]:
    """Run one cell's episode and return its result: the runner's metrics, per-job results, the policy's own
    :meth:`~gpucluster_env.policy.Policy.episode_stats` and, for policies that keep a performance model
    (Castor), their sharing-benefit decisions (castor §9.2 eq. 24)."""
    from gpucluster_env.policy import make_policy, run_episode

    pol = make_policy(cell.policy, **cell.policy_options)
    r = run_episode(cell.scenario, pol, cell.seed, scenario_options=cell.scenario_options or None,
                    env_kwargs=_env_kwargs(cell), extra=_per_job)
    r.update(pol.episode_stats())
    eng = getattr(pol, "engine", None)
    benefits = sharing_benefit_ratios(getattr(eng, "sharing_benefits", []))
    if benefits:
        r["sb_median"] = statistics.median(benefits)
        r["sb_frac_gt1"] = sum(b > 1.0 for b in benefits) / len(benefits)
        r["sb_decisions"] = len(benefits)
    return _jsonable(r)


def cell_failure(cell: Cell, e: BaseException) -> ValueError:
    """A cell's failure as one line (the records finished before it are kept)."""
    msg = str(e).splitlines()[0] if str(e) else ""
    return ValueError(f"cell {cell.scenario_label} x {cell.policy_label} seed {cell.seed} failed: "
                      f"{type(e).__name__}: {msg} (finished cells are recorded; rerun to resume)")
