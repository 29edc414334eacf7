"""``gpucluster catalog validate`` and ``fit-interference`` end to end (need ../shared/data; skipped without)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpucluster_env.cli.main import main

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("GPUCLUSTER_DATA", REPO.parent / "shared" / "data"))
needs_data = pytest.mark.skipif(
    not ((DATA / "profiles" / "gavel").is_dir() and (DATA / "profiles" / "lucid_rtx3090").is_dir()),
    reason=f"public profiles (gavel, lucid_rtx3090) not found at {DATA} (set GPUCLUSTER_DATA to a copy of "
           "shared/data)",
)


@needs_data
def test_validate_json(capsys):
    assert main(["catalog", "validate", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    for key in ("solo_tput_median_rel_err", "xi_rmse", "predictor_rmse", "predictor_mape_median",
                "predictor_decision_agreement", "comm_fit", "xi_heldout_rmse", "xi_heldout_mape_median"):
        assert key in rep, key
    assert rep["solo_tput_median_rel_err"]["V100"] <= 0.10


@pytest.mark.slow
@needs_data
def test_fit_interference_writes_loadable_files(tmp_path, capsys):
    assert main(["catalog", "fit-interference", "--seeds", "1", "--out-dir", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["evaluation"]) == {"K80", "P100", "V100", "RTX3090"}
    assert (tmp_path / "xi_table.json").is_file() and (tmp_path / "xi_predictor.json").is_file()
    assert json.loads((tmp_path / "xi_predictor.json").read_text())


def test_validate_without_data_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GPUCLUSTER_DATA", str(tmp_path))
    assert main(["catalog", "validate"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "simulation_throughputs.json" in err[0]


def test_catalog_without_subcommand_names_the_actions_in_one_line(capsys):
    assert main(["catalog"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "an action is required" in err[0] and "validate" in err[0]


def test_list_marks_estimated_values(capsys):
    assert main(["catalog", "list", "--gpu", "A40", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["model"]: r for r in out["models"]}
    assert out["gpu_speed_estimated"] is True
    assert rows["resnet18"]["speed_estimated"] and rows["resnet18"]["demand_estimated"]
    assert 0 < rows["resnet18"]["demand"] < 1
    assert main(["catalog", "list", "--gpu", "V100", "--json"]) == 0
    rows = {r["model"]: r for r in json.loads(capsys.readouterr().out)["models"]}
    assert not rows["resnet50"]["demand_estimated"] and rows["vgg16"]["demand_estimated"]


@needs_data
def test_fit_comm_writes_the_shipped_fit(tmp_path, capsys):
    assert main(["catalog", "fit-comm", "--out-dir", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    shipped = json.loads((REPO / "gpucluster_env" / "data" / "comm_fit.json").read_text())
    assert json.loads((tmp_path / "comm_fit.json").read_text()) == shipped
    assert out["models"]["imagenet"]["nodes"] == [2, 16]
