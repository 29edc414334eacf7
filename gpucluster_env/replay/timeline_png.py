"""An episode at a glance: ``gpucluster replay FILE [FILE2] --timeline out.png`` draws a recorded episode as
GPUs x time, one colour per job, with the GPUs two jobs share marked (each job in half the row, hatched), the
preemptions marked (a red x on each GPU the job left) and the queue length above; two records side by side,
on the same time axis. Needs matplotlib (``pip install 'gpucluster-env[plot]'``)."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpucluster_env.replay.record import Record
from gpucluster_env.replay.record_arrays import RecordArrays
from gpucluster_env.replay.timeline import Timeline

PLOT_EXTRA = "pip install 'gpucluster-env[plot]'"


@dataclass
class EpisodeDrawing:
    """What the figure shows of one record, read from its events only."""

    title: str
    num_gpus: int
    node_types: list[str]
    node_sizes: list[int]
    segments: list[tuple[int, tuple[int, ...], float, float]] = field(default_factory=list)
    """(GPU, the jobs on it in slot order, from, to): a stretch of time in which a GPU held the same jobs."""
    preemptions: list[tuple[float, int]] = field(default_factory=list)
    """(time, GPU) for every GPU a preempted job left."""
    queue: list[tuple[float, int]] = field(default_factory=list)
    """(time, jobs queued) after the last event of each instant."""
    t_end: float = 0.0
    jobs: int = 0


def episode_drawing(rec: Record | RecordArrays) -> EpisodeDrawing:
    """The segments, preemptions and queue of ``rec`` (its events are checked by :class:`Timeline` first)."""
    tl = Timeline(rec)
    d = EpisodeDrawing(rec.title, tl.num_gpus, tl.node_types, tl.node_sizes, jobs=len(tl.jobs))
    st = tl.empty_state()
    since: dict[int, tuple[tuple[int, ...], float]] = {}
    for t, kind, j, gpus, frm in tl.events.rows(0, len(tl.events)):
        held = list(st.gpus.get(j, ())) if j >= 0 else []
        touched = set(held) | set(gpus or ()) | set(frm or ())
        if kind == "preempt":
            d.preemptions += [(t, g) for g in held]
        st.apply_event(t, kind, j, gpus, frm)
        for g in touched:
            now = tuple(st.slots[g])
            old = since.get(g)
            if old is not None and old[0] == now:
                continue
            if old is not None and old[0] and t > old[1]:
                d.segments.append((g, old[0], old[1], t))
            since[g] = (now, t)
        if d.queue and d.queue[-1][0] == t:  # several events at one instant: the queue after the last of them
            d.queue[-1] = (t, len(st.pending))
        else:
            d.queue.append((t, len(st.pending)))
    d.t_end = tl.t_end
    for g, (jobs, t0) in since.items():  # still held at the end (a truncated episode)
        if jobs and d.t_end > t0:
            d.segments.append((g, jobs, t0, d.t_end))
    return d


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ValueError(f"--timeline needs matplotlib, which is not installed: {PLOT_EXTRA}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bars(ax: Any, d: EpisodeDrawing, scale: float, cmap: Any) -> None:
    """Every segment as its rectangles (one per job on the GPU, each in its share of the row), drawn as two
    collections, alone and shared (hatched, outlined): one artist per segment does not fit 100,000 jobs."""
    import numpy as np
    from matplotlib.collections import PolyCollection

    for shared in (False, True):
        rects = [(g + lane / len(jobs), 1.0 / len(jobs), t0, t1, j) for g, jobs, t0, t1 in d.segments
                 if (len(jobs) > 1) == shared for lane, j in enumerate(jobs)]
        if not rects:
            continue
        y0, dy, t0, t1, job = (np.array(c) for c in zip(*rects, strict=True))
        x0 = t0 / scale
        x1 = x0 + (t1 - t0) / scale
        verts = np.stack([np.stack([x0, y0], 1), np.stack([x0, y0 + dy], 1), np.stack([x1, y0 + dy], 1),
                          np.stack([x1, y0], 1)], axis=1)
        ax.add_collection(PolyCollection(verts, facecolors=cmap(job % cmap.N), edgecolor="black" if shared else "none",
                                         linewidth=0.3 if shared else 0, hatch="////" if shared else None))


def _draw(ax_q: Any, ax: Any, d: EpisodeDrawing, t_max: float, cmap: Any) -> None:
    scale, unit = (3600.0, "h") if t_max >= 3 * 3600 else (60.0, "min")
    _bars(ax, d, scale, cmap)
    if d.preemptions:
        ax.scatter([t / scale for t, _ in d.preemptions], [g + 0.5 for _, g in d.preemptions], marker="x",
                   color="red", s=18, linewidths=1.0, zorder=3, label="preemption")
    start = 0
    ticks, labels = [], []
    for typ, n in zip(d.node_types, d.node_sizes, strict=True):
        ax.axhline(start, color="grey", linewidth=0.4)
        ticks.append(start + n / 2)
        labels.append(typ)
        start += n
    ax.set_yticks(ticks, labels, fontsize=7 if len(ticks) > 16 else 9)
    ax.set_ylim(d.num_gpus, 0)
    ax.set_xlim(0, t_max / scale)
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("GPUs, node by node")
    if d.queue:
        ts = [0.0] + [t / scale for t, _ in d.queue]
        qs = [0] + [q for _, q in d.queue]
        ax_q.step(ts, qs, where="post", color="tab:blue", linewidth=1.0)
        ax_q.fill_between(ts, qs, step="post", alpha=0.25, color="tab:blue")
    ax_q.set_ylabel("queued")
    ax_q.set_title(f"{d.title} · {d.jobs} jobs · {d.num_gpus} GPUs", fontsize=10)


def draw_timeline(records: list[Record] | list[RecordArrays], out: str | Path) -> Path:
    """Draw ``records`` (one, or two side by side on one time axis) into the PNG file ``out``; returns it."""
    plt = _pyplot()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from gpucluster_env.atomic_write import write_bytes_atomic

    drawings = [episode_drawing(r) for r in records]
    t_max = max(max(d.t_end for d in drawings), 1.0)
    gpus = max(d.num_gpus for d in drawings)
    height = min(3.0 + 0.12 * gpus, 30.0)
    ratios = [1, max(4.0, height - 2.0)]  # the queue panel about an inch high, whatever the GPU count
    fig, axes = plt.subplots(2, len(drawings), figsize=(11 * len(drawings), height), squeeze=False,
                             gridspec_kw={"height_ratios": ratios}, sharex="col")
    cmap = plt.get_cmap("tab20")
    for i, d in enumerate(drawings):
        _draw(axes[0][i], axes[1][i], d, t_max, cmap)
    q_max = max((q for d in drawings for _, q in d.queue), default=0)
    for ax_q in axes[0]:  # one queue scale for both records, so side by side the heights compare
        ax_q.set_ylim(0, max(q_max, 1) * 1.08)
    legend = [Patch(facecolor="tab:grey", label=f"a job (one colour per job; {cmap.N} colours, reused)"),
              Patch(facecolor="white", edgecolor="black", hatch="////", label="shared GPU: two jobs, half a row each"),
              Line2D([], [], marker="x", color="red", linestyle="none", label="preemption")]
    fig.legend(handles=legend, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, min(0.04, 0.3 / height), 1, 1))  # room for the legend, ~0.2-0.3 inch
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return write_bytes_atomic(out, buf.getvalue())
