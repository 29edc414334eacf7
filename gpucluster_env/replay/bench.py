"""The replay's benchmark (``replay_frame_ms`` and ``replay_open_ms`` in ``gpucluster bench``): record a FIFO
episode of ``jobs`` jobs on ``castor-philly`` (16 nodes x 8 GPUs = 128 GPUs), time opening it as the viewer
does (read, checked, held as arrays, its timeline built), the bytes the timeline then keeps per job, and the
time to draw whole frames (state rebuilt from the record, laid out and rendered to text by ``rich``) at evenly
spaced instants."""

from __future__ import annotations

import io
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console

from gpucluster_env.replay.frame import FrameView, ViewOptions
from gpucluster_env.replay.live import KEYS_HELP
from gpucluster_env.replay.record import open_record
from gpucluster_env.replay.timeline import Timeline


def frame_benchmark(scenario: str = "castor-philly", jobs: int = 500, seed: int = 0, frames: int = 60,
                    width: int = 120, height: int = 40) -> dict[str, float | int | str]:
    """Median milliseconds to open the record of a ``jobs``-job episode (of 3 tries), the bytes per job its
    timeline keeps, and the median and worst milliseconds to render one frame of its replay."""
    from gpucluster_env.policy import run_episode
    from gpucluster_env.replay.recorder import recording

    if jobs < 1 or frames < 1:
        raise ValueError("frame benchmark needs at least one job and one frame")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.jsonl.gz"
        run_episode(scenario, "fifo", seed, scenario_options={"num_jobs": jobs}, wrap=recording(path))
        open_ms = []
        for _ in range(3):
            t0 = time.perf_counter()
            tl = Timeline(open_record(path))
            open_ms.append((time.perf_counter() - t0) * 1000.0)
    view = FrameView(tl)
    opts = ViewOptions(width=width, height=height)
    console = Console(file=io.StringIO(), width=width, height=height, force_terminal=True, color_system="truecolor")
    times_ms = []
    for k in range(frames):
        t = tl.t0 + (tl.t_end - tl.t0) * (k + 0.5) / frames
        t0 = time.perf_counter()
        console.print(view.frame(t, opts, "▶ ×600", KEYS_HELP))
        times_ms.append((time.perf_counter() - t0) * 1000.0)
        console.file.truncate(0)
        console.file.seek(0)
    return {"replay_scenario": scenario, "replay_jobs": len(tl.jobs), "replay_gpus": tl.num_gpus,
            "replay_open_ms": statistics.median(open_ms), "replay_bytes_per_job": tl.nbytes / max(1, len(tl.jobs)),
            "replay_frame_ms": statistics.median(times_ms), "replay_frame_max_ms": max(times_ms)}
