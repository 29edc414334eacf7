"""Engine construction for a scenario: the one place an episode's engine is made from a scenario (which stays
plain data in the model layer) and a seed."""

from __future__ import annotations

from ..catalog import Catalog, default_catalog
from ..scenarios import Scenario
from . import ClusterEngine


def make_engine(scenario: Scenario, seed: int, catalog: Catalog | None = None) -> ClusterEngine:
    """A fresh engine for one episode of ``scenario``: the job table for ``seed`` (see
    :meth:`~gpucluster_env.scenarios.Scenario.build_jobs`) on the scenario's cluster and engine settings.
    ``engine.trace_note`` names the trace used."""
    cat = catalog or default_catalog()
    jobs, note = scenario.build_jobs(seed, cat)
    eng = ClusterEngine(scenario.cluster, jobs, cat, scenario.config, source=f"scenario {scenario.name} ({note})")
    eng.trace_note = note  # type: ignore[attr-defined]
    return eng
