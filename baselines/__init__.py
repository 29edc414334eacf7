"""Reference scheduling policies from the papers, all acting through the environment's action vocabulary."""

from . import classic, tiresias, srsf, sharing, castor, lucid, gandiva, gimbal, gavel, gavel_packed, gavel_gimbal, hadar  # noqa: F401, I001  (registers policies, in list order)
from .base import POLICIES, Policy, QueuePolicy, make_policy, policy_names, register_policy

__all__ = ["POLICIES", "Policy", "QueuePolicy", "make_policy", "policy_names", "register_policy"]
