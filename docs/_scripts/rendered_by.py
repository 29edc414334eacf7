"""The first line of a generated page in ``docs/results/``, under its title: the command that rendered the page
and the commit of the code its numbers come from.

    **Rendered by** `python docs/_scripts/render_claims.py leaderboard-results/claims ...` **at commit** `913f50d`.

The commit is the one the page's results were run at: the ``git_revision`` that ``gpucluster leaderboard run``
writes into every record (``git rev-parse HEAD`` of the run), shortened, when all the records the page reads
name the same clean commit. Otherwise the render script requires its ``--commit`` argument (records of several
commits, or of a tree with uncommitted changes, do not say which one the page stands for): the run's commit where
it is known, else the commit whose render script wrote the page (``docs/results/reproduction.md``, whose records'
commit was not kept).
``tests/docs/test_results_pages.py`` checks that every page in ``docs/results/`` begins with this line and that
no page elsewhere in ``docs/`` does.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from typing import Any

RESULTS = "docs/results"
"""Where the generated pages live (the render scripts' default output folder)."""
SHORT = 7
"""Hex digits of a commit as the header names it (``git rev-parse --short``)."""
HEADER_RE = re.compile(r"^\*\*Rendered by\*\* `(?P<command>[^`]+)` \*\*at commit\*\* `(?P<commit>[0-9a-f]{7,40})`\.$")
"""The header line: the command (no backtick inside) and the commit (7 to 40 lowercase hex digits)."""
ELIDED = "…"
"""What an elided option value shows as (a free sentence such as ``render_claims.py --run``'s)."""


def command(script: str, argv: Sequence[str], elide: Iterable[str] = ()) -> str:
    """The command line that ran ``docs/_scripts/<script>`` with the arguments ``argv``, quoted for a shell;
    the value of each option named in ``elide`` (e.g. ``--run``, a sentence the page shows anyway) as ``"…"``."""
    hidden = set(elide)
    out: list[str] = []
    hide_next = False
    for arg in argv:
        name, eq, _ = arg.partition("=")
        if hide_next:
            out.append(f'"{ELIDED}"')
            hide_next = False
        elif eq and name in hidden:
            out.append(f'{name}="{ELIDED}"')
        else:
            out.append(shlex.quote(arg))
            hide_next = arg in hidden
    quoted = " ".join(out)
    return f"python docs/_scripts/{script}" + (f" {quoted}" if quoted else "")


def header(command_line: str, commit: str) -> str:
    """The header line of a generated page: ``command_line`` rendered it from the results of ``commit``."""
    if "`" in command_line:
        raise ValueError(f"a command with a backtick cannot be shown in the header: {command_line!r}")
    line = f"**Rendered by** `{command_line}` **at commit** `{commit}`."
    if not HEADER_RE.match(line):
        raise ValueError(f"not a commit (7 to 40 lowercase hex digits): {commit!r}")
    return line


def parse_header(line: str) -> tuple[str, str] | None:
    """The (command, commit) a header line names, or None for any other line."""
    m = HEADER_RE.match(line.strip())
    return (m["command"], m["commit"]) if m else None


def records_commit(records: Iterable[dict[str, Any]], given: str | None = None) -> str:
    """The commit a page of ``records`` is rendered at: ``given`` (the ``--commit`` argument) where there is one,
    else the records' own ``git_revision`` shortened, when they all name one clean commit.

    Raises ValueError where they do not (several commits, ``+dirty``, ``unknown`` or none), naming them."""
    if given:
        return given
    revs = sorted({str(r.get("git_revision", "unknown")) for r in records})
    if len(revs) == 1 and re.fullmatch(r"[0-9a-f]{7,40}", revs[0]):
        return revs[0][:SHORT]
    named = ", ".join(revs) if revs else "no records"
    raise ValueError(f"the records do not name one clean commit ({named}): pass --commit with the commit the "
                     "results were run at")
