"""The workload catalog: the models of Castor/Pollux, Gavel, Gimbal and Hadar, with Castor eq. 1-3 constants.

Times are seconds per micro-step on a V100 (speed 1.0). Where each number comes from:

- ``alpha_s, beta_s`` (t_comp(b) = alpha + beta b):
  * fitted jointly with the family's K80/P100 speeds (:func:`.fit.fit_gavel_joint`: least absolute deviations
    of log steps/s over every batch size on K80, P100 and V100) for resnet18/cifar10 (ResNet-18),
    resnet50/imagenet (ResNet-50), transformer, lm, recommendation, cyclegan, a3c (batchless: alpha 0,
    beta = measured V100 step time);
  * fitted to Pollux's single-GPU T4 step times (:func:`.fit.fit_pollux_t4`) for bert, deepspeech2, ncf,
    yolov3, converted to V100 seconds with the T4 speed 0.6492 (no V100 measurement exists for them);
  * estimated for the other Gimbal models and MiMa from published forward GFLOPs relative to an anchor
    of the same dataset (ImageNet: ResNet-50 at 4.1 GFLOPs; CIFAR-10: ResNet-18 at 0.56 GFLOPs) with
    ``beta = beta_anchor (GF / GF_anchor)^0.75`` (small, depthwise-heavy nets run below peak) -- marked
    "estimated" in ``source``.
- per-model speeds on other GPU types: declared with the GPU type they were measured on (``model_speed`` in
  :data:`.gpus.DECLARED`; :meth:`gpucluster_env.catalog.Catalog.model_speed`), not here. ``ModelProfile.speed`` stays
  empty for the catalog's models (a profile built elsewhere may set it; it overrides the type's numbers).
- ``grad_mb``: 4 bytes x published parameter count (fp32 gradients all-reduced).
- ``alpha_comm_s`` of the six Pollux models (and resnet18/resnet50, same networks): fitted on Pollux's
  multi-node all-reduce times (:mod:`.comm_fit`, ``gpucluster catalog fit-comm``, shipped in
  ``data/comm_fit.json``); the values below are the single-node ones they replace.
- ``alpha_comm_s, delta`` (Castor eq. 2-3): fitted (:func:`.fit.fit_gavel_comm`) to Gavel's consolidated
  2/4/8-GPU steps/s on K80/P100/V100 for resnet18/cifar10, resnet50/imagenet, transformer and lm (the fits put
  delta near 1: Gavel's jobs barely overlap the all-reduce with compute); Castor's defaults (2 ms, 2.0) for the
  rest, which have no multi-GPU measurement.
- ``mem_base_gb``: estimated as 0.5 GB CUDA context + 16 B/parameter (weights, gradients, Adam states) or
  12 B/parameter (SGD with momentum); ``mem_per_sample_gb``: estimated activation memory per sample, set so
  the largest allowed batch fits the GPUs the papers ran it on (LLaMA: 7B weights in fp16 with LoRA adapters).
- ``features`` = (compute intensity, memory intensity, communication share), each in [0, 1]:
  compute intensity is Gavel-fitted for the Gavel families (2 x median over partners and K80/P100/V100 of the
  throughput lost when colocated, 1 - 1/xi, clipped) and estimated for the others; memory intensity is the
  activation share of the footprint at the default batch; communication share is t_comm / t_iter for 8 GPUs on
  one V100 node (Castor eq. 2-3), both derived from the numbers above.
- ``gpu_demand``: Gavel-fitted for the Gavel families (2 x median throughput its partners lose, clipped to
  [0.1, 1]); for MobileNetV2/V3, EfficientNet and Lucid's five models (vgg_cifar10, pointnet, dcgan, ppo, td3)
  the V100 demand that gives Lucid's measured RTX 3090 solo ``gpu_util`` (:data:`.lucid.LUCID_DEMAND`; Lucid,
  ASPLOS'23, S-Lab License 1.0: only these derived numbers are kept); estimated for the others.
- Lucid's five models: ``alpha_s, beta_s`` fitted (:func:`.fit.linear_fit_rel`) to Lucid's RTX 3090 solo step
  times (batch / samples per s at batch 32/64/128, AMP off), times the RTX 3090's estimated speed 1.4463 to give
  V100 seconds; ``mem_base_gb, mem_per_sample_gb`` a line through the solo ``gmem``; compute intensity
  estimated; ``grad_mb`` from published parameter counts.
"""

from __future__ import annotations

import math

from ..performance import comm_time, compute_time, iteration_time, memory_intensity
from ..workloads import ModelProfile
from .comm_fit import fitted_alpha_comm
from .gpus import GPU_TYPES
from .lucid_pairs import LUCID_DEMAND

_V100_INTRA_BW = 50.0
_MULTI_NODE_ALPHA = fitted_alpha_comm()
SINGLE_NODE_ALPHA_COMM: dict[str, float] = {}
"""Each model's ``alpha_comm_s`` before the multi-node fit (Gavel single-node fit or Castor's default)."""


def _profile(
    name: str, batch: int, sizes: tuple[int, ...], alpha: float, beta: float, grad_mb: float,
    mem_base: float, mem_ps: float, ci: float, demand: float, family: str,
    source: str, comm: tuple[float, float] = (0.002, 2.0),
) -> ModelProfile:
    """Build a profile, deriving memory intensity and communication share from the other constants."""
    SINGLE_NODE_ALPHA_COMM[name] = comm[0]
    comm = (_MULTI_NODE_ALPHA.get(name, comm[0]), comm[1])
    mem_int = memory_intensity(mem_base, mem_ps, batch)
    probe = ModelProfile(name, batch, sizes, alpha, beta, grad_mb, *comm)
    t_comp = compute_time(probe, batch, 1.0)
    t_comm = comm_time(probe, 8, 1, _V100_INTRA_BW, _V100_INTRA_BW)
    comm_share = t_comm / iteration_time(t_comp, 1, t_comm, probe.delta)
    feats = (round(min(1.0, ci), 3), round(float(mem_int), 3), round(min(1.0, float(comm_share)), 3))
    return ModelProfile(name, batch, sizes, alpha, beta, grad_mb, *comm, mem_base, mem_ps, feats,
                        round(min(1.0, max(0.1, demand)), 3), {}, family, source)


def _flops_scaled(anchor: tuple[float, float], gf: float, gf_anchor: float) -> tuple[float, float]:
    r = (gf / gf_anchor) ** 0.75
    return anchor[0] * max(0.5, math.sqrt(r)), anchor[1] * r


_R18 = (0.018542, 0.000359)  # Gavel V100, ResNet-18 (CIFAR-10)
_R50 = (0.018187, 0.003318)  # Gavel V100, ResNet-50 (ImageNet)
_R18_COMM = (0.0, 1.0)  # Gavel 2/4/8-GPU steps/s, fit.fit_gavel_comm
_R50_COMM = (0.023, 1.027)
_GAVEL = ("fitted: Gavel V100 solo steps/s (compute), Gavel K80/P100 (speed); "
          "xi features fitted on Gavel pairs")
_POLLUX = f"fitted: Pollux T4 single-GPU step times (compute, in V100 s via T4 speed {GPU_TYPES['T4'].speed:g})"
_EST = "estimated: compute from GFLOPs ratio to {}; memory, features and demand estimated"
_LD = "; demand: Lucid RTX 3090 solo gpu_util at batch 64 (S-Lab License 1.0)"

_LUCID = ("fitted: Lucid RTX 3090 solo runs (S-Lab License 1.0; compute, memory, demand) of {}; "
          "compute intensity estimated")


def _lucid_ref_demand(name: str, ci: float) -> float:
    """The reference (V100) demand that gives Lucid's measured RTX 3090 demand (:data:`.lucid.LUCID_DEMAND`)
    under the shipped demand exponent: ``d_RTX3090 * C_RTX3090(p)^k`` (:func:`.demand.reference_demand`)."""
    from .demand import reference_demand
    from .xi_model import shipped_demand_exponent

    return reference_demand(LUCID_DEMAND[name], ci, "RTX3090", shipped_demand_exponent())


MODELS: dict[str, ModelProfile] = {
    m.name: m
    for m in (
        # Castor / Pollux six
        _profile("cifar10", 128, (32, 64, 128, 256), *_R18, 44.7, 0.7, 0.012, 0.682, 0.928, "pollux",
                 "ResNet-18/CIFAR-10; " + _GAVEL + "; T4 speed: Pollux vs Gavel", _R18_COMM),
        _profile("imagenet", 64, (16, 32, 64, 128), *_R50, 102.4, 0.8, 0.09, 0.724, 1.0, "pollux",
                 "ResNet-50/ImageNet; " + _GAVEL + "; T4: Pollux vs Gavel; A100: ElasticFlow", _R50_COMM),
        _profile("bert", 12, (4, 8, 12, 16, 32), 0.144961, 0.03782, 440.0, 2.3, 0.35, 0.85, 0.95,
                 "pollux", "BERT-base/SQuAD; " + _POLLUX + "; memory, features, demand estimated"),
        _profile("deepspeech2", 20, (5, 8, 10, 16, 20, 40), 0.123862, 0.016547, 105.0, 1.1, 0.35, 0.8, 0.9,
                 "pollux",
                 "DeepSpeech2/LibriSpeech; " + _POLLUX + "; A100: ElasticFlow A100/T4; rest estimated"),
        _profile("ncf", 1024, (256, 512, 1024, 2048), 0.004876, 1e-7, 20.0, 0.6, 0.00005, 0.5, 0.35,
                 "pollux", "NeuMF/MovieLens; " + _POLLUX + " (beta below 1e-7 s: step time flat in batch)"),
        _profile("yolov3", 8, (2, 4, 8, 16), 0.114428, 0.017213, 248.0, 1.5, 0.8, 0.8, 1.0,
                 "pollux", "YOLOv3/PASCAL VOC; " + _POLLUX + "; memory, features, demand estimated"),
        # Gavel's seven (Gimbal's ResNet-18/50 share these profiles)
        _profile("resnet18", 64, (16, 32, 64, 128, 256), *_R18, 44.7, 0.7, 0.012, 0.774, 0.876,
                 "gavel", "ResNet-18/CIFAR-10; " + _GAVEL, _R18_COMM),
        _profile("resnet50", 64, (16, 32, 64, 128), *_R50, 102.4, 0.8, 0.09, 0.724, 1.0,
                 "gavel", "ResNet-50/ImageNet; " + _GAVEL + "; T4: Pollux; A100: ElasticFlow", _R50_COMM),
        _profile("transformer", 64, (16, 32, 64, 128, 256), 0.044515, 0.001551, 192.0, 1.3, 0.03, 0.828,
                 0.876, "gavel", "Transformer/Multi30k; " + _GAVEL, (0.0259, 1.0)),
        _profile("lm", 20, (5, 10, 20, 40, 80), 0.007299, 0.000372, 112.0, 1.0, 0.05, 1.0, 0.684,
                 "gavel", "LSTM LM/Wikitext-2; " + _GAVEL, (0.0029, 1.0)),
        _profile("recommendation", 2048, (512, 1024, 2048, 4096, 8192), 0.012556, 0.000059, 80.0, 0.8,
                 0.0005, 0.8, 0.626, "gavel",
                 "autoencoder/ML-20M; " + _GAVEL + " (Gavel measures it faster on K80/P100 than V100)"),
        _profile("cyclegan", 1, (1,), 0.0, 0.225933, 113.0, 1.0, 2.0, 0.824, 1.0,
                 "gavel", "CycleGAN/monet2photo; " + _GAVEL),
        _profile("a3c", 1, (1,), 0.0, 0.139358, 4.0, 0.6, 0.1, 0.808, 0.99,
                 "gavel", "A3C/Pong; " + _GAVEL),
        # Gimbal's twelve (resnet18, resnet50, deepspeech2, bert above)
        _profile("mobilenetv2", 64, (32, 64, 128), *_flops_scaled(_R18, 0.09, 0.56), 9.2, 0.6, 0.01, 0.7,
                 _lucid_ref_demand("mobilenetv2", 0.7), "gimbal", _EST.format("ResNet-18 (0.09 GFLOPs)") + _LD),
        _profile("efficientnet", 64, (32, 64, 128), *_flops_scaled(_R18, 0.39, 0.56), 16.0, 0.6, 0.02, 0.75,
                 _lucid_ref_demand("efficientnet", 0.75), "gimbal",
                 _EST.format("ResNet-18 (EfficientNet-B0, 0.39 GFLOPs)") + _LD),
        _profile("mobilenetv3", 64, (32, 64, 128), *_flops_scaled(_R50, 0.22, 4.1), 21.6, 0.6, 0.05, 0.7,
                 _lucid_ref_demand("mobilenetv3", 0.7), "gimbal",
                 _EST.format("ResNet-50 (MobileNetV3-L, 0.22 GFLOPs)") + _LD),
        _profile("vgg11", 64, (32, 64, 128), *_flops_scaled(_R50, 7.6, 4.1), 531.0, 2.6, 0.06, 0.75, 1.0,
                 "gimbal", _EST.format("ResNet-50 (7.6 GFLOPs)")),
        _profile("vgg16", 64, (32, 64, 128), *_flops_scaled(_R50, 15.5, 4.1), 553.0, 2.7, 0.1, 0.75, 1.0,
                 "gimbal", _EST.format("ResNet-50 (15.5 GFLOPs)")),
        _profile("pnasnet", 64, (32, 64, 128), *_flops_scaled(_R50, 0.47, 4.1), 28.4, 0.6, 0.07, 0.72, 0.9,
                 "gimbal", _EST.format("ResNet-50 (ProxylessNAS-GPU, 0.47 GFLOPs)")),
        _profile("ofa", 64, (32, 64, 128), *_flops_scaled(_R50, 0.6, 4.1), 30.8, 0.6, 0.06, 0.72, 0.9,
                 "gimbal", _EST.format("ResNet-50 (OFA, about 0.6 GFLOPs)")),
        _profile("llama", 16, (16, 32), 0.3, 0.25, 80.0, 14.5, 0.5, 0.9, 1.0, "gimbal",
                 "estimated: LLaMA-7B LoRA fine-tuning on Alpaca (6 x 7e9 x 256 tokens per sample at about "
                 "40% of V100 tensor peak); grad_mb of the LoRA adapters"),
        # Lucid's RTX 3090 models the catalog lacked (lucid.py): compute from Lucid's solo samples/s at batch 32/64/128
        # (AMP off) on the RTX 3090, in V100 s via the RTX 3090's estimated speed; memory from its solo gmem
        _profile("vgg_cifar10", 64, (32, 64, 128), 0.009429, 0.0000934, 58.9, 3.18, 0.0063, 0.75,
                 _lucid_ref_demand("vgg_cifar10", 0.75), "lucid", _LUCID.format("VGG/CIFAR-10") +
                 "; grad_mb of VGG-16's CIFAR variant (14.7M parameters; Lucid does not name the depth)"),
        _profile("pointnet", 32, (32, 64, 128), 0.02969, 0.010056, 14.0, 1.9, 0.0673, 0.7,
                 _lucid_ref_demand("pointnet", 0.7), "lucid", _LUCID.format("PointNet/ShapeNet") +
                 "; grad_mb of PointNet (3.5M parameters)"),
        _profile("dcgan", 64, (32, 64, 128), 0.017687, 0.0001704, 25.4, 2.07, 0.00742, 0.8,
                 _lucid_ref_demand("dcgan", 0.8), "lucid", _LUCID.format("DCGAN/LSUN") +
                 "; grad_mb of DCGAN's generator and discriminator (6.35M parameters)"),
        _profile("ppo", 64, (32, 64, 128), 6.419939, 0.0008685, 0.1, 2.05, 0.00001, 0.3,
                 _lucid_ref_demand("ppo", 0.3), "lucid", _LUCID.format("PPO/LunarLander") +
                 " (step time falls with batch in Lucid's file: environment-bound; the affine fit is coarse)"),
        _profile("td3", 64, (32, 64, 128), 1.700962, 0.0045269, 0.1, 2.06, 0.00001, 0.3,
                 _lucid_ref_demand("td3", 0.3), "lucid", _LUCID.format("TD3/BipedalWalker") +
                 " (environment-bound; the affine fit is coarse)"),
        # Hadar's fifth
        _profile("mima", 32, (16, 32, 64), 0.03, 0.002, 40.0, 0.8, 0.02, 0.8, 0.8, "hadar",
                 "estimated: MiMa encoder-decoder Transformer for weather (hadar-hadare Table III), as a "
                 "small Transformer at half Gavel's Transformer compute"),
    )
}
