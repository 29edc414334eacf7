"""The versions of Python and of the installed packages that decide a run's numbers, read from the installed
metadata without importing the packages. Replay records, leaderboard records and trained models carry them, so a
result can be traced to what produced it (``constraints.txt`` pins the versions the test suite passed with)."""

from __future__ import annotations

import platform
from functools import cache
from importlib import metadata

RESULT_PACKAGES = ("numpy", "scipy", "xgboost", "numba", "gymnasium", "torch", "gpucluster-env")
"""The packages that can change an episode's numbers."""


@cache
def package_versions(packages: tuple[str, ...] = RESULT_PACKAGES) -> dict[str, str | None]:
    """``{"python": …, package: version}`` for ``packages`` (None where one is not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out
