"""Two records of the same episode (same scenario, options and seed; different policies), time-aligned: a
table of jobs done, average JCT of the jobs done, total JCT so far (time all submitted jobs have spent in the
system) and utilization for each, with the difference B − A, above both clusters."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gpucluster_env.replay.frame import FrameView, ViewOptions, fmt_s
from gpucluster_env.replay.record import Record
from gpucluster_env.replay.timeline import Timeline

SAME_EPISODE_KEYS = ("scenario", "scenario_options", "seed")


def check_comparable(a: Record, b: Record) -> None:
    """``ValueError`` unless ``a`` and ``b`` are records of the same episode setting."""
    for k in SAME_EPISODE_KEYS:
        if a.header.get(k) != b.header.get(k):
            raise ValueError(f"records differ in {k} ({a.header.get(k)!r} vs {b.header.get(k)!r}); side by side "
                             "needs two records of the same scenario and seed")
    if len(a.header["jobs"]) != len(b.header["jobs"]):
        raise ValueError("records have different job tables; side by side needs the same episode")


def _diff(a: float | None, b: float | None, fmt: str) -> str:
    if a is None or b is None:
        return "–"
    d = b - a
    return ("+" if d > 0 else "") + (fmt_s(d) if fmt == "s" else f"{d:.0%}" if fmt == "%" else f"{d:.0f}")


def _val(v: float | None, fmt: str) -> str:
    if v is None:
        return "–"
    return fmt_s(v) if fmt == "s" else f"{v:.0%}" if fmt == "%" else f"{v:.0f}"


class CompareView:
    """Renders side-by-side frames of two timelines at the same time."""

    def __init__(self, a: Timeline, b: Timeline) -> None:
        self.views = (FrameView(a), FrameView(b))
        self.t0 = min(a.t0, b.t0)
        self.t_end = max(a.t_end, b.t_end)

    def table(self, t: float) -> Table:
        a, b = (v.tl for v in self.views)
        ma, mb = a.metrics(t), b.metrics(t)
        table = Table(box=None, header_style="bold", pad_edge=False)
        table.add_column("so far")
        for name, tl in (("A", a), ("B", b)):
            table.add_column(f"{name}: {tl.record.header['policy']}"[:16], justify="right")
        table.add_column("B − A", justify="right")
        rows = (("jobs done", "jobs_done", "n"), ("avg JCT (done)", "avg_jct_s", "s"),
                ("total JCT", "total_jct_s", "s"), ("GPU occupancy", "gpu_occupancy", "%"),
                ("shared", "sharing_utilization", "%"))
        for label, key, fmt in rows:
            table.add_row(label, _val(ma[key], fmt), _val(mb[key], fmt), _diff(ma[key], mb[key], fmt))
        return table

    def frame(self, t: float, opts: ViewOptions, status: str = "", footer: str = "") -> RenderableType:
        """Both records at ``t``: titles, the comparison table, then each cluster in the rows left."""
        a, b = self.views
        head = Text.assemble(("t=", "bold"), f"{t:,.0f}s/{self.t_end:,.0f}s", (f"  {status}" if status else "",
                             "cyan"), no_wrap=True)
        parts: list[RenderableType] = [head, Text(f"A: {a.tl.record.title}", no_wrap=True, overflow="ellipsis"),
                                       Text(f"B: {b.tl.record.title}", no_wrap=True, overflow="ellipsis"),
                                       self.table(t)]
        rows = max(1, (opts.height - 12 - (1 if footer else 0)) // 2 - 1)
        for name, v in (("A", a), ("B", b)):
            state = v.tl.state(v.tl.index_at(t))
            grid, note = v.grid(state, opts, rows)
            parts += [Text(f"{name} · {note}", style="dim", no_wrap=True, overflow="ellipsis"), grid]
        if footer:
            parts.append(Text(footer, style="dim", no_wrap=True, overflow="ellipsis"))
        return Group(*parts)
