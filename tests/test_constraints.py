"""constraints.txt pins the exact versions the suite passed with: every dependency the project declares (core and
the extras that `make` installs) is pinned there, to a version the declaration admits."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def pins() -> dict[str, Version]:
    out: dict[str, Version] = {}
    for n, line in enumerate((ROOT / "constraints.txt").read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        assert m, f"constraints.txt line {n}: not an exact pin: {line!r}"
        out[canonicalize_name(m.group(1))] = Version(m.group(2))
    return out


def test_every_declared_dependency_is_pinned_to_an_admitted_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"]]
    pinned = pins()
    missing = [r.name for r in declared if canonicalize_name(r.name) not in pinned]
    assert not missing, f"constraints.txt lacks {missing}: run `make lock`"
    refused = [f"{r.name}=={pinned[canonicalize_name(r.name)]} vs {r.specifier}" for r in declared
               if not r.specifier.contains(pinned[canonicalize_name(r.name)], prereleases=True)]
    assert not refused, f"pins outside what pyproject.toml admits: {refused}"


def test_torch_is_pinned_as_the_project_requires() -> None:
    assert pins()["torch"] == Version("2.13.0")


def test_the_distribution_declares_ranges_not_exact_versions() -> None:
    """Exact versions belong in constraints.txt: a user installing the package with other packages must be able
    to resolve it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    exact = [r for r in project["dependencies"] if Requirement(r).specifier and all(
        s.operator in ("==", "===") for s in Requirement(r).specifier)]
    assert not exact, f"exact pins in the distribution's dependencies: {exact}"
