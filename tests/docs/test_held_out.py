"""The claims board's held-out seeds are declared once (``docs/_scripts/held_out.py``, from the shipped board):
every investigation script that refuses them imports that declaration rather than keeping its own range, and the
text the refusals print names the same seeds."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "docs" / "_scripts"


def _held_out():
    sys.path.insert(0, str(SCRIPTS))
    try:
        import held_out
    finally:
        sys.path.remove(str(SCRIPTS))
    return held_out


def test_the_text_names_the_declared_seeds() -> None:
    h = _held_out()
    spans = [tuple(map(int, part.split("-"))) for part in h.HELD_OUT_TEXT.split(", ")]
    assert set().union(*(range(a, b + 1) for a, b in spans)) == h.HELD_OUT
    assert len(h.HELD_OUT) == 2 * len({s for s in h.HELD_OUT if s < h.SECOND_FIRST_SEED})  # two sets, one size


def test_no_script_keeps_its_own_held_out_range() -> None:
    own = re.compile(r"^HELD_OUT\s*=", re.M)
    for path in sorted(SCRIPTS.glob("*.py")):
        if path.name == "held_out.py":
            continue
        text = path.read_text()
        assert not own.search(text), f"{path.name}: declares HELD_OUT itself; import it from held_out.py"
        if "HELD_OUT" in text.replace("HELD_OUT_SETS", ""):
            assert "from held_out import" in text, f"{path.name}: uses HELD_OUT without importing held_out.py"
