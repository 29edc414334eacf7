"""The sizes :class:`~gpucluster_env.env.cluster_env.GPUClusterEnv`'s docstring states (action and feature
counts, the registered ids), computed from the code that makes them, so the docstring cannot go stale."""

from __future__ import annotations

from ..registration import registered_ids_text
from .codec import DEFAULT_N_ACCUM, DEFAULT_N_PENDING, DEFAULT_N_RUNNING, ActionLayout
from .observation import CLOCK_FEATURES, CLUSTER_FEATURES, PAIR_FEATURES, PENDING_FEATURES, RUNNING_FEATURES


def doc_numbers() -> dict[str, str]:
    """The sizes the class docstring states, computed from the code that makes them."""
    compact = ActionLayout(DEFAULT_N_PENDING, DEFAULT_N_RUNNING["compact"], 1, 1, compact=True).size
    full = [ActionLayout(DEFAULT_N_PENDING, DEFAULT_N_RUNNING["full"], t, DEFAULT_N_ACCUM["full"]).size
            for t in (1, 3)]
    return {
        "registered_ids": registered_ids_text(),
        "compact_actions": f"{compact:,}",
        "full_actions": f"{full[0]:,}-{full[1]:,} on one to three types",
        "pf": str(PENDING_FEATURES), "rf": str(RUNNING_FEATURES), "pairf": str(PAIR_FEATURES),
        "cf": str(CLUSTER_FEATURES), "clockf": str(CLOCK_FEATURES), "n_pending": str(DEFAULT_N_PENDING),
        "n_running_compact": str(DEFAULT_N_RUNNING["compact"]), "n_running_full": str(DEFAULT_N_RUNNING["full"]),
        "n_accum_full": str(DEFAULT_N_ACCUM["full"]),
    }
