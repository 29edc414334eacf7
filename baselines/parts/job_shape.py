"""A pending job's shape as the packing schedulers' start questions see it, so a decision asks each shape once.

Where a pending job may start in one cluster state -- the engine's placement on free GPUs
(:meth:`~gpucluster_env.engine.view.ClusterView.plan_place`: GPUs asked, the types its model and batch fit),
Gimbal's topology rule (:class:`~.gimbal_rules.TopologyRule`: the number of GPUs), memory beside a partner
(``fits_on``: model and batch), profiled demand and harmful model pairs (the model) -- depends on the job only
through ``(GPUs asked, model, batch)``. Lucid, Gandiva and Gavel+Gimbal walk their queue in one state until a
job starts, so once a shape found nothing, the later jobs of that shape are skipped without asking again: the
same decision, without a scan of the running jobs per queued job.
"""

from __future__ import annotations

from gpucluster_env.engine.view import ClusterView


def start_shape(view: ClusterView, j: int) -> tuple[int, int, int]:
    """Job ``j``'s ``(GPUs asked, model index, per-GPU batch)``: all a start question reads of it."""
    return int(view.req_gpus[j]), view.model_index(j), view.batch(j)
