"""Where the public data is found: the one resolver every reader uses (trace files, measured profiles, Pollux's
workload files).

* :func:`data_folder`: ``$GPUCLUSTER_DATA`` when it is set, else ``../shared/data`` beside a source checkout;
  ``None`` when that is not a folder. A ``$GPUCLUSTER_DATA`` that is set but not a folder hides
  ``../shared/data`` (that is how a test, or a user, runs as on a machine without the data).
* :func:`cache_dir`: where ``gpucluster traces fetch`` puts what it downloads.
* :func:`data_roots`: the folders trace files are looked for in, in order: ``$GPUCLUSTER_DATA`` when set, the
  cache, ``../shared/data`` when ``$GPUCLUSTER_DATA`` is not set; each laid out like ``../shared/data``.
"""

from __future__ import annotations

import os
from pathlib import Path


def shared_data() -> Path:
    """``../shared/data`` beside the source checkout (present for developers and tests, not in a wheel)."""
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def data_folder() -> Path | None:
    """``$GPUCLUSTER_DATA`` when set, else :func:`shared_data`; ``None`` when that is not a folder."""
    env = os.environ.get("GPUCLUSTER_DATA")
    p = Path(env) if env else shared_data()
    return p if p.is_dir() else None


def cache_dir() -> Path:
    """The user cache for fetched traces: ``$GPUCLUSTER_CACHE``, else ``$XDG_CACHE_HOME/gpucluster``, else
    ``~/.cache/gpucluster``; laid out like ``../shared/data``."""
    if os.environ.get("GPUCLUSTER_CACHE"):
        return Path(os.environ["GPUCLUSTER_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpucluster"


def data_roots() -> list[Path]:
    """Where trace files are looked for, in order: ``$GPUCLUSTER_DATA`` (when set and a folder), the cache (what
    the user fetched), ``../shared/data`` (when ``$GPUCLUSTER_DATA`` is not set and it is a folder)."""
    folder = data_folder()
    if os.environ.get("GPUCLUSTER_DATA"):
        return ([folder] if folder is not None else []) + [cache_dir()]
    return [cache_dir()] + ([folder] if folder is not None else [])
