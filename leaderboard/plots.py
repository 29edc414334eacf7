"""PNG figures of a results folder (matplotlib, the optional ``plot`` extra):

- ``cdf-<scenario>.png``: the CDF of job completion times per policy on one scenario, all seeds' jobs pooled;
- ``bars-<metric>.png``: each policy's mean with its 95% bootstrap interval, one panel per scenario;
- ``paper-<scenario>.png``: ours beside the paper's published average JCT and queueing where a paper publishes
  them (castor Tables 5-6, sjf-bsbf Tables III-IV), our bars with their 95% intervals.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from gpucluster_env.leaderboard.board import Cell
from gpucluster_env.leaderboard.papers import paper_rows
from gpucluster_env.leaderboard.summary import labelled, summarize
from gpucluster_env.leaderboard.summary_tables import time_unit

from gpucluster_env.atomic_write import atomic_output

HOUR = 3600.0


def _plt() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ValueError("plots need matplotlib: pip install 'gpucluster-env[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _slug(label: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "-" for c in label)
    return "-".join(p for p in keep.split("-") if p)


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.tight_layout()
    with atomic_output(path) as f:
        fig.savefig(f, format="png", dpi=120)
    plt.close(fig)
    return path


LINESTYLES = ("-", "--", ":", "-.")
HATCHES = {"-": "", "--": "//", ":": "..", "-.": "xx"}
"""Bars of the policies beyond the first ten colours get a hatch, as their lines get a style."""


def _colors(policies: list[str]) -> dict[str, Any]:
    """A colour per policy (tab10, so neighbours stay distinct; beyond ten policies :func:`_style` varies the
    line style)."""
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {p: cmap(i % 10) for i, p in enumerate(sorted(policies))}


def _style(policies: list[str], policy: str) -> str:
    return LINESTYLES[(sorted(policies).index(policy) // 10) % len(LINESTYLES)]


def _job_jcts(records: list[dict[str, Any]]) -> np.ndarray:
    vals = [v for r in records for v in (r.get("per_job") or {}).get("jct_s", []) if v is not None]
    return np.sort(np.asarray(vals, float))


def plot_cdfs(records: list[dict[str, Any]], out: Path) -> list[Path]:
    """One JCT CDF per scenario, a line per policy (jobs of all seeds pooled), JCT on a log axis in hours."""
    plt = _plt()
    labels, _ = labelled(records)
    by: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for rec, (sl, pl) in zip(records, labels, strict=True):
        by.setdefault(sl, {}).setdefault(pl, []).append(rec)
    names = sorted({pl for _, pl in labels})
    colors = _colors(names)
    files = []
    for sl, pols in sorted(by.items()):
        fig, ax = plt.subplots(figsize=(10.5, 4.8))
        for pl, recs in sorted(pols.items()):
            jct = _job_jcts(recs) / HOUR
            if len(jct) == 0:
                continue
            y = np.arange(1, len(jct) + 1) / len(jct)
            seeds = len({r["cell"]["seed"] for r in recs})
            ax.step(jct, y, where="post", color=colors[pl], ls=_style(names, pl), lw=1.6,
                    label=f"{pl} (mean {jct.mean():.2f} h, {seeds} seed{'' if seeds == 1 else 's'})")
        ax.set_xscale("log")
        ax.set_xlabel("job completion time (h, log scale)")
        ax.set_ylabel("fraction of jobs")
        ax.set_ylim(0, 1.01)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"JCT CDF · {sl}")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        files.append(_save(plt, fig, out / f"cdf-{_slug(sl)}.png"))
    return files


def plot_bars(records: list[dict[str, Any]], out: Path, metric: str, reference: str) -> Path:
    """Each policy's mean of ``metric`` with its 95% interval, one panel per scenario, best first."""
    plt = _plt()
    summary = summarize(records, metric, reference)
    tables = summary.scenarios
    cols = min(3, len(tables))
    rows = math.ceil(len(tables) / cols)
    unit, scale = time_unit(summary)  # the unit of `show`'s table for the same results
    unit = f" ({unit})" if unit else ""
    names_all = sorted({r.policy for t in tables for r in t.rows})
    colors = _colors(names_all)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.6 * rows), squeeze=False)
    for ax, t in zip(axes.flat, tables, strict=False):
        names = [r.policy for r in t.rows]
        means = np.array([r.mean for r in t.rows]) / scale
        lo = np.array([r.ci[0] for r in t.rows]) / scale
        hi = np.array([r.ci[1] for r in t.rows]) / scale
        err = np.vstack([np.nan_to_num(means - lo), np.nan_to_num(hi - means)])
        x = np.arange(len(names))
        ax.bar(x, means, yerr=err, capsize=3, color=[colors[n] for n in names], edgecolor="black", lw=0.5,
               hatch=[HATCHES[_style(names_all, n)] for n in names])
        ax.set_xticks(x, names, rotation=40, ha="right", fontsize=7)
        ax.set_title(f"{t.scenario} · n={max((r.n for r in t.rows), default=0)} seeds", fontsize=9)
        ax.set_ylabel(metric + unit, fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(tables):]:
        ax.set_visible(False)
    fig.suptitle(f"{metric}: mean over seeds, 95% bootstrap CI ({'lower' if summary.lower_is_better else 'higher'} "
                 "is better)", fontsize=10)
    return _save(plt, fig, out / f"bars-{_slug(metric)}.png")


def _paper_key(cell: Cell) -> tuple[str, str] | None:
    if cell.env_options or cell.policy_options:
        return None
    opts = ",".join(f"{k}={v}" for k, v in sorted(cell.scenario_options.items()) if k != "restart_s")
    return (cell.scenario, opts) if paper_rows(cell.scenario, opts) else None


def plot_papers(records: list[dict[str, Any]], out: Path) -> list[Path]:
    """Ours beside the paper for every scenario setting a paper publishes numbers for: average JCT and average
    queueing (h) per policy, ours as mean with 95% interval."""
    plt = _plt()
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        key = _paper_key(Cell.from_dict(r["cell"]))
        if key is not None:
            groups.setdefault(key, []).append(r)
    files = []
    for (sc, opts), recs in sorted(groups.items()):
        paper = paper_rows(sc, opts)
        label = f"{sc} ({opts})" if opts else sc
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, (metric, idx, title) in zip(axes, (("avg_jct_s", 0, "average JCT"),
                                                   ("avg_queue_s", 1, "average queueing")), strict=True):
            tables = summarize(recs, metric, "fifo").scenarios
            ours = {r.policy: r for r in tables[0].rows} if tables else {}
            names = [p for p in paper if p in ours]
            x = np.arange(len(names))
            m = np.array([ours[p].mean for p in names]) / HOUR
            lo = np.array([ours[p].ci[0] for p in names]) / HOUR
            hi = np.array([ours[p].ci[1] for p in names]) / HOUR
            err = np.vstack([np.nan_to_num(m - lo), np.nan_to_num(hi - m)])
            ax.bar(x - 0.2, m, 0.4, yerr=err, capsize=3, label="ours (mean, 95% CI)", color="#4C72B0")
            ax.bar(x + 0.2, [paper[p][idx] for p in names], 0.4, label="paper", color="#DD8452")
            ax.set_xticks(x, names, fontsize=8)
            ax.set_ylabel(f"{title} (h)")
            ax.set_title(title, fontsize=9)
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=7)
        seeds = len({r["cell"]["seed"] for r in recs})
        n_seeds = f"{seeds} seed{'' if seeds == 1 else 's'}"
        fig.suptitle(f"{label}: ours ({n_seeds}) beside the paper's published table", fontsize=10)
        files.append(_save(plt, fig, out / f"paper-{_slug(label)}.png"))
    return files


def write_plots(records: list[dict[str, Any]], out: Path, metric: str = "avg_jct_s",
                reference: str = "fifo") -> list[Path]:
    """Write every figure into ``out`` (created); return the files."""
    _plt()
    out.mkdir(parents=True, exist_ok=True)
    return [*plot_cdfs(records, out), plot_bars(records, out, metric, reference), *plot_papers(records, out)]
