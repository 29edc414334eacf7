"""The engine as composed parts: every part holds the engine's one state, a clone's parts hold the clone's, and
the state's attributes the engine shows by name (``STATE_FIELDS``) are all of its public ones, read through (read
only: each is written by the part that owns it, ``test_state_ownership.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from gpucluster_env.engine import ClusterEngine, Place
from gpucluster_env.engine.build import make_engine
from gpucluster_env.engine.state import ENGINE_INTERNALS, STATE_FIELDS, EngineState
from gpucluster_env.scenarios import get_scenario

PARTS = ("queue", "counters", "occupancy", "rates", "progress", "placement", "checks", "lifecycle", "moves", "clock")


def _engine() -> ClusterEngine:
    eng = make_engine(get_scenario("tiny"), 0)
    eng.advance()
    return eng


def _parts(eng: ClusterEngine) -> list[object]:
    """Every part object of ``eng``, and the parts they hold (the move checks live inside ``moves``)."""
    out = [getattr(eng, p) for p in PARTS]
    return out + [eng.moves.checks]


def test_every_part_holds_the_engines_one_state() -> None:
    eng = _engine()
    for part in _parts(eng):
        assert part.state is eng.state, type(part).__name__


def test_a_clones_parts_hold_the_clones_state_and_share_only_static_tables() -> None:
    eng = _engine()
    j = int(eng.pending_jobs()[0])
    twin = eng.clone()
    assert twin.state is not eng.state
    for part in _parts(twin):
        assert part.state is twin.state, type(part).__name__
    assert twin.lifecycle.progress is twin.progress and twin.clock.lifecycle is twin.lifecycle
    assert twin.state.profiles is eng.state.profiles and twin.state.xi_share_tab is eng.state.xi_share_tab
    twin.apply(Place(j))
    assert twin.status[j] == 2 and eng.status[j] == 1 and eng.free_mask().all()


def test_state_fields_are_the_states_public_attributes_read_through() -> None:
    eng = _engine()
    public = {k for k in vars(eng.state) if not k.startswith("_")}
    assert public == set(STATE_FIELDS) | set(ENGINE_INTERNALS) and not set(STATE_FIELDS) & set(ENGINE_INTERNALS)
    for name in STATE_FIELDS:
        assert getattr(eng, name) is getattr(eng.state, name)
    assert not any(hasattr(eng, name) for name in ENGINE_INTERNALS)
    with pytest.raises(AttributeError):
        eng.now = 12.5
    eng.state.now = 12.5
    assert eng.now == 12.5
    assert not hasattr(EngineState, "apply")  # the state holds data and queries of its tables, no actions
    assert isinstance(eng.remaining, np.ndarray)


def test_no_module_outside_the_engine_reads_its_internals() -> None:
    # ENGINE_INTERNALS are the engine's parts' own; the view, the env, the policies and the harness read the
    # state through STATE_FIELDS and the engine's and view's methods
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    internals = set(ENGINE_INTERNALS)
    reads = []
    for folder in ("gpucluster_env", "agents", "baselines", "traces", "leaderboard"):
        for path in (root / folder).rglob("*.py"):
            if path.parent == root / "gpucluster_env" / "engine":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute) and node.attr in internals and not (
                        isinstance(node.value, ast.Name) and node.value.id == "self"):
                    reads.append(f"{path.relative_to(root)}:{node.lineno} .{node.attr}")
    assert not reads, reads
