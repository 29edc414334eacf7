"""The cluster at any moment of a recorded episode, rebuilt from the record alone (no engine): which job holds
which GPU (with MPS shares), the queue, the running jobs with their progress and xi, and metrics so far.

:class:`Timeline` replays the event log once, keeping the running totals after every event (one row of an
array each) and a snapshot every :data:`CHECKPOINT_EVERY` events (at most :data:`MAX_CHECKPOINTS` of them: a
long record spaces them further apart), so any instant is a snapshot plus a bounded number of events away.
Everything it keeps is numpy arrays (the record's as :class:`~.record_arrays.RecordArrays`, the snapshots as
:class:`~.cluster_state.Snapshot`): no Python object per event or per job, so a 100,000-job record fits in a
small memory (:meth:`Timeline.nbytes` counts it).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from gpucluster_env.config import DEFAULT_SHARE_STEP
from gpucluster_env.replay.cluster_state import (
    DONE,
    FUTURE,
    PENDING,
    RUNNING,
    ClusterState,
    Snapshot,
    event_problem,
)
from gpucluster_env.replay.record import Record
from gpucluster_env.replay.record_arrays import RecordArrays, as_arrays

__all__ = ["CHECKPOINT_EVERY", "DONE", "FUTURE", "MAX_CHECKPOINTS", "PENDING", "RUNNING", "ClusterState", "Timeline",
           "Totals"]

CHECKPOINT_EVERY = 128
MAX_CHECKPOINTS = 128
"""At most this many snapshots (a long record takes one every ``events / MAX_CHECKPOINTS`` events instead), so a
timeline's memory grows with the cluster and the jobs, not with their product; a seek replays at most that
many events from the snapshot before it."""
SNAPSHOT_BYTES = 48 << 20
"""At most this many bytes of snapshots (a snapshot holds the queue: a record whose queue holds most of its
jobs keeps every other one, and again, until they fit)."""


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
    """Random access to a recorded episode's state by time or by event index. ``record`` is the record it was
    made from (read whole, :class:`~.record.Record`, or opened compactly,
    :class:`~.record_arrays.RecordArrays`); ``events`` its events (``len``, ``events[i]`` as a dict)."""

    def __init__(self, rec: Record | RecordArrays) -> None:
        self.record = rec
        self.data = data = as_arrays(rec)
        h = data.header
        self.jobs = data.jobs
        self.node_types: list[str] = [str(n[0]) for n in h["cluster"]]
        self.node_sizes: list[int] = [int(n[1]) for n in h["cluster"]]
        self.node_start = [sum(self.node_sizes[:i]) for i in range(len(self.node_sizes))]
        self.num_gpus = sum(self.node_sizes)
        self.type_names = list(dict.fromkeys(self.node_types))
        self.gpu_type = [t for t, n in zip(self.node_types, self.node_sizes, strict=True) for _ in range(n)]
        # the engine's share grid (records written before it was a setting: the 10% grid)
        self.share_units = round(1.0 / float(h.get("share_step", DEFAULT_SHARE_STEP)))
        self.events = data.events
        self.times: np.ndarray = data.events.t
        self.t0 = float(self.jobs.submit_s.min()) if len(self.jobs) else 0.0
        self.t_end = float(self.times[-1]) if len(self.times) else self.t0
        self.rates = data.rates
        self.has_rates = data.rates.lines > 0
        self._every = max(CHECKPOINT_EVERY, -(-len(self.events) // MAX_CHECKPOINTS))
        """Events between two snapshots."""
        self._last: ClusterState | None = None
        """The state :meth:`state` gave last (one cluster's worth of Python objects)."""
        self._build()

    def empty_state(self) -> ClusterState:
        """The cluster before the first event."""
        return ClusterState([[] for _ in range(self.num_gpus)], [FUTURE] * len(self.jobs), self.share_units)

    def _build(self) -> None:
        st = self.empty_state()
        self._checkpoints: list[Snapshot] = [st.snapshot()]
        counts, sums = array("i", [0] * 5), array("d", [0.0] * 4)  # the running totals, a row per event
        spans = _Spans(len(self.jobs))
        busy = shared = done = 0
        jct = ba = sa = ia = 0.0
        last_t = self.t0
        submit = self.jobs.submit_s
        for i, (t, kind, j, gpus, frm) in enumerate(self.events.rows(0, len(self.events))):
            problem = event_problem(st, kind, j, gpus, frm)
            if problem:
                raise self.record.error(i, problem)
            dt = t - last_t
            ba += busy * dt
            sa += shared * dt
            ia += (len(st.pending) + len(st.running)) * dt
            last_t = t
            touched = _touched(st, kind, j, gpus, frm)
            before = [len(st.slots[g]) for g in touched]
            st.apply_event(t, kind, j, gpus, frm)
            for g, n0 in zip(touched, before, strict=True):
                n1 = len(st.slots[g])
                busy += (n1 > 0) - (n0 > 0)
                shared += (n1 > 1) - (n0 > 1)
            if kind == "start":
                spans.start(j, t)
            elif kind in ("finish", "preempt"):
                spans.end(j, t)
                if kind == "finish":
                    done += 1
                    jct += t - float(submit[j])
            counts.extend((done, len(st.pending), len(st.running), busy, shared))
            sums.extend((jct, ba, sa, ia))
            if (i + 1) % self._every == 0:
                self._add_snapshot(st)
        self._counts = np.frombuffer(counts, dtype=np.int32).reshape(-1, 5)
        self._sums = np.frombuffer(sums, dtype=np.float64).reshape(-1, 4)
        self._spans = spans.freeze()

    def _add_snapshot(self, st: ClusterState) -> None:
        """Keep a snapshot of ``st``; over :data:`SNAPSHOT_BYTES`, keep every other one (twice as far apart)."""
        self._checkpoints.append(st.snapshot())
        while sum(s.nbytes for s in self._checkpoints) > SNAPSHOT_BYTES and len(self._checkpoints) > 1:
            self._checkpoints = self._checkpoints[::2]
            self._every *= 2

    @property
    def nbytes(self) -> int:
        """Bytes of what the timeline keeps, every one in a numpy array: the record's events, rate samples and
        job table, the running totals, the snapshots and the run spans."""
        return (self.data.nbytes + self._counts.nbytes + self._sums.nbytes + sum(s.nbytes for s in self._checkpoints)
                + self._spans.nbytes)

    # ------------------------------------------------------------------ access
    def index_at(self, t: float) -> int:
        """How many events have happened by time ``t`` (all those at ``t`` included)."""
        return int(np.searchsorted(self.times, t, side="right"))

    def state(self, index: int) -> ClusterState:
        """The cluster after the first ``index`` events (a fresh object the caller may keep): the snapshot
        before it, or the state last asked for when that lies between the two (a replay playing forward),
        plus the events since."""
        index = max(0, min(index, len(self.events)))
        last = self._last
        if last is not None and index // self._every * self._every <= last.applied <= index:
            st = last.copy()
        else:
            st = ClusterState.restore(self._checkpoints[index // self._every], self.share_units)
        for t, kind, j, gpus, frm in self.events.rows(st.applied, index):
            st.apply_event(t, kind, j, gpus, frm)
        self._last = st.copy()
        return st

    def totals(self, t: float) -> Totals:
        """Running totals at time ``t`` (areas integrated up to ``t``)."""
        i = self.index_at(t)
        done, pending, running, busy, shared = self._counts[i].tolist()
        jct, ba, sa, ia = self._sums[i].tolist()
        dt = max(0.0, t - (float(self.times[i - 1]) if i else self.t0))
        return Totals(t, done, pending, running, busy, shared, jct, ba + busy * dt, sa + shared * dt,
                      ia + (pending + running) * dt)

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
        sample = self.rates.sample(j, t)
        if sample is not None:
            ts, rem, rate, xi, af = sample
            rem_t = rem - rate * max(0.0, t - max(ts, af))
            iters = float(self.jobs.iterations[j])
            return min(1.0, max(0.0, 1.0 - rem_t / iters)) if iters > 0 else 1.0, xi
        spans = self._spans.of(j)
        total = sum((e if e >= 0 else self.t_end) - s for s, e in spans)
        run = sum(max(0.0, min(t, e if e >= 0 else self.t_end) - s) for s, e in spans)
        return (run / total if total > 0 else 0.0), None


def _touched(st: ClusterState, kind: str, j: int, gpus: list[int] | None, frm: list[int] | None) -> list[int]:
    """The GPUs whose jobs event ``kind`` of job ``j`` changes (for the busy and shared counts)."""
    if kind in ("reallocate", "move_copy"):  # the GPUs left and the GPUs taken
        left = st.gpus.get(j, []) if kind == "reallocate" else frm or []
        return list(dict.fromkeys([*left, *(gpus or ())]))
    return gpus or (list(st.gpus.get(j, ())) if kind in ("finish", "preempt") else [])


class _Spans:
    """The stretches of time each job ran (start to finish or preempt; -1 while still running at the end),
    gathered in event order, then grouped by job into arrays (:meth:`freeze`)."""

    def __init__(self, n_jobs: int) -> None:
        self.job, self.start_t, self.end_t = array("i"), array("d"), array("d")
        self._open = array("i", [-1]) * n_jobs
        self.off = np.zeros(n_jobs + 1, dtype=np.int64)

    def start(self, j: int, t: float) -> None:
        self._open[j] = len(self.job)
        self.job.append(j)
        self.start_t.append(t)
        self.end_t.append(-1.0)

    def end(self, j: int, t: float) -> None:
        self.end_t[self._open[j]] = t

    def freeze(self) -> _Spans:
        job = np.frombuffer(self.job, dtype=np.int32) if self.job else np.zeros(0, dtype=np.int32)
        order = np.argsort(job, kind="stable")
        self.spans = np.stack([np.asarray(self.start_t, dtype=np.float64)[order],
                               np.asarray(self.end_t, dtype=np.float64)[order]], axis=1)
        self.off[1:] = np.cumsum(np.bincount(job, minlength=len(self.off) - 1))
        self.job = self.start_t = self.end_t = self._open = array("i")
        return self

    @property
    def nbytes(self) -> int:
        return self.spans.nbytes + self.off.nbytes

    def of(self, j: int) -> list[list[float]]:
        """Job ``j``'s spans as ``[start, end]`` in order."""
        return self.spans[self.off[j]:self.off[j + 1]].tolist()
