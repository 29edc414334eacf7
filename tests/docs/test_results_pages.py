"""Generated result pages apart from the reference pages (issue #45): every page in ``docs/results/`` is written
whole by a script of ``docs/_scripts`` and begins, under its title, with the command that rendered it and the
commit its results were run at (``docs/_scripts/rendered_by.py``); no page elsewhere in ``docs/`` carries that
line, so a generated page cannot sit among the reference pages."""

from __future__ import annotations

import importlib
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from rendered_by import command, header, parse_header, records_commit

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"
SCRIPT_PREFIX = "python docs/_scripts/"


def _first_line_after_title(page: Path) -> str:
    """The first non-blank line under a page's ``# title`` (the title must be the page's first line)."""
    lines = page.read_text().splitlines()
    assert lines and lines[0].startswith("# "), f"{page.relative_to(ROOT)}: the first line is not a # title"
    return next((line for line in lines[1:] if line.strip()), "")


def _result_pages() -> list[Path]:
    pages = sorted(RESULTS.rglob("*.md"))
    assert pages, "docs/results/ holds no page"
    return pages


def _page_header(page: Path) -> tuple[str, str]:
    got = parse_header(_first_line_after_title(page))
    assert got, (f"{page.relative_to(ROOT)} does not begin (under its title) with the line "
                 "'**Rendered by** `COMMAND` **at commit** `COMMIT`.' (docs/_scripts/rendered_by.py)")
    return got


def test_every_results_page_begins_with_the_command_and_commit_that_rendered_it() -> None:
    """The command runs a script of docs/_scripts that exists, and that script writes this page: its default
    output (``OUT``) or the ``--out`` the command names."""
    for page in _result_pages():
        cmd, _ = _page_header(page)
        assert cmd.startswith(SCRIPT_PREFIX), f"{page.relative_to(ROOT)}: {cmd!r} runs no script of docs/_scripts"
        argv = shlex.split(cmd)
        script = ROOT / argv[1]
        assert script.is_file(), f"{page.relative_to(ROOT)}: {argv[1]} does not exist"
        module = importlib.import_module(script.stem)
        out = argv[argv.index("--out") + 1] if "--out" in argv else str(module.OUT)
        assert (ROOT / out).resolve() == page.resolve(), f"{argv[1]} writes {out}, not {page.relative_to(ROOT)}"


def test_each_header_is_what_its_script_writes_for_its_command() -> None:
    """The headers were written by hand when the pages moved (their results folders are gone): each is exactly
    the line the script's own header code gives for the command it names."""
    for page in _result_pages():
        cmd, commit = _page_header(page)
        argv = shlex.split(cmd)
        module = importlib.import_module(Path(argv[1]).stem)
        shown = command(Path(argv[1]).name, argv[2:], elide=getattr(module, "ELIDED_OPTIONS", ()))
        assert _first_line_after_title(page) == header(shown, commit)


def test_the_commits_named_are_commits_of_this_repository() -> None:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    shallow = subprocess.run([git, "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True)
    if shallow.stdout.strip() != "false":
        pytest.skip("a shallow clone may not hold the commits the pages name")
    for page in _result_pages():
        _, commit = _page_header(page)
        found = subprocess.run([git, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"], cwd=ROOT,
                               capture_output=True, text=True)
        assert found.returncode == 0, f"{page.relative_to(ROOT)} names commit {commit}, which git does not know"


def test_no_page_outside_docs_results_is_a_generated_page() -> None:
    """No page elsewhere in docs/ (reference, tutorials, causes, history) carries the rendered-by line or the
    old generated-page comment: a page a script writes whole lives in docs/results/."""
    for page in sorted(DOCS.rglob("*.md")):
        if RESULTS in page.parents:
            continue
        text = page.read_text()
        where = page.relative_to(ROOT)
        assert not any(parse_header(line) for line in text.splitlines()), f"{where} has a rendered-by line"
        assert "do not edit by hand" not in text, f"{where} says it is generated: move it to docs/results/"


def test_header_and_parse_header_round_trip() -> None:
    line = header("python docs/_scripts/render_x.py a --n 'two words'", "0123abc")
    assert line == "**Rendered by** `python docs/_scripts/render_x.py a --n 'two words'` **at commit** `0123abc`."
    assert parse_header(line) == ("python docs/_scripts/render_x.py a --n 'two words'", "0123abc")
    assert parse_header("Rendered by `python x.py` at commit 0123abc.") is None
    with pytest.raises(ValueError, match="backtick"):
        header("python x.py --run `y`", "0123abc")
    with pytest.raises(ValueError, match="not a commit"):
        header("python x.py", "HEAD")


def test_command_quotes_arguments_and_elides_free_sentences() -> None:
    argv = ["dir one", "--run", "Run: `x` on main.", "--check=d2", "--note=a b"]
    assert command("render_x.py", argv, elide=["--run", "--note"]) == \
        "python docs/_scripts/render_x.py 'dir one' --run \"…\" --check=d2 --note=\"…\""
    assert command("render_x.py", []) == "python docs/_scripts/render_x.py"


def test_records_commit_takes_one_clean_commit_or_the_argument() -> None:
    full = "0123456789abcdef0123456789abcdef01234567"
    assert records_commit([{"git_revision": full}, {"git_revision": full}]) == "0123456"
    assert records_commit([{"git_revision": full + "+dirty"}], given="89abcde") == "89abcde"
    for records in ([{"git_revision": full}, {"git_revision": "f" * 40}], [{"git_revision": full + "+dirty"}],
                    [{"git_revision": "unknown"}], [{}], []):
        with pytest.raises(ValueError, match="--commit"):
            records_commit(records)
