"""The documentation site (``mkdocs.yml``) builds with ``mkdocs build --strict`` (no broken link, no page left
out of the nav, no nav entry without its page), and its nav keeps what is true today apart from what was
measured and what happened: Reference, Tutorials, Results (generated pages) and History."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

pytest.importorskip("mkdocs", reason="mkdocs is not installed: `make` installs it with the dev extra")

# Markdown files under docs/ that are deliberately not pages of the site, with the reason.
NOT_PAGES = {
    "_scripts/README.md": "the README of the scripts that render the Results pages (docs/_scripts is excluded "
                          "from the site in mkdocs.yml: Python scripts, not pages)",
}
SECTIONS = ["Home", "Reference", "Tutorials", "Results", "History"]
# The pages of measured results belong under Results, not Reference: every page of docs/results/ (written whole by
# a script of docs/_scripts, tests/docs/test_results_pages.py) and these, written by hand from measured runs.
MEASURED = {"reproduction-hadar-gimbal.md", "leaderboard.md"}


def nav_pages(nav: list) -> dict[str, str]:
    """Every page of an mkdocs nav (path relative to docs/) with the top-level section that holds it."""
    out: dict[str, str] = {}

    def visit(entries: list | str, section: str) -> None:
        if isinstance(entries, str):
            out[entries] = section
            return
        for entry in entries:
            if isinstance(entry, str):
                out[entry] = section
            else:
                for value in entry.values():
                    visit(value, section)

    for top in nav:
        (title, value), = top.items()
        visit(value, title)
    return out


def markdown_files() -> set[str]:
    """Every Markdown file under docs/, relative to it (symlinked pages included)."""
    return {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}


@pytest.fixture(scope="module")
def nav() -> dict[str, str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert [next(iter(top)) for top in config["nav"]] == SECTIONS
    return nav_pages(config["nav"])


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """``--strict`` turns every warning into a failure: a broken relative link or anchor, a page that is not in
    the nav, a nav entry whose file is missing."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "tutorials" / "policy" / "index.html").is_file()
    assert not (tmp_path / "site" / "_scripts").exists(), "docs/_scripts is not part of the site"


def test_every_page_is_in_the_nav_or_excluded_with_a_reason(nav: dict[str, str]) -> None:
    pages = markdown_files()
    missing = sorted(pages - set(nav) - set(NOT_PAGES))
    assert not missing, f"pages of docs/ that are in no section of mkdocs.yml's nav: {missing}"
    dangling = sorted(set(nav) - pages)
    assert not dangling, f"nav entries without their file under docs/: {dangling}"
    stale = sorted(set(NOT_PAGES) - pages)
    assert not stale, f"NOT_PAGES names files that no longer exist: {stale}"


def test_the_sections_keep_reference_apart_from_results_and_history(nav: dict[str, str]) -> None:
    generated = {p for p in markdown_files() if p.startswith("results/")}
    assert {"results/claims.md", "results/reproduction.md"} <= generated
    misplaced = sorted(p for p in generated | MEASURED if nav.get(p) != "Results")
    assert not misplaced, f"generated or measured pages outside Results: {misplaced}"
    causes = sorted(p for p, s in nav.items() if p.startswith("causes/") and s != "Results")
    assert not causes, f"measured causes outside Results: {causes}"
    history = {p for p, s in nav.items() if s == "History"}
    assert {p for p in nav if p.startswith("history/")} == history
    assert {"history/changelog.md", "history/decisions.md", "history/rl.md"} <= history
    tutorials = {p for p, s in nav.items() if s == "Tutorials"}
    assert tutorials == {p for p in markdown_files() if p.startswith("tutorials/")}


def test_the_changelog_page_is_the_repositorys_changelog() -> None:
    """docs/history/changelog.md is a link to CHANGELOG.md at the root, so the site shows the one file."""
    page = DOCS / "history" / "changelog.md"
    assert page.is_symlink()
    assert page.resolve() == (ROOT / "CHANGELOG.md").resolve()


def test_nav_pages_reads_nested_sections() -> None:
    nav = [{"Home": "index.md"}, {"A": ["a.md", {"B": [{"t": "b/c.md"}]}]}]
    assert nav_pages(nav) == {"index.md": "Home", "a.md": "A", "b/c.md": "A"}
