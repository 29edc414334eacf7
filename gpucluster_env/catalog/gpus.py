"""The GPU-type catalog: every GPU type declared once, with its specs, measured speeds and interference data.

:data:`DECLARED` is the one table of GPU types. Each entry gives a type's data-sheet specs (memory GB, FP32
TFLOPS, memory bandwidth GB/s, PCIe generation, GPU-to-GPU GB/s inside a node; NVIDIA's data sheets, per GPU die
for the K80, the PCIe card for the H100), and where measured: its generic training speed relative to a V100
(``speed``), the speeds of the models measured on it (``model_speed``), where those come from (``source``), pair
interference ratios measured on it (``xi_pairs``) and the architecture group whose fitted pair offsets apply to
it (``xi_group``: ``gavel`` for K80/P100/V100, ``ga102`` for Lucid's RTX 3090 and its GA102 siblings). Everything
else derives from it: :data:`GPU_TYPES` (what cluster specs, the engine and the reports read), the per-model
speeds :meth:`gpucluster_env.catalog.Catalog.model_speed` returns, the types the interference table
(:mod:`.xi_model`) and Castor's predictor treat as GA102, and :data:`MEASURED_SPEED`.

Generic speeds of measured types are the median over measured model families of the per-model speed ratios
(:func:`gpucluster_env.catalog.fit.generic_speeds`), per-model speeds the fit of :func:`.fit.summary`:
- K80, P100: Gavel's solo steps/s (Narayanan et al., OSDI'20) over V100, 7 families;
- T4: Pollux's T4 step times (Qiao et al., OSDI'21) over Gavel's V100 for the same architectures
  (ResNet-18/CIFAR-10, ResNet-50/ImageNet);
- A100: ElasticFlow's single-GPU samples/s (Gu et al., ASPLOS'23) A100 over T4, times the T4 speed
  (DeepSpeech2, ResNet-50).
``tests/catalog/test_gpu_declarations.py`` refits them from the public files and fails when a declared number
drifts from its source.

A type declared without a speed gets HadarE's initial throughput estimate (hadar-hadare §V-A, eq. 10),
``estimated=True``: ``speed = exp(c) * PMI^gamma * pcie_scaling`` with the Performance-Memory Index
``PMI = TFLOPS * sqrt(VRAM GB)`` (compute "aided by tensor cores" and memory capacity "in a square root
fashion"; the paper's text names the terms, its equation is not in our copy, so this form is our reading) and
``pcie_scaling = 1 + 0.05 (gen - 3)``.
``c`` and ``gamma`` are fitted by least squares in log space to the generic speeds of :data:`HADARE_FIT_TYPES`
(:func:`gpucluster_env.catalog.fit.fit_hadare_constants`: c = -3.585, gamma = 0.874; correlation 0.98; PMI as
TFLOPS / sqrt(VRAM) fits worse, 0.88); the paper publishes no values, and a test refits them from the table. For
GA10x/Ampere workstation cards the data-sheet FP32 figure counts dual-issue FP32 that training rarely reaches, so
their PMI uses half of it (``dual_issue_fp32``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..hardware import GPUType

HADARE_C = -3.585
HADARE_GAMMA = 0.874
HADARE_FIT_TYPES: tuple[str, ...] = ("K80", "P100", "V100", "T4", "A100")
"""The measured types :data:`HADARE_C` and :data:`HADARE_GAMMA` were fitted to (a type measured later leaves
them, and the estimated speeds of every other type, as they are until they are refitted on purpose)."""


def effective_fp32_tflops(g: GPUType) -> float:
    """FP32 TFLOPS training can use: the data-sheet figure, halved for types whose figure counts dual-issue FP32
    (``GPUType.dual_issue_fp32``: GA10x, Ada)."""
    return g.fp32_tflops / 2.0 if g.dual_issue_fp32 else g.fp32_tflops


def performance_memory_index(g: GPUType) -> float:
    """HadarE's PMI as read here: effective FP32 TFLOPS times the square root of VRAM (GB)."""
    return effective_fp32_tflops(g) * math.sqrt(g.memory_gb)


def hadare_speed(g: GPUType, c: float = HADARE_C, gamma: float = HADARE_GAMMA) -> float:
    """HadarE's initial throughput estimate relative to V100 from a type's specs."""
    pcie_scaling = 1.0 + 0.05 * (g.pcie_gen - 3)
    return math.exp(c) * performance_memory_index(g) ** gamma * pcie_scaling


_SPEC = "NVIDIA data sheet"
_GAVEL = "Gavel solo steps/s, median over 7 families"
_R18, _R50 = ("resnet18", "cifar10"), ("resnet50", "imagenet")
"""Catalog models that are the same network on the same data set (one measured speed each)."""


def _same(models: tuple[str, ...], speed: float) -> dict[str, float]:
    return dict.fromkeys(models, speed)


def declare(name: str, memory_gb: float, fp32_tflops: float, mem_bw_gbps: float, pcie_gen: int,
            intra_node_bw_gbps: float, *, speed: float | None = None, source: str = "",
            model_speed: Mapping[str, float] | None = None, xi_pairs: Mapping[str, float] | None = None,
            xi_group: str = "", dual_issue_fp32: bool = False) -> GPUType:
    """A GPU type from one declaration: data-sheet specs, and where measured its generic ``speed`` (V100 = 1),
    the per-model speeds, pair interference ratios and where they come from (``source``). Without a ``speed``
    the type gets HadarE's estimate from its specs (:func:`hadare_speed`), marked ``estimated``."""
    common = {"model_speed": dict(model_speed or {}), "xi_pairs": dict(xi_pairs or {}), "xi_group": xi_group,
              "dual_issue_fp32": dual_issue_fp32}
    specs = (name, memory_gb, fp32_tflops, mem_bw_gbps, pcie_gen, intra_node_bw_gbps)
    if speed is not None:
        return GPUType(*specs, speed, False, f"{_SPEC}; speed: {source}", **common)
    estimate = round(hadare_speed(GPUType(*specs, 1.0, True, "", **common)), 4)
    return GPUType(*specs, estimate, True, f"{_SPEC}; speed: HadarE initial estimate from specs (estimated)"
                   + (f"; {source}" if source else ""), **common)


DECLARED: tuple[GPUType, ...] = (
    declare("K80", 12.0, 4.37, 240.0, 3, 10.0, speed=0.2521, source=_GAVEL, xi_group="gavel", model_speed={
        **_same(_R18, 0.1165), **_same(_R50, 0.1538), "transformer": 0.2521, "lm": 0.2542,
        "recommendation": 1.3978, "cyclegan": 0.1140, "a3c": 0.4792}),
    declare("P100", 16.0, 9.3, 732.0, 3, 10.0, speed=0.7917, source=_GAVEL, xi_group="gavel", model_speed={
        **_same(_R18, 0.8718), **_same(_R50, 0.6353), "transformer": 0.7409, "lm": 0.8315,
        "recommendation": 2.2510, "cyclegan": 0.5428, "a3c": 0.7917}),
    declare("V100", 16.0, 15.7, 900.0, 3, 50.0, speed=1.0, source="reference type (Gavel V100 measurements)",
            xi_group="gavel"),
    declare("T4", 16.0, 8.1, 320.0, 3, 10.0, speed=0.6492,
            source="Pollux T4 step times vs Gavel V100 (ResNet-18, ResNet-50)",
            model_speed={**_same(_R18, 0.6807), **_same(_R50, 0.6177)}),
    # BERT's ElasticFlow A100/T4 ratio (x32) is left out: the two files use different batch/sequence setups
    declare("A100", 40.0, 19.5, 1555.0, 4, 150.0, speed=1.6924,
            source="ElasticFlow A100/T4 samples/s (DeepSpeech2, ResNet-50) x T4 speed",
            model_speed={**_same(_R50, 1.3329), "deepspeech2": 2.0519}),
    declare("RTX2080Ti", 11.0, 13.4, 616.0, 3, 10.0),
    declare("A6000", 48.0, 38.7, 768.0, 4, 25.0, xi_group="ga102", dual_issue_fp32=True),
    declare("A40", 48.0, 37.4, 696.0, 4, 25.0, xi_group="ga102", dual_issue_fp32=True),
    declare("TitanRTX", 24.0, 16.3, 672.0, 3, 10.0),
    declare("T400", 4.0, 1.09, 80.0, 3, 4.0),
    declare("RTX3090", 24.0, 35.6, 936.0, 4, 25.0, xi_group="ga102", dual_issue_fp32=True,
            source="interference: Lucid's RTX 3090 pairs (catalog/lucid_pairs.py)"),
    declare("RTXA2000", 12.0, 8.0, 288.0, 4, 12.0, dual_issue_fp32=True),
    declare("H100", 80.0, 51.2, 2000.0, 5, 64.0),
)
"""The GPU types of the package, each declared once (see the module docstring)."""

GPU_TYPES: dict[str, GPUType] = {g.name: g for g in DECLARED}
"""The declared types by name: the registry cluster specs, the default catalog and the reports read."""

MEASURED_SPEED: dict[str, float] = {g.name: g.speed for g in DECLARED if not g.estimated}
"""Generic speeds of the measured types (derived from :data:`DECLARED`)."""

DUAL_ISSUE_FP32: frozenset[str] = frozenset(g.name for g in DECLARED if g.dual_issue_fp32)
"""Types whose data-sheet FP32 TFLOPS counts dual-issue FP32 (halved in the PMI and the demand model)."""


def group_types(group: str, gpu_types: Mapping[str, GPUType] | None = None) -> tuple[str, ...]:
    """The types (of ``gpu_types``, the declared ones by default) in interference group ``group``."""
    return tuple(n for n, g in (GPU_TYPES if gpu_types is None else gpu_types).items() if g.xi_group == group)
