"""The Gymnasium adapter of the engine: action encoding, observations, reward, rendering."""

from .cluster_env import GPUClusterEnv

__all__ = ["GPUClusterEnv"]
