"""The engine's imports: no circle between its modules (counting imports made only for type checking, which a
reader and a tool follow too), and importing it loads no Gymnasium, while ``import gpucluster_env`` still
registers the environment ids with Gymnasium in either import order."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "gpucluster_env" / "engine"
PKG = "gpucluster_env.engine"


def engine_imports(path: Path) -> set[str]:
    """The engine modules ``path`` imports (``gpucluster_env.engine`` for the package itself), anywhere in the
    file: module level, in functions, under ``TYPE_CHECKING``."""
    here = PKG if path.stem == "__init__" else f"{PKG}.{path.stem}"
    base = PKG
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith(PKG))
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                mod = node.module or ""
            else:
                parts = base.split(".")[: len(base.split(".")) - (node.level - 1)]
                mod = ".".join(parts + ([node.module] if node.module else []))
            if not mod.startswith(PKG):
                continue
            # `from . import placement` names a module; `from . import ClusterEngine` the package
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.add(sub if (ENGINE / f"{a.name}.py").exists() and mod == PKG else mod)
    out.discard(here)
    return out


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (as the list of modules around it), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (c := visit(n)):
                return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (c := visit(m)):
            return c
    return None


def test_no_import_circle_in_the_engine() -> None:
    graph = {(PKG if p.stem == "__init__" else f"{PKG}.{p.stem}"): engine_imports(p) for p in ENGINE.glob("*.py")}
    assert len(graph) > 10
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_cycle_check_sees_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_importing_the_engine_loads_no_gymnasium() -> None:
    code = ("import sys, gpucluster_env, gpucluster_env.engine, gpucluster_env.engine.build; "
            "print('gymnasium' in sys.modules)")
    assert _run(code) == "False"


def test_ids_register_when_gymnasium_is_imported_after_the_package() -> None:
    code = ("import gpucluster_env, gymnasium as gym; "
            "print(gym.make('gpucluster_env/Tiny-v1').spec.id, len(gpucluster_env.ENV_IDS) > 3)")
    assert _run(code) == "gpucluster_env/Tiny-v1 True"


def test_ids_register_when_gymnasium_is_imported_first() -> None:
    code = ("import gymnasium as gym, gpucluster_env; "
            "print(all(i in gym.registry for i in gpucluster_env.ENV_IDS))")
    assert _run(code) == "True"
