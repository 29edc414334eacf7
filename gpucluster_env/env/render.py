"""Rendering of the cluster: an RGB image of the GPU grid (numpy only, for ``RecordVideo``), and text with
``rich``: GPU grid by node coloured by job, queue, clock, metrics."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

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


def render_text(env: GPUClusterEnv, width: int = 110) -> str:
    """The whole frame as a string with ANSI colours."""
    eng = env.engine
    body = Group(status_line(eng), cluster_grid(eng), queue_table(eng))
    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system="standard")
    console.print(Panel(body, title=f"gpucluster · {env.scenario.name}", border_style="blue"))
    return console.file.getvalue()  # type: ignore[attr-defined]


CELL = 8  # pixels per GPU cell
_RGB = np.array([(230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48), (145, 30, 180),
                 (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 212), (0, 128, 128), (220, 190, 255),
                 (170, 110, 40), (128, 0, 0), (170, 255, 195), (128, 128, 0)], dtype=np.uint8)


def render_rgb(eng, max_nodes: int = MAX_NODES_SHOWN) -> np.ndarray:  # noqa: ANN001 (engine)
    """``(H, W, 3)`` uint8 image of the GPU grid: one row of cells per node, one cell per GPU coloured by its
    job (a stable colour per job index); a GPU shared by two jobs shows the first job in its top half and the
    second in its bottom half; free GPUs are dark grey. A bar under the grid shows the fraction of jobs done.
    The size depends only on the cluster, so every frame of an episode has the same shape."""
    nodes = min(eng.num_nodes, max_nodes)
    width = int(eng.node_size[:nodes].max()) if nodes else 1
    h, w = (nodes + 1) * CELL, width * CELL
    img = np.full((h, w, 3), 16, dtype=np.uint8)
    half = CELL // 2
    for node in range(nodes):
        lo = int(eng.node_start[node])
        y = node * CELL
        for k in range(int(eng.node_size[node])):
            a, b = int(eng.slot_job[lo + k, 0]), int(eng.slot_job[lo + k, 1])
            x = k * CELL
            cell = img[y + 1:y + CELL - 1, x + 1:x + CELL - 1]
            if a < 0:
                cell[:] = 64
            elif b < 0:
                cell[:] = _RGB[a % len(_RGB)]
            else:
                cell[:half - 1] = _RGB[a % len(_RGB)]
                cell[half - 1:] = _RGB[b % len(_RGB)]
    done = int(round(w * eng.n_done / max(eng.n_jobs, 1)))
    img[nodes * CELL + 2:nodes * CELL + CELL - 2, :done] = 200
    return img
