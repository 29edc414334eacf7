"""``gavel``: Gavel's heterogeneity-aware max-min fairness (least attained service) LP in rounds (Narayanan
et al., OSDI'20), the registered name of Gavel's default policy; the scheduler they share is
:mod:`gpucluster_env.baselines.parts.gavel_scheduler`."""

from __future__ import annotations

from gpucluster_env.baselines.parts.gavel_scheduler import Gavel

from gpucluster_env.policy import register_policy


@register_policy
class GavelMaxMin(Gavel):
    """``gavel``: max-min fairness (heterogeneity-aware LAS)."""
