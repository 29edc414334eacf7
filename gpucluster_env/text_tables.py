"""Tables that show every number at any console width: ``rich`` tables whose number and name columns are never
cut (``…``). Headers wrap at their spaces; free-text columns (descriptions) fold into the width left; when the
columns do not fit side by side, the table is printed in parts, each repeating the key columns (the policy, the
scenario) and keeping glued columns (a value and its interval) together.

The console decides the width: the terminal's, else ``$COLUMNS``, else 80 (``rich``'s rule for a pipe), so
``gpucluster … | tee log`` gives the same complete numbers as the terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MIN_TEXT_WIDTH = 20
"""A free-text column is folded to no fewer characters than this, or its longest word (up to
:data:`MAX_WORD_WIDTH`; a longer word, a path, is folded inside)."""
MAX_WORD_WIDTH = 24


@dataclass(frozen=True)
class Col:
    """One column: its header, alignment and role."""

    header: str
    justify: str = "right"
    key: bool = False
    """Repeated in every part of a table printed in parts (the row's name)."""
    text: bool = False
    """Free text: folded to the width left instead of widening the table."""
    glue: bool = False
    """Kept in the same part as the column before it (an interval after its value)."""


def make_console(stderr: bool = False) -> Any:
    """The console every command prints on: the terminal's width, else ``$COLUMNS``, else 80 columns."""
    from rich.console import Console

    return Console(stderr=stderr)


def _cell_len(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in text.splitlines() or [""]), default=0)


def _header_width(header: str) -> int:
    return max((_cell_len(w) for w in header.split()), default=0)


def column_widths(cols: Sequence[Col], rows: Sequence[Sequence[str]], whole_headers: bool = False) -> list[int]:
    """The width each column needs: its widest cell (a free-text column: at most :data:`MIN_TEXT_WIDTH` or its
    longest word up to :data:`MAX_WORD_WIDTH`), and at least its header's longest word (headers wrap at
    spaces; with ``whole_headers``, each header on one line)."""
    out = []
    for i, c in enumerate(cols):
        cells = [str(r[i]) for r in rows]
        if c.text:
            longest_word = max((_cell_len(w) for s in cells for w in s.split()), default=0)
            need = min(max((_cell_len(s) for s in cells), default=0),
                       max(MIN_TEXT_WIDTH, min(longest_word, MAX_WORD_WIDTH)))
        else:
            need = max((_cell_len(s) for s in cells), default=0)
        head = _cell_len(c.header) if whole_headers and not c.text else _header_width(c.header)
        out.append(max(need, head, 1))
    return out


def table_width(widths: Sequence[int]) -> int:
    """Characters a ``rich`` table with an edge and these column widths takes (1 padding each side, borders)."""
    return 1 + sum(w + 3 for w in widths)


def split_columns(cols: Sequence[Col], widths: Sequence[int], width: int) -> list[list[int]]:
    """Column indices of each part: the key columns in every part, then as many of the others (glued runs
    together) as fit in ``width``; a run that fits nowhere gets a part of its own."""
    keys = [i for i, c in enumerate(cols) if c.key]
    runs: list[list[int]] = []
    for i, c in enumerate(cols):
        if c.key:
            continue
        if c.glue and runs:
            runs[-1].append(i)
        else:
            runs.append([i])
    parts: list[list[int]] = []
    current: list[int] = []
    for run in runs:
        if current and table_width([widths[j] for j in keys + current + run]) > width:
            parts.append(current)
            current = []
        current += run
    if current or not parts:
        parts.append(current)
    return [sorted(keys + p) for p in parts]


def fitted_tables(title: str, cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int,
                  caption: str | None = None, **table_kwargs: Any) -> list[Any]:
    """The ``rich`` tables that show ``rows`` whole in ``width`` columns: one table if it fits, else parts
    titled ``(1/2)``, ``(2/2)``…; ``caption`` goes under the last part."""
    from rich.table import Table

    widths = column_widths(cols, rows, whole_headers=True)  # headers on one line when everything fits so
    if table_width(widths) > width:
        widths = column_widths(cols, rows)
    parts = split_columns(cols, widths, width)
    tables = []
    for n, part in enumerate(parts, 1):
        t = Table(title=title + (f" ({n}/{len(parts)})" if len(parts) > 1 else ""),
                  caption=caption if n == len(parts) else None, caption_justify="left", **table_kwargs)
        for j in part:
            c = cols[j]
            if c.text:
                t.add_column(c.header, justify=c.justify, overflow="fold", min_width=min(widths[j], MIN_TEXT_WIDTH))
            else:
                t.add_column(c.header, justify=c.justify, width=widths[j], overflow="fold")
        for r in rows:
            t.add_row(*(str(r[j]) for j in part))
        tables.append(t)
    return tables


def print_table(console: Any, title: str, cols: Sequence[Col], rows: Sequence[Sequence[str]],
                caption: str | None = None, **table_kwargs: Any) -> None:
    """Print :func:`fitted_tables` on ``console`` at its width, then ``caption`` (at the console's width, not
    folded into a narrow table's)."""
    for t in fitted_tables(title, cols, rows, console.width, **table_kwargs):
        console.print(t)
    if caption:
        console.print(caption, highlight=False)


def print_indented(console: Any, text: str, indent: int = 2) -> None:
    """``text`` wrapped at the console's width, every line indented by ``indent`` spaces (legends, notes)."""
    import textwrap

    pad = " " * indent
    console.print(textwrap.fill(text, width=max(console.width, indent + 20), initial_indent=pad,
                                subsequent_indent=pad), highlight=False, soft_wrap=True, markup=False)


def print_field(console: Any, label: str, value: str, label_width: int) -> None:
    """``label`` padded to ``label_width``, then ``value`` wrapped at the console's width with every further
    line indented under the value's first character (``traces info``, ``scenarios show``, ``boards``). A word
    longer than the line (a URL, a path) stays whole on a line of its own rather than being cut."""
    import textwrap

    pad = " " * label_width
    text = textwrap.fill(value, width=max(console.width, label_width + 20), initial_indent=f"{label:<{label_width}}",
                         subsequent_indent=pad, break_long_words=False, break_on_hyphens=False)
    console.print(text, highlight=False, soft_wrap=True, markup=False)
