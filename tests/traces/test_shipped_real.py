"""The package's copies of the real job tables (Philly, Venus, Alibaba PAI 2020): each equals the source it names,
is what a scenario named after its trace reads when no data folder is found, and keeps the same trace identity as
the source file; and the loaders of the two new formats (``helios-jobs``, ``pai-jobs``)."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest
from gpucluster_env.traces import registry
from gpucluster_env.traces.registry import TRACES, guess_format, load_file, shipped_copy
from gpucluster_env.traces.tables import TraceFormatError
from gpucluster_env.traces.trace_sources import SCENARIO_TRACES, trace_identity, trace_source

from gpucluster_env import data_folders
from gpucluster_env.scenarios import SCENARIOS, get_scenario

SHIPPED = [n for n, t in TRACES.items() if t.shipped]


def _no_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUCLUSTER_DATA", str(tmp_path / "none"))
    monkeypatch.setenv("GPUCLUSTER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(data_folders, "shared_data", lambda: tmp_path / "absent")


def test_the_package_ships_philly_venus_and_alibaba_with_their_licence() -> None:
    assert {"philly", "venus-jobs", "alibaba-pai-sample"} <= set(SHIPPED)
    here = registry.SHIPPED_DIR
    attribution = (here / "REAL_TRACES.md").read_text()
    assert "Attribution 4.0 International" in (here / "LICENSE_CC-BY-4.0.txt").read_text(encoding="utf-8-sig")
    for name in SHIPPED:
        spec = TRACES[name]
        assert spec.license == "CC-BY-4.0" and spec.shipped in attribution and spec.files[0].sha256 in attribution
    assert "lucid" not in " ".join(p.name.lower() for p in here.iterdir())  # never the non-commercial files


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_copy_is_its_source_byte_for_byte(name: str) -> None:
    """Decompressed, the copy has the sha256 the registry pins for the source (and, where the data folder has
    the source, the same bytes)."""
    spec = TRACES[name]
    copy = shipped_copy(name)
    assert copy is not None, f"{spec.shipped} missing from {registry.SHIPPED_DIR}"
    data = gzip.decompress(copy.read_bytes())
    assert hashlib.sha256(data).hexdigest() == spec.files[0].sha256
    source = next((r / spec.primary for r in registry.data_roots() if (r / spec.primary).is_file()), None)
    if source is not None:
        assert source.read_bytes() == data


@pytest.mark.parametrize("trace", ["philly", "venus", "alibaba"])
def test_named_traces_run_real_jobs_without_a_data_folder(trace: str, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    _no_data(monkeypatch, tmp_path)
    df, note = trace_source(trace)
    assert note.startswith("real ") and "the package's copy of traces/" in note
    assert len(df) == {"philly": 82_247, "venus": 125_303, "alibaba": 6_000}[trace]


def test_every_scenario_named_after_a_trace_is_real_on_a_fresh_machine(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    """Every registered scenario whose trace is a named one reads a real file with no data folder; its identity
    is the source file's, so a record made here verifies where the data folder is (and back)."""
    _no_data(monkeypatch, tmp_path)
    named = [s for s in SCENARIOS if get_scenario(s).trace in SCENARIO_TRACES]
    assert {"castor-philly", "castor-venus", "gimbal-alibaba", "alibaba-hetero"} <= set(named)
    for s in named:
        ident = trace_identity(get_scenario(s))
        assert ident.startswith("real:"), (s, ident)


@pytest.mark.data
def test_the_copy_has_the_identity_of_the_source(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with_data = {s: trace_identity(get_scenario(s)) for s in ("castor-philly", "castor-venus", "gimbal-alibaba")}
    if not all(v.startswith("real:") for v in with_data.values()):
        pytest.skip("the real trace files are not under $GPUCLUSTER_DATA or ../shared/data")
    _no_data(monkeypatch, tmp_path)
    assert {s: trace_identity(get_scenario(s)) for s in with_data} == with_data


def test_synthetic_stand_ins_run_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUCLUSTER_TRACE_SOURCE", "synthetic")
    _, note = trace_source("venus")
    assert note.startswith("synthetic venus trace")
    assert trace_identity(get_scenario("castor-venus")) == "synthetic"


VENUS_JOBS = "job_id,arrival_s,service_sec,gpu_count\n7#0,0.0,172800.0,32\n9#1,3600.0,60.0,1\n8#2,60.0,5.5,8\n"
PAI_JOBS = ("job_name,inst_id,user,start_time,end_time,duration_seconds,task_count,instance_count,"
            "requested_cpu_percent,requested_memory_units,requested_gpu_units,gpu_types,job_id,duration,num_cpu,"
            "num_gpu,submit_time,num_inst\n"
            "a,1,u1,3.0,15751.0,15748.0,1,12.0,6.0,0.0,0.25,T4,1,15748.0,72.0,3.0,3.0,12.0\n"
            "a,2,u1,5.0,89.0,84.0,1,1.0,6.0,0.0,1.0,MISC,2,84.0,6.0,0.25,5.0,1.0\n"
            "b,3,u2,9.0,19.0,10.0,1,1.0,6.0,0.0,1.0,V100,3,10.0,6.0,0.0,9.0,1.0\n")


def test_venus_jobs_loader(tmp_path: Path) -> None:
    p = tmp_path / "venus_jobs.csv"
    p.write_text(VENUS_JOBS)
    assert guess_format(p) == "helios-jobs"
    df, rep = load_file(p)
    assert list(df["job_id"]) == ["7#0", "8#2", "9#1"] and list(df["num_gpus"]) == [32, 8, 1]
    assert list(df["capped"]) == [True, False, False] and df.attrs["capped"] == 1
    assert df.attrs["start_hour"] == pytest.approx(4 + 1 / 60 + 39 / 3600) and df.attrs["start_weekday"] == 2
    p.write_text(VENUS_JOBS + "7#0,9.0,1.0,1\n")
    with pytest.raises(TraceFormatError, match=r"row 4: field 'job_id': repeats"):
        load_file(p)
    p.write_text(VENUS_JOBS.replace("5.5,8", "5.5,2.5"))
    with pytest.raises(TraceFormatError, match=r"row 3: field 'gpu_count'"):
        load_file(p)


def test_pai_jobs_loader(tmp_path: Path) -> None:
    """One row a job keyed by ``job_id`` (``job_name`` repeats); fractional GPUs rounded up for placement and
    kept as requested; the GPU model kept; jobs with no GPU dropped and counted."""
    p = tmp_path / "pai_gpu_jobs_x.csv"
    p.write_text(PAI_JOBS)
    assert guess_format(p) == "pai-jobs"
    df, rep = load_file(p)
    assert list(df["job_id"]) == ["1", "2"] and list(df["num_gpus"]) == [3, 1]
    assert list(df["gpu_request"]) == [3.0, 0.25] and list(df["gpu_type"]) == ["T4", "MISC"]
    assert list(df["submit_s"]) == [0.0, 2.0] and rep.dropped["CPU-only"] == 1
    p.write_text(PAI_JOBS.replace("72.0,3.0,3.0", "72.0,-3.0,3.0"))
    with pytest.raises(TraceFormatError, match=r"row 1: field 'num_gpu'"):
        load_file(p)
