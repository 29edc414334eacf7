"""Drawing one frame of a replay with ``rich``: a header with the clock, metrics so far, a utilization
sparkline, the GPUs node by node coloured by job (shared GPUs marked ◆, MPS shares on demand), and the running
jobs (progress, xi, partners) and the queue (waiting times). Large clusters fold into a per-type summary; a
zoom shows one GPU type's nodes, a page at a time. Everything is computed from the record (see
:mod:`.timeline`); nothing here needs an engine."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gpucluster_env.env.render import job_style
from gpucluster_env.replay.timeline import ClusterState, Timeline

SPARK = " ▁▂▃▄▅▆▇█"
FOLD_NODES = 48
"""Clusters with more nodes than this show a per-type summary unless zoomed into a type."""
MIN_TABLE_ROWS = 3


@dataclass
class ViewOptions:
    """What a frame shows: terminal ``width`` and ``height``, MPS shares in the GPU cells, the zoom (None: the
    whole cluster, folded into a per-type summary when large; a GPU type name: that type's nodes), and which
    page of nodes (when they do not all fit)."""

    width: int = 80
    height: int = 24
    shares: bool = False
    zoom: str | None = None
    page: int = 0


def fmt_s(v: float | None) -> str:
    """Seconds for a narrow column: ``950s``, ``12.3m``, ``4.1h``, ``2.0d``; ``–`` for None."""
    if v is None:
        return "–"
    a = abs(v)
    if a < 1000:
        return f"{v:.0f}s"
    if a < 3600 * 10:
        return f"{v / 60:.1f}m" if a < 6000 else f"{v / 3600:.1f}h"
    return f"{v / 3600:.1f}h" if a < 86400 * 3 else f"{v / 86400:.1f}d"


def sparkline(values: list[float | None]) -> str:
    """One character per value in [0, 1]; a space for None."""
    out = []
    for v in values:
        if v is None:
            out.append(" ")
        else:
            out.append(SPARK[1 + min(len(SPARK) - 2, int(max(0.0, min(1.0, v)) * (len(SPARK) - 2) + 0.5))])
    return "".join(out)


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0%}"


class FrameView:
    """Renders frames of one recorded episode."""

    def __init__(self, timeline: Timeline) -> None:
        self.tl = timeline
        self.id_w = max(4, len(str(len(timeline.jobs) - 1)))
        """Columns of a job index (4; 5 from 10,000 jobs on)."""

    # ------------------------------------------------------------------ parts
    def header(self, t: float, status: str = "") -> Text:
        tl = self.tl
        i = tl.index_at(t)
        return Text.assemble(
            (tl.record.title, "bold"), "  ", ("t=", "bold"), f"{t:,.0f}s", f"/{tl.t_end:,.0f}s",
            f"  ev {i}/{len(tl.events)}", (f"  {status}" if status else "", "cyan"),
            no_wrap=True, overflow="ellipsis",
        )

    def metrics_line(self, t: float, state: ClusterState) -> Text:
        m = self.tl.metrics(t)
        return Text.assemble(
            ("done ", "bold"), f"{m['jobs_done']}/{len(self.tl.jobs)} ",
            ("run ", "bold"), f"{len(state.running)} ", ("queue ", "bold"), f"{len(state.pending)} ",
            ("JCT ", "bold"), f"{fmt_s(m['avg_jct_s'])} ", ("occupancy ", "bold"), f"{_pct(m['gpu_occupancy'])} ",
            ("shared ", "bold"), f"{_pct(m['sharing_utilization'])}",
            no_wrap=True, overflow="ellipsis",
        )

    def spark(self, t: float, width: int) -> Text:
        n = max(8, width - 12)
        return Text.assemble(("util ", "bold"), ("▕", "dim"), sparkline(self.tl.utilization_series(t, n)),
                             ("▏", "dim"), no_wrap=True)

    def _cell(self, g: int, state: ClusterState, shares: bool, width: int) -> Text:
        """GPU ``g`` in ``width`` characters: its job's index (``a◆b`` for two jobs sharing it), or with
        ``shares`` each job's MPS share in percent, coloured by job; ``·`` when free."""
        jobs = state.slots[g]
        if not jobs:
            return Text("·".rjust(width - 1) + " ", style="dim")
        full = state.share_units
        labels = [str(round(100 * state.share.get((g, j), full) / full)) if shares else str(j) for j in jobs]
        text = "◆".join(labels)
        if len(text) > width - 1:
            labels = [x[: max(1, (width - 2) // 2)] for x in labels]
            text = "◆".join(labels)
        cell = Text(" " * max(0, width - 1 - len(text)))
        for k, (j, label) in enumerate(zip(jobs, labels, strict=True)):
            if k:
                cell.append("◆", style="bold")
            cell.append(label, style=f"bold {job_style(j)}")
        cell.append(" ")
        return cell

    def node_rows(self, nodes: list[int], state: ClusterState, shares: bool, width: int = 80) -> list[Text]:
        """One line per node: index, GPU type, then its GPU cells, fitted to ``width`` columns."""
        tl = self.tl
        w_type = max(len(x) for x in tl.type_names)
        per_node = max((tl.node_sizes[n] for n in nodes), default=1)
        cell_w = max(4, min(8, (width - w_type - 5) // max(1, per_node)))
        rows = []
        for n in nodes:
            line = Text(f"{n:>3} {tl.node_types[n]:<{w_type}} ", style="bold", no_wrap=True, overflow="ellipsis")
            lo = tl.node_start[n]
            for g in range(lo, lo + tl.node_sizes[n]):
                line.append_text(self._cell(g, state, shares, cell_w))
            rows.append(line)
        return rows

    def type_summary(self, state: ClusterState) -> Table:
        """Per GPU type: nodes, GPUs, busy, shared, free, and a bar of busy GPUs."""
        tl = self.tl
        table = Table(box=None, header_style="bold", pad_edge=False, title_justify="left")
        for col in ("type", "nodes", "GPUs", "busy", "shared", "free"):
            table.add_column(col, justify="left" if col == "type" else "right")
        table.add_column("busy share", no_wrap=True)
        for ty in tl.type_names:
            gpus = [g for g in range(tl.num_gpus) if tl.gpu_type[g] == ty]
            busy = sum(1 for g in gpus if state.slots[g])
            shared = sum(1 for g in gpus if len(state.slots[g]) > 1)
            frac = busy / len(gpus) if gpus else 0.0
            bar = "█" * round(frac * 20) + "░" * (20 - round(frac * 20))
            table.add_row(ty, str(tl.node_types.count(ty)), str(len(gpus)), str(busy), str(shared),
                          str(len(gpus) - busy), bar)
        return table

    def grid(self, state: ClusterState, opts: ViewOptions, rows: int) -> tuple[RenderableType, str]:
        """The GPU part of the frame in at most ``rows`` lines, and a one-line note of what it shows."""
        tl = self.tl
        if opts.zoom is None and len(tl.node_sizes) > FOLD_NODES:
            return self.type_summary(state), f"{len(tl.node_sizes)} nodes by GPU type (z: zoom into a type)"
        nodes = list(range(len(tl.node_sizes)))
        what = "all nodes"
        if opts.zoom is not None:
            nodes = [n for n in nodes if tl.node_types[n] == opts.zoom]
            what = f"{opts.zoom} nodes"
        rows = max(1, rows)
        pages = max(1, -(-len(nodes) // rows))
        page = min(opts.page, pages - 1)
        shown = nodes[page * rows:(page + 1) * rows]
        note = f"{what} ({len(nodes)})"
        if pages > 1:
            note = f"{what} {shown[0]}–{shown[-1]} of {len(nodes)} ([ ] page {page + 1}/{pages})"
        note += " · ◆ 2 jobs on a GPU" + (" · cells: MPS share %" if opts.shares else "")
        return Group(*self.node_rows(shown, state, opts.shares, opts.width)), note

    def running_lines(self, t: float, state: ClusterState, rows: int) -> list[Text]:
        """The running jobs in start order: index, model, GPUs held, progress bar and percent, xi (solo rate
        over rate: the slowdown from sharing and shares; – when the record has no rate samples), partners."""
        tl = self.tl
        jobs = list(state.running)
        out = [Text(f"running ({len(jobs)})", style="bold"),
               Text(f"{'job':>{self.id_w}} {'model':<10} {'G':>3} {'progress':<11} {'ξ':>5} with", style="bold")]
        for j in jobs[:rows]:
            frac, xi = tl.progress(j, t, state)
            bar = "█" * round(frac * 6) + "░" * (6 - round(frac * 6))
            partners = sorted({p for g in state.gpus.get(j, ()) for p in state.slots[g] if p != j})
            xi_s = "–" if xi is None else f"{xi:.2f}"
            line = Text(f"{j:>{self.id_w}}", style=f"bold {job_style(j)}")
            line.append(f" {tl.jobs[j]['model'][:10]:<10} {len(state.gpus.get(j, ())):>3} {bar}{frac:>5.0%} "
                        f"{xi_s:>5} {','.join(map(str, partners))}")
            out.append(line)
        if len(jobs) > rows:
            out.append(Text(f"     +{len(jobs) - rows} more", style="dim"))
        return out

    def queue_lines(self, t: float, state: ClusterState, rows: int) -> list[Text]:
        """The queue in order: index, model, GPUs asked, time waited since submission."""
        tl = self.tl
        jobs = list(state.pending)
        out = [Text(f"queue ({len(jobs)})", style="bold"),
               Text(f"{'job':>{self.id_w}} {'model':<10} {'G':>3} {'waited':>7}", style="bold")]
        for j in jobs[:rows]:
            info = tl.jobs[j]
            out.append(Text(f"{j:>{self.id_w}} {info['model'][:10]:<10} {info['gpus']:>3} "
                            f"{fmt_s(t - info['submit_s']):>7}"))
        if len(jobs) > rows:
            out.append(Text(f"     +{len(jobs) - rows} more", style="dim"))
        return out

    def job_lines(self, t: float, state: ClusterState, rows: int, width: int) -> list[Text]:
        """Running jobs beside the queue (stacked when ``width`` is under 70 columns)."""
        if width < 70:
            half = max(1, rows // 2 - 1)
            return [*self.running_lines(t, state, half), *self.queue_lines(t, state, half)]
        run, queue = self.running_lines(t, state, rows), self.queue_lines(t, state, rows)
        right_w = 23 + self.id_w
        left_w = width - right_w - 2
        out = []
        for k in range(max(len(run), len(queue))):
            left = run[k].copy() if k < len(run) else Text()
            left.truncate(left_w, overflow="ellipsis", pad=True)
            left.append("  ")
            if k < len(queue):
                left.append_text(queue[k])
            left.no_wrap = True
            out.append(left)
        return out

    # ------------------------------------------------------------------ the frame
    def frame(self, t: float, opts: ViewOptions, status: str = "", footer: str = "") -> RenderableType:
        """The whole frame at time ``t`` in ``opts.width`` x ``opts.height`` (one line less with no footer)."""
        state = self.tl.state(self.tl.index_at(t))
        fixed = 4 + (1 if footer else 0)  # header, metrics, sparkline, grid note, footer
        table_rows = max(MIN_TABLE_ROWS, (opts.height - fixed) // 3)
        grid_rows = max(1, opts.height - fixed - table_rows - 3)
        grid, note = self.grid(state, opts, grid_rows)
        used = grid.row_count + 1 if isinstance(grid, Table) else len(grid.renderables)
        table_rows = max(MIN_TABLE_ROWS, opts.height - fixed - used - 3)
        jobs = self.job_lines(t, state, table_rows, opts.width)
        parts: list[RenderableType] = [
            self.header(t, status), self.metrics_line(t, state), self.spark(t, opts.width),
            Text(note, style="dim", no_wrap=True, overflow="ellipsis"), grid, *jobs,
        ]
        if footer:
            parts.append(Text(footer, style="dim", no_wrap=True, overflow="ellipsis"))
        return Group(*parts)
