"""The house rules a newcomer relies on, checked from the source (AST only, nothing is imported): small modules
(at most 400 lines), short functions (at most 60 lines), no import circle between modules or between areas, and
imports that only go down the layers model -> engine -> env -> agents -> harness (``docs/architecture.md``).

The package is ``gpucluster_env/`` plus the four folders setuptools installs inside it (``package-dir`` in
``pyproject.toml``): ``baselines/``, ``agents/``, ``traces/``, ``leaderboard/``. Every import counts, at the top
of a module or inside a function. An import under ``if TYPE_CHECKING:`` (a type hint naming a caller's class)
never runs: it counts for the layers (it must not point up either) but not for circles."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "gpucluster_env"
# folder on disk -> dotted package it installs as (pyproject.toml, [tool.setuptools] package-dir)
FOLDERS = {"gpucluster_env": "gpucluster_env", "baselines": "gpucluster_env.baselines",
           "agents": "gpucluster_env.agents", "traces": "gpucluster_env.traces",
           "leaderboard": "gpucluster_env.leaderboard"}

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60

# Functions allowed over the limit, as "path:Class.function": "why". Only a generated table or literal belongs
# here (a compiled kernel does not: split it into helper functions); empty today. A temporary entry (a file
# another change is rewriting) says so in its reason; test_the_allow_list_is_current drops stale entries.
LONG_FUNCTION_ALLOWED: dict[str, str] = {
}

# The layers, lowest first; in each, its areas by name and the package prefixes they hold (the longest prefix
# that matches a module names its area). docs/architecture.md draws the same map.
LAYERS: dict[str, dict[str, tuple[str, ...]]] = {
    "model": {
        "model": ("gpucluster_env",),  # hardware, workloads, interference, performance, config; plain helpers
        "catalog": ("gpucluster_env.catalog",),
        "typed data": ("gpucluster_env.settings", "gpucluster_env.policy_options", "gpucluster_env.jobs"),
        "traces": ("gpucluster_env.traces",),
        "scenarios": ("gpucluster_env.scenario_spec", "gpucluster_env.scenarios", "gpucluster_env.scenario_files"),
    },
    "engine": {"engine": ("gpucluster_env.engine",)},
    "env": {"env": ("gpucluster_env.env", "gpucluster_env.registration")},
    "agents": {"policy": ("gpucluster_env.policy", "gpucluster_env.policy_base", "gpucluster_env.policy_plugins"),
               "baselines": ("gpucluster_env.baselines",),
               "agents": ("gpucluster_env.agents",)},
    "harness": {"cli": ("gpucluster_env.cli",), "leaderboard": ("gpucluster_env.leaderboard",),
                "replay": ("gpucluster_env.replay",)},
}
# The package's own __init__ registers the env ids (env layer) and is imported by nobody by name.
AREA_OF_MODULE = {"gpucluster_env": "gpucluster_env.registration"}
Layers = dict[str, dict[str, tuple[str, ...]]]


def package_modules(root: Path = ROOT, folders: dict[str, str] = FOLDERS) -> dict[str, Path]:
    """Every module of the installed package, by dotted name, with its file (``__init__.py`` names its package)."""
    found: dict[str, Path] = {}
    for folder, dotted in folders.items():
        base = root / folder
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([dotted, *parts])
            if dotted == PACKAGE and parts and ".".join([PACKAGE, parts[0]]) in folders.values():
                continue                                   # a mapped folder's name shadowed inside the package
            found[name] = path
    return found


def module_lines(path: Path) -> int:
    """Lines in a module's file."""
    return len(path.read_text().splitlines())


def long_functions(path: Path, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """The functions and methods of ``path`` longer than ``limit`` lines (``def`` to last line), by qualified
    name (``Class.method``, ``outer.inner``), with their lengths."""
    tree = ast.parse(path.read_text())
    out: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = child.end_lineno - child.lineno + 1
                if n > limit:
                    out.append((prefix + child.name, n))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def _type_checking_only(tree: ast.Module) -> set[int]:
    """Ids of the import nodes under ``if TYPE_CHECKING:`` in ``tree``."""
    return {id(n) for top in ast.walk(tree) if isinstance(top, ast.If) and "TYPE_CHECKING" in ast.unparse(top.test)
            for stmt in top.body for n in ast.walk(stmt)}


def imported_modules(path: Path, module: str, modules: Iterable[str], type_checking: bool = True) -> set[str]:
    """The package's modules that ``module`` (its file ``path``) imports, anywhere in the file, relative imports
    resolved: ``from a import b`` imports ``a.b`` where that is a module, else ``a`` (a name ``a`` defines);
    those under ``if TYPE_CHECKING:`` only if ``type_checking``."""
    known = set(modules)
    here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    skip = set() if type_checking else _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                found.add(".".join(parts[:_longest(parts, known)]))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return (found & known) - {module}


def _longest(parts: list[str], known: set[str]) -> int:
    """How many leading parts of a dotted name make the longest module name in ``known``."""
    return max((k for k in range(1, len(parts) + 1) if ".".join(parts[:k]) in known), default=0)


def import_graph(modules: dict[str, Path], type_checking: bool = True) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (with those under ``if TYPE_CHECKING:`` or not)."""
    return {name: imported_modules(path, name, modules, type_checking) for name, path in modules.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def area_of(module: str, layers: Layers = LAYERS) -> str:
    """The area a module belongs to: the one holding the longest prefix of its name."""
    module = AREA_OF_MODULE.get(module, module)
    best, best_len = "", -1
    for areas in layers.values():
        for area, prefixes in areas.items():
            for p in prefixes:
                if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                    best, best_len = area, len(p)
    assert best, f"{module}: in no area of LAYERS (add it there and in docs/architecture.md)"
    return best


def layer_of(area: str, layers: Layers = LAYERS) -> str:
    """The layer an area is in."""
    return next(layer for layer, areas in layers.items() if area in areas)


def area_graph(graph: dict[str, set[str]], layers: Layers = LAYERS) -> dict[str, set[str]]:
    """Area -> the other areas its modules import."""
    out: dict[str, set[str]] = {a: set() for areas in layers.values() for a in areas}
    for module, targets in graph.items():
        src = area_of(module, layers)
        out[src].update(area_of(t, layers) for t in targets)
        out[src].discard(src)
    return out


def upward_imports(graph: dict[str, set[str]], layers: Layers = LAYERS) -> list[str]:
    """``importer (layer) -> imported (layer)`` for every import from a lower layer into a higher one."""
    rank = {layer: i for i, layer in enumerate(layers)}
    out = []
    for m, targets in graph.items():
        src = layer_of(area_of(m, layers), layers)
        for t in targets:
            dst = layer_of(area_of(t, layers), layers)
            if rank[dst] > rank[src]:
                out.append(f"{m} ({src}) -> {t} ({dst})")
    return sorted(out)


# ---------------------------------------------------------------------------------------------------- the house


@pytest.fixture(scope="module")
def modules() -> dict[str, Path]:
    return package_modules()


@pytest.fixture(scope="module")
def graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return import_graph(modules)


@pytest.fixture(scope="module")
def run_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """The imports that run (those under ``if TYPE_CHECKING:`` left out)."""
    return import_graph(modules, type_checking=False)


def test_modules_are_small(modules: dict[str, Path]) -> None:
    big = [f"{p.relative_to(ROOT)}: {n} lines" for p in modules.values() if (n := module_lines(p)) > MAX_MODULE_LINES]
    assert not big, f"modules over {MAX_MODULE_LINES} lines (split by what they hold):\n" + "\n".join(big)


def test_functions_are_short(modules: dict[str, Path]) -> None:
    long = [f"{key}: {n} lines" for p in modules.values() for fn, n in long_functions(p)
            if (key := f"{p.relative_to(ROOT)}:{fn}") not in LONG_FUNCTION_ALLOWED]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


def test_the_allow_list_is_current(modules: dict[str, Path]) -> None:
    long = {f"{p.relative_to(ROOT)}:{fn}" for p in modules.values() for fn, _ in long_functions(p)}
    stale = sorted(set(LONG_FUNCTION_ALLOWED) - long)
    assert not stale, "entries of LONG_FUNCTION_ALLOWED that are short now (delete them):\n" + "\n".join(stale)


def test_no_import_circle_between_modules(run_graph: dict[str, set[str]]) -> None:
    circles = strongly_connected(run_graph)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_no_import_circle_between_areas(run_graph: dict[str, set[str]]) -> None:
    circles = strongly_connected(area_graph(run_graph))
    assert not circles, "areas importing each other:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_imports_only_go_down(graph: dict[str, set[str]]) -> None:
    up = upward_imports(graph)
    assert not up, "imports from a lower layer into a higher one:\n" + "\n".join(up)


def test_the_folders_are_pyprojects_package_dirs() -> None:
    with open(ROOT / "pyproject.toml", "rb") as f:
        mapping = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    assert {folder: dotted for dotted, folder in mapping.items()} == FOLDERS


def test_every_module_has_an_area(modules: dict[str, Path]) -> None:
    for name in modules:
        area_of(name)


# ------------------------------------------------------------------------------------- the checks can fail


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_checks_see_a_bad_house(tmp_path: Path) -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(61))
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low.py": "def f():\n    from pkg.high import g\n",            # upward, inside a function
        "pkg/high/__init__.py": "from .top import g\n",
        "pkg/high/top.py": f"import pkg.low\n\nclass C:\n    def long(self):\n{body}\n\n" + "y = 1\n" * 340,
        "other/mod.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import top\n"
                        "from pkg import low\n",
    })
    modules = package_modules(tmp_path, {"pkg": "pkg", "other": "pkg.other"})
    assert sorted(modules) == ["pkg", "pkg.high", "pkg.high.top", "pkg.low", "pkg.other.mod"]
    assert module_lines(modules["pkg.high.top"]) > MAX_MODULE_LINES
    assert long_functions(modules["pkg.high.top"]) == [("C.long", 62)]
    graph = import_graph(modules)
    assert graph == {"pkg": set(), "pkg.low": {"pkg.high"}, "pkg.high": {"pkg.high.top"},
                     "pkg.high.top": {"pkg.low"}, "pkg.other.mod": {"pkg.low", "pkg.high.top"}}
    assert import_graph(modules, type_checking=False)["pkg.other.mod"] == {"pkg.low"}
    assert strongly_connected(graph) == [["pkg.high", "pkg.high.top", "pkg.low"]]
    layers = {"low": {"base": ("pkg",), "other": ("pkg.other",)}, "high": {"top": ("pkg.high",)}}
    assert area_graph(graph, layers) == {"base": {"top"}, "other": {"base", "top"}, "top": {"base"}}
    assert strongly_connected(area_graph(graph, layers)) == [["base", "top"]]
    assert upward_imports(graph, layers) == ["pkg.low (low) -> pkg.high (high)",
                                             "pkg.other.mod (low) -> pkg.high.top (high)"]


def test_the_checks_pass_a_good_house(tmp_path: Path) -> None:
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "import os\n", "pkg/b.py": "from pkg import a\n",
                      "pkg/c.py": "from pkg.a import thing\nfrom . import b\n"})
    graph = import_graph(package_modules(tmp_path, {"pkg": "pkg"}))
    assert graph == {"pkg": set(), "pkg.a": set(), "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.a", "pkg.b"}}
    assert strongly_connected(graph) == []
    assert upward_imports(graph, {"one": {"all": ("pkg",)}}) == []


def test_docs_name_no_machines_paths() -> None:
    """The docs are read on other machines: a path of the machine they were written on (``/work/...``, a home
    folder) says nothing there; name the repository, ``$GPUCLUSTER_DATA`` or a scratch folder instead."""
    docs = ROOT / "docs"
    pages = [ROOT / "README.md", *sorted(docs.glob("*.md")), *sorted((docs / "results").glob("*.md"))]
    bad = [f"{p.relative_to(ROOT)}:{n}" for p in pages
           for n, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"(?<![\w$])/(work|root|home)/", line)]
    assert not bad, "lines naming a machine's own paths:\n" + "\n".join(bad)


def test_every_mod_reference_names_a_module() -> None:
    """A docstring's ``:mod:`` reference (absolute, or relative to the module's package) names a module that
    exists, so the docs a reader follows do not lead to a module that was renamed or moved."""
    modules = package_modules()
    bad = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for ref in re.findall(r":mod:`~?([\w.]+)`", path.read_text()):
            dots = len(ref) - len(ref.lstrip("."))
            if dots:
                base = package.split(".")[: len(package.split(".")) - (dots - 1)]
                full = ".".join(base + ([ref.lstrip(".")] if ref.lstrip(".") else []))
            else:
                full = ref
            if full.startswith(PACKAGE) and full not in modules:
                bad.append(f"{path.relative_to(ROOT)}: :mod:`{ref}` ({full})")
    assert not bad, "references to modules that do not exist:\n" + "\n".join(bad)


MAX_PRIVATE_READS = 30
"""Issue #45: reads of another object's private attribute (``x._name`` where ``x`` is not ``self`` or ``cls``)
in the package stay under this; 28 on 2026-12-06."""


def private_reads(paths: list[Path]) -> list[str]:
    """Each read of another object's private attribute in ``paths``, as ``file:line .name``."""
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                out.append(f"{where}:{node.lineno} .{node.attr}")
    return out


def test_few_reads_of_other_objects_private_attributes(modules: dict[str, Path]) -> None:
    reads = private_reads(sorted(set(modules.values())))
    assert len(reads) < MAX_PRIVATE_READS, "\n".join(reads)


def test_the_private_read_count_sees_one(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("class A:\n    def f(self, other):\n        return self._x + other._y + other.__class__\n")
    assert [r.split()[-1] for r in private_reads([f])] == ["._y"]
