"""The engine's read of its queue as an array (:meth:`ClusterEngine.pending_jobs
<gpucluster_env.engine.simulator.ClusterEngine.pending_jobs>`), worked out from the last read where that is
exact."""

from __future__ import annotations

import numpy as np

from .state import PENDING, EngineState


class QueueRead:
    """Pending jobs in queue order (by arrival, a preempted job rejoining at the back), read from the last
    answer while no job was preempted since: the queue then only lost the jobs that started and gained the
    jobs that arrived, at its back, in index order (one pass over the last answer instead of one over the
    queue's dict). A preemption, another episode or a first read reads the dict."""

    def __init__(self, state: EngineState) -> None:
        self.state = state
        self._kept: tuple[tuple[int, int], np.ndarray, int, int] | None = None

    def pending(self) -> np.ndarray:
        """The pending jobs in queue order (a fresh array)."""
        st = self.state
        key = (st.epoch, st.counts["preemptions"])
        kept = self._kept
        if kept is not None and kept[0] == key:
            arr, version, arrived = kept[1], kept[2], kept[3]
            if version != st.queue_version:
                arr = arr[st.status[arr] == PENDING]
                if st.next_arrival > arrived:
                    new = np.arange(arrived, st.next_arrival, dtype=np.int64)
                    arr = np.concatenate([arr, new[st.status[new] == PENDING]])
        else:
            pending = st.pending_queue
            arr = np.fromiter(pending, dtype=np.int64, count=len(pending))
        self._kept = (key, arr, st.queue_version, st.next_arrival)
        return arr.copy()
