"""``gpucluster bench --growth-jobs``' tables: each growth run, then each policy's excess growth between sizes."""

from __future__ import annotations

from typing import Any

from gpucluster_env.leaderboard.policy_growth import EXCESS_GROWTH_TARGET
from gpucluster_env.text_tables import Col, print_table


def _cpu(row: dict[str, Any]) -> str:
    if "skipped" in row:
        return "–"
    mark = " (stopped)" if row["stopped"] else ""
    return f"{row['cpu_s']:,.2f}{mark}"


def _outcome(row: dict[str, Any]) -> str:
    if "skipped" in row:
        return f"skipped: {row['skipped']}"
    if row["stopped"]:
        return f"stopped at {row['wall_s']:,.0f} s of wall time: a lower bound"
    if "error" in row:
        return f"failed: {row['error']}"
    return f"{row['steps']:,} steps"


def print_growth(console: Any, rows: list[dict[str, Any]], excess: list[dict[str, Any]]) -> None:
    """The growth runs (CPU, x FIFO, peak memory, steps) and the excess growth of each policy's own CPU."""
    body = [(r["policy"] + (" (again)" if "repeat" in r else ""), f"{r['jobs']:,}", _cpu(r),
             "–" if "skipped" in r else f"{r['x_fifo_cpu']:.2f}",
             "–" if r.get("peak_rss_mb") is None else f"{r['peak_rss_mb']:,.0f}", _outcome(r)) for r in rows]
    print_table(console, "growth runs: whole-process CPU of `gpucluster run`",
                [Col("policy", "left", key=True), Col("jobs"), Col("CPU s"), Col("x FIFO"), Col("peak MB"),
                 Col("outcome", "left", text=True)], body)
    if not excess:
        return
    body = [(e["policy"], f"{e['from_jobs']:,} -> {e['to_jobs']:,}",
             "–" if e["own_cpu_growth"] is None else f"{e['own_cpu_growth']:.2f}", f"{e['steps_growth']:.2f}",
             "–" if e["excess_growth"] is None else f"{e['excess_growth']:.2f}",
             "too small to measure" if e["within_target"] is None else
             "yes" if e["within_target"] else "NO") for e in excess]
    print_table(console, f"CPU above FIFO's, growth over steps' growth (target <= {EXCESS_GROWTH_TARGET})",
                [Col("policy", "left", key=True), Col("jobs"), Col("own CPU x"), Col("steps x"), Col("excess"),
                 Col(f"<= {EXCESS_GROWTH_TARGET}", "left")], body)
