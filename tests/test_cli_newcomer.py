"""A newcomer's first hour (issue #29): --version, defaults in every --help, tables that fit the terminal,
one-line answers where tracebacks or nan/inf used to be."""

from __future__ import annotations

import argparse

from gpucluster_env.cli.main import DefaultsHelpFormatter, _nothing_to_show, build_parser, main


def _parsers(parser: argparse.ArgumentParser, path: str = "gpucluster"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_version(capsys):
    try:
        main(["--version"])
    except SystemExit as e:
        assert e.code == 0
    out = capsys.readouterr().out
    assert out.startswith("gpucluster ") and out.split()[1][0].isdigit()


def test_every_help_shows_every_default():
    """Every option of every command and subcommand whose default is something (not None, off or empty) says
    what it is in its --help line."""
    checked = 0
    for path, parser in _parsers(build_parser()):
        fmt = DefaultsHelpFormatter(path)
        text = parser.format_help()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction | argparse._HelpAction | argparse._VersionAction):
                continue
            if _nothing_to_show(action.default) or (not action.option_strings and action.nargs not in ("?", "*")):
                continue
            line = fmt._get_help_string(action)
            assert "default" in line.lower(), f"{path} {action.option_strings or action.dest}: {line!r}"
            checked += 1
        assert "%(default)" not in text
    assert checked > 50


def test_reproduce_on_partial_results_is_one_line(tmp_path, capsys):
    from gpucluster_env.leaderboard import reproduce

    out = tmp_path / "castor"
    assert main(["leaderboard", "run", "castor", "--scenarios", "castor-philly", "--policies", "fifo", "--seeds", "1",
                 "--out", str(out), "--no-show"]) == 0
    capsys.readouterr()
    assert reproduce.main([str(out), "--out", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "partial results" in err and "castor-philly x sjf" in err
    assert not (tmp_path / "r.md").exists()
