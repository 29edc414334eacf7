"""Reference scheduling policies from the papers, all acting through the environment's action vocabulary."""

from . import classic  # noqa: F401  (registers policies)
from .base import POLICIES, Policy, QueuePolicy, make_policy, policy_names, register_policy

__all__ = ["POLICIES", "Policy", "QueuePolicy", "make_policy", "policy_names", "register_policy"]
