"""The README is true: its Python example runs as written, and its links point at files that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.slow
def test_readme_python_example_runs_as_written(tmp_path: Path) -> None:
    (block,) = _python_blocks(README)
    assert len(block.splitlines()) <= 25  # the twenty-line example stays short
    script = tmp_path / "example.py"
    script.write_text(block)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    m = re.search(r"random agent: avg JCT (\d+) s", out.stdout)
    assert m and int(m.group(1)) > 0, out.stdout


def test_readme_links_and_picture_exist() -> None:
    targets = re.findall(r"\]\(([^)#]+)\)", README) + re.findall(r"`(docs/[\w./-]+)`", README)
    assert "docs/img/timeline-tiny.png" in targets
    missing = [t for t in targets if not t.startswith("http") and not (ROOT / t).exists()]
    assert not missing, missing


def test_readme_is_a_five_minute_read() -> None:
    assert len(README.splitlines()) <= 150
    first_block = README.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if not line.startswith(" ")]
    assert commands == ["make demo", "make test"]  # the two set-up commands come first


def test_the_pictures_caption_draws_the_picture(tmp_path: Path) -> None:
    """The caption under the README's picture names the commands of ``docs/_scripts/readme_picture.py``, and they
    draw the committed image (the same schedules: pixels equal but for antialiasing)."""
    pytest.importorskip("matplotlib", reason="the timeline needs matplotlib (pip install 'gpucluster-env[plot]')")
    import matplotlib.image as mpimg
    import numpy as np
    from readme_picture import COMMANDS, draw

    caption = " ".join((ROOT / "README.md").read_text().split())
    assert COMMANDS[0] in caption and "--policy castor --record c.jsonl" in caption
    assert COMMANDS[2].format(out="docs/img/timeline-tiny.png") in caption
    drawn = mpimg.imread(draw(tmp_path / "t.png"))
    shipped = mpimg.imread(ROOT / "docs" / "img" / "timeline-tiny.png")
    assert drawn.shape == shipped.shape and float(np.abs(drawn - shipped).mean()) < 0.002
