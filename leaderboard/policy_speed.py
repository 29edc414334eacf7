"""Whole-run speed of each reference policy, as a user running ``gpucluster run`` would see it (``gpucluster
bench``'s per-policy section).

Each policy plays one episode of the same scenario (by default ``sjfbsbf-philly``: 64 GPUs, Philly's busiest
period) with ``num_jobs`` set to each asked size, through the one runner (:func:`~gpucluster_env.policy.
run_episode`, the environment built inside the timing, as ``gpucluster run`` does; imports are paid once per
process and left out). Reported per policy and size: the whole run's wall time, the engine's decision points
per second of it, and both as ratios to FIFO's on the same size, measured in the same process.
"""

from __future__ import annotations

import time
from typing import Any

from gpucluster_env.policy import POLICIES, policy_names, registered_policies, run_episode
from gpucluster_env.scenarios import get_scenario

DEFAULT_SCENARIO = "sjfbsbf-philly"


SEARCH_EXPERTS = ("lookahead",)
"""Policies whose cost is their search budget (rollouts on copies of the simulator), not a scheduler's decision
cost: left out of the default list (``--policies lookahead`` times them)."""


def reference_policies() -> list[str]:
    """The papers' reference policies (the registered ones of :mod:`gpucluster_env.baselines` but the
    :data:`SEARCH_EXPERTS`), FIFO first."""
    names = [n for n in policy_names() if registered_policies()[n].__module__.startswith("gpucluster_env.baselines")
             and n not in SEARCH_EXPERTS]
    return sorted(names, key=lambda n: (n != "fifo", n))


def time_policy(scenario: str, policy: str, jobs: int, seed: int) -> dict[str, Any]:
    """One episode of ``policy`` on ``scenario`` with ``jobs`` jobs: wall time (environment build included),
    episode wall time, engine decision points and decisions per second, average JCT."""
    t0 = time.perf_counter()
    r = run_episode(scenario, policy, seed, scenario_options={"num_jobs": jobs})
    wall = time.perf_counter() - t0
    return {"policy": policy, "jobs": r["jobs"], "wall_s": wall, "episode_s": r["wall_s"],
            "decisions": r["decisions"], "decisions_per_s": r["decisions"] / wall, "avg_jct_s": r["avg_jct_s"]}


def policy_speeds(sizes: tuple[int, ...], policies: list[str] | None = None, scenario: str = DEFAULT_SCENARIO,
                  seed: int = 0) -> list[dict[str, Any]]:
    """Rows of :func:`time_policy` for every policy (default: :func:`reference_policies`) that applies to
    ``scenario`` at every size, FIFO first at each size, with ``x_fifo_wall`` (wall time over FIFO's) and
    ``x_fifo_decisions_per_s``; a policy that does not apply gets a row with its reason in ``skipped``."""
    names = reference_policies() if policies is None else list(policies)
    names = ["fifo"] + [n for n in names if n != "fifo"]
    sc = get_scenario(scenario)
    rows: list[dict[str, Any]] = []
    for n in sizes:
        base: dict[str, Any] | None = None
        for name in names:
            cls = POLICIES[name]
            if not cls.applies_to(sc):
                rows.append({"policy": name, "jobs": n, "skipped": cls.not_applicable_because(sc)})
                continue
            row = time_policy(scenario, name, n, seed)
            base = base or row
            row["x_fifo_wall"] = row["wall_s"] / base["wall_s"]
            row["x_fifo_decisions_per_s"] = row["decisions_per_s"] / base["decisions_per_s"]
            rows.append(row)
    return rows
