"""The multi-node fit of Castor eq. 2's latency constant (gpucluster_env.catalog.comm_fit)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpucluster_env.catalog import default_catalog
from gpucluster_env.catalog.comm_fit import (
    CommRow,
    fit_alpha,
    fitted_alpha_comm,
    pollux_rows,
    predict,
    rows_from_samples,
    shipped_fit,
)
from gpucluster_env.workloads import ModelProfile

P = ModelProfile("synthetic", 32, (32,), 0.01, 0.001, grad_mb=100.0)


def _data_dir() -> Path | None:
    env = os.environ.get("GPUCLUSTER_DATA")
    p = Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared" / "data"
    return p if (p / "profiles" / "pollux").is_dir() else None


def test_eq2_on_a_multi_node_row_by_hand() -> None:
    # 8 GPUs on 2 nodes, 100 MB of gradients, inter-node 6.25 GB/s (the slower link):
    # ring = 2 * 7/8 * 0.1 GB / 6.25 GB/s = 0.028 s; latency = alpha (1 + log2 8) * 2 nodes = 8 alpha
    # alpha = 5 ms -> 0.028 + 0.040 = 0.068 s
    row = CommRow("hand", 8, 2, 0.0)
    assert predict(P, [row], 0.005)[0] == pytest.approx(0.068, rel=1e-12)


def test_fit_recovers_known_alpha_from_synthetic_rows() -> None:
    # rows generated at alpha = 4 ms: 4 GPUs/2 nodes -> 0.1 GB*2*3/4/6.25 = 0.024 + 4e-3*3*2 = 0.048 s;
    # 16/4 -> 0.1*2*15/16/6.25 = 0.03 + 4e-3*5*4 = 0.11 s; 64/16 -> 0.1*2*63/64/6.25 = 0.0315 + 4e-3*7*16
    # = 0.4795 s. The fit must land on 4 ms (zero residuals there).
    rows = [CommRow("syn", 4, 2, 0.048), CommRow("syn", 16, 4, 0.11), CommRow("syn", 64, 16, 0.4795)]
    assert fit_alpha(P, rows) == pytest.approx(0.004, rel=1e-5)
    # one row 10% high, one 10% low, the third exact: the median (LAD) fit keeps alpha on the exact row's value
    noisy = [CommRow("syn", 4, 2, 0.048 * 1.1), CommRow("syn", 16, 4, 0.11 * 0.9), rows[2]]
    assert fit_alpha(P, noisy) == pytest.approx(0.004, rel=1e-3)


def test_rows_group_by_configuration_and_drop_single_node() -> None:
    # (gpus, nodes, seconds): two samples of 8/2 -> median 0.2; 4/1 is single-node and is dropped
    rows = rows_from_samples("s", [(8, 2, 0.1), (8, 2, 0.3), (4, 1, 9.0), (12, 3, 0.5)])
    assert [(r.n_gpus, r.n_nodes, r.t_comm_s) for r in rows] == [(8, 2, 0.2), (12, 3, 0.5)]
    with pytest.raises(ValueError, match="no multi-node rows"):
        fit_alpha(P, [])


def test_shipped_fit_is_what_the_catalog_uses() -> None:
    cat = default_catalog()
    fitted = fitted_alpha_comm()
    assert set(shipped_fit()["models"]) == {"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"}
    for m, alpha in fitted.items():
        assert cat.model(m).alpha_comm_s == alpha, m
    assert fitted["resnet18"] == fitted["cifar10"] and fitted["resnet50"] == fitted["imagenet"]


def test_refit_on_pollux_reproduces_the_shipped_constants() -> None:
    root = _data_dir()
    if root is None:
        pytest.skip("../shared/data/profiles/pollux not found (set GPUCLUSTER_DATA): the refit needs Pollux's data")
    cat = default_catalog()
    rows = pollux_rows("imagenet", root)
    assert {r.n_nodes for r in rows} >= {2, 16} and max(r.n_gpus for r in rows) == 64
    assert fit_alpha(cat.model("imagenet"), rows) == pytest.approx(fitted_alpha_comm()["imagenet"], rel=1e-4)
