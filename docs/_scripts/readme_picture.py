"""The README's picture: the commands its caption names, run in a scratch folder, drawing the timeline PNG.

    .venv/bin/python docs/_scripts/readme_picture.py [OUT.png]     # default docs/img/timeline-tiny.png

tests/test_readme.py checks that the caption names exactly these commands and that they draw the committed image.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = (
    "gpucluster run --scenario tiny --option load=2 --seed 0 --policy tiresias --record t.jsonl",
    "gpucluster run --scenario tiny --option load=2 --seed 0 --policy castor --record c.jsonl",
    "gpucluster replay t.jsonl c.jsonl --timeline {out}",
)
"""What the caption says (the castor run is written there as "and ``--policy castor --record c.jsonl``")."""


def draw(out: Path) -> Path:
    """Run :data:`COMMANDS` through the CLI in a scratch folder, the timeline written to ``out``."""
    import contextlib
    import io
    import os

    from gpucluster_env.cli.main import main

    out = out.resolve()
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            for cmd in COMMANDS:
                argv = shlex.split(cmd.format(out=out))[1:] + (["--no-progress"] if " run " in f" {cmd} " else [])
                with contextlib.redirect_stdout(io.StringIO()):
                    rc = main(argv)
                if rc != 0:
                    raise SystemExit(f"{cmd}: exit status {rc}")
        finally:
            os.chdir(here)
    return out


if __name__ == "__main__":
    print(draw(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img" / "timeline-tiny.png"))
