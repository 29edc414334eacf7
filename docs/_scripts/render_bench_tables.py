"""Print docs/performance.md's table of today's numbers from the JSON of two `gpucluster bench --json` runs:
the loaded month (`--growth-jobs 1600,16000 --growth-scenario philly-loaded --growth-scale-cluster`) and
PhillyScale (`--growth-jobs 80000 --growth-scenario philly-scale`), both as committed under
docs/results/growth/.

    .venv/bin/python docs/_scripts/render_bench_tables.py docs/results/growth/philly-loaded-scaled.json \
        docs/results/growth/philly-scale.json

Each cell is the policy's whole-process CPU (user + system) and its ratio to FIFO's in the same bench run; a
run stopped by the bench's wall-time limit is shown as "stopped" with the CPU it had used (a lower bound)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

TARGET_X_FIFO = 5.0
"""Issue #44: every reference policy within 5x FIFO's whole-process CPU."""
TARGET_GROWTH = 1.5
"""Issue #44: a policy's own CPU grows at most 1.5x faster than its steps."""


def runs(path: Path) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[str, dict[str, Any]]]:
    """The growth rows by (policy, jobs), and the excess-growth rows by policy, of one bench JSON."""
    data = json.loads(path.read_text())
    rows = {(r["policy"], r["jobs"]): r for r in data["policy_growth"] if "repeat" not in r}
    return rows, {r["policy"]: r for r in data.get("policy_excess_growth", [])}


def cell(row: dict[str, Any] | None) -> str:
    """One run's CPU and ratio to FIFO, bold where the ratio misses :data:`TARGET_X_FIFO`."""
    if row is None or "skipped" in row:
        return "-"
    x = row["x_fifo_cpu"]
    text = f"{row['cpu_s']:.2f} ({x:.1f}x)"
    if row.get("stopped"):
        return f"**stopped at {row['wall_s']:.0f} s of wall time, {row['cpu_s']:.1f} s CPU (> {x:.0f}x)**"
    return f"**{text}**" if x > TARGET_X_FIFO else text


def growth(row: dict[str, Any] | None) -> str:
    """A policy's own-CPU growth over its steps' growth, bold where it misses :data:`TARGET_GROWTH` ("not read"
    where the bench leaves it out: the policy's own work at the smaller size is too small to read)."""
    if row is None or row["excess_growth"] is None:
        return "not read"
    g = row["excess_growth"]
    return f"**{g:.2f}**" if g > TARGET_GROWTH else f"{g:.2f}"


def table(month: Path, scale: Path) -> str:
    """The Markdown table: per policy, the month at 16,000 and 1,600 jobs, the growth, PhillyScale."""
    m_rows, m_growth = runs(month)
    s_rows, _ = runs(scale)
    policies = list(dict.fromkeys(p for p, _ in m_rows))
    out = ["| policy | philly-loaded, 16,000 jobs: CPU s (x FIFO) | 1,600 jobs on a tenth of the cluster: CPU s "
           "(x FIFO) | own CPU's growth over steps' growth | PhillyScale, 80,000 jobs: CPU s (x FIFO) | "
           "PhillyScale: peak RSS MB |", "|---|---|---|---|---|---|"]
    for p in policies:
        big, small, sc = m_rows.get((p, 16000)), m_rows.get((p, 1600)), s_rows.get((p, 80000))
        if big is not None and "skipped" in big:
            out.append(f"| {p} | {big['skipped']} | | | | |")
            continue
        rss = f"{sc['peak_rss_mb']:.0f}" if sc and "peak_rss_mb" in sc else "-"
        out.append(f"| {p} | {cell(big)} | {cell(small)} | {growth(m_growth.get(p)) if p != 'fifo' else '-'} | "
                   f"{cell(sc)} | {rss} |")
    return "\n".join(out)


def counts(month: Path, scale: Path) -> str:
    """How many policies (FIFO, the yardstick, left out) meet each target, in one line."""
    m_rows, m_growth = runs(month)
    s_rows, _ = runs(scale)
    pol = [p for (p, n), r in m_rows.items() if n == 16000 and "skipped" not in r and p != "fifo"]
    ok_m = [p for p in pol if not m_rows[(p, 16000)].get("stopped") and m_rows[(p, 16000)]["x_fifo_cpu"] <= 5]
    ok_s = [p for p in pol if (r := s_rows.get((p, 80000))) and not r.get("stopped") and r["x_fifo_cpu"] <= 5]
    read = [g for g in m_growth.values() if g["excess_growth"] is not None]
    ok_g = [g for g in read if g["excess_growth"] <= TARGET_GROWTH]
    return (f"within 5x FIFO: {len(ok_m)} of {len(pol)} on the month, {len(ok_s)} of {len(pol)} on PhillyScale; "
            f"growth within 1.5x: {len(ok_g)} of the {len(read)} read")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("month", type=Path, help="bench JSON of the philly-loaded growth runs")
    ap.add_argument("scale", type=Path, help="bench JSON of the PhillyScale growth run")
    args = ap.parse_args()
    print(table(args.month, args.scale))
    print()
    print(counts(args.month, args.scale))


if __name__ == "__main__":
    main()
