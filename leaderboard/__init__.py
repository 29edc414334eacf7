"""The benchmark harness: run policies on scenarios and seeds, record episodes, aggregate results."""

from .runner import run_episode

__all__ = ["run_episode"]
