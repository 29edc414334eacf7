"""The array forms of :class:`~gpucluster_env.engine.view.ClusterView`'s per-job reads: one call answers for many
jobs at once (a fresh array, in the order of the jobs asked), for policies that decide over the whole queue or
the running set with array operations instead of a call a job."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .state import RUNNING

if TYPE_CHECKING:
    from .state import EngineState


class JobArrays:
    """Per-job reads over arrays of jobs; :class:`~gpucluster_env.engine.view.ClusterView` has them."""

    _st: EngineState

    def running_of(self, jobs: np.ndarray | list[int]) -> np.ndarray:
        """Whether each of ``jobs`` is running (a bool array)."""
        return self._st.status[np.asarray(jobs, dtype=np.int64)] == RUNNING

    def finish_time_of(self, jobs: np.ndarray | list[int]) -> np.ndarray:
        """:meth:`finish_time` of each of ``jobs`` (a fresh array)."""
        return self._st.finish_t[np.asarray(jobs, dtype=np.int64)]

    def last_start_of(self, jobs: np.ndarray | list[int]) -> np.ndarray:
        """:meth:`last_start` of each of ``jobs`` (a fresh array)."""
        return self._st.last_start[np.asarray(jobs, dtype=np.int64)]

    def remaining_of(self, jobs: np.ndarray | list[int]) -> np.ndarray:
        """:meth:`remaining` of each of ``jobs`` (a fresh array)."""
        return self._st.remaining[np.asarray(jobs, dtype=np.int64)]

    def model_index_of(self, jobs: np.ndarray | list[int]) -> np.ndarray:
        """:meth:`model_index` of each of ``jobs`` (a fresh array)."""
        return self._st.job_model[np.asarray(jobs, dtype=np.int64)]

    def batch_of(self, jobs: np.ndarray | list[int]) -> np.ndarray:
        """:meth:`batch` of each of ``jobs`` (a fresh array)."""
        js = np.asarray(jobs, dtype=np.int64)
        return np.fromiter(map(self._st.batch_l.__getitem__, js.tolist()), dtype=np.int64, count=len(js))

    def demand_of(self, jobs: np.ndarray | list[int], gpu_types: np.ndarray | list[int]) -> np.ndarray:
        """:meth:`demand` of each of ``jobs`` on the matching one of ``gpu_types`` (a fresh array)."""
        return self._st.demand_tm[np.asarray(gpu_types, dtype=np.int64),
                                  self._st.job_model[np.asarray(jobs, dtype=np.int64)]]

    def runs_as(self, rows: list[tuple[tuple[int, ...], int]]) -> list[bool]:
        """For each ``(row, k)`` of ``rows``: whether the row runs as one unit on type-``k`` GPUs. A one-job row
        ``(j,)``: ``j`` runs, every GPU it holds is of type ``k`` and none is shared (``alone_types()[j] == k``);
        a pair ``(i, j)``: both run on the same GPUs, all of type ``k`` (each GPU holds at most two jobs, so ``i``
        shares with ``j`` as many GPUs as each holds). Read from the jobs' copies and counts: the work is the rows
        asked, not the running jobs or the GPUs (Gavel's rounds ask this of their grants)."""
        st = self._st
        running, consts, shared = st.running_set, st.copy_consts, st.shared_map
        held, held_shared = st.held, st.held_shared
        out = []
        for key, k in rows:
            i = key[0]
            cs = consts.get(i) if i in running else None
            if not cs:
                out.append(False)
                continue
            ok = cs[0].t == k if len(cs) == 1 else all(c.t == k for c in cs)  # (most jobs run as one copy)
            if ok:
                if len(key) == 1:
                    ok = held_shared.item(i) == 0
                else:
                    n = held.item(i)
                    m = shared.get(i)
                    ok = m is not None and m.get(key[1], 0) == n == held.item(key[1])
            out.append(ok)
        return out
