"""What the package ships under ``traces/embedded/``:

- **copies of the real job tables it may redistribute** (CC-BY-4.0: Philly, Venus, Alibaba PAI 2020; the
  registry's ``TraceSpec.shipped``), gzip of the source file byte for byte, with the licences and attribution in
  ``embedded/REAL_TRACES.md``, so every scenario named after a trace runs that trace on a fresh machine with no
  data folder and no network. Written from a data root by ``python -m gpucluster_env.traces.shipped --real
  DATA_ROOT``, which refuses a file whose sha256 is not the pinned one;
- **small synthetic stand-ins** (``philly``, ``venus``, ``alibaba``: this project's own generators,
  :mod:`.synthetic`, profiles in :mod:`.profiles`), run only when asked for
  (``$GPUCLUSTER_TRACE_SOURCE=synthetic``) and regenerated bit for bit by ``python -m
  gpucluster_env.traces.shipped``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
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


def write_shipped_real(name: str, data_root: Path, directory: Path = EMBEDDED_DIR) -> Path:
    """Write the package's gzip copy of real trace ``name`` from ``data_root`` (laid out like
    ``../shared/data``), deterministically (gzip mtime 0, level 9); a file whose sha256 is not the registry's
    pinned one is refused."""
    from gpucluster_env.traces.registry import get_trace

    spec = get_trace(name)
    if spec.shipped is None or len(spec.files) != 1 or spec.files[0].sha256 is None:
        raise ValueError(f"trace {name!r} is not one the package ships")
    data = (data_root / spec.files[0].relpath).read_bytes()
    got = hashlib.sha256(data).hexdigest()
    if got != spec.files[0].sha256:
        raise ValueError(f"{data_root / spec.files[0].relpath}: sha256 {got}, the pinned source is "
                         f"{spec.files[0].sha256}")
    path = directory / spec.shipped
    with atomic_output(path) as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                   compresslevel=9) as gz:
        gz.write(data)
    return path


def main(argv: list[str] | None = None) -> None:
    """Regenerate every shipped synthetic trace, or with ``--real DATA_ROOT`` every shipped real copy."""
    ap = argparse.ArgumentParser(prog="python -m gpucluster_env.traces.shipped")
    ap.add_argument("--real", type=Path, metavar="DATA_ROOT",
                    help="write the shipped copies of the real traces from this data root instead")
    args = ap.parse_args(argv)
    if args.real is not None:
        from gpucluster_env.traces.registry import TRACES

        paths = [write_shipped_real(n, args.real) for n, t in TRACES.items() if t.shipped]
    else:
        paths = [write_embedded(name) for name in EMBEDDED_JOBS]
    for p in paths:
        print(f"{p} ({p.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
