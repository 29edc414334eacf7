"""The estimate of active SMs (``sm_activity_est``, see :mod:`gpucluster_env.engine.metrics`), kept per GPU.

A worker keeps ``min(demand, share)`` of its GPU's SMs active (its model's GPU demand on that GPU type, capped by
its MPS active-thread share); a GPU's activity is the sum over its (at most two) workers, capped at 1.
:class:`SmActivity` holds that figure for every GPU and brings up to date only the GPUs whose tenants changed
(the occupancy code marks them, and a squeeze or swell marks the GPUs whose shares it changed). The clock
integrates its total over time.
"""

from __future__ import annotations

import numpy as np


class SmActivity:
    """Estimated active SMs per GPU of one episode, read from the slot arrays (job and share per slot, flat:
    index ``2 g + slot``) that the caller passes in; the static tables come in once."""

    __slots__ = ("gpu_type", "demand", "model", "share_step", "per_gpu", "dirty", "total_now")

    def __init__(self, gpu_type: list[int], demand: list[list[float]], model: list[int], share_step: float,
                 num_gpus: int) -> None:
        self.gpu_type = gpu_type  # GPU -> type
        self.demand = demand  # [type][model]: GPU demand
        self.model = model  # job -> model
        self.share_step = share_step
        self.per_gpu = np.zeros(num_gpus)
        self.dirty: list[int] = []  # GPUs to bring up to date before the next total (all empty at first: 0)
        self.total_now = 0.0

    def mark(self, gpus: list[int]) -> None:
        """The tenants of ``gpus`` or their shares changed (a copy started or stopped there, a squeeze or swell):
        only a GPU's own slots enter its figure, so only these are brought up to date."""
        self.dirty.extend(gpus)

    def gpu(self, slot_job: np.ndarray, slot_share: np.ndarray, g: int) -> float:
        """Estimated fraction of the SMs active now on GPU ``g``: each worker counts ``min(demand, share)``,
        summed over the GPU's two slots and capped at 1."""
        return self._figures(slot_job, slot_share, [g])[0]

    def _figures(self, slot_job: np.ndarray, slot_share: np.ndarray, gpus: list[int]) -> list[float]:
        """:meth:`gpu` of each GPU of ``gpus`` (the one formula, in one loop: no call per GPU)."""
        gpu_type, demand, model, step = self.gpu_type, self.demand, self.model, self.share_step
        out = []
        for g in gpus:
            dt = demand[gpu_type[g]]
            i = 2 * g
            act = 0.0
            j = slot_job.item(i)
            if j >= 0:
                act += min(dt[model[j]], slot_share.item(i) * step)
            j = slot_job.item(i + 1)
            if j >= 0:
                act += min(dt[model[j]], slot_share.item(i + 1) * step)
            out.append(min(1.0, act))
        return out

    def total(self, slot_job: np.ndarray, slot_share: np.ndarray) -> float:
        """Estimated active SMs summed over the GPUs now (in GPUs: 1 = one GPU's SMs all active)."""
        if self.dirty:
            gpus = list(set(self.dirty))
            self.per_gpu[gpus] = self._figures(slot_job, slot_share, gpus)
            self.dirty = []
            self.total_now = float(self.per_gpu.sum())
        return self.total_now
