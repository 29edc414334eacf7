"""One resolver of the data folder (gpucluster_env/data_folders.py): the trace registry, the catalog's measured
profiles and Pollux's workload files all read it, and agree when ``$GPUCLUSTER_DATA`` is set, unset, or set to
something that is not a folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpucluster_env.traces import registry
from gpucluster_env.traces.pollux_workloads import find_pollux_workloads

from gpucluster_env import data_folders
from gpucluster_env.catalog.measured import data_dir


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "shared"
    (root / "traces" / "philly" / "pollux_workloads").mkdir(parents=True)
    (root / "traces" / "philly" / "pollux_workloads" / "workload-1.csv").write_text("name,time\n")
    monkeypatch.setattr(data_folders, "shared_data", lambda: root)
    monkeypatch.setenv("GPUCLUSTER_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUCLUSTER_DATA", raising=False)
    return root


def test_unset_reads_the_shared_folder_after_the_cache(shared: Path, tmp_path: Path) -> None:
    assert data_dir() == shared and registry.data_roots() == [tmp_path / "cache", shared]
    assert find_pollux_workloads() == [shared / "traces/philly/pollux_workloads/workload-1.csv"]


def test_a_set_folder_replaces_the_shared_one(shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    monkeypatch.setenv("GPUCLUSTER_DATA", str(mine))
    assert data_dir() == mine and registry.data_roots() == [mine, tmp_path / "cache"]
    assert find_pollux_workloads() == []


def test_a_set_path_that_is_no_folder_hides_the_data_everywhere(shared: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUCLUSTER_DATA", str(tmp_path / "nowhere"))
    assert data_dir() is None and registry.data_roots() == [tmp_path / "cache"]
    assert find_pollux_workloads() == []
