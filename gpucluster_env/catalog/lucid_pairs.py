"""Lucid's co-located training pairs on one RTX 3090 (GA102), read at fit/validation time only.

Source: S-Lab-System-Group/Lucid commit 63685a3, ``simulation/data/colocate_info.csv`` and ``single_data.csv``
(Hu et al., "Lucid: A Non-intrusive, Scalable and Interpretable Scheduler for Deep Learning Training Jobs",
ASPLOS'23), found under ``profiles/lucid_rtx3090`` of the public-data folder (``$GPUCLUSTER_DATA`` or
``../shared/data``). **Licence: S-Lab License 1.0, non-commercial use only.** The package ships none of these
rows: only what is fitted from them (the regression weights, each catalog model pair's mean residual on GA102,
the demands of :data:`LUCID_DEMAND` and summary statistics), each naming this source. Nothing here runs when
the package is imported for simulation, and the engine gives the same results with or without the files.

``colocate_info.csv``: 1,388 pairs of 1-GPU training jobs sharing one RTX 3090 by plain co-location (two
processes, no MPS thread limit: free competition), ``speedN`` = job N's co-located throughput over its
throughput alone, so ``xi = 1 / speedN``. ``single_data.csv``: 66 solo runs (throughput, ``gpu_util`` %,
``gmem`` MB) per (model, batch, AMP).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from .gpus import GPU_TYPES, group_types
from .measured import _positive, read_csv_rows, require_data_dir

LUCID_DIR = ("profiles", "lucid_rtx3090")
LUCID_TYPE = "RTX3090"
"""The catalog GPU type Lucid measured on."""
GA102_GROUP = "ga102"
"""The interference group of the GA102 types (``GPUType.xi_group``, declared in :data:`.gpus.DECLARED`)."""
GA102_TYPES: tuple[str, ...] = group_types(GA102_GROUP)
"""Catalog types built on the GA102 die: Lucid's pair residuals are carried to each (with its own specs)."""


def on_ga102(gpu_type: str) -> bool:
    """Whether the declared type ``gpu_type`` (:data:`.gpus.GPU_TYPES`, read at the call) is in the GA102 group."""
    g = GPU_TYPES.get(gpu_type)
    return g is not None and g.xi_group == GA102_GROUP
LUCID_SOURCE = ("Lucid (Hu et al., ASPLOS'23; S-Lab-System-Group/Lucid 63685a3, S-Lab License 1.0, "
                "non-commercial): RTX 3090 co-located pairs")

LUCID_MODEL: dict[str, tuple[str, ...]] = {
    "ResNet18": ("resnet18", "cifar10"),
    "MobileNetV2": ("mobilenetv2",),
    "MobileNetV3": ("mobilenetv3",),
    "EfficientNet": ("efficientnet",),
    "VGG": ("vgg_cifar10",),
    "PointNet": ("pointnet",),
    "DCGAN": ("dcgan",),
    "LSTM": ("lm",),
    "PPO": ("ppo",),
    "TD3": ("td3",),
    "NeuMF": ("ncf",),
    "ResNet50": ("resnet50", "imagenet"),
    "BERT": ("bert",),
    "Transformer": ("transformer",),
}
"""Lucid model -> the catalog models that are the same network on the same data set (ResNet-18/CIFAR-10,
MobileNetV2/CIFAR-10, EfficientNet/CIFAR-10 and MobileNetV3/ImageNet are Gimbal's; LSTM/Wikitext-2 is Gavel's
LM; NeuMF/MovieLens is Pollux's NCF; ResNet-50/ImageNet, BERT/SQuAD and Transformer/Multi30k were measured
solo only). Lucid's VGG is on CIFAR-10, not Gimbal's ImageNet VGG-11/16, so it is a model of its own."""

CATALOG_BATCH: dict[str, int] = {
    "resnet18": 64, "cifar10": 128, "mobilenetv2": 64, "mobilenetv3": 64, "efficientnet": 64,
    "vgg_cifar10": 64, "pointnet": 32, "dcgan": 64, "lm": 64, "ppo": 64, "td3": 64, "ncf": 128,
    "resnet50": 64, "imagenet": 64, "bert": 32, "transformer": 64,
}
"""The Lucid batch size (AMP off) that stands for each mapped catalog model: its default batch where Lucid
measured it, else the nearest (LM 20 -> 64, NCF 1024 -> 128)."""

LUCID_DEMAND: dict[str, float] = {
    "mobilenetv2": 0.695, "mobilenetv3": 0.805, "efficientnet": 0.354, "vgg_cifar10": 0.51,
    "pointnet": 0.115, "dcgan": 0.729, "ppo": 0.119, "td3": 0.133,
}
"""Measured demand on the RTX 3090 (``gpu_util`` / 100 of ``single_data.csv`` at :data:`CATALOG_BATCH`, AMP
off) of the catalog models whose demand was an estimate before (the Gavel families keep Gavel's). The catalog
stores the reference (V100) demand that gives it: ``d_V100 = d_RTX3090 * C_RTX3090(p)^k``
(:func:`reference_demand`)."""


def lucid_key(model: str, batch: int, amp: int) -> str:
    """A Lucid job configuration's name, ``"ResNet18 (batch size 64, amp 0)"`` (its family is the model)."""
    return f"{model} (batch size {batch}, amp {amp})"


@dataclass
class LucidData:
    """Lucid's measurements: ``solo[key] = {"speed", "util", "gmem_mb"}``, ``xi[(a, b)]`` = ``a``'s measured
    ratio next to ``b`` (mean over repeated rows; both orders present)."""

    path: Path
    solo: dict[str, dict[str, float]] = field(default_factory=dict)
    xi: dict[tuple[str, str], float] = field(default_factory=dict)

    def demand(self, key: str) -> float:
        """Measured demand of a configuration: its solo ``gpu_util`` as a fraction, in ``[0.05, 1]``."""
        return min(1.0, max(0.05, self.solo[key]["util"] / 100.0))


def _batch_amp(path: Path, i: int, r: dict[str, str], n: str = "") -> tuple[int, int]:
    b = int(_positive(r[f"batchsize{n}"], path, f"line {i}: batchsize{n}"))
    a = int(_positive(r[f"amp{n}"], path, f"line {i}: amp{n}"))
    return b, a


def load_lucid(root: Path | None = None) -> LucidData:
    """Read ``colocate_info.csv`` and ``single_data.csv`` (``ValueError`` naming file and line if malformed)."""
    folder = (root or require_data_dir()).joinpath(*LUCID_DIR)
    single = folder / "single_data.csv"
    out = LucidData(folder / "colocate_info.csv")
    for i, r in enumerate(read_csv_rows(single, ("model", "batchsize", "amp", "speed", "gpu_util", "gmem")), 2):
        key = lucid_key(r["model"], *_batch_amp(single, i, r))
        out.solo[key] = {"speed": _positive(r["speed"], single, f"line {i}: speed"),
                         "util": _positive(r["gpu_util"], single, f"line {i}: gpu_util"),
                         "gmem_mb": _positive(r["gmem"], single, f"line {i}: gmem")}
    cols = tuple(f"{c}{n}" for n in ("1", "2") for c in ("model", "batchsize", "amp", "speed", "gpu_num"))
    acc: dict[tuple[str, str], list[float]] = {}
    for i, r in enumerate(read_csv_rows(out.path, cols), 2):
        if r["gpu_num1"].strip() != "1" or r["gpu_num2"].strip() != "1":
            continue
        ka = lucid_key(r["model1"], *_batch_amp(out.path, i, r, "1"))
        kb = lucid_key(r["model2"], *_batch_amp(out.path, i, r, "2"))
        for k in (ka, kb):
            if k not in out.solo:
                raise ValueError(f"{out.path}: line {i}: {k} has no solo run in {single.name}")
        sa = _positive(r["speed1"], out.path, f"line {i}: speed1")
        sb = _positive(r["speed2"], out.path, f"line {i}: speed2")
        if sa > 0 and sb > 0:
            acc.setdefault((ka, kb), []).append(1.0 / sa)
            acc.setdefault((kb, ka), []).append(1.0 / sb)
    if not acc:
        raise ValueError(f"{out.path}: no 1-GPU pairs")
    out.xi = {k: math.fsum(v) / len(v) for k, v in sorted(acc.items())}
    return out


def lucid_model(key: str) -> str:
    """The Lucid model of a configuration key."""
    return key.split(" (")[0]


def config_of(key: str) -> tuple[int, int]:
    """``(batch, amp)`` of a configuration key."""
    inside = key.split(" (", 1)[1].rstrip(")")
    b, a = (part.split()[-1] for part in inside.split(","))
    return int(b), int(a)


def catalog_key(model: str) -> str | None:
    """The Lucid configuration that stands for a catalog model (:data:`CATALOG_BATCH`, AMP off), or ``None``."""
    for lm, cms in LUCID_MODEL.items():
        if model in cms:
            return lucid_key(lm, CATALOG_BATCH[model], 0)
    return None
