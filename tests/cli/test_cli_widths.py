"""Key-value outputs (``traces info``, ``scenarios show``, ``leaderboard boards``) and ``traces compare`` at 80
columns in a pipe: folded to the width (a URL or path longer than a line stays whole, alone on its line), numbers
written as a reader takes them in (``82,247``, not ``8.225e+04``), no ``nan`` (issue #29)."""

from __future__ import annotations

import re

import pytest
from rich.cells import cell_len
from test_cli_newcomer import cli


def _fits(out: str, columns: int) -> None:
    for line in out.splitlines():
        if cell_len(line) > columns:  # only an unbreakable word may overflow, alone after the indent
            assert len(line.split()) == 1 or re.match(r"^\S+:?\s+\S+$", line.strip()), line


def _readable_numbers(out: str) -> None:
    assert "nan" not in out.lower().replace("nanos", "")
    assert not re.search(r"\d\.\d+e[+-]\d\d", out), re.search(r".{20}\d\.\d+e[+-]\d\d.{5}", out)


@pytest.mark.parametrize("columns", [80, 160])
def test_leaderboard_boards_folds_descriptions(columns):
    out = cli(columns, "leaderboard", "boards")
    _fits(out, columns)
    assert max(cell_len(line) for line in out.splitlines()) <= columns
    from gpucluster_env.leaderboard.board import board_names, load_board

    for name in board_names():  # every board with its cell count, as the loader counts them
        assert re.search(rf"^{re.escape(name)}\s+{len(load_board(name).cells)} cells ", out, re.M), name


def test_scenarios_show_folds_the_engine_settings():
    out = cli(80, "scenarios", "show", "tiny")
    assert max(cell_len(line) for line in out.splitlines()) <= 80
    assert re.search(r"^engine:\s+\{'round_s'", out, re.M) and "'share_step': 0.1}" in out


@pytest.mark.parametrize("name", ["philly", "venus"])
def test_traces_info_and_compare_read_as_numbers(name):
    info = cli(80, "traces", "info", name)
    _fits(info, 80)
    _readable_numbers(info)
    compare = cli(80, "traces", "compare", name, "--jobs", "2000")
    assert max(cell_len(line) for line in compare.splitlines()) <= 80
    _readable_numbers(compare)
    assert re.search(r"^jobs\s+[\d,]+\s", compare, re.M)


PLAIN_HEADERS = {"policy", "name", "model", "scenario", "jobs", "GPUs", "GPU", "figure", "value", "check", "target",
                 "worst", "rows", "nodes", "claim", "mean", "description", "description (paper)",
                 "description (trace · paper)", "available at (else the synthetic stand-in)", "verdict"}
"""Column headers that are plain words (nothing for a glossary to explain)."""


def test_glossary_explains_every_column_header_of_the_cli():
    """Every column header written in gpucluster_env/cli (a literal ``Col("...")``), bar plain words, is a bold
    term of docs/glossary.md (alone or as one of a ``A / B`` group)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    glossary = (root / "docs" / "glossary.md").read_text()
    terms = set()
    for bold in re.findall(r"\*\*([^*]+)\*\*", glossary):
        terms |= {bold} | {t.strip() for t in bold.split(" / ")}
    headers = set()
    for f in sorted((root / "gpucluster_env" / "cli").glob("*.py")):
        headers |= set(re.findall(r'Col\("([^"]+)"', f.read_text()))
    assert len(headers) > 30  # the walk found the tables
    missing = sorted(h for h in headers - PLAIN_HEADERS if h not in terms and h.removeprefix("avg ") not in terms)
    assert not missing, missing


def test_catalog_fit_comm_table_fits(tmp_path):
    from test_cli_newcomer import DATA

    if not (DATA / "profiles" / "pollux").is_dir():
        pytest.skip(f"public profiles not found at {DATA}")
    out = cli(80, "catalog", "fit-comm", "--out-dir", str(tmp_path))
    assert "…" not in out and out.startswith("wrote ")  # the first line names the file (a path may be long)
    assert max(cell_len(line) for line in out.splitlines()[1:]) <= 80
    assert "│ bert " in out and "alpha" in out and (tmp_path / "comm_fit.json").is_file()
