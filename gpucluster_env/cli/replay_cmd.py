"""``gpucluster replay FILE [FILE2]``: watch a recorded episode in the terminal, check it by replay
(``--verify``), or print frames and a summary (``--no-live``, and whenever stdin or stdout is not a terminal).
Two files play side by side, time-aligned. Exit status: 0, 1 when ``--verify`` finds a mismatch, 2 for a bad
file or argument."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpucluster_env.cli import Subparsers


def register(sub: Subparsers) -> None:
    p = sub.add_parser("replay", help="watch, print or verify a recorded episode",
                       description="Watch a recorded episode (`gpucluster run --record FILE`) in the terminal, "
                                   "print it, or verify it by re-running its actions. Keys in the live view: "
                                   "space pause, ←/→ step, +/− speed, g go to time, m MPS shares, z zoom, "
                                   "[ ] page, q quit.")
    p.add_argument("files", nargs="+", metavar="FILE", help="a record (.jsonl or .jsonl.gz); two play side by side")
    p.add_argument("--verify", action="store_true",
                   help="re-run the recorded actions in a fresh env and check every event and the metrics")
    p.add_argument("--no-live", action="store_true", help="print frames and a summary instead of the live view")
    p.add_argument("--frames", type=int, default=None, metavar="N",
                   help="with --no-live: frames at N evenly spaced times (default 1: the end)")
    p.add_argument("--at", metavar="TIME",
                   help="with --no-live: the frame at TIME (5400, 90m, 1.5h); live: start there, paused")
    p.add_argument("--shares", action="store_true", help="show MPS shares in the GPU cells")
    p.add_argument("--zoom", metavar="GPU_TYPE", help="show only the nodes of one GPU type")
    p.add_argument("--json", action="store_true", help="print the summary (or --verify result) as JSON")
    p.add_argument("--timeline", metavar="OUT.png",
                   help="draw the whole episode (two: side by side) as GPUs x time into a PNG: jobs coloured, shared "
                        "GPUs hatched, preemptions marked, the queue length above (needs matplotlib: "
                        "pip install 'gpucluster-env[plot]')")
    p.set_defaults(func=run)


MAX_FRAMES = 1000
"""The most frames ``--frames`` prints (each one a screen of text)."""


def _summary(rec: Any) -> dict[str, Any]:
    h = rec.header
    return {"file": rec.path, "scenario": h["scenario"], "scenario_options": h.get("scenario_options", {}),
            "seed": h["seed"], "policy": h["policy"], "policy_options": h.get("policy_options", {}),
            "version": h["version"], "package_version": h.get("package_version"), "jobs": len(h["jobs"]),
            "gpus": sum(int(n[1]) for n in h["cluster"]), "nodes": len(h["cluster"]), "actions": rec.num_actions,
            "events": rec.num_events, "metrics": rec.metrics}


def _check_timeline_target(target: str, inputs: list[str]) -> None:
    """Refuse a ``--timeline`` target that cannot be written, before any record is read: one line naming it."""
    from pathlib import Path

    from gpucluster_env.atomic_write import check_output

    path = Path(target)
    if path.suffix.lower() != ".png":
        raise ValueError(f"--timeline {target}: the file name must end in .png")
    if not path.parent.is_dir():
        raise ValueError(f"--timeline {target}: folder {path.parent} does not exist")
    check_output(target, tuple(inputs))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ValueError("--timeline needs matplotlib, which is not installed: "
                         "pip install 'gpucluster-env[plot]'") from None


def _check_args(args: argparse.Namespace) -> None:
    """The flags of ``replay`` that do not go together or are out of range, as one-line ``ValueError``s."""
    if len(args.files) > 2:
        raise ValueError("replay takes one record, or two to compare")
    if args.frames is not None and not (1 <= args.frames <= MAX_FRAMES):
        raise ValueError(f"--frames {args.frames}: must be from 1 to {MAX_FRAMES}")
    view_flags = [f for f, v in (("--frames", args.frames), ("--at", args.at), ("--zoom", args.zoom),
                                 ("--shares", args.shares or None)) if v is not None]
    if view_flags and (args.verify or args.json):
        raise ValueError(f"{view_flags[0]} sets what the view shows; {'--verify' if args.verify else '--json'} "
                         "shows no frame")
    if args.timeline is not None:
        _check_timeline_target(args.timeline, args.files)


def _print_frames(view: Any, recs: list[Any], span: tuple[float, float], at: float | None,
                  args: argparse.Namespace, console: Any) -> None:
    """Without a terminal (or with ``--no-live``): ``--frames`` frames spread over the episode (or the one at
    ``--at``), then one line per record with its counts, average JCT and makespan."""
    from gpucluster_env.replay.frame import ViewOptions

    t0, t_end = span
    opts = ViewOptions(width=console.width, height=max(24, console.height), shares=args.shares, zoom=args.zoom)
    n = args.frames or 1
    times = [at] if at is not None else [t0 + (t_end - t0) * (k + 1) / n for k in range(n)]
    for t in times:
        console.print(view.frame(min(t_end, max(t0, t)), opts))
        console.rule(style="dim")
    for r in recs:
        m = r.metrics
        console.print(f"{r.title}: {len(r.header['jobs'])} jobs, {r.num_events} events, {r.num_actions} "
                      f"actions; avg JCT {m.get('avg_jct_s') or float('nan'):,.0f} s, makespan "
                      f"{m.get('makespan_s') or float('nan'):,.0f} s")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from gpucluster_env.cli.jsonout import dumps
    from gpucluster_env.replay.record import open_record, read_record

    _check_args(args)
    # --verify compares every line, so it reads them all; the view holds a record as compact arrays
    recs = [(read_record if args.verify else open_record)(f) for f in args.files]
    if args.timeline is not None:
        from gpucluster_env.replay.timeline_png import draw_timeline

        print(f"wrote {draw_timeline(recs, args.timeline)}")
        return 0
    if args.verify:
        return _verify(recs, args.json)
    from gpucluster_env.replay.frame import FrameView
    from gpucluster_env.replay.live import parse_time
    from gpucluster_env.replay.timeline import Timeline

    tls = [Timeline(r) for r in recs]
    if args.zoom is not None and args.zoom not in tls[0].type_names:
        raise ValueError(f"--zoom {args.zoom!r}: the cluster has {', '.join(tls[0].type_names)}")
    if len(tls) == 2:
        from gpucluster_env.replay.compare import CompareView, check_comparable

        check_comparable(recs[0], recs[1])
        view: Any = CompareView(tls[0], tls[1])
        t0, t_end = view.t0, view.t_end
    else:
        view = FrameView(tls[0])
        t0, t_end = tls[0].t0, tls[0].t_end
    try:
        at = parse_time(args.at) if args.at is not None else None
    except ValueError as e:
        raise ValueError(f"--at {args.at}: {e}") from None
    if args.json:
        print(dumps([_summary(r) for r in recs] if len(recs) == 2 else _summary(recs[0])))
        return 0
    console = Console()
    live = not args.no_live and sys.stdin.isatty() and sys.stdout.isatty()
    if not live:
        _print_frames(view, recs, (t0, t_end), at, args, console)
        return 0
    _play(view, tls, (t0, t_end), at, args, console)
    return 0


def _play(view: Any, tls: list[Any], span: tuple[float, float], at: float | None, args: argparse.Namespace,
          console: Any) -> None:
    """The live view of ``view`` (its timelines ``tls``) until ``q``: steps go between their event times."""
    import gc

    import numpy as np

    from gpucluster_env.replay.live import KEYS_HELP, Player, run_live

    t0, t_end = span
    player = Player(np.unique(np.concatenate([tl.times for tl in tls])), t0, t_end, list(tls[0].type_names))
    player.opts.shares, player.opts.zoom = args.shares, args.zoom
    if at is not None:
        player.t, player.playing = min(t_end, max(t0, at)), False
    gc.freeze()  # what is open stays open while it plays: the collector need not walk it again at every frame
    try:
        run_live(player, lambda p: view.frame(p.t, p.opts, p.status(), KEYS_HELP), console)
    finally:
        gc.unfreeze()


def _verify(recs: list[Any], as_json: bool) -> int:
    from rich.console import Console

    from gpucluster_env.cli.jsonout import dumps
    from gpucluster_env.replay.verify import verify_record

    console = Console(stderr=True)
    results = []
    for r in recs:
        with console.status(f"replaying {len(r.actions)} actions of {r.path} …", spinner="dots"):
            res = verify_record(r)
        results.append({"file": r.path, "ok": res.ok, "message": res.message, "events_checked": res.events_checked,
                        "actions_replayed": res.actions_replayed, "mismatch_event": res.mismatch_event})
        if not as_json:
            print(f"{r.path}: {res.message}", file=sys.stdout if res.ok else sys.stderr)
    if as_json:
        print(dumps(results[0] if len(results) == 1 else results))
    return 0 if all(x["ok"] for x in results) else 1
