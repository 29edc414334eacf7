"""The GPU-type catalog: published specs and relative training speed.

Speeds are relative to a V100 (1.0). Types measured in public training profiles (Gavel: K80, P100, V100;
Pollux: T4; ElasticFlow: A100, T4) are marked ``estimated=False``; the others get HadarE's initial estimate
from published specs (hadar-hadare §V-A) and are marked ``estimated=True``.
Specs: NVIDIA data sheets (FP32 TFLOPS, memory, memory bandwidth, PCIe generation).
"""

from __future__ import annotations

from ..hardware import GPUType

_SPEC = "NVIDIA data sheet"

GPU_TYPES: dict[str, GPUType] = {
    t.name: t
    for t in (
        GPUType("K80", 12.0, 4.37, 240.0, 3, 10.0, 0.22, False, f"{_SPEC}; speed from Gavel measurements"),
        GPUType("P100", 16.0, 9.3, 732.0, 3, 20.0, 0.55, False, f"{_SPEC}; speed from Gavel measurements"),
        GPUType("V100", 16.0, 15.7, 900.0, 3, 50.0, 1.0, False, f"{_SPEC}; reference type"),
        GPUType("T4", 16.0, 8.1, 320.0, 3, 10.0, 0.38, False, f"{_SPEC}; speed from Pollux/ElasticFlow"),
        GPUType("A100", 40.0, 19.5, 1555.0, 4, 150.0, 1.8, False, f"{_SPEC}; speed from ElasticFlow"),
        GPUType("RTX2080Ti", 11.0, 13.4, 616.0, 3, 10.0, 0.78, True, _SPEC),
        GPUType("A6000", 48.0, 38.7, 768.0, 4, 25.0, 1.3, True, _SPEC),
        GPUType("A40", 48.0, 37.4, 696.0, 4, 25.0, 1.25, True, _SPEC),
        GPUType("TitanRTX", 24.0, 16.3, 672.0, 3, 10.0, 0.88, True, _SPEC),
        GPUType("T400", 4.0, 1.09, 80.0, 3, 4.0, 0.07, True, _SPEC),
        GPUType("RTX3090", 24.0, 35.6, 936.0, 4, 25.0, 1.2, True, _SPEC),
        GPUType("RTXA2000", 12.0, 8.0, 288.0, 4, 12.0, 0.42, True, _SPEC),
        GPUType("H100", 80.0, 51.2, 2000.0, 5, 300.0, 3.0, True, _SPEC),
    )
}
