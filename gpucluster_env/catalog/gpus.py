"""The GPU-type catalog: published specs and relative training speed (V100 = 1.0).

Specs (memory GB, FP32 TFLOPS, memory bandwidth GB/s, PCIe generation) are from NVIDIA's data sheets; for the
K80 they are per GPU die (a K80 board holds two), as schedulers see it; the H100 is the PCIe card.

Generic speeds of measured types (``estimated=False``) are the median over measured model families of the
per-model speed ratios (:func:`gpucluster_env.catalog.fit.generic_speeds`):
- K80, P100: Gavel's solo steps/s (Narayanan et al., OSDI'20) over V100, 7 families;
- T4: Pollux's T4 step times (Qiao et al., OSDI'21) over Gavel's V100 for the same architectures
  (ResNet-18/CIFAR-10, ResNet-50/ImageNet);
- A100: ElasticFlow's single-GPU samples/s (Gu et al., ASPLOS'23) A100 over T4, times the T4 speed
  (DeepSpeech2, ResNet-50).

Every other type gets HadarE's initial throughput estimate (hadar-hadare §V-A, eq. 10), ``estimated=True``:
``speed = exp(c) * PMI^gamma * pcie_scaling`` with the Performance-Memory Index
``PMI = TFLOPS * sqrt(VRAM GB)`` (compute "aided by tensor cores" and memory capacity "in a square root
fashion"; the paper's text names the terms, its equation is not in our copy, so this form is our reading) and
``pcie_scaling = 1 + 0.05 (gen - 3)``.
``c`` and ``gamma`` are fitted by least squares in log space to the five measured types
(:func:`gpucluster_env.catalog.fit.fit_hadare_constants`: c = -3.585, gamma = 0.874; correlation 0.98; PMI as
TFLOPS / sqrt(VRAM) fits worse, 0.88). For GA10x/Ampere workstation cards the data-sheet FP32 figure counts
dual-issue FP32 that training rarely reaches, so their PMI uses half of it (``dual_issue_fp32``).
"""

from __future__ import annotations

import math

from ..hardware import GPUType

HADARE_C = -3.585
HADARE_GAMMA = 0.874
DUAL_ISSUE_FP32 = frozenset({"A6000", "A40", "RTX3090", "RTXA2000"})
"""Types whose data-sheet FP32 TFLOPS counts GA10x dual-issue FP32 (halved in the PMI)."""

MEASURED_SPEED: dict[str, float] = {"K80": 0.2521, "P100": 0.7917, "V100": 1.0, "T4": 0.6492, "A100": 1.6924}
"""Generic speeds fitted from measurements (see the module docstring)."""

_SPEC = "NVIDIA data sheet"
_SOURCES = {
    "K80": "Gavel solo steps/s, median over 7 families",
    "P100": "Gavel solo steps/s, median over 7 families",
    "V100": "reference type (Gavel V100 measurements)",
    "T4": "Pollux T4 step times vs Gavel V100 (ResNet-18, ResNet-50)",
    "A100": "ElasticFlow A100/T4 samples/s (DeepSpeech2, ResNet-50) x T4 speed",
}


def effective_fp32_tflops(g: GPUType) -> float:
    """FP32 TFLOPS training can use: the data-sheet figure, halved for GA10x dual-issue types."""
    return g.fp32_tflops / 2.0 if g.name in DUAL_ISSUE_FP32 else g.fp32_tflops


def performance_memory_index(g: GPUType) -> float:
    """HadarE's PMI as read here: effective FP32 TFLOPS times the square root of VRAM (GB)."""
    return effective_fp32_tflops(g) * math.sqrt(g.memory_gb)


def hadare_speed(g: GPUType, c: float = HADARE_C, gamma: float = HADARE_GAMMA) -> float:
    """HadarE's initial throughput estimate relative to V100 from a type's specs."""
    pcie_scaling = 1.0 + 0.05 * (g.pcie_gen - 3)
    return math.exp(c) * performance_memory_index(g) ** gamma * pcie_scaling


# name, memory GB, FP32 TFLOPS, memory BW GB/s, PCIe gen, intra-node GPU-GPU BW GB/s
_SPECS: tuple[tuple[str, float, float, float, int, float], ...] = (
    ("K80", 12.0, 4.37, 240.0, 3, 10.0),
    ("P100", 16.0, 9.3, 732.0, 3, 10.0),
    ("V100", 16.0, 15.7, 900.0, 3, 50.0),
    ("T4", 16.0, 8.1, 320.0, 3, 10.0),
    ("A100", 40.0, 19.5, 1555.0, 4, 150.0),
    ("RTX2080Ti", 11.0, 13.4, 616.0, 3, 10.0),
    ("A6000", 48.0, 38.7, 768.0, 4, 25.0),
    ("A40", 48.0, 37.4, 696.0, 4, 25.0),
    ("TitanRTX", 24.0, 16.3, 672.0, 3, 10.0),
    ("T400", 4.0, 1.09, 80.0, 3, 4.0),
    ("RTX3090", 24.0, 35.6, 936.0, 4, 25.0),
    ("RTXA2000", 12.0, 8.0, 288.0, 4, 12.0),
    ("H100", 80.0, 51.2, 2000.0, 5, 64.0),
)


def _build() -> dict[str, GPUType]:
    out: dict[str, GPUType] = {}
    for name, mem, tf, bw, gen, intra in _SPECS:
        if name in MEASURED_SPEED:
            out[name] = GPUType(name, mem, tf, bw, gen, intra, MEASURED_SPEED[name], False,
                                f"{_SPEC}; speed: {_SOURCES[name]}")
        else:
            probe = GPUType(name, mem, tf, bw, gen, intra, 1.0, True, "")
            speed = round(hadare_speed(probe), 4)
            out[name] = GPUType(name, mem, tf, bw, gen, intra, speed, True,
                                f"{_SPEC}; speed: HadarE initial estimate from specs (estimated)")
    return out


GPU_TYPES: dict[str, GPUType] = _build()
