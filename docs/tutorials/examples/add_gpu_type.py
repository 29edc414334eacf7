"""A GPU type the catalog does not have, with its own throughput and interference numbers, in a catalog built at
run time: what the engine reads of a GPU type, before the type goes into the package (docs/tutorials/gpu-type.md
lists the files that takes).

The type is NVIDIA's L4 (data-sheet specs). Its per-model speeds and pair slowdowns below are ILLUSTRATIVE
placeholders, not measurements: put your own measured numbers in their place. Run: ``python add_gpu_type.py``.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from importlib import resources
from typing import Any

from gpucluster_env.catalog import Catalog, MeasuredInterference, default_catalog
from gpucluster_env.catalog.gpus import hadare_speed
from gpucluster_env.catalog.xi_model import XI_TABLE_FILE
from gpucluster_env.hardware import GPUType, parse_cluster_spec
from gpucluster_env.policy import run_episode
from gpucluster_env.scenarios import get_scenario

# Training speed of each model on the new type relative to a V100 (V100 = 1.0), e.g. the V100's measured step
# time over the L4's at the same batch. Placeholders: replace with your measurements.
MEASURED_SPEED = {"cifar10": 0.82, "imagenet": 0.74, "bert": 0.90, "ncf": 0.95}
# Interference ratio xi of the first model of each ordered pair sharing one L4 under MPS at free competition:
# its step time colocated over its step time alone (>= 1). Placeholders too.
MEASURED_PAIRS = {"imagenet|cifar10": 1.62, "cifar10|imagenet": 1.48, "bert|ncf": 1.21, "ncf|bert": 1.35}

L4 = GPUType(
    "L4", memory_gb=24.0, fp32_tflops=30.3, mem_bw_gbps=300.0, pcie_gen=4, intra_node_bw_gbps=16.0,
    speed=round(statistics.median(MEASURED_SPEED.values()), 4),  # the generic speed: median over models
    estimated=False, source="NVIDIA data sheet; speed: the tutorial's placeholder measurements",
)


def shipped_xi_table() -> dict[str, Any]:
    """The interference table the package ships (``gpucluster_env/data/xi_table.json``)."""
    return json.loads(resources.files("gpucluster_env.data").joinpath(XI_TABLE_FILE).read_text())


def catalog_with(gpu: GPUType, model_speed: dict[str, float], pairs: dict[str, float]) -> Catalog:
    """The default catalog plus ``gpu``: its per-model speeds in each model's ``speed`` and its measured pairs in
    the interference table (pairs it lacks fall to the regression on the pair's demands, as on every type)."""
    base = default_catalog()
    models = {name: replace(p, speed={**p.speed, gpu.name: model_speed[name]}) if name in model_speed else p
              for name, p in base.models.items()}
    table = shipped_xi_table()
    table["measured"] = {**table["measured"], gpu.name: dict(pairs)}
    return Catalog({**base.gpu_types, gpu.name: gpu}, models, MeasuredInterference(table=table), base.solo)


def run_on(catalog: Catalog, cluster: str, policy: str = "sjf", seed: int = 0) -> dict[str, Any]:
    """One episode of the ``tiny`` scenario's jobs on ``cluster`` (a spec such as ``"L4:2x4,V100:1x4"``) with
    ``catalog``'s numbers."""
    scenario = get_scenario("tiny").with_options(
        cluster=parse_cluster_spec(cluster, known_types=catalog.gpu_types, name="with-l4"))
    return run_episode(scenario, policy, seed, env_kwargs={"catalog": catalog})


if __name__ == "__main__":
    cat = catalog_with(L4, MEASURED_SPEED, MEASURED_PAIRS)
    # Ada cards, like the GA10x ones (catalog/gpus.py DUAL_ISSUE_FP32), count dual-issue FP32 in the data sheet
    estimate = hadare_speed(replace(L4, fp32_tflops=L4.fp32_tflops / 2))
    print(f"L4 generic speed {L4.speed} (measured) against HadarE's estimate from its specs {estimate:.3f}")
    bert, ncf = cat.model("bert"), cat.model("ncf")
    print("bert with ncf on an L4: xi", cat.interference.pair_xi(bert, ncf, "L4"),
          cat.interference.source_of("bert", "ncf", "L4"))
    result = run_on(cat, "L4:2x4,V100:1x4")
    print(f"tiny's jobs on 2x4 L4 + 1x4 V100: {result['jobs_done']}/{result['jobs']} done, "
          f"avg JCT {result['avg_jct_s']:,.0f} s")
