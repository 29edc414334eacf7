"""gpucluster-env: a Gymnasium environment and benchmark suite for scheduling deep-learning training jobs on
heterogeneous, multi-tenant GPU clusters.

``import gpucluster_env`` registers the environment ids (``gpucluster_env/Tiny-v1``,
``gpucluster_env/CastorPhilly-v1``, ...) with Gymnasium, at once if Gymnasium is imported, else when it is
(``gpucluster_env.registration``): importing the model or the engine (``gpucluster_env.engine``) does not load
Gymnasium. Heavy libraries (torch, stable-baselines3, xgboost) are imported only by the code that uses them.
"""

from .registration import env_id, env_ids, jobs_env_id, jobs_env_ids, register_envs, register_when_gymnasium_loads

__version__ = "0.2.0"

ENV_IDS = env_ids()
JOBS_ENV_IDS = jobs_env_ids()
register_when_gymnasium_loads()

__all__ = ["ENV_IDS", "JOBS_ENV_IDS", "env_id", "env_ids", "jobs_env_id", "jobs_env_ids", "register_envs",
           "__version__"]
