"""The cluster after some prefix of a recorded episode's events (:class:`ClusterState`), the rule that says
whether an event can follow it (:func:`event_problem`), and the compact form a timeline keeps of it at its
checkpoints (:class:`Snapshot`: numpy arrays, a few bytes per job and GPU instead of Python objects)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

FUTURE, PENDING, RUNNING, DONE = range(4)
STATUS_NAMES = ("not arrived", "pending", "running", "done")


@dataclass(frozen=True)
class Snapshot:
    """A :class:`ClusterState` as arrays. ``slots``/``shares``: per GPU, its (at most two) jobs in order, -1
    for none, and each one's share; ``status`` per job; ``pending``/``pending_t`` in queue order;
    ``running`` in start order; ``gpu_jobs`` with ``gpu_off``/``gpu_list`` (the GPUs each holds, in order);
    ``copy_jobs``/``copy_n``; ``applied``: how many events made it."""

    slots: np.ndarray
    shares: np.ndarray
    status: np.ndarray
    pending: np.ndarray
    pending_t: np.ndarray
    running: np.ndarray
    gpu_jobs: np.ndarray
    gpu_off: np.ndarray
    gpu_list: np.ndarray
    copy_jobs: np.ndarray
    copy_n: np.ndarray
    applied: int

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays."""
        return sum(v.nbytes for v in vars(self).values() if isinstance(v, np.ndarray))


def _ints(values: Any, n: int) -> np.ndarray:
    return np.fromiter(values, dtype=np.int32, count=n)


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
        """A copy the caller may change."""
        return ClusterState([s[:] for s in self.slots], self.status[:], self.share_units, dict(self.share),
                            dict(self.pending),
                            dict(self.running), {j: g[:] for j, g in self.gpus.items()}, dict(self.copies),
                            self.applied)

    def apply(self, e: dict[str, Any]) -> None:
        """Apply one event of the log, as the record's dict."""
        self.apply_event(e["t"], e["kind"], e["job"], e.get("gpus"), e.get("from"))

    def apply_event(self, t: float, kind: str, j: int, gpus: list[int] | None, frm: list[int] | None) -> None:
        """Apply one event: at time ``t``, ``kind`` of job ``j`` on ``gpus`` (leaving ``frm``, for a
        ``move_copy``; None when the event names none)."""
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
            self._take(j, gpus or ())
            self.gpus.setdefault(j, []).extend(gpus or ())
        elif kind in ("finish", "preempt"):
            self._leave(j, self.gpus.pop(j, ()))
            self.running.pop(j, None)
            self.copies.pop(j, None)
            if kind == "finish":
                self.status[j] = DONE
            else:
                self.status[j] = PENDING
                self.pending[j] = t
        elif kind in ("reallocate", "drop_copy", "move_copy"):
            leave = self.gpus.get(j, [])[:] if kind == "reallocate" else (frm if frm is not None else gpus or [])
            self._leave(j, leave)
            held = [g for g in self.gpus.get(j, []) if g not in set(leave)]
            if kind == "drop_copy":
                self.copies[j] = self.copies.get(j, 1) - 1
            else:
                self._take(j, gpus or ())
                held += gpus or ()
            self.gpus[j] = held
        elif kind in ("squeeze", "swell"):
            step = -1 if kind == "squeeze" else 1  # one step of the grid, at least one step, at most full
            for g in gpus or ():
                cur = self.share.get((g, j), self.share_units)
                self.share[(g, j)] = min(self.share_units, max(1, cur + step))
        self.applied += 1

    def _take(self, j: int, gpus: Any) -> None:
        for g in gpus:
            self.slots[g].append(j)
            self.share[(g, j)] = self.share_units

    def _leave(self, j: int, gpus: Any) -> None:
        for g in gpus:
            if j in self.slots[g]:
                self.slots[g].remove(j)
            self.share.pop((g, j), None)

    def snapshot(self) -> Snapshot:
        """This state as arrays (:meth:`restore` gives it back)."""
        slots = np.full((len(self.slots), 2), -1, dtype=np.int32)
        shares = np.zeros((len(self.slots), 2), dtype=np.int16)
        for g, jobs in enumerate(self.slots):
            for k, j in enumerate(jobs):
                slots[g, k] = j
                shares[g, k] = self.share.get((g, j), self.share_units)
        held = [self.gpus[j] for j in self.gpus]
        return Snapshot(
            slots, shares, np.array(self.status, dtype=np.int8), _ints(self.pending, len(self.pending)),
            np.fromiter(self.pending.values(), dtype=np.float64, count=len(self.pending)),
            _ints(self.running, len(self.running)), _ints(self.gpus, len(self.gpus)),
            np.cumsum([0, *map(len, held)], dtype=np.int64), _ints((g for gs in held for g in gs), sum(map(len, held))),
            _ints(self.copies, len(self.copies)), _ints(self.copies.values(), len(self.copies)), self.applied)

    @classmethod
    def restore(cls, snap: Snapshot, share_units: int) -> ClusterState:
        """The state :meth:`snapshot` kept (a fresh object the caller may change)."""
        first, second = snap.slots[:, 0].tolist(), snap.slots[:, 1].tolist()
        slots = [([a, b] if b >= 0 else [a]) if a >= 0 else [] for a, b in zip(first, second, strict=True)]
        g, k = np.nonzero(snap.slots >= 0)
        share = dict(zip(zip(g.tolist(), snap.slots[g, k].tolist(), strict=True), snap.shares[g, k].tolist(),
                         strict=True))
        off, flat = snap.gpu_off.tolist(), snap.gpu_list.tolist()
        gpus = {j: flat[off[k]:off[k + 1]] for k, j in enumerate(snap.gpu_jobs.tolist())}
        return cls(slots, snap.status.tolist(), share_units, share,
                   dict(zip(snap.pending.tolist(), snap.pending_t.tolist(), strict=True)),
                   dict.fromkeys(snap.running.tolist()), gpus,
                   dict(zip(snap.copy_jobs.tolist(), snap.copy_n.tolist(), strict=True)), snap.applied)


def event_problem(st: ClusterState, kind: str, j: int, gpus: list[int] | None, frm: list[int] | None) -> str | None:
    """Why event ``kind`` of job ``j`` (on ``gpus``, leaving ``frm``) cannot follow state ``st``; None when it
    can."""
    if kind == "round":
        return None
    need = {"arrive": FUTURE, "start": PENDING}.get(kind, RUNNING)
    if j < 0 or st.status[j] != need:
        now = STATUS_NAMES[st.status[j]] if j >= 0 else "no job"
        return f"{kind} of job {j}, which is {now} (replayed events disagree)"
    gpus = gpus or []
    if kind in ("start", "fork"):
        full = [g for g in gpus if len(st.slots[g]) >= 2 or j in st.slots[g]]
        if full:
            return f"{kind} of job {j} on GPU {full[0]}, which cannot take it"
    elif kind in ("reallocate", "move_copy"):
        left = set(st.gpus.get(j, ()) if kind == "reallocate" else frm or ())
        full = [g for g in gpus if len([x for x in st.slots[g] if x != j or g not in left]) >= 2
                or (j in st.slots[g] and g not in left)]
        if full:
            return f"{kind} of job {j} onto GPU {full[0]}, which cannot take it"
    elif kind in ("squeeze", "swell", "drop_copy") and not set(gpus) <= set(st.gpus.get(j, ())):
        return f"{kind} of job {j} on a GPU it does not hold"
    return None
