"""GPUClusterEnv's docstring states sizes (action and feature counts, default windows, the registered ids) as
plain text; this test computes them from the code that makes them, so the docstring cannot go stale (before,
the module rewrote its own docstring at import time)."""

from __future__ import annotations

from gpucluster_env.env.cluster_env import GPUClusterEnv
from gpucluster_env.env.codec import DEFAULT_N_ACCUM, DEFAULT_N_PENDING, DEFAULT_N_RUNNING, ActionLayout
from gpucluster_env.env.observation import (
    CLOCK_FEATURES,
    CLUSTER_FEATURES,
    PAIR_FEATURES,
    PENDING_FEATURES,
    RUNNING_FEATURES,
)
from gpucluster_env.registration import registered_ids_text


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_docstring_states_the_sizes_the_code_makes() -> None:
    doc = _flat(GPUClusterEnv.__doc__ or "")
    compact = ActionLayout(DEFAULT_N_PENDING, DEFAULT_N_RUNNING["compact"], 1, 1, compact=True).size
    full = [ActionLayout(DEFAULT_N_PENDING, DEFAULT_N_RUNNING["full"], t, DEFAULT_N_ACCUM["full"]).size
            for t in (1, 3)]
    phrases = [
        f"({compact:,} actions on a one-type cluster",
        f"({full[0]:,}-{full[1]:,} on one to three types)",
        f"``pending`` (n_pending x {PENDING_FEATURES})", f"``running`` (n_running x {RUNNING_FEATURES})",
        f"(n_pending x n_running x {PAIR_FEATURES},", f"(GPU types x {CLUSTER_FEATURES})", f"({CLOCK_FEATURES});",
        f"``n_pending={DEFAULT_N_PENDING}``", f"(default {DEFAULT_N_RUNNING['compact']} with the compact layout, "
        f"{DEFAULT_N_RUNNING['full']} with the full one)", f"default {DEFAULT_N_ACCUM['full']})",
        _flat(registered_ids_text()),
    ]
    missing = [p for p in phrases if p not in doc]
    assert not missing, f"GPUClusterEnv's docstring no longer states: {missing}"
