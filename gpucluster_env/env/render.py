"""Rendering of the cluster: an RGB frame of the GPU grid with labelled nodes, GPU types, job ids and the clock
(numpy only, for ``RecordVideo``), and text with ``rich``: GPU grid by node coloured by job, queue, clock,
metrics."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .pixelfont import draw_text, text_width

if TYPE_CHECKING:
    from .cluster_env import GPUClusterEnv

PALETTE = ("red", "green", "yellow", "blue", "magenta", "cyan", "bright_red", "bright_green", "bright_yellow",
           "bright_blue", "bright_magenta", "bright_cyan", "orange3", "purple", "turquoise2", "gold1")
MAX_NODES_SHOWN = 32


def job_style(j: int) -> str:
    """A stable colour per job index."""
    return PALETTE[j % len(PALETTE)]


def cluster_grid(eng, max_nodes: int = MAX_NODES_SHOWN) -> Table:  # noqa: ANN001 (engine)
    """One row per node: its type and a cell per GPU showing the job(s) on it; shared GPUs are marked."""
    table = Table(title="GPUs by node", show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("node", justify="right")
    table.add_column("type")
    table.add_column("GPUs (job ids; ◆ = two jobs share it via MPS)")
    for node in range(min(eng.num_nodes, max_nodes)):
        lo = int(eng.node_start[node])
        cells = Text()
        for g in range(lo, lo + int(eng.node_size[node])):
            a, b = int(eng.slot_job[g, 0]), int(eng.slot_job[g, 1])
            if a < 0:
                cells.append(" ·· ", style="dim")
            elif b < 0:
                cells.append(f"{a:>3} ", style=f"bold {job_style(a)}")
            else:
                cells.append(f"{a}", style=f"bold {job_style(a)}")
                cells.append("◆", style="bold white")
                cells.append(f"{b} ", style=f"bold {job_style(b)}")
        table.add_row(str(node), eng.type_names[eng.node_type[node]], cells)
    if eng.num_nodes > max_nodes:
        table.add_row("…", "", Text(f"{eng.num_nodes - max_nodes} more nodes not shown", style="dim"))
    return table


def queue_table(eng, n: int = 10) -> Table:  # noqa: ANN001
    table = Table(title=f"queue ({eng.num_pending} pending)", box=None, header_style="bold")
    for col in ("job", "model", "GPUs", "waited s"):
        table.add_column(col, justify="right")
    for j in eng.pending_head(n):
        j = int(j)
        table.add_row(f"{j}", eng.model_names[eng.job_model[j]], str(int(eng.req_gpus[j])),
                      f"{eng.now - eng.submit[j]:.0f}")
    return table


def status_line(eng) -> Text:  # noqa: ANN001
    m = eng.metrics()
    util = m["gpu_occupancy"]
    return Text.assemble(
        ("t = ", "bold"), f"{eng.now:,.0f} s   ",
        ("done ", "bold"), f"{eng.n_done}/{eng.n_jobs}   ",
        ("running ", "bold"), f"{eng.num_running}   ",
        ("free GPUs ", "bold"), f"{int(eng.free_mask().sum())}/{eng.num_gpus}   ",
        ("shared GPUs ", "bold"), f"{eng.shared_gpus}   ",
        ("avg JCT ", "bold"), f"{m['avg_jct_s']:,.0f} s   " if m["jobs_done"] else "–   ",
        ("occupancy ", "bold"), f"{util:.0%}" if util == util else "–",
    )


def frame(env: GPUClusterEnv) -> Panel:
    """The whole frame as a ``rich`` renderable: status line, GPU grid, queue."""
    eng = env.engine
    body = Group(status_line(eng), cluster_grid(eng), queue_table(eng))
    return Panel(body, title=f"gpucluster · {env.scenario.name}", border_style="blue")


def render_text(env: GPUClusterEnv, width: int | None = None) -> str:
    """The whole frame as a string with ANSI colours (Gymnasium's ``ansi`` mode), ``width`` columns wide: by
    default the terminal's (``$COLUMNS`` where set), 110 where there is none."""
    import shutil

    width = width or shutil.get_terminal_size((110, 24)).columns
    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system="standard")
    console.print(frame(env))
    return console.file.getvalue()  # type: ignore[attr-defined]


def print_frame(env: GPUClusterEnv) -> None:
    """The frame printed to standard output (``human`` mode): the terminal's width, colours only on a
    terminal (plain text into a pipe or a file)."""
    Console().print(frame(env))


CELL = 28
"""Pixels per GPU cell of the ``rgb_array`` frame (a job id of three digits fits at font scale 2)."""
TEXT_SCALE = 2
"""Font scale of the frame's labels (:mod:`~gpucluster_env.env.pixelfont`: 6 x 10 pixel characters)."""
HEADER = 2 * (5 * TEXT_SCALE + 6)
"""Pixels of the two header lines (clock and counts; the legend)."""
BLOCK = 16
"""Frame sides are multiples of this (video encoders work in 16-pixel macroblocks)."""
_RGB = np.array([(230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48), (145, 30, 180),
                 (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 212), (0, 128, 128), (220, 190, 255),
                 (170, 110, 40), (128, 0, 0), (170, 255, 195), (128, 128, 0)], dtype=np.uint8)
_WHITE, _GREY, _BLACK = (235, 235, 235), (150, 150, 150), (0, 0, 0)


def _node_label(eng, node: int) -> str:  # noqa: ANN001 (engine)
    return f"N{node} {eng.type_names[int(eng.node_type[node])]}"


def _ink(rgb: np.ndarray) -> tuple[int, int, int]:
    """Black or white, whichever reads on a cell of colour ``rgb``."""
    r, g, b = (int(c) for c in rgb)
    return _BLACK if 299 * r + 587 * g + 114 * b > 140_000 else _WHITE


def _label_job(cell: np.ndarray, j: int) -> None:
    """Job ``j``'s index in the middle of ``cell`` (a view of the frame), as large as fits."""
    text = str(j)
    h, w = cell.shape[:2]
    for scale in (TEXT_SCALE, 1):
        tw, th = text_width(text, scale), 5 * scale
        if tw <= w - 2 and th <= h:
            draw_text(cell, text, (w - tw) // 2, (h - th) // 2, _ink(cell[0, 0]), scale)
            return


def frame_size(eng, max_nodes: int = MAX_NODES_SHOWN) -> tuple[int, int]:  # noqa: ANN001 (engine)
    """``(height, width)`` of :func:`render_rgb`'s frames of ``eng``'s cluster (fixed per cluster)."""
    nodes = min(eng.num_nodes, max_nodes)
    per_node = int(eng.node_size[:nodes].max()) if nodes else 1
    label = max((text_width(_node_label(eng, n), TEXT_SCALE) for n in range(nodes)), default=0) + 8
    w = max(label + per_node * CELL + 4, text_width("T 0000000 S  DONE 0000/0000", TEXT_SCALE) + 8)
    h = HEADER + nodes * CELL + (CELL if eng.num_nodes > max_nodes else 0) + 12
    return -(-h // BLOCK) * BLOCK, -(-w // BLOCK) * BLOCK


def render_rgb(eng, max_nodes: int = MAX_NODES_SHOWN) -> np.ndarray:  # noqa: ANN001 (engine)
    """``(H, W, 3)`` uint8 frame, readable in a video: a header with the clock, jobs done, running and pending;
    then one row per node labelled with its index and GPU type, one cell per GPU coloured by its job (a stable
    colour per job index) with the job's index written on it; a GPU shared by two jobs shows the first job in
    its top half and the second in its bottom half; free GPUs are dark grey. A bar at the bottom shows the
    fraction of jobs done. The size depends only on the cluster (:func:`frame_size`), so every frame of an
    episode has the same shape; sides are multiples of 16 pixels."""
    h, w = frame_size(eng, max_nodes)
    img = np.full((h, w, 3), 16, dtype=np.uint8)
    nodes = min(eng.num_nodes, max_nodes)
    line = 5 * TEXT_SCALE + 6
    draw_text(img, f"t {eng.now:,.0f} s  done {eng.n_done}/{eng.n_jobs}", 4, 3, _WHITE, TEXT_SCALE)
    draw_text(img, f"run {eng.num_running}  wait {eng.num_pending}  free {int(eng.free_mask().sum())}/"
                   f"{eng.num_gpus}", 4, 3 + line, _GREY, TEXT_SCALE)
    x0 = max((text_width(_node_label(eng, n), TEXT_SCALE) for n in range(nodes)), default=0) + 8
    for node in range(nodes):
        lo = int(eng.node_start[node])
        y = HEADER + node * CELL
        draw_text(img, _node_label(eng, node), 4, y + (CELL - 5 * TEXT_SCALE) // 2, _WHITE, TEXT_SCALE)
        for k in range(int(eng.node_size[node])):
            a, b = int(eng.slot_job[lo + k, 0]), int(eng.slot_job[lo + k, 1])
            x = x0 + k * CELL
            cell = img[y + 1:y + CELL - 1, x + 1:x + CELL - 1]
            if a < 0:
                cell[:] = 48
            elif b < 0:
                cell[:] = _RGB[a % len(_RGB)]
                _label_job(cell, a)
            else:
                half = cell.shape[0] // 2
                cell[:half] = _RGB[a % len(_RGB)]
                cell[half:] = _RGB[b % len(_RGB)]
                _label_job(cell[:half], a)
                _label_job(cell[half:], b)
    if eng.num_nodes > max_nodes:
        draw_text(img, f"+{eng.num_nodes - max_nodes} more nodes", 4, HEADER + nodes * CELL + 8, _GREY,
                  TEXT_SCALE)
    done = int(round((w - 8) * eng.n_done / max(eng.n_jobs, 1)))
    img[h - 10:h - 4, 4:4 + done] = 200
    return img
