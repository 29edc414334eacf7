"""Demand per GPU type (gpucluster_env.catalog.demand) and the demand-based xi regression (xi_model)."""

from __future__ import annotations

import numpy as np
import pytest

from gpucluster_env.catalog import default_catalog
from gpucluster_env.catalog.demand import capacity_ratio, demand_on
from gpucluster_env.catalog.xi_model import MeasuredInterference, regression_row

CAT = default_catalog()


def test_demand_on_a40_by_hand() -> None:
    # resnet18: ci 0.774, V100 demand 0.876. A40: FP32 37.4 / 2 (GA10x dual issue) = 18.7 TFLOPS, 696 GB/s;
    # V100 15.7 TFLOPS, 900 GB/s. mix = 0.774 * 15.7/18.7 + 0.226 * 900/696 = 0.64983 + 0.29224 = 0.94207,
    # C = 1 / 0.94207 = 1.06149; at k = 0.5: 0.876 * 1.06149**-0.5 = 0.876 * 0.97060 = 0.85025
    p, a40, v100 = CAT.model("resnet18"), CAT.gpu_type("A40"), CAT.gpu_type("V100")
    assert capacity_ratio(p, a40, v100) == pytest.approx(1.06149, abs=1e-5)
    assert demand_on(p, a40, v100, 0.5) == pytest.approx(0.85025, abs=1e-5)
    # on the reference type the demand is the profile's own; on a K80 (C ~ 0.28) it is clipped to 1
    assert demand_on(p, v100, v100, 0.5) == pytest.approx(p.gpu_demand)
    assert demand_on(p, CAT.gpu_type("K80"), v100, 0.5) == 1.0


def test_catalog_model_demand_in_range_everywhere() -> None:
    for g in CAT.gpu_types:
        for p in CAT.models.values():
            d = CAT.model_demand(p, g)
            assert 0.0 < d <= 1.0
    assert CAT.model_demand(CAT.model("bert"), "V100") == pytest.approx(CAT.model("bert").gpu_demand)
    with pytest.raises(ValueError, match="unknown GPU type"):
        CAT.model_demand(CAT.model("vgg16"), "Z9")


def test_pair_under_combined_demand_one_keeps_only_memory_term() -> None:
    # demands 0.4 + 0.5 < 1: excess 0, so every term but m_a m_b vanishes. With weights [1, 1, 1, 0.3] and
    # m_a = m_b = 0.5 (activation half the footprint): log xi = 0.3 * 0.25 = 0.075 -> xi = e^0.075 = 1.0779
    p = CAT.model("resnet18")
    half = p.mem_base_gb / p.mem_per_sample_gb  # batch whose activations equal the base memory
    row = regression_row(p, p, 0.4, 0.5, half, half)
    assert row.tolist() == pytest.approx([0.0, 0.0, 0.0, 0.25])
    table = {"measured": {}, "offsets": {}, "pooled": [1.0, 1.0, 1.0, 0.3], "demand_exponent": 0.0}
    assert float(np.exp(np.array(table["pooled"]) @ row)) == pytest.approx(1.0779, abs=1e-4)
    # demands 0.9 + 0.8: excess 0.7, ci_a 0.774 -> 0.7 + 0.7*0.774 + 0.7*0.8 + 0.3 m_a m_b
    row2 = regression_row(p, p, 0.9, 0.8, half, half)
    assert row2.tolist() == pytest.approx([0.7, 0.7 * 0.774, 0.56, 0.25])
    inter = MeasuredInterference(table=table)
    assert inter.source_of("resnet18", "resnet18", "A40") == "regression"


def test_measured_types_keep_measured_xi_and_a40_has_pairs_that_pay() -> None:
    inter = CAT.interference
    assert isinstance(inter, MeasuredInterference)
    for g, table in inter.measured.items():
        for key, x in table.items():
            a, b = key.split("|")
            assert inter.xi_one(CAT.model(a), CAT.model(b), g) == max(1.0, x)
    from gpucluster_env.scenarios import GIMBAL_MODELS

    worst = [max(inter.pair_xi(CAT.model(a), CAT.model(b), "A40"))
             for i, a in enumerate(GIMBAL_MODELS) for b in GIMBAL_MODELS[i + 1:]]
    assert len(worst) == 66 and sum(x < 1.5 for x in worst) >= 1
