"""The cluster at any moment of a recorded episode, rebuilt from the record alone (no engine): which job holds
which GPU (with MPS shares), the queue, the running jobs with their progress and xi, and metrics so far.

:class:`Timeline` replays the event log once, keeping the running totals after every event and a full
snapshot every :data:`CHECKPOINT_EVERY` events (at most :data:`MAX_CHECKPOINTS` snapshots: a long record
spaces them further apart), so any instant is a snapshot plus a bounded number of events away.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from gpucluster_env.config import DEFAULT_SHARE_STEP
from gpucluster_env.replay.record import Record

CHECKPOINT_EVERY = 128
MAX_CHECKPOINTS = 64
"""At most this many snapshots (a long record takes one every ``events / MAX_CHECKPOINTS`` events instead), so a
timeline's memory grows with the cluster and the jobs, not with their product; a seek replays at most that
many events from the snapshot before it."""
FUTURE, PENDING, RUNNING, DONE = range(4)


@dataclass
class ClusterState:
    """The cluster after some prefix of the event log. ``slots[g]``: the jobs on GPU ``g`` (at most two, in
    the order they came); ``share_units``: steps of the episode's share grid in a whole GPU (10: 10% steps);
    ``share[(g, j)]``: job ``j``'s MPS share on ``g`` in those steps (absent: full); ``pending``: queued jobs
    in queue order with the time each joined the queue; ``running``: running jobs in start order."""

    slots: list[list[int]]
    status: list[int]
    share_units: int
    share: dict[tuple[int, int], int] = field(default_factory=dict)
    pending: dict[int, float] = field(default_factory=dict)
    running: dict[int, None] = field(default_factory=dict)
    gpus: dict[int, list[int]] = field(default_factory=dict)
    copies: dict[int, int] = field(default_factory=dict)
    applied: int = 0

    def copy(self) -> ClusterState:
        return ClusterState([s[:] for s in self.slots], self.status[:], self.share_units, dict(self.share),
                            dict(self.pending),
                            dict(self.running), {j: g[:] for j, g in self.gpus.items()}, dict(self.copies),
                            self.applied)

    def apply(self, e: dict[str, Any]) -> None:
        """Apply one event of the log."""
        kind, j, t = e["kind"], e["job"], e["t"]
        if kind == "arrive":
            self.status[j] = PENDING
            self.pending[j] = t
        elif kind in ("start", "fork"):
            if kind == "start":
                self.pending.pop(j, None)
                self.status[j] = RUNNING
                self.running[j] = None
                self.gpus[j] = []
                self.copies[j] = 0
            self.copies[j] = self.copies.get(j, 0) + 1
            for g in e["gpus"]:
                self.slots[g].append(j)
                self.share[(g, j)] = self.share_units
            self.gpus.setdefault(j, []).extend(e["gpus"])
        elif kind in ("finish", "preempt"):
            for g in self.gpus.pop(j, ()):
                if j in self.slots[g]:
                    self.slots[g].remove(j)
                self.share.pop((g, j), None)
            self.running.pop(j, None)
            self.copies.pop(j, None)
            if kind == "finish":
                self.status[j] = DONE
            else:
                self.status[j] = PENDING
                self.pending[j] = t
        elif kind in ("reallocate", "drop_copy", "move_copy"):
            leave = self.gpus.get(j, [])[:] if kind == "reallocate" else e.get("from", e["gpus"])
            for g in leave:
                if j in self.slots[g]:
                    self.slots[g].remove(j)
                self.share.pop((g, j), None)
            held = [g for g in self.gpus.get(j, []) if g not in set(leave)]
            if kind == "drop_copy":
                self.copies[j] = self.copies.get(j, 1) - 1
            else:
                for g in e["gpus"]:
                    self.slots[g].append(j)
                    self.share[(g, j)] = self.share_units
                held += e["gpus"]
            self.gpus[j] = held
        elif kind in ("squeeze", "swell"):
            step = -1 if kind == "squeeze" else 1  # one step of the grid, at least one step, at most full
            for g in e["gpus"]:
                cur = self.share.get((g, j), self.share_units)
                self.share[(g, j)] = min(self.share_units, max(1, cur + step))
        self.applied += 1


@dataclass(frozen=True)
class Totals:
    """Running totals at an instant: jobs done, pending, running; busy and shared GPUs; sums for metrics."""

    t: float
    done: int
    pending: int
    running: int
    busy: int
    shared: int
    jct_sum: float
    busy_area: float
    shared_area: float
    in_system_area: float


class Timeline:
    """Random access to a recorded episode's state by time or by event index."""

    def __init__(self, rec: Record) -> None:
        self.record = rec
        h = rec.header
        self.jobs: list[dict[str, Any]] = h["jobs"]
        self.node_types: list[str] = [str(n[0]) for n in h["cluster"]]
        self.node_sizes: list[int] = [int(n[1]) for n in h["cluster"]]
        self.node_start = [sum(self.node_sizes[:i]) for i in range(len(self.node_sizes))]
        self.num_gpus = sum(self.node_sizes)
        self.type_names = list(dict.fromkeys(self.node_types))
        self.gpu_type = [t for t, n in zip(self.node_types, self.node_sizes, strict=True) for _ in range(n)]
        # the engine's share grid (records written before it was a setting: the 10% grid)
        self.share_units = round(1.0 / float(h.get("share_step", DEFAULT_SHARE_STEP)))
        self.events = rec.events
        self.times = [e["t"] for e in self.events]
        self.t0 = min((j["submit_s"] for j in self.jobs), default=0.0)
        self.t_end = self.times[-1] if self.times else self.t0
        self._rate_t: dict[int, list[float]] = {}
        self._rate_v: dict[int, list[tuple[float, float, float | None, float]]] = {}
        for line in rec.rates:
            for j, rem, rate, xi, af in line["jobs"]:
                self._rate_t.setdefault(j, []).append(line["t"])
                self._rate_v.setdefault(j, []).append((rem, rate, xi, af))
        self.has_rates = bool(rec.rates)
        self._every = max(CHECKPOINT_EVERY, -(-len(self.events) // MAX_CHECKPOINTS))
        """Events between two snapshots."""
        self._build()

    def empty_state(self) -> ClusterState:
        return ClusterState([[] for _ in range(self.num_gpus)], [FUTURE] * len(self.jobs), self.share_units)

    def _build(self) -> None:
        st = self.empty_state()
        self._checkpoints: list[ClusterState] = [st.copy()]
        self._totals: list[Totals] = [Totals(self.t0, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0)]
        self.run_spans: dict[int, list[list[float]]] = {}
        self.finish_t: dict[int, float] = {}
        busy = shared = done = 0
        jct = ba = sa = ia = 0.0
        last_t = self.t0
        for i, e in enumerate(self.events):
            t, j, kind = e["t"], e["job"], e["kind"]
            self._check(i, e, st)
            dt = t - last_t
            ba += busy * dt
            sa += shared * dt
            ia += (len(st.pending) + len(st.running)) * dt
            last_t = t
            touched = e.get("gpus") or (st.gpus.get(j, ()) if kind in ("finish", "preempt") else ())
            if kind in ("reallocate", "move_copy"):  # the GPUs left and the GPUs taken
                left = st.gpus.get(j, []) if kind == "reallocate" else e.get("from", [])
                touched = list(dict.fromkeys([*left, *e["gpus"]]))
            before = [len(st.slots[g]) for g in touched]
            st.apply(e)
            for g, n0 in zip(touched, before, strict=True):
                n1 = len(st.slots[g])
                busy += (n1 > 0) - (n0 > 0)
                shared += (n1 > 1) - (n0 > 1)
            if kind == "start":
                self.run_spans.setdefault(j, []).append([t, -1.0])
            elif kind in ("finish", "preempt"):
                self.run_spans[j][-1][1] = t
                if kind == "finish":
                    done += 1
                    jct += t - self.jobs[j]["submit_s"]
                    self.finish_t[j] = t
            self._totals.append(Totals(t, done, len(st.pending), len(st.running), busy, shared, jct, ba, sa, ia))
            if (i + 1) % self._every == 0:
                self._checkpoints.append(st.copy())

    def _check(self, i: int, e: dict[str, Any], st: ClusterState) -> None:
        """:class:`~.record.RecordError` naming the line if event ``i`` cannot follow the state before it."""
        kind, j = e["kind"], e["job"]
        if kind == "round":
            return
        need = {"arrive": FUTURE, "start": PENDING}.get(kind, RUNNING)
        if j < 0 or st.status[j] != need:
            names = ("not arrived", "pending", "running", "done")
            now = names[st.status[j]] if j >= 0 else "no job"
            raise self.record.error(i, f"{kind} of job {j}, which is {now} (replayed events disagree)")
        if kind in ("start", "fork"):
            full = [g for g in e["gpus"] if len(st.slots[g]) >= 2 or j in st.slots[g]]
            if full:
                raise self.record.error(i, f"{kind} of job {j} on GPU {full[0]}, which cannot take it")
        elif kind in ("reallocate", "move_copy"):
            left = set(st.gpus.get(j, ()) if kind == "reallocate" else e.get("from", ()))
            full = [g for g in e["gpus"] if len([x for x in st.slots[g] if x != j or g not in left]) >= 2
                    or (j in st.slots[g] and g not in left)]
            if full:
                raise self.record.error(i, f"{kind} of job {j} onto GPU {full[0]}, which cannot take it")
        elif kind in ("squeeze", "swell", "drop_copy") and not set(e["gpus"]) <= set(st.gpus.get(j, ())):
            raise self.record.error(i, f"{kind} of job {j} on a GPU it does not hold")

    # ------------------------------------------------------------------ access
    def index_at(self, t: float) -> int:
        """How many events have happened by time ``t`` (all those at ``t`` included)."""
        return bisect.bisect_right(self.times, t)

    def state(self, index: int) -> ClusterState:
        """The cluster after the first ``index`` events (a fresh object the caller may keep)."""
        index = max(0, min(index, len(self.events)))
        st = self._checkpoints[index // self._every].copy()
        for e in self.events[st.applied:index]:
            st.apply(e)
        return st

    def totals(self, t: float) -> Totals:
        """Running totals at time ``t`` (areas integrated up to ``t``)."""
        i = self.index_at(t)
        a = self._totals[i]
        dt = max(0.0, t - a.t)
        return Totals(t, a.done, a.pending, a.running, a.busy, a.shared, a.jct_sum, a.busy_area + a.busy * dt,
                      a.shared_area + a.shared * dt, a.in_system_area + (a.pending + a.running) * dt)

    def metrics(self, t: float) -> dict[str, float | int | None]:
        """Metrics so far at ``t``: jobs done, average JCT of those, GPU and sharing utilization since the first
        submission, and total JCT so far (time every submitted job has spent in the system)."""
        a = self.totals(t)
        span = t - self.t0
        return {
            "jobs_done": a.done,
            "avg_jct_s": a.jct_sum / a.done if a.done else None,
            "gpu_occupancy": a.busy_area / (self.num_gpus * span) if span > 0 else None,
            "sharing_utilization": a.shared_area / (self.num_gpus * span) if span > 0 else None,
            "total_jct_s": a.in_system_area,
        }

    def utilization_series(self, t: float, buckets: int) -> list[float | None]:
        """Mean busy fraction of the GPUs in ``buckets`` equal slices of the whole episode; slices after ``t``
        are None (not yet seen)."""
        span = max(self.t_end - self.t0, 1e-9)
        out: list[float | None] = []
        prev = self.t0
        prev_area = 0.0
        for k in range(1, buckets + 1):
            b = self.t0 + span * k / buckets
            if prev >= t:
                out.append(None)
                continue
            end = min(b, t)
            area = self.totals(end).busy_area
            out.append((area - prev_area) / (self.num_gpus * max(end - prev, 1e-9)))
            prev, prev_area = end, area
        return out

    def progress(self, j: int, t: float, state: ClusterState) -> tuple[float, float | None]:
        """(fraction of job ``j``'s iterations done at ``t``, its xi then or None). From the record's rate
        samples when it has them (exact); otherwise the fraction of the job's total running time elapsed."""
        if state.status[j] == DONE:
            return 1.0, None
        ts = self._rate_t.get(j)
        if ts:
            k = bisect.bisect_right(ts, t) - 1
            if k >= 0:
                rem, rate, xi, af = self._rate_v[j][k]
                rem_t = rem - rate * max(0.0, t - max(ts[k], af))
                iters = self.jobs[j]["iterations"]
                return min(1.0, max(0.0, 1.0 - rem_t / iters)) if iters > 0 else 1.0, xi
        spans = self.run_spans.get(j, [])
        total = sum((e if e >= 0 else self.t_end) - s for s, e in spans)
        run = sum(max(0.0, min(t, e if e >= 0 else self.t_end) - s) for s, e in spans)
        return (run / total if total > 0 else 0.0), None
