"""``gpucluster leaderboard run|show|plot|claims|boards``: run boards, show them with statistics, plot them."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from gpucluster_env.cli import Subparsers
from gpucluster_env.cli.option_args import add_backend_options, split_names

DEFAULT_BOARD = "default"
RESULTS_ROOT = "leaderboard-results"


def register(sub: Subparsers) -> None:
    p = sub.add_parser("leaderboard", help="compare policies across scenarios and seeds, with statistics",
                       description="Run policies over scenarios and seeds (boards), resumably, in local processes "
                                   "or on Ray; show the results with confidence intervals; plot them.")
    lsub = p.add_subparsers(dest="leaderboard_command", metavar="ACTION")
    r = lsub.add_parser("run", help="run a board's cells (default: the small default board)",
                        description="Run every cell (scenario x policy x seed) of a board not yet recorded in the "
                                    "results folder, then show the leaderboard. With no arguments: the default board.")
    r.add_argument("board", nargs="?", help="a shipped board name (see `leaderboard boards`) or a .toml file")
    r.add_argument("--scenarios", help="comma-separated scenarios or scenario files (.toml): a board's subset, or "
                                       "a new board (with --policies, else every policy that can run on them)")
    r.add_argument("--policies", help="comma-separated policies (rl:DIR for a trained policy)")
    r.add_argument("--seeds", type=int, help="seeds per cell: N from 1 to 1000 (overrides the board's), from the "
                                             "board's first seed (0, or its first_seed: claims runs 100..)")
    r.add_argument("--first-seed", type=int, help="the first seed instead of the board's (a second, disjoint "
                                                  "seed set of the same board: e.g. claims --first-seed 200)")
    r.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="scenario option for a board given by --scenarios/--policies (repeatable)")
    r.add_argument("--workers", type=int, default=1, help="parallel episodes (processes or Ray tasks; 1 to 1024)")
    add_backend_options(r, "the cells")
    r.add_argument("--out", help=f"results folder (default: {RESULTS_ROOT}/BOARD)")
    r.add_argument("--replace-stale", action="store_true",
                   help="run again the cells whose records were made under another spec or version")
    r.add_argument("--no-show", action="store_true", help="do not print the leaderboard after the run")
    r.add_argument("--json", action="store_true", help="no progress bar; print the run report and summary as JSON")
    r.set_defaults(func=run)
    s = lsub.add_parser("show", help="the leaderboard of a results folder",
                        description="Per scenario: each policy's mean, IQM, 95% bootstrap CI over seeds, rank, "
                                    "improvement over a reference with its CI, probability of improvement; then a "
                                    "normalized score across scenarios.")
    s.add_argument("dir", nargs="+", help="results folder(s) written by `leaderboard run` (shown together)")
    _filters(s)
    s.add_argument("--format", default="table", choices=("table", "md", "csv", "json"))
    s.add_argument("--json", action="store_true", help="same as --format json")
    s.add_argument("--metric", action="append", help="metric(s) to rank by (repeatable; default: the board's)")
    s.add_argument("--reference", help="policy the others are compared with, a name or a label as in the tables "
                   "(e.g. 'gavel (objective=\"makespan\")'; default: the board's, else fifo)")
    s.add_argument("--output", help="write to this file instead of the terminal")
    s.set_defaults(func=show)
    pl = lsub.add_parser("plot", help="PNG figures of a results folder (needs matplotlib: the `plot` extra)",
                         description="JCT CDFs per scenario, bar charts with 95% CIs, and ours beside the papers' "
                                     "published numbers where they exist.")
    pl.add_argument("dir", nargs="+", help="results folder(s) written by `leaderboard run`")
    _filters(pl)
    pl.add_argument("--out", required=True, help="folder for the PNG files")
    pl.add_argument("--metric", default="avg_jct_s", help="metric of the bar charts")
    pl.add_argument("--reference", help="reference policy (default: the board's, else fifo)")
    pl.add_argument("--json", action="store_true", help="print the written files as JSON")
    pl.set_defaults(func=plot)
    from gpucluster_env.cli.claims_cmd import register_claims

    register_claims(lsub)
    b = lsub.add_parser("boards", help="list the shipped boards")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=boards)
    p.set_defaults(func=lambda a: _missing(p))


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenarios", help="only these scenarios, comma-separated, as labelled in the tables: "
                                       "'castor-philly' is the scenario without options, "
                                       "'sjfbsbf-philly (num_jobs=480)' a variant")
    p.add_argument("--policies", help="only these policies, comma-separated, as labelled ('tiresias' is the default "
                                      "one, 'tiresias (thresholds=[3600.0])' a variant)")


def resolve_board(args: argparse.Namespace) -> tuple[Any, list[str]]:
    """The board ``run`` covers: a board (filtered by --scenarios/--policies, --seeds), or one made of them;
    and notes on policies left out (those that cannot run on a scenario, when --policies is not given)."""
    from gpucluster_env.cli.option_args import parse_options
    from gpucluster_env.leaderboard.board import cells_from_args, check_seeds, load_board

    scenarios, policies = split_names(args.scenarios, "scenarios"), split_names(args.policies, "policies")
    if args.seeds is not None:
        check_seeds(args.seeds, "--seeds")
    options = parse_options(args.option)
    if args.board is None and scenarios:
        if args.first_seed is not None:
            raise ValueError("--first-seed applies to a board; a board made by --scenarios/--policies runs seeds 0..")
        return cells_from_args(scenarios, policies, args.seeds or 5, options)
    if options:
        raise ValueError("--option applies to a board made by --scenarios/--policies; put options in the board file")
    board = load_board(args.board or DEFAULT_BOARD)
    return board.select(scenarios, policies, args.seeds, args.first_seed), []


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name) or "board"


def run(args: argparse.Namespace) -> int:
    from gpucluster_env.cli.leaderboard_progress import run_with_progress
    from gpucluster_env.leaderboard.execute import current_records, execute
    from gpucluster_env.leaderboard.store import ResultStore
    from gpucluster_env.task_pool import check_backend

    check_backend(args.workers, args.backend, args.address)  # before anything is written
    board, notes = resolve_board(args)
    for n in notes:
        print(f"gpucluster leaderboard: note: {n}", file=sys.stderr)
    if args.out == "":
        raise ValueError("--out '': give the results folder's name")
    out = Path(args.out) if args.out is not None else Path(RESULTS_ROOT) / _slug(Path(board.name).stem)
    store = ResultStore(out, create=True)
    _save_board_meta(out, board)
    keys = {c.key for c in board.cells}
    if args.json:
        report = execute(board, store, args.workers, args.backend, args.address, args.replace_stale)
    else:
        report = run_with_progress(board, store, args)
    records = [r for r in current_records(store)[0] if r["key"] in keys]
    rate = (f"ran {report.ran} cell(s) ({report.skipped} already recorded) in {report.wall_s:.1f} s: "
            f"{report.cells_per_min:.1f} cells/min with {report.workers} worker(s) ({report.backend})")
    if args.json:
        from gpucluster_env.cli.jsonout import dumps
        from gpucluster_env.leaderboard.summary import summarize

        print(dumps({"board": board.name, "out": str(out), "cells": report.total, "skipped": report.skipped,
                     "ran": report.ran, "wall_s": report.wall_s, "cells_per_min": report.cells_per_min,
                     "workers": report.workers, "backend": report.backend,
                     "summary": [summarize(records, m, board.reference).as_dict() for m in board.metrics[:1]]}))
        return 0
    from gpucluster_env.text_tables import make_console

    console = make_console()
    console.print(rate, highlight=False)
    console.print(f"records in {out}/ · show again: gpucluster leaderboard show {out}", highlight=False)
    if not args.no_show and records:
        from gpucluster_env.leaderboard.summary import summarize
        from gpucluster_env.leaderboard.summary_tables import print_rich

        print_rich([summarize(records, board.metrics[0], board.reference)], console)
    return 0


BOARD_META = "board.json"


def _save_board_meta(out: Path, board: Any) -> None:
    """Keep the board's name, reference and metrics beside the records (for `show` and `plot`)."""
    import json

    from gpucluster_env.atomic_write import write_bytes_atomic

    meta_dir = out / ".board"
    meta_dir.mkdir(exist_ok=True)
    write_bytes_atomic(meta_dir / BOARD_META, json.dumps({"name": board.name, "reference": board.reference,
                                                         "metrics": list(board.metrics)}).encode())


def _board_meta(d: Path) -> dict[str, Any]:
    """The board settings `run` kept beside the records (none if absent); a file that is not what `run` writes
    is a one-line error naming it, not a silent fall-back to other settings."""
    import json

    f = d / ".board" / BOARD_META
    if not f.is_file():
        return {}
    try:
        meta = json.loads(f.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{f}: corrupt board settings ({e}); delete it (show then uses fifo and avg_jct_s)") from None
    ok = (isinstance(meta, dict) and isinstance(meta.get("reference", ""), str)
          and isinstance(meta.get("metrics", ["x"]), list) and meta.get("metrics", ["x"])
          and all(isinstance(m, str) for m in meta.get("metrics", [])))
    if not ok:
        raise ValueError(f"{f}: corrupt board settings (reference must be a name, metrics a non-empty list of "
                         "names); delete it (show then uses fifo and avg_jct_s)")
    return meta


def _load(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The current records of the folders in ``args.dir``, filtered by --scenarios/--policies labels, and the
    first folder's board settings."""
    from gpucluster_env.leaderboard.execute import load_current
    from gpucluster_env.leaderboard.summary import labelled

    records, notes = load_current(args.dir)
    for n in notes:
        print(f"gpucluster leaderboard: note: {n}", file=sys.stderr)
    where = ", ".join(args.dir)
    if not records:
        raise ValueError(f"{where}: no records to show (run `gpucluster leaderboard run --out DIR` first)")
    scen, pols = split_names(args.scenarios, "scenarios"), split_names(args.policies, "policies")
    if scen or pols:
        labels, _ = labelled(records)
        for want, have, what in ((scen, {s for s, _ in labels}, "scenario"), (pols, {p for _, p in labels}, "policy")):
            missing = sorted(set(want or ()) - have)
            if missing:
                raise ValueError(f"no {what} labelled {missing[0]!r} in {where}; there: {', '.join(sorted(have))}")
        records = [r for r, (s, p) in zip(records, labels, strict=True)
                   if (not scen or s in scen) and (not pols or p in pols)]
    return records, _board_meta(Path(args.dir[0]))


def _check_show_output(output: str, dirs: list[str]) -> None:
    """Refuse an ``--output`` that cannot be written, or that lies in one of the results folders shown: every
    ``*.json`` there is read as a record, so a table written there would replace a record or stop the next
    ``show`` as a foreign file."""
    from gpucluster_env.atomic_write import check_output

    check_output(output)
    folder = os.path.dirname(os.path.realpath(output))
    for d in dirs:
        if os.path.isdir(d) and os.path.isdir(folder) and os.path.samefile(folder, d):
            raise ValueError(f"--output {output}: is in the results folder {d}, where every *.json is read as a "
                             "record; write it elsewhere")


def show(args: argparse.Namespace) -> int:
    from gpucluster_env.leaderboard.summary import check_reference, summarize
    from gpucluster_env.leaderboard.summary_tables import print_rich, render

    if args.output is not None:
        _check_show_output(args.output, args.dir)
    records, meta = _load(args)
    reference = args.reference or meta.get("reference", "fifo")
    check_reference(records, reference, ", ".join(args.dir))
    metrics = list(dict.fromkeys(args.metric or meta.get("metrics", ["avg_jct_s"])))  # a metric named twice: once
    summaries = [summarize(records, m, reference) for m in metrics]
    fmt = "json" if args.json else args.format
    if fmt == "table" and args.output is None:
        from gpucluster_env.text_tables import make_console

        print_rich(summaries, make_console())
        return 0
    text = render(summaries, "md" if fmt == "table" else fmt)
    if args.output is not None:
        from gpucluster_env.atomic_write import write_bytes_atomic

        write_bytes_atomic(args.output, text.encode())
        print(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def plot(args: argparse.Namespace) -> int:
    from gpucluster_env.leaderboard.plots import write_plots
    from gpucluster_env.leaderboard.summary import check_reference

    if not args.out:
        raise ValueError("--out '': give the folder to write the figures in")
    out = os.path.realpath(args.out)
    for d in args.dir:
        if os.path.realpath(d) == out:
            raise ValueError(f"--out {args.out}: is the results folder {d}, whose every file is read as a record; "
                             "write the figures elsewhere")
    records, meta = _load(args)
    reference = args.reference or meta.get("reference", "fifo")
    check_reference(records, reference, ", ".join(args.dir))
    files = write_plots(records, Path(args.out), args.metric, reference)
    if args.json:
        import json

        print(json.dumps([str(f) for f in files]))
    else:
        for f in files:
            print(f"wrote {f}")
    return 0


def boards(args: argparse.Namespace) -> int:
    from gpucluster_env.leaderboard.board import board_names, load_board

    rows = []
    for n in board_names():
        b = load_board(n)
        rows.append({"name": n, "description": b.description, "cells": len(b.cells),
                     "scenarios": sorted({c.scenario_label for c in b.cells}),
                     "policies": sorted({c.policy_label for c in b.cells})})
    import json

    if args.json:
        print(json.dumps(rows))
        return 0
    from gpucluster_env.text_tables import make_console, print_field

    console = make_console()
    for r in rows:
        print_field(console, f"{r['name']:<10} {r['cells']:>4} cells", r["description"], 23)
    return 0


def _missing(parser: argparse.ArgumentParser) -> int:
    """``gpucluster leaderboard`` without an action: a one-line error naming the actions."""
    from gpucluster_env.cli.main import missing_action

    missing_action(parser)
