"""Running a board's cells: skip those already recorded, run the rest in local processes or on Ray, write each
record as it finishes, and show a progress bar with ETA, the rate in cells per minute and live partial results.

Records are written by this (the driving) process as results arrive, so killing the run at any moment loses
only the cells in flight; the next run skips every recorded cell and never runs one twice. Local worker
processes die with the driving process, even when it is killed with SIGKILL (:mod:`gpucluster_env.task_pool`).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gpucluster_env.leaderboard.board import Board, Cell, trace_identity
from gpucluster_env.leaderboard.cell_options import canonical
from gpucluster_env.leaderboard.cells import (
    cell_failure,
    env_spec,
    git_revision,
    metric_names,
    package_version,
    policy_version,
    run_cell,
    versions,
)
from gpucluster_env.leaderboard.store import ResultStore, Stale, make_record

from gpucluster_env.task_pool import TaskFailed, check_backend, one_thread, run_tasks

LIVE_METRIC = "avg_jct_s"


@dataclass
class RunReport:
    """What a run did: cells in the board, already recorded, run now, seconds, and the rate."""

    total: int
    skipped: int
    ran: int
    wall_s: float
    workers: int
    backend: str

    @property
    def cells_per_min(self) -> float:
        """Cells run per minute of wall time in this run (skipped cells not counted)."""
        return 60.0 * self.ran / self.wall_s if self.wall_s > 0 else float("nan")


def provenance(cell: Cell) -> dict[str, Any]:
    """What a record must agree on to be mixed with current results: env spec and versions."""
    return {"env_spec": env_spec(cell), "package_version": package_version(),
            "policy_version": policy_version(cell.policy)}


def check_policies(board: Board) -> None:
    """Build each distinct (policy, options) of the board once, so a bad option fails before any cell runs, and
    refuse env options that would replace the world a policy asks for (``xi`` replaces ``castor-timeslice``'s
    time-slicing catalog; an env keyword a policy sets itself, such as a trained model's window) instead of
    silently running another experiment."""
    from gpucluster_env.policy import make_policy

    built: dict[str, dict[str, Any]] = {}
    seen: set[tuple[str, str]] = set()
    for c in board.cells:
        label = c.policy_label
        if label not in built:
            built[label] = make_policy(c.policy, **c.policy_options).env_kwargs()
        pair = (label, canonical(c.env_options))
        if pair in seen:
            continue
        seen.add(pair)
        own = built[label]
        for k, v in c.env_options.items():
            target = "catalog" if k == "xi" else k
            if target in own and (target == "catalog" or own[target] != v):
                raise ValueError(f"{c.scenario_label} x {label}: env option {k}={v!r} would replace the policy's own "
                                 f"{target} ({'its world' if target == 'catalog' else repr(own[target])}); "
                                 "run that policy in a group without it")


def check_metric_names(board: Board) -> None:
    """Every metric the board ranks by is one its cells record (:func:`~.cells.metric_names`), or a one-line
    ``ValueError`` before any cell runs (a typo would otherwise stop the run after its last cell)."""
    known = metric_names({c.policy for c in board.cells})
    for m in board.metrics:
        if m not in known:
            raise ValueError(f"{board.source or board.name}: metric {m!r} is not recorded by any of the board's "
                             f"cells; known: {', '.join(sorted(known))}")


def check_scenarios(cells: list[Cell]) -> None:
    """Build the jobs of each distinct scenario (with its options) among ``cells`` once, for its first seed, so
    a trace that cannot be read or sampled (an unknown trace name, a bad row in a trace file, a window with no
    jobs) stops the run with one line before any cell instead of failing in the middle of it."""
    from gpucluster_env.scenarios import get_scenario

    seen: set[tuple[str, str]] = set()
    for c in cells:
        key = (c.scenario, canonical(c.scenario_options))
        if key in seen:
            continue
        seen.add(key)
        try:
            get_scenario(c.scenario, **c.scenario_options).build_jobs(c.seed)
        except (ValueError, OSError, KeyError) as e:
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ValueError(f"scenario {c.scenario_label}: its jobs cannot be built: {msg}") from None


def plan(board: Board, store: ResultStore, replace_stale: bool) -> tuple[list[Cell], dict[str, dict[str, Any]]]:
    """The cells still to run and every cell's provenance. Records from another spec or version stop the run
    with a one-line error naming them, unless ``replace_stale`` (then their cells run again and overwrite
    them)."""
    specs: dict[tuple[str, str], dict[str, Any]] = {}
    prov: dict[str, dict[str, Any]] = {}
    for c in board.cells:
        skey = (c.scenario_label, c.policy)
        if skey not in specs:
            specs[skey] = provenance(c)
        prov[c.key] = specs[skey]
    stale = store.stale(prov)
    if stale and not replace_stale:
        raise ValueError(f"{len(stale)} record(s) in {store.root} were made under another spec or version, e.g. "
                         f"{stale[0].path.name}: {stale[0].why}; use --replace-stale to run them again, or "
                         "another --out")
    stale_keys = {s.path.stem for s in stale}
    todo = [c for c in board.cells if c.key not in store.records or c.key in stale_keys]
    todo.sort(key=lambda c: (c.seed, c.scenario_label, c.policy_label))  # all policies of a seed together
    return todo, prov


def _cells(todo: list[Cell], workers: int, backend: str, address: str | None
           ) -> Iterator[tuple[Cell, dict[str, Any]]]:
    """Each cell of ``todo`` with its result, as they finish (:func:`gpucluster_env.task_pool.run_tasks`); a cell
    that raises stops the run with the cell's one-line failure."""
    if backend == "local" and workers == 1:
        one_thread()
    try:
        for i, result in run_tasks(run_cell, todo, workers, backend, address):
            yield todo[i], result
    except TaskFailed as e:
        raise cell_failure(todo[e.index], e.cause) from e.cause


def execute(
    board: Board,
    store: ResultStore,
    workers: int = 1,
    backend: str = "local",
    address: str | None = None,
    replace_stale: bool = False,
    on_record: Callable[[dict[str, Any], int, int], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
) -> RunReport:
    """Run every cell of ``board`` not yet in ``store`` and write its record as it finishes. ``on_start`` is
    called once the cells to run are known (with their count and the count already recorded), ``on_record``
    with each new record, the count done and the count to do (the progress display)."""
    check_backend(workers, backend, None)  # the CLI checked --address already
    check_policies(board)
    check_metric_names(board)
    todo, prov = plan(board, store, replace_stale)
    check_scenarios(todo)
    rev, vers = git_revision(), versions()
    if on_start is not None:
        on_start(len(todo), len(board.cells) - len(todo))
    t0 = time.perf_counter()
    stream = _cells(todo, workers, backend, address)
    done = 0
    for cell, result in stream:
        _check_trace(cell, str(result.get("trace", "")))
        rec = make_record(cell, result, {**prov[cell.key], "git_revision": rev}, vers)
        store.write(rec)
        done += 1
        if on_record is not None:
            on_record(rec, done, len(todo))
    return RunReport(len(board.cells), len(board.cells) - len(todo), done, time.perf_counter() - t0, workers,
                     backend)


TRACE_NOTES = {"synthetic": "synthetic", "real": "real ", "file": "trace file "}
"""How the note of the trace an episode used begins, for each kind of trace identity."""


def _check_trace(cell: Cell, note: str) -> None:
    """The episode ran on the kind of trace its cell names (``synthetic``, ``real:…``, ``file:…``), or a
    one-line ``ValueError``: a record is never filed under a trace it did not use (e.g. when the real file
    appeared or vanished between planning and running)."""
    kind = cell.trace.partition(":")[0]
    want = TRACE_NOTES.get(kind)
    if want is not None and not note.startswith(want):
        raise ValueError(f"cell {cell.scenario_label} x {cell.policy_label} seed {cell.seed} ran on {note!r}, not "
                         f"on the {kind} trace it was planned on; not recorded (rerun to plan again)")


def current_records(store: ResultStore) -> tuple[list[dict[str, Any]], list[str]]:
    """The folder's records made under the current spec and versions, and a note on each kind of record left
    out: another spec or version, or another version of its trace file (reported, never mixed in). Records of
    the synthetic and of the real trace are both current; their labels tell them apart."""
    keep, notes = [], {}
    cache: dict[tuple[str, str], dict[str, Any]] = {}
    traces: dict[tuple[str, str], str] = {}
    for rec in store.select():
        cell = Cell.from_dict(rec["cell"])
        skey = (cell.scenario_label, cell.policy)
        if skey not in cache:
            cache[skey] = provenance(cell)
        stale = store.stale({rec["key"]: cache[skey]})
        why = _trace_changed(cell, traces)
        if stale:
            notes.setdefault(stale[0].why.split(" ")[0], []).append(stale[0])
        elif why:
            notes.setdefault("trace", []).append(Stale(store.paths[rec["key"]], why))
        else:
            keep.append(rec)
    msgs = [f"{len(v)} record(s) made under another {k} left out, e.g. {v[0].path.name}: {v[0].why}"
            for k, v in notes.items()]
    return keep, msgs


def _trace_changed(cell: Cell, cache: dict[tuple[str, str], str]) -> str:
    """Why ``cell``'s trace is not the one its scenario reads now (a trace file or real trace of other
    content, or gone), or empty. The current identity is computed once per scenario and options."""
    kind = cell.trace.partition(":")[0]
    if kind not in ("file", "real"):
        return ""
    key = (cell.scenario, canonical(cell.scenario_options))
    if key not in cache:
        from gpucluster_env.scenarios import get_scenario

        try:
            cache[key] = trace_identity(get_scenario(cell.scenario, **cell.scenario_options))
        except (ValueError, OSError) as e:
            cache[key] = f"unreadable ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
    now = cache[key]
    if now == cell.trace or (kind == "real" and not now.startswith("real:")):
        return ""
    return f"trace {cell.trace} (current {now})"


def load_current(dirs: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """The current records of several results folders together (a cell recorded in two folders counts once)
    and the notes on records left out, each prefixed with its folder."""
    records: list[dict[str, Any]] = []
    notes: list[str] = []
    seen: set[str] = set()
    for d in dirs:
        recs, msgs = current_records(ResultStore(d))
        notes += [f"{d}: {m}" for m in msgs]
        records += [r for r in recs if r["key"] not in seen]
        seen.update(r["key"] for r in recs)
    return records, notes


def live_summary(records: list[dict[str, Any]], metric: str = LIVE_METRIC) -> list[tuple[str, str, float, int]]:
    """Partial results for the progress display: (scenario, policy, mean of ``metric``, episodes) per pair,
    best first within a scenario; a policy with truncated episodes is marked ``†``."""
    acc: dict[tuple[str, str], list[float]] = {}
    cut: set[tuple[str, str]] = set()
    for r in records:
        c = Cell.from_dict(r["cell"])
        v = r["metrics"].get(metric)
        if r.get("truncated"):
            cut.add((c.scenario_label, c.policy_label))
        if v is not None and math.isfinite(v):
            acc.setdefault((c.scenario_label, c.policy_label), []).append(float(v))
    rows = [(s, p + (" †" if (s, p) in cut else ""), statistics.fmean(v), len(v)) for (s, p), v in acc.items()]
    return sorted(rows, key=lambda r: (r[0], r[2]))
