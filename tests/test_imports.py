"""Imports a reader and a tool can follow: the four folders installed inside the package through setuptools'
``package-dir`` (``baselines/``, ``agents/``, ``traces/``, ``leaderboard/``) import by full name, never by a
relative import, whose ``..`` would point at a folder that does not exist on disk; and a module's name says one thing
across the installed package (no two modules share a file name)."""

from __future__ import annotations

import ast
from collections import defaultdict
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


def shared_names(folders: list[Path]) -> dict[str, list[str]]:
    """File names (``__init__.py`` aside) that more than one module under ``folders`` has, with their paths."""
    where: dict[str, list[str]] = defaultdict(list)
    for folder in folders:
        for p in sorted(folder.rglob("*.py")):
            if p.name != "__init__.py":
                where[p.name].append(str(p.relative_to(folder.parent)))
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_module_names_are_unique_across_the_package() -> None:
    shared = shared_names([ROOT / "gpucluster_env", *(ROOT / folder for folder in MAPPED)])
    assert not shared, "modules that share a name (rename the one whose name says less):\n" + "\n".join(
        f"{name}: {', '.join(paths)}" for name, paths in sorted(shared.items()))


def test_the_name_check_sees_a_shared_name(tmp_path: Path) -> None:
    for rel in ("a/x.py", "a/__init__.py", "b/sub/x.py", "b/__init__.py", "b/y.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert shared_names([tmp_path / "a", tmp_path / "b"]) == {"x.py": ["a/x.py", "b/sub/x.py"]}
