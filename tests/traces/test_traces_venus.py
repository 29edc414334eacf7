"""Venus from real rows: the two-VC slice's loader, the 10-minute arrivals reader, the refitted synthetic Venus
generator against its fitted targets, the castor-venus trace source, and ``traces compare venus`` end to end
(tests marked ``data`` need ../shared/data and are skipped without it)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from gpucluster_env.traces import registry
from gpucluster_env.traces.comparison import compare, shape_stats, trace_stats
from gpucluster_env.traces.helios_slice import load_helios_slice
from gpucluster_env.traces.profiles import VENUS, VENUS_MEAN_GPUS, VENUS_MEAN_RUN_S, VENUS_MEDIAN_RUN_S
from gpucluster_env.traces.registry import load_file
from gpucluster_env.traces.synthetic import generate
from gpucluster_env.traces.tables import TraceFormatError
from gpucluster_env.traces.venus_fit import (
    ARRIVALS_RELPATH,
    SLICE_RELPATH,
    cluster_stats,
    fit_gpu_pmf,
    fitted_constants,
    load_cluster_arrivals,
)

from gpucluster_env import data_folders
from gpucluster_env.cli.main import main

HEADER = ("job_id,user,tenant,class,submit_time,num_chips,chip_type,num_nodes,duration_s,walltime_limit_s,"
          "final_status")
SLICE = f"""# a provenance line
# another one
{HEADER}
10,uA,vcvGl,finetune,5835000000,128,,16,24.0,24.0,CANCELED
11,uB,vcvlY,finetune,90000000000,8,,1,87326.0,87326.0,COMPLETED
12,uA,vcvGl,finetune,7200000000,2,,1,176.0,176.0,FAILED
"""


def _data_root() -> Path:
    root = next((r for r in registry.data_roots() if (r / SLICE_RELPATH).is_file()
                 and (r / ARRIVALS_RELPATH).is_file()), None)
    if root is None:
        pytest.skip(f"{SLICE_RELPATH} and {ARRIVALS_RELPATH} not found under $GPUCLUSTER_DATA or ../shared/data")
    return root


def _write(tmp_path: Path, text: str, name: str = "venus_slice.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_slice_loader_reads_the_schema(tmp_path: Path) -> None:
    """Microsecond submit times from 2020-09-01 (a Tuesday) become seconds from the earliest job, with the
    earliest job's hour and weekday; tenant is the VC, final_status the status; the format is sniffed past the
    '#' preamble."""
    p = _write(tmp_path, SLICE)
    df, rep = load_helios_slice(p)
    assert rep.rows_read == 3 and rep.skipped_count == 0
    assert df["job_id"].tolist() == ["10", "12", "11"]
    assert df["submit_s"].tolist() == [0.0, 7200.0 - 5835.0, 90000.0 - 5835.0]
    assert df["num_gpus"].tolist() == [128, 2, 8] and df["duration_s"].tolist() == [24.0, 176.0, 87326.0]
    assert df["vc"].tolist() == ["vcvGl", "vcvGl", "vcvlY"] and df["status"].tolist()[0] == "CANCELED"
    assert df.attrs["start_hour"] == pytest.approx(5835.0 / 3600.0) and df.attrs["start_weekday"] == 1
    assert registry.guess_format(p) == "helios-slice"
    assert load_file(p)[0].equals(df)


@pytest.mark.parametrize("old, new, row, field", [
    ("8,,1,87326.0", "2.5,,1,87326.0", 2, "num_chips"),
    ("176.0,176.0,FAILED", "-1,176.0,FAILED", 3, "duration_s"),
    ("90000000000", "soon", 2, "submit_time"),
    ("90000000000", "-5", 2, "submit_time"),
    ("10,uA", ",uA", 1, "job_id"),
])
def test_slice_loader_bad_rows_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   old: str, new: str, row: int, field: str) -> None:
    p = _write(tmp_path, SLICE.replace(old, new, 1))
    with pytest.raises(TraceFormatError, match=rf"^{p}: row {row}: field '{field}': [^\n]+$"):
        load_helios_slice(p)
    df, rep = load_helios_slice(p, skip_bad_rows=True)
    assert len(df) == 2 and rep.skipped[0][:2] == (row, field)
    assert main(["traces", "info", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"row {row}: field '{field}'" in err


def test_slice_loader_file_level_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no header line after the '#' lines"):
        load_helios_slice(_write(tmp_path, "# only\n# comments\n"))
    with pytest.raises(TraceFormatError, match="missing column.*'num_chips'"):
        load_helios_slice(_write(tmp_path, SLICE.replace("num_chips", "gpus")))
    with pytest.raises(TraceFormatError, match="row 1: expected 11 fields"):
        load_helios_slice(_write(tmp_path, SLICE.replace("CANCELED", "CANCELED,extra")))


def _bins(days: int) -> str:
    """10-minute bins: one 8-GPU job per bin on weekdays 9:00-17:00, 1 GPU job elsewhere, none at weekends."""
    t = pd.date_range("2020-04-06", periods=days * 144, freq="10min")  # a Monday
    busy = (t.hour >= 9) & (t.hour < 17)
    jobs = np.where(t.day_of_week >= 5, 0, 1)
    gpus = np.where(busy, 8, 1) * jobs
    return "time,submit_gpu_job,submit_gpu_num\n" + "".join(
        f"{a:%Y-%m-%d %H:%M:%S},{j},{g}\n" for a, j, g in zip(t, jobs, gpus, strict=True))


def test_cluster_arrivals_stats_and_errors(tmp_path: Path) -> None:
    st = cluster_stats(load_cluster_arrivals(_write(tmp_path, _bins(14), "arr.csv")))
    assert st["rate_per_hour"] == pytest.approx(6.0 * 5 / 7)
    assert st["weekly"][5] == st["weekly"][6] == 0.0 and st["weekly"][0] == pytest.approx(7 / 5)
    assert np.allclose(st["hourly"], 1.0) and st["mean_gpus"] == pytest.approx((8 * 8 + 16) / 24)
    assert st["single_pmf"] == {1: pytest.approx(2 / 3), 8: pytest.approx(1 / 3)}
    bad = _bins(14).replace(",1,8\n", ",2,1\n", 1)
    with pytest.raises(TraceFormatError, match=r"row \d+: field 'submit_gpu_num': fewer GPUs than GPU jobs"):
        load_cluster_arrivals(_write(tmp_path, bad, "bad.csv"))
    with pytest.raises(TraceFormatError, match=r"row 1: field 'time': not a timestamp"):
        load_cluster_arrivals(_write(tmp_path, _bins(14).replace("2020-04-06 00:00:00", "Monday"), "b2.csv"))


def test_gpu_pmf_tail_reweighted_to_the_whole_log_mean() -> None:
    single = {1: 0.5, 8: 0.3, 16: 0.15, 64: 0.05}
    values, probs = fit_gpu_pmf(single, 10.0)
    p = dict(zip(values, probs, strict=True))
    assert sum(probs) == pytest.approx(1.0, abs=1e-5)
    assert sum(v * q for v, q in p.items()) == pytest.approx(10.0, abs=1e-4)
    assert p[1] / p[8] == pytest.approx(0.5 / 0.3, rel=1e-4) and p[16] / p[64] == pytest.approx(3.0, rel=1e-4)
    with pytest.raises(ValueError, match="cannot reach a mean"):
        fit_gpu_pmf(single, 100.0)


def test_synthetic_venus_within_tolerance_of_its_fitted_targets() -> None:
    """20,000 jobs: mean GPUs within 5% of the whole log's 6.733 (the pmf is fitted to it) and each GPU bin
    within 0.015 of the profile; median run time within 10% of the published 204 s and the mean within 15% of
    13,040.6 s (a check: the shape comes from the slice); arrivals per hour within 5%; night share within 0.02,
    weekend / weekday within 0.05 of the fitted profile."""
    syn = generate(VENUS, 20000, np.random.default_rng(7))
    st = trace_stats(syn)
    g, p = np.array(VENUS.gpu_values), np.array(VENUS.gpu_probs)
    assert st["mean gpus"] == pytest.approx(VENUS_MEAN_GPUS, rel=0.05)
    for b in (1, 2, 4, 8, 16, 32):
        assert st[f"gpus={b}"] == pytest.approx(float(p[g == b].sum()), abs=0.015), b
    assert st["duration p50 (s)"] == pytest.approx(VENUS_MEDIAN_RUN_S, rel=0.1)
    assert st["mean duration (s)"] == pytest.approx(VENUS_MEAN_RUN_S, rel=0.15)
    assert st["arrivals per hour"] == pytest.approx(VENUS.rate_per_hour, rel=0.05)
    target = shape_stats(np.array(VENUS.hourly_profile), np.array(VENUS.weekly_profile), float("nan"))
    assert st["night share 0-8 h"] == pytest.approx(target["night share 0-8 h"], abs=0.02)
    assert st["weekend / weekday"] == pytest.approx(target["weekend / weekday"], abs=0.05)
    assert set(syn["status"]) == {"COMPLETED", "CANCELLED", "FAILED"}


@pytest.mark.data
def test_shipped_venus_profile_is_the_fit_of_the_real_files() -> None:
    """No hand-kept numbers: the shipped constants are what :mod:`venus_fit` gets from the files."""
    fit = fitted_constants(_data_root())
    assert fit["gpu_values"] == VENUS.gpu_values and fit["gpu_probs"] == VENUS.gpu_probs
    assert fit["log10_dur"] == VENUS.log10_dur_single == VENUS.log10_dur_multi
    assert fit["rate_per_hour"] == VENUS.rate_per_hour
    assert fit["hourly_profile"] == VENUS.hourly_profile and fit["weekly_profile"] == VENUS.weekly_profile


@pytest.mark.data
def test_real_slice_complete_and_castor_venus_samples_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpucluster_env.traces.scenario_jobs import build_jobs, trace_identity

    from gpucluster_env.catalog import default_catalog
    from gpucluster_env.scenarios import get_scenario

    df, rep = load_helios_slice(_data_root() / SLICE_RELPATH)
    assert len(df) == 1867 and rep.skipped_count == 0 and df["vc"].value_counts().to_dict() == {
        "vcvGl": 1452, "vcvlY": 415}
    sc = get_scenario("castor-venus").with_options(trace="venus-2vc")
    jobs, note = build_jobs(sc, 0, default_catalog())
    assert len(jobs) == 240 and note.startswith("real venus-2vc trace (") and trace_identity(sc).startswith("real:")
    # castor-venus itself stays on the whole cluster (every Venus GPU job): the two VCs are never substituted
    whole = get_scenario("castor-venus")
    full, full_note = build_jobs(whole, 0, default_catalog())
    assert full_note.startswith("real venus-jobs trace (") and trace_identity(whole).startswith("real:")
    assert not full["submit_s"].equals(jobs["submit_s"])
    monkeypatch.setenv("GPUCLUSTER_TRACE_SOURCE", "synthetic")
    with pytest.raises(ValueError, match="no synthetic stand-in"):
        build_jobs(sc, 0, default_catalog())


def _no_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUCLUSTER_DATA", str(tmp_path / "none"))
    monkeypatch.setenv("GPUCLUSTER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(data_folders, "shared_data", lambda: tmp_path / "absent")


def test_castor_venus_without_data_runs_the_shipped_real_jobs(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    """With no data folder castor-venus samples the package's copy of the real Venus jobs (never the synthetic
    stand-in, which runs only when asked for: ``$GPUCLUSTER_TRACE_SOURCE=synthetic``)."""
    from gpucluster_env.traces.scenario_jobs import build_jobs

    from gpucluster_env.catalog import default_catalog
    from gpucluster_env.scenarios import get_scenario

    sc = get_scenario("castor-venus")
    monkeypatch.setenv("GPUCLUSTER_TRACE_SOURCE", "synthetic")
    forced = build_jobs(sc, 3, default_catalog())
    assert "synthetic venus trace" in forced[1]
    monkeypatch.delenv("GPUCLUSTER_TRACE_SOURCE")
    _no_data(monkeypatch, tmp_path)
    absent = build_jobs(sc, 3, default_catalog())
    assert absent[1].startswith("real venus-jobs trace (the package's copy of traces/venus/helios_venus_gpu_jobs")
    assert not absent[0]["submit_s"].equals(forced[0]["submit_s"])


def _stats(capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["traces", "compare", "venus", "--jobs", "6000", "--json"]) == 0  # 6,000 jobs span over a week
    return json.loads(capsys.readouterr().out)


def test_compare_venus_without_data_shows_published_aggregates(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    _no_data(monkeypatch, tmp_path)
    res = _stats(capsys)
    assert "published aggregates" in res["note"] and set(res["stats"]["jobs"]) == {"real", "synthetic"}
    assert res["stats"]["mean gpus"]["real"] == pytest.approx(VENUS_MEAN_GPUS)
    assert res["stats"]["gpus=1"]["real"] is None  # not published: null, never NaN
    assert main(["traces", "compare", "venus", "--jobs", "3000"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower() and out.rstrip().splitlines()[-1].startswith("n/a: ")


@pytest.mark.data
def test_compare_venus_end_to_end_on_the_real_files(capsys: pytest.CaptureFixture[str]) -> None:
    """Three columns, every cell of the real columns a number where the source gives it; the refitted generator
    within its tolerances of the whole cluster's statistics."""
    _data_root()
    res = _stats(capsys)
    s = res["stats"]
    assert set(s["jobs"]) == {"real", "real 2 VCs", "synthetic"} and "lucid_venus" in res["note"]
    assert s["jobs"]["real 2 VCs"] == 1867 and s["mean gpus"]["real 2 VCs"] > 40  # two big-job VCs
    for row in ("gpus=1", "gpus=8", "arrivals per hour", "night share 0-8 h", "weekend / weekday"):
        assert all(s[row][c] is not None and math.isfinite(s[row][c]) for c in s[row]), row
    assert s["mean gpus"]["real"] == pytest.approx(6.733, abs=1e-3)
    assert s["gpus=8"]["synthetic"] == pytest.approx(s["gpus=8"]["real"], abs=0.03)
    assert s["night share 0-8 h"]["synthetic"] == pytest.approx(s["night share 0-8 h"]["real"], abs=0.02)
    assert s["arrivals per hour"]["synthetic"] == pytest.approx(s["arrivals per hour"]["real"], rel=0.1)
    assert main(["traces", "compare", "venus", "--jobs", "3000"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower() and max(len(line) for line in out.splitlines()) <= 80


def test_compare_table_from_a_slice_file(tmp_path: Path) -> None:
    df, _ = load_helios_slice(_write(tmp_path, SLICE))
    table, note = compare("venus", 500, 0, file=df)
    assert list(table.columns) == ["real", "synthetic"] and table.loc["jobs", "real"] == 3
    assert table.loc["mean gpus", "real"] == pytest.approx((128 + 8 + 2) / 3) and "synthetic: 500 jobs" in note
