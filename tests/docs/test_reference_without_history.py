"""Reference pages carry no history (issue #45: "a newcomer's path -- README, a tutorial, the reference page of the
area they change -- has no history in it").

A reference page says what is true today: what each thing is, today's figures and the command that gives each.
How a figure was reached -- the runs that were tried, stopped or superseded, the passes of a speed-up, a table
measured against the code before a change -- lives under docs/history/ (one page per reference page, each part
under a dated heading), and the reference page points there in a line. This test guards that split: none of the
reference pages below may contain a phrase that, in this project's docs, only ever narrates a past run. The
phrases are the ones the moved text used (each is checked to occur in docs/history/, so the list stays honest);
a page that needs to say such a thing moves it to its history page and links it.

Not checked: the Results pages (docs/results/, the leaderboard, the reproductions and claims, each dated by the
command and commit that rendered it) and docs/departures.md (a record of departures from the papers, each with
its before and after by design).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

REFERENCE_PAGES = [
    "README.md",
    "docs/index.md",
    "docs/environment.md",
    "docs/engine.md",
    "docs/rl.md",
    "docs/traces.md",
    "docs/catalog.md",
    "docs/replay.md",
    "docs/architecture.md",
    "docs/performance.md",
    "docs/glossary.md",
    "docs/gavel.md",
    "docs/pollux.md",
    *sorted(str(p.relative_to(ROOT)) for p in (DOCS / "tutorials").glob("*.md")),
]

# Phrases that narrate a past run, each as the moved text used it (matched on the page's text with its line breaks
# folded into spaces, so a phrase split over two lines still matches).
HISTORY_MARKERS = {
    "a dated run": r"\bwas run (?:at|on)\b",
    "a run that was stopped": r"\bwas stopped\b|\bstopped for time\b",
    "a run that repeats another with one change": r"\bthe same command with\b",
    "one run of an experiment, then the next": r"\bOne run, `|\bA second run (?:across|with)\b",
    "a plan of what to measure next": r"\bis the next thing to measure\b",
    "a superseded figure": (r"'s first measurement was\b|\bnot re-(?:measured|run) since\b|\(was [\d.,]+"
                            r"|\bbefore [\d.,]+ / [\d.,]+"),
    "runs trained again": r"\btrained again\b",
    "a measurement of the code before a change": (
        r"\bMeasured before this\b|\bbefore this (?:lazy loading|design)\b|\bMeasured side by side against main\b"
        r"|\bAn earlier pair of runs\b|\bAgainst the earlier call\b"),
    "a numbered pass of a speed-up": r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth) pass\b",
    "a run on a loaded machine on a date": r"\bon a machine at load\b",
}


def _text(path: Path) -> str:
    return " ".join(path.read_text().split())


def history_phrases(text: str) -> list[str]:
    """Each history marker found in ``text`` with the words around it."""
    text = " ".join(text.split())
    found = []
    for name, pattern in HISTORY_MARKERS.items():
        for m in re.finditer(pattern, text, flags=re.IGNORECASE):
            found.append(f"{name}: ...{text[max(0, m.start() - 60):m.end() + 40]}...")
    return found


@pytest.mark.parametrize("page", REFERENCE_PAGES)
def test_reference_page_has_no_history(page: str) -> None:
    found = history_phrases((ROOT / page).read_text())
    assert not found, (f"{page} narrates past runs; move them verbatim to docs/history/ under a dated heading and "
                       "leave a one-line pointer:\n" + "\n".join(found))


def test_the_markers_are_the_history_pages_own_phrases() -> None:
    """Every marker occurs in docs/history/ (the moved text), so the list names phrases history actually uses."""
    history = " ".join(_text(p) for p in sorted((DOCS / "history").glob("*.md")))
    unused = [name for name, pattern in HISTORY_MARKERS.items() if not re.search(pattern, history, re.IGNORECASE)]
    assert not unused, f"markers that no history page uses: {unused}"


def test_the_list_names_pages_that_exist() -> None:
    missing = [p for p in REFERENCE_PAGES if not (ROOT / p).is_file()]
    assert not missing, missing
