"""The workload catalog: training models with their iteration-time constants.

Times are seconds per micro-step on a V100. The six Pollux models (bert, cifar10, deepspeech2, imagenet, ncf,
yolov3) are the workloads of Castor and SJF-BSBF.
"""

from __future__ import annotations

from ..workloads import ModelProfile

MODELS: dict[str, ModelProfile] = {
    m.name: m
    for m in (
        ModelProfile("cifar10", 128, (32, 64, 128, 256), 0.010, 0.00030, 45.0, 0.002, 2.0, 0.9, 0.010,
                     (0.55, 0.35, 0.25), 0.70, {}, "pollux", "initial estimate"),
        ModelProfile("imagenet", 64, (16, 32, 64, 128), 0.020, 0.0028, 100.0, 0.002, 2.0, 2.0, 0.100,
                     (0.85, 0.60, 0.30), 0.95, {}, "pollux", "initial estimate"),
        ModelProfile("bert", 12, (4, 8, 12, 16, 32), 0.030, 0.022, 420.0, 0.002, 2.0, 3.0, 0.60,
                     (0.80, 0.70, 0.45), 0.90, {}, "pollux", "initial estimate"),
        ModelProfile("deepspeech2", 20, (5, 10, 20, 40), 0.050, 0.020, 150.0, 0.002, 2.0, 2.0, 0.35,
                     (0.70, 0.55, 0.35), 0.85, {}, "pollux", "initial estimate"),
        ModelProfile("ncf", 1024, (256, 512, 1024, 2048), 0.005, 0.000004, 60.0, 0.002, 2.0, 0.8, 0.001,
                     (0.30, 0.40, 0.40), 0.45, {}, "pollux", "initial estimate"),
        ModelProfile("yolov3", 8, (2, 4, 8, 16), 0.040, 0.045, 250.0, 0.002, 2.0, 2.0, 0.90,
                     (0.90, 0.60, 0.30), 0.95, {}, "pollux", "initial estimate"),
    )
}
