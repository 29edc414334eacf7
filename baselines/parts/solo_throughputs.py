"""Gavel's throughput matrix from the performance model: each job's solo throughput on every GPU type (its gang on
the fewest nodes of that type, alone), what Gavel's LPs and Hadar's allocator take as input."""

from __future__ import annotations

import numpy as np

from gpucluster_env.engine.view import ClusterView


class Throughputs:
    """Per-job solo throughput (iterations/s) of its gang on each GPU type, cached per (model, batch, GPUs)."""

    def __init__(self, view: ClusterView, partial: bool = False) -> None:
        """``partial``: where a type has fewer GPUs than a job's gang, time the gang on all of them (Hadar's
        per-type speed for mixed gangs) instead of giving 0 (Gavel: one type per job)."""
        self.view = view
        self.partial = partial
        nk = len(view.type_names)
        # each type's GPUs, nodes with the most GPUs of that type first (a gang's fewest-node layout)
        self.layout: list[np.ndarray] = []
        for k in range(nk):
            g = np.flatnonzero(view.gpu_type == k)
            nodes = view.gpu_node[g]
            cnt = np.bincount(nodes, minlength=view.num_nodes)
            order = np.lexsort((g, -cnt[nodes]))
            self.layout.append(g[order])
        self._cache: dict[tuple[int, int, int], np.ndarray] = {}

    def of(self, j: int) -> np.ndarray:
        """Job ``j``'s throughput on each type (0: its gang or memory does not fit there)."""
        v = self.view
        w = int(v.req_gpus[j])
        key = (v.model_index(j), v.batch(j), w)
        hit = self._cache.get(key)
        if hit is None:
            hit = np.zeros(len(self.layout))
            for k, gpus in enumerate(self.layout):
                if len(gpus) < w and not (self.partial and len(gpus)):
                    continue
                gang = gpus[:w]
                s = v.solo_accumulation(j, gang)
                if s is not None:
                    hit[k] = 1.0 / v.iter_time(j, gang, s)
            self._cache[key] = hit
        return hit

    def matrix(self, jobs: list[int] | np.ndarray) -> np.ndarray:
        """:meth:`of` of each of ``jobs``, as rows: asked once per distinct (model, batch, GPUs) among them and
        spread over their jobs by array reads, not one call per job."""
        v = self.view
        js = np.asarray(jobs, dtype=np.int64)
        if not len(js):
            return np.zeros((0, len(self.layout)))
        m, b, w = v.model_index_of(js), v.batch_of(js), v.req_gpus[js]
        code = (m * (int(b.max()) + 1) + b) * (int(w.max()) + 1) + w  # one integer per (model, batch, GPUs)
        _, first, inv = np.unique(code, return_index=True, return_inverse=True)
        rows = np.array([self.of(j) for j in js[first].tolist()]).reshape(len(first), len(self.layout))
        return rows[inv.reshape(-1)]
