"""How ``gpucluster leaderboard run`` reports while it runs: on a terminal, a progress bar (ETA, cells per
minute) with the partial results below it; on a pipe or a log file, one whole line per tenth of the cells."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def run_with_progress(board: Any, store: Any, args: argparse.Namespace) -> Any:
    """:func:`~gpucluster_env.leaderboard.execute.execute` under a progress bar (ETA, cells per minute) with
    the partial results below it, on stderr; on a pipe or a log file (not a terminal), one line per tenth of the
    cells instead, each ending with a newline so the log stays readable."""
    import time

    from rich.console import Group
    from rich.live import Live
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from gpucluster_env.leaderboard.execute import execute
    from gpucluster_env.text_tables import make_console

    console = make_console(stderr=True)
    if not console.is_terminal:
        return run_with_log_lines(board, store, args)
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(bar_width=16), MofNCompleteColumn(),
                        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                        TextColumn("{task.fields[rate]}"), console=console)  # fits 80 columns
    task = progress.add_task(board.name, total=None, rate="")
    new: list[dict[str, Any]] = []
    live = Live(Group(progress, partial_results(new, console.width)), console=console, refresh_per_second=4,
                transient=False)
    t0 = time.perf_counter()

    def on_start(todo: int, skipped: int) -> None:
        nonlocal t0
        console.print(f"{board.name}: {todo} cell(s) to run, {skipped} already recorded", highlight=False)
        progress.update(task, total=todo, description=board.name[:16])
        live.start()
        t0 = time.perf_counter()

    def on_record(rec: dict[str, Any], done: int, total: int) -> None:
        new.append(rec)
        rate = 60.0 * done / max(time.perf_counter() - t0, 1e-9)
        progress.update(task, total=total, completed=done, rate=f"{rate:,.0f} cells/min")
        live.update(Group(progress, partial_results(new, console.width)))

    try:
        return execute(board, store, args.workers, args.backend, args.address, args.replace_stale, on_record,
                       on_start)
    finally:
        live.stop()


def run_with_log_lines(board: Any, store: Any, args: argparse.Namespace) -> Any:
    """:func:`~gpucluster_env.leaderboard.execute.execute` reporting to a log: one whole line on stderr when
    it starts and at every tenth of the cells (no bar, no redrawn table)."""
    import time

    from gpucluster_env.leaderboard.execute import execute

    t0 = time.perf_counter()
    step = [1]

    def on_start(todo: int, skipped: int) -> None:
        nonlocal t0
        t0 = time.perf_counter()
        step[0] = max(1, todo // 10)
        print(f"{board.name}: {todo} cell(s) to run, {skipped} already recorded", file=sys.stderr, flush=True)

    def on_record(rec: dict[str, Any], done: int, total: int) -> None:
        if done % step[0] == 0 or done == total:
            el = time.perf_counter() - t0
            print(f"{board.name}: {done}/{total} cells done in {el:.0f} s", file=sys.stderr, flush=True)

    return execute(board, store, args.workers, args.backend, args.address, args.replace_stale, on_record, on_start)


def partial_results(new: list[dict[str, Any]], width: int) -> Any:
    """The table shown below the progress bar: mean JCT per scenario and policy over the records made so far
    (the first 24 rows), in one time unit for all of them as the final table has."""
    from rich.console import Group

    from gpucluster_env.leaderboard.execute import live_summary
    from gpucluster_env.leaderboard.summary_tables import seconds_unit
    from gpucluster_env.text_tables import Col, fitted_tables

    every = live_summary(new)
    unit, scale = seconds_unit(mean for _, _, mean, _ in every)  # over all rows, as the final table's unit
    rows = every[:24]
    cols = [Col("scenario", "left", text=True), Col("policy", "left", key=True), Col(f"avg JCT {unit}"), Col("n")]
    cells, last = [], None
    for sc, pol, mean, n in rows:
        cells.append((sc if sc != last else "", pol, f"{mean / scale:,.2f}", str(n)))
        last = sc
    return Group(*fitted_tables("partial results so far", cols, cells, width, box=None, title_justify="left"))
