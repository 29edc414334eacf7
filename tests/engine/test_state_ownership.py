"""Every field of the engine's state has one owner (issue #45): one engine module writes it, and every other part
changes it only by calling the owner's methods. Read from the source (the AST), nothing is imported.

What counts as a write of field ``F`` of the state ``S`` (``self.state``, ``<anything>.state``, a local name bound
to one, or a parameter annotated ``EngineState``):

* an assignment, augmented or annotated assignment, or ``del`` whose target reaches ``S.F`` through subscripts
  and attributes: ``S.F = ...``, ``S.F[j] += ...``, ``S.F[j][0].k = ...``;
* a call of a container's mutator (``append``, ``pop``, ``add``, ``discard``, ``update``, ``setdefault`` ...)
  on ``S.F`` or on anything reached from it: ``S.F.pop(j)``, ``S.F[j].ready.pop(i)``;
* the same through a local alias: ``x = S.F``, ``x = S.F[j]``, ``x = S.F.get(j)``, ``a, b = S.F, S.G``,
  ``for x in S.F[j]`` (``enumerate`` and ``zip`` too), until the name is bound to something else.

The fields that hold an object with methods of its own (:data:`OBJECT_FIELDS`: the event queue, the event log,
the active-SM tracker) own their data: calling their methods (``S.events.push``, ``S.log.add``) is how any part
changes them; writing their attributes is a write. ``EngineState`` itself (``state.py``) makes every field's
value at a reset and is no writer here. A field passed to a function that changes it (``heappop(heap)``) is not
seen.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "gpucluster_env" / "engine"

OWNERS: dict[str, tuple[str, ...]] = {
    "job_queue": ("status", "pending_queue", "running_set", "queue_version", "next_arrival", "n_done",
                  "pending_since", "queue_s", "first_start", "last_start", "finish_t", "n_preempt"),
    "job_progress": ("remaining", "rate", "last_t", "active_from", "version", "copy_progress", "solo_rate",
                     "job_min_mem"),
    "occupancy": ("slot_job_flat", "slot_share_flat", "free_flat", "gpu_version", "busy_gpus", "shared_gpus",
                  "busy_t", "shared_t", "held", "held_shared", "shared_map", "copies", "copy_consts", "share_lo",
                  "share_hi", "accum", "footprint", "batch_l", "forked_set", "max_copies"),
    "lifecycle": ("n_colocated", "sharing_benefits", "stealing"),
    "counters": ("counts",),
    "clock": ("now", "busy_gpu_s", "shared_gpu_s", "sm_active_gpu_s", "events"),
    "rates": ("copy_models",),
}
"""The engine module that owns each field the engine writes after a reset (the table of ``docs/engine.md``,
"Who writes what")."""

MULTI_WRITER_ALLOWED: dict[str, str] = {
}
"""Fields more than one engine module may write, as ``field: why``. Only a case that cannot be helped belongs here;
empty today."""

OBJECT_FIELDS = ("events", "log", "sm_activity")
MUTATORS = frozenset({"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault",
                      "add", "discard", "sort", "reverse"})


def state_fields(state_py: Path = ENGINE / "state.py") -> set[str]:
    """The attributes ``EngineState`` sets on itself."""
    cls = next(n for n in ast.parse(state_py.read_text()).body
               if isinstance(n, ast.ClassDef) and n.name == "EngineState")
    return {e.attr for n in ast.walk(cls) if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign)
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) for e in ast.walk(t)
            if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self"}


class _Writes:
    """The field writes of one function (see the module docstring), in source order."""

    def __init__(self, fields: set[str], fn: ast.FunctionDef | ast.AsyncFunctionDef, via_engine: bool = False) -> None:
        self.fields = fields
        self.roots = ("state", "eng", "_eng", "engine", "_engine") if via_engine else ("state",)
        self.states = {a.arg for a in fn.args.args if a.annotation and "EngineState" in ast.unparse(a.annotation)}
        self.alias: dict[str, str] = {}
        self.found: list[tuple[str, int]] = []
        for node in sorted((n for n in ast.walk(fn) if isinstance(n, ast.stmt | ast.expr)),
                           key=lambda n: (n.lineno, n.col_offset)):
            self.visit(node)

    def is_state(self, e: ast.expr) -> bool:
        return (isinstance(e, ast.Attribute) and e.attr in self.roots) or (
            isinstance(e, ast.Name) and (e.id in self.states or e.id in self.roots[1:]))

    def field(self, e: ast.expr, through_calls: bool = False) -> tuple[str, bool] | None:
        """The field ``e`` reaches (``S.F``, ``S.F[j].x``, an alias ...) and whether it is ``S.F`` itself."""
        direct = True
        while True:
            if isinstance(e, ast.Attribute):
                if self.is_state(e.value) and e.attr in self.fields:
                    return e.attr, direct
                e, direct = e.value, False
            elif isinstance(e, ast.Subscript):
                e, direct = e.value, False
            elif through_calls and isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) \
                    and e.func.attr in ("get", "setdefault"):
                e, direct = e.func.value, False
            elif isinstance(e, ast.Name):
                f = self.alias.get(e.id)
                return None if f is None else (f, False)
            else:
                return None

    def write(self, target: ast.expr, line: int, call: bool = False) -> None:
        hit = self.field(target)
        if hit is not None and not (call and hit[1] and hit[0] in OBJECT_FIELDS):
            self.found.append((hit[0], line))

    def bind(self, name: ast.expr, value: ast.expr | None) -> None:
        if isinstance(name, ast.Tuple):
            values = value.elts if isinstance(value, ast.Tuple) and len(value.elts) == len(name.elts) else None
            for i, elt in enumerate(name.elts):
                self.bind(elt, values[i] if values else value)
        elif isinstance(name, ast.Name):
            self.alias.pop(name.id, None)
            self.states.discard(name.id)
            if value is not None and self.is_state(value):
                self.states.add(name.id)
            elif value is not None and (hit := self.field(value, through_calls=True)) is not None:
                self.alias[name.id] = hit[0]

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name | ast.Tuple):
                    self.bind(t, node.value)
                    for e in (t.elts if isinstance(t, ast.Tuple) else []):
                        if not isinstance(e, ast.Name):
                            self.write(e, node.lineno)
                else:
                    self.write(t, node.lineno)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and not isinstance(node.target, ast.Name):
            self.write(node.target, node.lineno)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                self.write(t, node.lineno)
        elif isinstance(node, ast.For):
            it = node.iter
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("zip", "enumerate"):
                args = it.args if it.func.id == "zip" else [ast.Constant(0), *it.args]
                self.bind(node.target, ast.Tuple(elts=list(args)))
            else:
                self.bind(node.target, ast.Subscript(value=it, slice=ast.Constant(0)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            self.write(node.func.value, node.lineno, call=True)


def field_writes(path: Path, fields: set[str], via_engine: bool = False) -> list[tuple[str, int]]:
    """``(field, line)`` for each write of a state field in the module at ``path`` (``via_engine``: also through
    the engine's names, ``eng.F``, ``self.engine.F`` ...)."""
    return [w for fn in ast.walk(ast.parse(path.read_text())) if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
            for w in _Writes(fields, fn, via_engine).found]


def writers(engine: Path = ENGINE) -> dict[str, dict[str, list[int]]]:
    """Field -> the engine modules that write it -> the lines."""
    fields = state_fields(engine / "state.py")
    out: dict[str, dict[str, list[int]]] = {}
    for path in sorted(engine.glob("*.py")):
        if path.name != "state.py":
            for f, line in field_writes(path, fields):
                out.setdefault(f, {}).setdefault(path.stem, []).append(line)
    return out


def test_every_field_has_one_writer() -> None:
    multi = {f: sorted(mods) for f, mods in writers().items() if len(mods) > 1 and f not in MULTI_WRITER_ALLOWED}
    assert not multi, "state fields written by more than one engine module (give the field one owner and " \
                      f"let the others call its methods):\n{multi}"


def test_each_writer_is_the_owner_the_map_names() -> None:
    owner = {f: m for m, fs in OWNERS.items() for f in fs}
    assert len(owner) == sum(len(fs) for fs in OWNERS.values()), "a field named twice in OWNERS"
    found = {f: sorted(mods) for f, mods in writers().items()}
    wrong = {f: mods for f, mods in found.items() if f not in MULTI_WRITER_ALLOWED and mods != [owner.get(f)]}
    assert not wrong, f"fields written by another module than OWNERS names (or not in OWNERS): {wrong}"
    never = sorted(set(owner) - set(found))
    assert not never, f"OWNERS names fields no engine module writes (drop them): {never}"


def test_the_allow_list_is_current() -> None:
    stale = sorted(f for f in MULTI_WRITER_ALLOWED if len(writers().get(f, {})) < 2)
    assert not stale, f"MULTI_WRITER_ALLOWED entries with one writer now (delete them): {stale}"


def test_the_docs_table_names_the_same_owners() -> None:
    """``docs/engine.md``'s "Who writes what" table: one row per owner, ``module`` in its first cell, every field
    it owns in backquotes in its second."""
    text = (ROOT / "docs" / "engine.md").read_text()
    section = text.split("### Who writes what", 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in [x for x in section.splitlines() if x.startswith("|")][2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        module = re.search(r"`(\w+)\.py`", cells[0])
        assert module, line
        rows[module.group(1)] = set(re.findall(r"`(\w+)`", cells[1]))
    assert rows == {m: set(fs) for m, fs in OWNERS.items()}


def test_no_module_outside_the_engine_writes_its_state() -> None:
    """The environment, the policies and the harness change the engine only through its methods: no write to a
    field of ``<x>.state``, nor of the engine's read-through properties (``eng.F``, ``self.engine.F`` ...)."""
    fields = state_fields()
    bad = [f"{path.relative_to(ROOT)}:{line} .{f}"
           for folder in ("gpucluster_env", "agents", "baselines", "traces", "leaderboard")
           for path in sorted((ROOT / folder).rglob("*.py")) if path.parent != ENGINE
           for f, line in field_writes(path, fields, via_engine=True)]
    assert not bad, bad


# ------------------------------------------------------------------------------------------ the check can fail


def test_the_check_sees_each_kind_of_write(tmp_path: Path) -> None:
    (tmp_path / "state.py").write_text(
        "class EngineState:\n    def reset(self):\n"
        + "".join(f"        self.{f} = None\n" for f in ("a", "b", "c", "d", "e", "g", "h", "log", "k", "m")))
    (tmp_path / "one.py").write_text(
        "class P:\n"
        "    def f(self, j):\n"
        "        st = self.state\n"
        "        st.a[j] = 1\n"                         # subscript assignment
        "        st.b += 1\n"                           # augmented
        "        x, y = st.c, st.d\n"
        "        x[j] = 0\n"                            # through a tuple-bound alias
        "        cp = st.e.get(j)\n"
        "        cp.ready.pop(0)\n"                     # a mutator through an element
        "        for c in st.g[j]:\n"
        "            c.k = 1\n"                         # an element's attribute
        "        st.log.add(1)\n"                       # an object's method: no write
        "        st.log.records.append(1)\n"            # its attribute: a write
        "        y = 3\n"
        "        y[0] = 1\n"                            # rebound: no longer the alias
        "        st.h.update({})\n"
        "        st.k.pop(j)\n"
        "        for i, c in enumerate(st.m):\n"
        "            c.x = 1\n")
    (tmp_path / "two.py").write_text("def g(state: 'EngineState'):\n    state.a[0] = 2\n")
    found = writers(tmp_path)
    assert found == {"a": {"one": [4], "two": [2]}, "b": {"one": [5]}, "c": {"one": [7]}, "e": {"one": [9]},
                     "g": {"one": [11]}, "log": {"one": [13]}, "h": {"one": [16]}, "k": {"one": [17]},
                     "m": {"one": [19]}}
