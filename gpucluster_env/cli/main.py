"""The ``gpucluster`` console script: one parser, one module per subcommand.

Each subcommand module defines ``register(subparsers)``, which adds its parser and sets ``func`` to a handler
``(args) -> int``. Handlers import heavy libraries themselves, so ``gpucluster --help`` stays fast. Errors a user
can cause (bad arguments, bad files) end as one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

from gpucluster_env.cli import Subparsers

SUBCOMMAND_MODULES = (
    "run_cmd",
    "scenarios_cmd",
    "policies_cmd",
    "bench_cmd",
    "traces_cmd",
    "catalog_cmd",
    "replay_cmd",
    "train_cmd",
    "advantage_cmd",
    "evaluate_cmd",
    "rltable_cmd",
    "leaderboard_cmd",
)


class UserError(Exception):
    """An error caused by the user's input; printed as one line."""


def _nothing_to_show(default: object) -> bool:
    """Whether a default says nothing worth printing in the help (absent, off, or empty)."""
    return default is None or default is False or default is argparse.SUPPRESS or default in ("", [], ())


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Help that shows every option's default: ``(default: X)`` is appended unless the help already names its
    default, or the default is nothing to show (None, False, or suppressed)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (_nothing_to_show(default) or "default" in text.lower()
                or (not action.option_strings and action.nargs not in ("?", "*"))):
            return text
        return f"{text} (default: %(default)s)".strip()


class Parser(argparse.ArgumentParser):
    """The parser of every command and subcommand: defaults in the help (``DefaultsHelpFormatter``), an option
    declared without help still shows its default, and errors are one line on stderr (``gpucluster run: error:
    argument --seed: invalid int value: 'x'``) with exit status 2, without argparse's usage block (sub-command
    parsers are of this class too: argparse builds them with the class of the parser they hang from)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def add_argument(self, *args: object, **kwargs: object) -> argparse.Action:  # type: ignore[override]
        if not kwargs.get("help") and not _nothing_to_show(kwargs.get("default")) and kwargs.get("action") not in (
                "help", "version"):
            kwargs["help"] = "(default: %(default)s)"
        return super().add_argument(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        first = message.splitlines()[0] if message else "bad arguments"
        self.exit(2, f"{self.prog}: error: {first} (--help shows the usage)\n")


def _version() -> str:
    from gpucluster_env.versions import package_versions  # metadata only, so --version stays fast

    return package_versions(("gpucluster-env",))["gpucluster-env"] or "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="gpucluster",
        description="Simulate, schedule and benchmark deep-learning training jobs on GPU clusters.",
    )
    parser.add_argument("--version", action="version", version=f"gpucluster {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in SUBCOMMAND_MODULES:
        try:
            mod = importlib.import_module(f"gpucluster_env.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"gpucluster_env.cli.{name}":
                continue
            raise
        mod.register(sub)
    return parser


def sub_names(parser: argparse.ArgumentParser) -> list[str]:
    """The names of ``parser``'s sub-commands."""
    for action in parser._actions:
        if isinstance(action, Subparsers):
            return list(action.choices)
    return []


def missing_action(parser: argparse.ArgumentParser) -> NoReturn:
    """Raise the one-line error of a command given without its sub-command (``gpucluster traces``)."""
    raise UserError(f"{parser.prog}: error: an action is required ({', '.join(sub_names(parser))}); "
                    f"{parser.prog} --help describes them")


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status: 0 done, 2 bad input (one line on stderr naming the file,
    row, field or argument), 130 interrupted (Ctrl-C), 141 output pipe closed (as a shell reports SIGPIPE),
    1 an internal error (one line; ``GPUCLUSTER_DEBUG=1`` shows the traceback)."""
    command = "gpucluster"
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            missing_action(parser)
        command = f"gpucluster {args.command}"
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``gpucluster ... | head``): stop quietly, and keep Python from complaining
        # when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except UserError as e:
        print(str(e) if str(e).startswith("gpucluster") else f"{command}: error: {e}", file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError, IsADirectoryError, PermissionError, OSError,
            UnicodeError, RecursionError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"{command}: error: {msg}", file=sys.stderr)
        return 2
    except Exception as e:  # a bug, not bad input: one line unless debugging
        if os.environ.get("GPUCLUSTER_DEBUG"):
            raise
        print(f"{command}: internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
              "(please report it; GPUCLUSTER_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
