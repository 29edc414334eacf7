"""Golden trajectories: every recorded episode hash holds (see ``tests/golden.py`` for the cases and how to
regenerate them after an intended change of results), and holds on every machine: the same cases replayed in
subprocesses under other BLAS kernels, thread counts and CPU vector-unit levels give the same hashes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import golden
import pytest

_DATA = golden.load()


def check(case: str, digest: str, note: str) -> None:
    """Fail unless ``case`` hashed to its recorded value; skip a case recorded on the real trace when this machine
    has only the synthetic stand-in."""
    want = _DATA[case]
    if note != want["trace"] and want["trace"].startswith("real") and note.startswith("synthetic"):
        pytest.skip(f"{case}: recorded on trace {want['trace']!r}, this machine has {note!r}")
    # any other difference is a change of the job table itself (a sampler or scenario change): record it anew
    assert note == want["trace"], f"{case}: trace changed from {want['trace']!r} to {note!r}"
    assert digest == want["hash"], f"{case}: trajectory changed"


def test_golden_file_covers_every_case() -> None:
    missing = [c for c in golden.all_cases() if c not in _DATA]
    assert not missing, f"no golden hash for {missing}; run: python -m tests.golden --write"


@pytest.mark.parametrize("case", golden.all_cases())
def test_golden(case: str) -> None:
    if case not in _DATA:
        pytest.skip(f"{case}: not recorded")
    check(case, *golden.run_case(case))


# Each setting stands for another machine: the BLAS kernel OpenBLAS picks on another CPU (Katmai is what
# ``Prescott`` selects: no AVX at all), another thread count, and numpy's and numba's code for a CPU without AVX-512.
_NO_AVX512 = "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
MACHINES = {
    "openblas-haswell-1thread": {"OPENBLAS_CORETYPE": "Haswell", "OMP_NUM_THREADS": "1"},
    "openblas-skylakex-2threads": {"OPENBLAS_CORETYPE": "SkylakeX", "OMP_NUM_THREADS": "2"},
    "openblas-prescott-1thread": {"OPENBLAS_CORETYPE": "Prescott", "OMP_NUM_THREADS": "1"},
    "openblas-zen-2threads": {"OPENBLAS_CORETYPE": "Zen", "OMP_NUM_THREADS": "2"},
    "numpy-numba-without-avx512": {"NPY_DISABLE_CPU_FEATURES": _NO_AVX512, "NUMBA_CPU_NAME": "generic",
                                   "OMP_NUM_THREADS": "1"},
}


@pytest.mark.slow
@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_golden_portable(machine: str) -> None:
    """Every golden case, replayed in a subprocess that stands for another machine, gives the recorded hash."""
    env = {**os.environ, **MACHINES[machine]}
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-m", "tests.golden", "--hashes"], cwd=root, env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    assert sorted(got) == sorted(golden.all_cases())
    differ = []
    for case, r in got.items():
        want = _DATA.get(case)
        if want is None or (r["trace"] != want["trace"] and r["trace"].startswith("synthetic")):
            continue  # not recorded, or recorded on the real trace that this machine lacks
        if (r["hash"], r["trace"]) != (want["hash"], want["trace"]):
            differ.append(case)
    assert not differ, f"under {machine} ({MACHINES[machine]}) these cases change: {differ}"


def test_a_new_metric_leaves_every_golden_case_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A metric added to the engine (and declared, as tests/engine/test_metric_specs.py requires) adds a field to
    the results and leaves the golden hashes as they were: a case hashes :data:`golden.CORE_METRICS` only."""
    from gpucluster_env.engine import metric_specs, metrics

    case = "policy:tiny:sjf:0"
    want = golden.run_case(case)
    plain = metrics.episode_metrics
    monkeypatch.setitem(metric_specs.METRICS, "new_metric_s", metric_specs.MetricSpec("s", False, "a new one"))
    monkeypatch.setattr(metrics, "episode_metrics", lambda eng: {**plain(eng), "new_metric_s": 1.0})
    from gpucluster_env.policy import make_policy, run_episode

    assert run_episode("tiny", make_policy("sjf"), 0)["new_metric_s"] == 1.0  # the field is there
    assert golden.run_case(case) == want
