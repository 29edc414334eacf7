"""Golden trajectories: every recorded episode hash holds (see ``tests/golden.py`` for the cases and how to
regenerate them after an intended change of results)."""

from __future__ import annotations

import golden
import pytest

_DATA = golden.load()


def test_golden_file_covers_every_case() -> None:
    missing = [c for c in golden.all_cases() if c not in _DATA]
    assert not missing, f"no golden hash for {missing}; run: python -m tests.golden --write"


@pytest.mark.parametrize("case", golden.all_cases())
def test_golden(case: str) -> None:
    want = _DATA.get(case)
    if want is None:
        pytest.skip(f"{case}: not recorded")
    digest, note = golden.run_case(case)
    if note != want["trace"] and want["trace"].startswith("real") and note.startswith("synthetic"):
        pytest.skip(f"{case}: recorded on trace {want['trace']!r}, this machine has {note!r}")
    # any other difference is a change of the job table itself (a sampler or scenario change): record it anew
    assert note == want["trace"], f"{case}: trace changed from {want['trace']!r} to {note!r}"
    assert digest == want["hash"], f"{case}: trajectory changed"
