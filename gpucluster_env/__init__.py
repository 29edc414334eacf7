"""gpucluster-env: a Gymnasium environment and benchmark suite for scheduling deep-learning training jobs on
heterogeneous, multi-tenant GPU clusters.

``import gpucluster_env`` registers the environment ids (``gpucluster_env/Tiny-v1``,
``gpucluster_env/CastorPhilly-v1``, ...). Heavy libraries (torch, stable-baselines3, xgboost) are imported
only by the code that uses them.
"""

from .registration import env_id, register_envs

__version__ = "0.2.0"

ENV_IDS = register_envs()

__all__ = ["ENV_IDS", "env_id", "register_envs", "__version__"]
