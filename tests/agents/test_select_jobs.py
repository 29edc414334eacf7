"""``gpucluster train --select-seeds`` on the job-centric process: the candidates are played as job-centric models
(the selection once played them through the full vocabulary's policy and stopped the run with a shape error)."""

from __future__ import annotations

import json
from pathlib import Path

from gpucluster_env.cli.main import main


def test_selection_plays_job_centric_candidates(tmp_path: Path) -> None:
    out = tmp_path / "sel"
    assert main(["train", "--scenario", "tiny", "--windows", "", "--timesteps", "128", "--n-steps", "64",
                 "--checkpoint-freq", "64", "--eval-freq", "100000", "--select-seeds", "0",
                 "--out", str(out), "--no-progress"]) == 0
    sel = json.loads((out / "meta.json").read_text())["selection"]
    assert sel["seeds"] == [0] and "final" in sel["scores"] and len(sel["scores"]) >= 2
    assert all(row["score"] > 0 and row["tiny"] > 0 for row in sel["scores"].values())
    assert (out / "model.zip").is_file() and (out / "final_model.zip").is_file()
