"""A GPU type the catalog does not have, declared once with its own throughput and interference numbers, in a
catalog built at run time. The same declaration, as a row of ``DECLARED`` in gpucluster_env/catalog/gpus.py,
ships it in the package (docs/tutorials/gpu-type.md).

The type is NVIDIA's L4 (data-sheet specs). Its per-model speeds and pair slowdowns below are ILLUSTRATIVE
placeholders, not measurements: put your own measured numbers in their place. Run: ``python add_gpu_type.py``.
"""

from __future__ import annotations

import statistics
from typing import Any

from gpucluster_env.catalog import Catalog, default_catalog
from gpucluster_env.catalog.gpus import declare, hadare_speed
from gpucluster_env.hardware import GPUType, parse_cluster_spec
from gpucluster_env.policy import run_episode
from gpucluster_env.scenarios import get_scenario

# Training speed of each model on the new type relative to a V100 (V100 = 1.0), e.g. the V100's measured step
# time over the L4's at the same batch. Placeholders: replace with your measurements.
MEASURED_SPEED = {"cifar10": 0.82, "imagenet": 0.74, "bert": 0.90, "ncf": 0.95}
# Interference ratio xi of the first model of each ordered pair sharing one L4 under MPS at free competition:
# its step time colocated over its step time alone (>= 1). Placeholders too.
MEASURED_PAIRS = {"imagenet|cifar10": 1.62, "cifar10|imagenet": 1.48, "bert|ncf": 1.21, "ncf|bert": 1.35}

L4 = declare(
    "L4", 24.0, 30.3, 300.0, 4, 16.0,  # memory GB, FP32 TFLOPS, memory GB/s, PCIe generation, GPU-to-GPU GB/s
    speed=round(statistics.median(MEASURED_SPEED.values()), 4),  # the generic speed: median over models
    source="the tutorial's placeholder measurements",
    model_speed=MEASURED_SPEED, xi_pairs=MEASURED_PAIRS,
    dual_issue_fp32=True,  # Ada cards, like the GA10x ones, count dual-issue FP32 in the data sheet
)


def catalog_with(gpu: GPUType) -> Catalog:
    """The package's catalog plus ``gpu``: its per-model speeds and measured pairs come with the declaration
    (pairs it lacks fall to the regression on the pair's demands on the type, as on every type)."""
    return default_catalog().with_gpu_types(gpu)


def run_on(catalog: Catalog, cluster: str, policy: str = "sjf", seed: int = 0) -> dict[str, Any]:
    """One episode of the ``tiny`` scenario's jobs on ``cluster`` (a spec such as ``"L4:2x4,V100:1x4"``) with
    ``catalog``'s numbers."""
    scenario = get_scenario("tiny").with_options(
        cluster=parse_cluster_spec(cluster, known_types=catalog.gpu_types, name="with-l4"))
    return run_episode(scenario, policy, seed, env_kwargs={"catalog": catalog})


if __name__ == "__main__":
    cat = catalog_with(L4)
    print(f"L4 generic speed {L4.speed} (measured) against HadarE's estimate from its specs {hadare_speed(L4):.3f}")
    bert, ncf = cat.model("bert"), cat.model("ncf")
    print("bert with ncf on an L4: xi", cat.interference.pair_xi(bert, ncf, "L4"),
          cat.interference.source_of("bert", "ncf", "L4"))
    result = run_on(cat, "L4:2x4,V100:1x4")
    print(f"tiny's jobs on 2x4 L4 + 1x4 V100: {result['jobs_done']}/{result['jobs']} done, "
          f"avg JCT {result['avg_jct_s']:,.0f} s")
