"""Text rendering of the cluster with ``rich``: GPU grid by node coloured by job, queue, clock, metrics."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

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
    util = m["gpu_utilization"]
    return Text.assemble(
        ("t = ", "bold"), f"{eng.now:,.0f} s   ",
        ("done ", "bold"), f"{eng.n_done}/{eng.n_jobs}   ",
        ("running ", "bold"), f"{eng.num_running}   ",
        ("free GPUs ", "bold"), f"{int(eng.free_mask().sum())}/{eng.num_gpus}   ",
        ("shared GPUs ", "bold"), f"{eng.shared_gpus}   ",
        ("avg JCT ", "bold"), f"{m['avg_jct_s']:,.0f} s   " if m["jobs_done"] else "–   ",
        ("util ", "bold"), f"{util:.0%}" if util == util else "–",
    )


def render_text(env: GPUClusterEnv, width: int = 110) -> str:
    """The whole frame as a string with ANSI colours."""
    eng = env.engine
    body = Group(status_line(eng), cluster_grid(eng), queue_table(eng))
    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system="standard")
    console.print(Panel(body, title=f"gpucluster · {env.scenario.name}", border_style="blue"))
    return console.file.getvalue()  # type: ignore[attr-defined]
