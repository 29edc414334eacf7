"""The small synthetic traces shipped in the package (``traces/embedded/*.csv.gz``), so every scenario runs
on a
fresh machine with no download. They are made by this project's own generators (:mod:`.synthetic`, profiles in
:mod:`.profiles`) and regenerated bit for bit by::

    python -m gpucluster_env.traces.shipped
"""

from __future__ import annotations

import gzip
import io
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from gpucluster_env.traces.profiles import get_profile
from gpucluster_env.traces.synthetic import generate
from gpucluster_env.traces.tables import finish

from gpucluster_env.atomic_write import atomic_output

EMBEDDED_DIR = Path(__file__).resolve().parent / "embedded"
EMBEDDED_JOBS = {"philly": 3000, "venus": 3000, "alibaba": 2000}
"""Jobs per shipped trace: enough for a 480-job ``hours:3-10`` sample and a 240-job busiest window."""
EMBEDDED_SEED = 20240601


def embedded_path(name: str) -> Path:
    return EMBEDDED_DIR / f"{name}.csv.gz"


def make_embedded(name: str) -> pd.DataFrame:
    """The shipped synthetic trace ``name``, generated from its profile with the fixed seed."""
    rng = np.random.default_rng([EMBEDDED_SEED, sorted(EMBEDDED_JOBS).index(name)])
    return generate(get_profile(name), EMBEDDED_JOBS[name], rng)


def write_embedded(name: str, directory: Path = EMBEDDED_DIR) -> Path:
    """Write ``<directory>/<name>.csv.gz`` deterministically (gzip mtime 0); return its path."""
    df = make_embedded(name)
    text = f"# start_hour={df.attrs['start_hour']!r}\n" + df.to_csv(index=False, lineterminator="\n")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.csv.gz"
    with atomic_output(path) as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(text.encode())
    return path


@lru_cache(maxsize=4)
def _read(name: str) -> pd.DataFrame:
    path = embedded_path(name)
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: shipped trace missing; regenerate with 'python -m gpucluster_env.traces.shipped'"
        )
    text = gzip.decompress(path.read_bytes()).decode()
    first, _, body = text.partition("\n")
    start_hour = float(first.split("=", 1)[1]) if first.startswith("# start_hour=") else 0.0
    df = pd.read_csv(
        io.StringIO(body),
        dtype={"job_id": str, "vc": str, "user": str, "status": str, "gpu_spec": str},
        keep_default_na=False,
    )
    return finish(df, f"embedded synthetic {name} ({path.name})", start_hour)


def load_embedded(name: str) -> pd.DataFrame:
    """The shipped synthetic trace ``name`` (``philly``, ``venus``, ``alibaba``) as a normalized table (a
    copy)."""
    if name not in EMBEDDED_JOBS:
        raise ValueError(f"no shipped trace {name!r}; known: {', '.join(EMBEDDED_JOBS)}")
    df = _read(name)
    out = df.copy()
    out.attrs = dict(df.attrs)
    return out


def main() -> None:
    """Regenerate every shipped trace."""
    for name in EMBEDDED_JOBS:
        p = write_embedded(name)
        print(f"{p} ({p.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
