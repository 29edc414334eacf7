"""``gpucluster traces list | info NAME|FILE | fetch NAME | sample NAME | compare NAME|FILE``: the real traces,
their synthetic stand-ins, and a user's own trace files."""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from pathlib import Path

from gpucluster_env.cli import Subparsers
from gpucluster_env.traces.trace_options import format_option

"""The loaders' format keys (:func:`gpucluster_env.traces.registry.loader_for`)."""
COMPARE_NAMES = ("philly", "venus", "alibaba")


def _is_file_arg(name: str) -> bool:
    """A positional NAME that is a path (exists, or has a folder or a file extension) rather than a trace name."""
    from gpucluster_env.traces.registry import TRACES

    return name not in TRACES and name not in COMPARE_NAMES and (
        Path(name).exists() or "/" in name or Path(name).suffix != "")


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser(
        "traces",
        help="list, fetch, sample and compare job traces",
        description="Real job traces (Philly, Venus, Alibaba) and synthetic stand-ins.",
    )
    sub = p.add_subparsers(dest="traces_command", metavar="ACTION")
    p.set_defaults(func=lambda args: _missing(p))

    q = sub.add_parser("list", help="the known traces and where each is found")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=cmd_list)

    q = sub.add_parser("info", help="one trace (a name, or a trace FILE): files, source, statistics")
    q.add_argument("name", help="a trace name (see `traces list`) or a trace file / Gavel folder")
    q.add_argument("--format", **format_option("FILE"))
    q.add_argument("--skip-bad-rows", action="store_true", help="skip bad rows of FILE and report them")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_info)

    q = sub.add_parser("fetch", help="download a trace into the user cache (checksummed, resumable)")
    q.add_argument("name")
    q.add_argument("--from", dest="from_path", metavar="PATH", help="import a copy already on disk")
    q.add_argument("--base-url", help="download from this mirror (BASE/<file name>) instead of upstream")
    q.add_argument("--no-progress", action="store_true")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_fetch)

    q = sub.add_parser("sample", help="sample jobs from a trace (real file, or synthetic) into a CSV")
    q.add_argument("name", help="a trace name, or synthetic:philly|venus|alibaba")
    q.add_argument("--jobs", type=int, default=240)
    q.add_argument("--window", default="busiest", help="busiest, random, all, hours:A-B")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--file", help="load this file instead of the registered one (format sniffed)")
    q.add_argument("--format", **format_option("--file"))
    q.add_argument("--max-gpus", type=int, help="cluster size: jobs above it are capped (or dropped)")
    q.add_argument(
        "--drop-oversize", action="store_true", help="drop jobs above --max-gpus instead of capping"
    )
    q.add_argument("--downscale", type=int, default=1, help="divide GPU counts by this factor")
    q.add_argument("--skip-bad-rows", action="store_true", help="skip bad rows and report them")
    q.add_argument("--out", required=True, help="output CSV (normalized columns)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_sample)

    q = sub.add_parser("compare", help="real (or your FILE's) versus synthetic statistics side by side")
    q.add_argument("name", help="philly, venus or alibaba, or a trace FILE (compared with --against)")
    q.add_argument("--against", choices=("philly", "venus", "alibaba"), default="philly",
                   help="with a FILE: the synthetic profile it stands beside (default philly)")
    q.add_argument("--format", **format_option("FILE"))
    q.add_argument("--jobs", type=int, default=20000, help="synthetic jobs to draw")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_compare)


def cmd_list(args: argparse.Namespace) -> int:
    from gpucluster_env.traces.registry import TRACES, is_shipped, locate

    rows = []
    for t in TRACES.values():
        path = locate(t.name)
        rows.append({"name": t.name, "found": str(path or ""),
                     "shipped_copy": path is not None and is_shipped(t.name, path),
                     "synthetic": t.synthetic, "description": t.description})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from gpucluster_env.text_tables import Col, make_console, print_table

    cols = [Col("name", "left", key=True), Col("read from", "left", text=True),
            Col("description", "left", text=True)]

    def where(r: dict) -> str:
        if r["shipped_copy"]:
            return f"the package's copy ({Path(r['found']).name})"
        return r["found"] or f"not found (gpucluster traces fetch {r['name']})"

    table = [(r["name"], where(r), r["description"]) for r in rows]
    print_table(make_console(), "traces", cols, table, show_lines=True)
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from gpucluster_env.traces.registry import get_trace, load_file, load_trace, locate

    if _is_file_arg(args.name):
        df, report = load_file(args.name, args.format, skip_bad_rows=args.skip_bad_rows)
        info: dict = {"file": args.name, "format": args.format or _guessed(args.name),
                      "load_report": report.summary()}
        loaded: tuple | None = (df, report)
    else:
        spec = get_trace(args.name)
        info = {
            "name": spec.name,
            "description": spec.description,
            "format": spec.loader,
            "citation": spec.citation,
            "license": spec.license,
            "synthetic": spec.synthetic,
            "found": str(locate(spec.name) or ""),
            "files": [{"path": f.relpath, "url": f.url, "sha256": f.sha256} for f in spec.files],
        }
        loaded = load_trace(spec.name) if info["found"] else None
        if loaded is not None:
            info["load_report"] = loaded[1].summary()
    if loaded is not None:
        from gpucluster_env.traces.comparison import trace_stats

        info["stats"] = trace_stats(loaded[0])
    if args.json:
        from gpucluster_env.cli.jsonout import dumps

        print(dumps(info))
        return 0
    from gpucluster_env.text_tables import make_console, print_field

    console = make_console()
    for k, v in info.items():
        if k == "files":
            for f in v:
                print_field(console, "file:", f"{f['path']} <- {f['url']} sha256={f['sha256'] or 'not pinned'}", 13)
        elif k == "stats":
            print_field(console, "stats:", "; ".join(f"{s}={_stat(x) if math.isfinite(x) else 'n/a'}"
                                                     for s, x in v.items()), 13)
        else:
            print_field(console, f"{k}:", str(v or "-"), 13)
    return 0


def _guessed(path: str) -> str:
    from gpucluster_env.traces.registry import guess_format

    return guess_format(path)


def cmd_fetch(args: argparse.Namespace) -> int:
    from gpucluster_env.traces.fetch import fetch_trace

    got = fetch_trace(
        args.name,
        from_path=args.from_path,
        base_url=args.base_url,
        progress=not args.no_progress and sys.stderr.isatty(),
    )
    if args.json:
        print(json.dumps([{"path": str(p), "sha256": h} for p, h in got], indent=2))
    else:
        for p, h in got:
            print(f"{p}  sha256={h or '(folder)'}")
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    import numpy as np

    from gpucluster_env.atomic_write import check_output
    from gpucluster_env.traces.registry import get_trace, load_file, locate
    from gpucluster_env.traces.samplers import downscale_gpus, fit_to_cluster, sample

    for flag, v in (("--jobs", args.jobs), ("--downscale", args.downscale), ("--max-gpus", args.max_gpus)):
        if v is not None and v < 1:
            raise ValueError(f"{flag} {v}: must be a positive integer")
    if args.drop_oversize and args.max_gpus is None:
        raise ValueError("--drop-oversize goes with --max-gpus N")
    if args.format is not None and not args.file:
        raise ValueError(f"--format {args.format} is the format of --file FILE; a trace name has its own")
    if not (0 <= args.seed < 2**32):
        raise ValueError(f"--seed {args.seed}: must be an integer from 0 to {2**32 - 1}")
    check_output(args.out, (args.file,))
    report_load = None
    if args.file:
        df, report_load = load_file(args.file, args.format, skip_bad_rows=args.skip_bad_rows)
    elif args.name.startswith("synthetic:"):
        from gpucluster_env.traces.shipped import load_embedded

        df = load_embedded(args.name.split(":", 1)[1])
    else:
        path = locate(args.name)
        if path is None:
            raise FileNotFoundError(
                f"trace {args.name!r} not found; 'gpucluster traces fetch {args.name}', "
                f"--file PATH, or synthetic:{get_trace(args.name).synthetic}"
            )
        check_output(args.out, (path,))
        df, report_load = load_file(path, get_trace(args.name).loader, skip_bad_rows=args.skip_bad_rows)
    out, rep = sample(df, args.jobs, args.window, np.random.default_rng(args.seed))
    if args.downscale > 1:
        out = downscale_gpus(out, args.downscale, rep)
    if args.max_gpus is not None:
        out = fit_to_cluster(out, args.max_gpus, "drop" if args.drop_oversize else "cap", rep)
    if len(out) == 0:
        raise ValueError(f"no job left to write ({rep.summary()}); nothing written to {args.out}")
    _write_atomic(out, args.out)
    result = {
        "source": df.attrs.get("source", ""),
        "out": args.out,
        "sample": rep.summary(),
        "load": report_load.summary() if report_load else "",
        "skipped_bad_rows": report_load.skipped_count if report_load else 0,
    }
    print(
        json.dumps(result, indent=2)
        if args.json
        else "\n".join(f"{k}: {v}" for k, v in result.items() if v != "")
    )
    return 0


def _write_atomic(df: object, out: str) -> None:
    """``df`` as CSV at ``out``, written whole or not at all (see :mod:`gpucluster_env.atomic_write`)."""
    from gpucluster_env.atomic_write import write_bytes_atomic

    write_bytes_atomic(out, df.to_csv(index=False).encode())  # type: ignore[attr-defined]


def cmd_compare(args: argparse.Namespace) -> int:
    from gpucluster_env.traces.comparison import compare

    if not (1 <= args.jobs <= 10_000_000):
        raise ValueError(f"--jobs {args.jobs}: must be from 1 to 10,000,000")
    if _is_file_arg(args.name):
        from gpucluster_env.traces.registry import load_file

        df, _ = load_file(args.name, args.format)
        table, note = compare(args.against, args.jobs, args.seed, file=df)
    elif args.name in COMPARE_NAMES:
        table, note = compare(args.name, args.jobs, args.seed)
    else:
        raise ValueError(f"traces compare: {args.name!r} is neither philly, venus, alibaba nor a trace file")
    if args.json:
        print(
            json.dumps(
                {
                    "note": note,
                    "stats": {
                        k: {c: (float(v) if math.isfinite(float(v)) else None) for c, v in row.items()}
                        for k, row in table.iterrows()
                    },
                },
                indent=2,
            )
        )
        return 0
    parts = note.split("; ")
    for i, part in enumerate(parts):
        print(textwrap.fill(f"{args.name}: {part}" if i == 0 else part, 78, initial_indent="" if i == 0 else "  ",
                            subsequent_indent="    ") + (";" if i < len(parts) - 1 else ""))
    names = ["your file" if c == "real" and _is_file_arg(args.name) else c for c in table.columns]
    print(f"{'statistic':24}" + "".join(f" {c:>14}" for c in names))
    missing = False
    for k, row in table.iterrows():
        cells = []
        for v in row:
            missing |= not math.isfinite(v)
            cells.append(f" {_stat(v):>14}" if math.isfinite(v) else f" {'n/a':>14}")
        print(f"{k:24}" + "".join(cells))
    if missing:
        print("n/a: not in that source (the whole Venus per-job log is not public)" if args.name == "venus"
              else "n/a: not available from this source")
    return 0


def _stat(v: float) -> str:
    """A statistic as a reader takes it in: counts and seconds from 1,000 up in whole digits with thousands
    separators (``125,300``, not ``1.253e+05``), smaller values to four significant digits (rounding noise such
    as ``1.11e-16`` reads 0)."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{round(v, 7):.4g}"


def _missing(parser: argparse.ArgumentParser) -> int:
    """``gpucluster traces`` without an action: a one-line error naming the actions."""
    from gpucluster_env.cli.main import missing_action

    missing_action(parser)
