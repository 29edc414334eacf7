"""Imports a reader and a tool can follow: the four folders installed inside the package through setuptools'
``package-dir`` (``baselines/``, ``agents/``, ``traces/``, ``leaderboard/``) import by full name, never by a
relative import, whose ``..`` would point at a folder that does not exist on disk."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED = ("baselines", "agents", "traces", "leaderboard")


def relative_imports(path: Path) -> list[int]:
    """Line numbers of the relative imports in ``path``."""
    tree = ast.parse(path.read_text())
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 0]


def test_mapped_folders_import_by_full_name() -> None:
    found = [f"{p.relative_to(ROOT)}:{line}" for folder in MAPPED for p in sorted((ROOT / folder).rglob("*.py"))
             for line in relative_imports(p)]
    assert not found, "relative imports in a package-dir mapped folder (write from gpucluster_env.x import ...):\n" \
        + "\n".join(found)


def test_the_check_sees_a_relative_import(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("import os\nfrom gpucluster_env.engine import Place\n\ndef g():\n    from ..scenarios import x\n")
    assert relative_imports(f) == [5]
