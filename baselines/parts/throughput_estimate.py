"""HadarE's initial throughput estimate from GPU specs, replaced by measured rates as jobs run (hadar-hadare §V-A).

Hadar takes each job's throughput on every GPU type as input (§III-E: measurements given as data, or "an
estimation formula"). HadarE cannot wait for profiles: "model execution profiling ... tends to take many rounds",
so it starts from an expression (eq. 10, "derived after numerous experiments on the heterogeneous GPU testbed")
and replaces it progressively: "every scheduled round let each involved node notify the Job Tracker of its actual
throughput under its allocated job", until "the accurate throughputs of every model on all nodes are available".

What the paper says of eq. 10 (its equation did not survive our copy's extraction): the GPU enters through the
Performance-Memory Index (PMI; tensor-core-aided TFLOPS and VRAM capacity "in a square root fashion") and a
``pcie_scaling`` for the host's PCIe version; the job through its mini-batch size (larger: faster) and its
model's complexity and dataset size (larger: slower). The GPU side is implemented once, in the catalog:
:func:`gpucluster_env.catalog.gpus.hadare_speed`, ``exp(c) * PMI^gamma * pcie_scaling`` relative to a V100,
with ``PMI = TFLOPS * sqrt(VRAM)`` (our reading) and ``c``, ``gamma`` fitted to the measured types. This module
uses that function and nothing else of the GPU; the rules below are ours where the paper is silent:

* **Job side.** The job terms multiply the GPU terms, so they are one factor per job. In this simulator a job's
  model, dataset and batch are summed up by its catalog profile's compute time per iteration on the reference
  GPU (``performance.compute_time(model, batch, 1.0)``: seconds on a V100). Before the job has run anywhere its
  estimate on type ``k`` is ``hadare_speed(k) / t_comp`` (iterations/s). Communication is left out (eq. 10 has only
  ``pcie_scaling`` for it).
* **Measured.** At every round boundary the rate of each running copy whose GPUs are all of one type (the
  engine's throughput of that copy, :meth:`~gpucluster_env.engine.view.ClusterView.copy_states`) is recorded for
  that type, for the job's model at its batch and gang size (the paper's "throughputs of every model on all
  nodes"; the latest report wins). A copy on several types reports its slowest type's pace, which it cannot
  name, so it is not recorded. A measured type's estimate *is* the measured rate.
* **Unmeasured, job measured elsewhere.** The job factor of eq. 10 is fitted to the job's measurements instead
  of taken from its profile: least squares in log space over its measured types ``a`` (as the catalog fits
  ``c`` and ``gamma``), i.e. the geometric mean of ``rate_a / hadare_speed(a)``, times ``hadare_speed(k)``.
  Measured on one type only, that is ``rate_a * hadare_speed(k) / hadare_speed(a)``.
* **Does not fit.** 0 on a type whose memory cannot hold one worker at any accumulation (memory is a data-sheet
  figure and the job's footprint its own), and, unless ``partial``, on a type with fewer GPUs than the gang.
"""

from __future__ import annotations

import math

import numpy as np

from gpucluster_env.catalog.gpus import hadare_speed
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.performance import compute_time


class SpecEstimate:
    """Per-job throughput (iterations/s of its gang) on each GPU type as HadarE knows it: the spec estimate
    until the job's model has run on a type, then the measured rate (module docstring). Same ``of`` interface
    as the oracle table :class:`~gpucluster_env.baselines.parts.solo_throughputs.Throughputs`; call
    :meth:`observe` once per round boundary, before reading."""

    def __init__(self, view: ClusterView, partial: bool = False) -> None:
        """``partial``: a type with fewer GPUs than a job's gang still gets a throughput (Hadar's per-type
        speed for mixed gangs); False: 0 there (one type per job)."""
        self.view = view
        self.partial = partial
        self.spec_speed = np.array([hadare_speed(g) for g in view.gpu_specs], dtype=float)
        """``hadare_speed`` of each type (relative to a V100)."""
        self.count = np.bincount(view.gpu_type, minlength=len(view.type_names))
        self._one_gpu = [int(np.flatnonzero(view.gpu_type == k)[0]) if c else -1 for k, c in enumerate(self.count)]
        self.measured: dict[tuple[int, int, int], np.ndarray] = {}
        """Measured rate per (model index, batch, gang size) and type (NaN: not measured)."""
        self._fits: dict[tuple[int, int, int], np.ndarray] = {}

    def _key(self, j: int) -> tuple[int, int, int]:
        v = self.view
        return v.model_index(j), v.batch(j), int(v.req_gpus[j])

    def record(self, j: int, gpu_type: int, rate: float) -> None:
        """Record job ``j``'s measured ``rate`` (iterations/s) on type index ``gpu_type``."""
        key = self._key(j)
        row = self.measured.get(key)
        if row is None:
            row = self.measured[key] = np.full(len(self.spec_speed), np.nan)
        row[gpu_type] = rate

    def observe(self) -> None:
        """Record the rate of every running copy that sits on GPUs of one type (module docstring)."""
        v = self.view
        for j in v.running_jobs().tolist():
            for c in v.copy_states(j):
                types = np.unique(v.gpu_type[c["gpus"]])
                if len(types) == 1 and c["rate"] > 0:
                    self.record(j, int(types[0]), float(c["rate"]))

    def _feasible(self, j: int, key: tuple[int, int, int]) -> np.ndarray:
        hit = self._fits.get(key)
        if hit is None:
            w = key[2]
            v = self.view
            hit = np.array([c > 0 and (c >= w or self.partial)
                            and v.solo_accumulation(j, np.array([g])) is not None
                            for c, g in zip(self.count.tolist(), self._one_gpu, strict=True)], dtype=bool)
            self._fits[key] = hit
        return hit

    def prior(self, j: int) -> np.ndarray:
        """Job ``j``'s estimate on each type before any measurement: ``hadare_speed(k)`` over its compute time
        per iteration on the reference GPU."""
        return self.spec_speed / float(compute_time(self.view.model(j), self.view.batch(j), 1.0))

    def of(self, j: int) -> np.ndarray:
        """Job ``j``'s throughput on each type: measured where its model ran, else the spec speed times the job
        factor fitted to its measurements, else :meth:`prior` (0 where it does not fit)."""
        key = self._key(j)
        ok = self._feasible(j, key)
        row = self.measured.get(key)
        if row is None:
            return np.where(ok, self.prior(j), 0.0)
        seen = ~np.isnan(row)
        factor = math.exp(float(np.mean(np.log(row[seen] / self.spec_speed[seen]))))
        return np.where(seen, row, np.where(ok, factor * self.spec_speed, 0.0))

    def matrix(self, jobs: list[int]) -> np.ndarray:
        return np.array([self.of(j) for j in jobs]).reshape(len(jobs), len(self.spec_speed))
