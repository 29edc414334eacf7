"""Bad trace files (issue #14): absurd numbers, rows with a field more or less, bytes that are not UTF-8,
job-log schema errors, CPU-only rows, Gavel files without durations: each a one-line error naming the file, the
row and the field (exit 2 from the CLI), or a documented drop; never a traceback or a silently changed value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpucluster_env.traces.registry import load_file
from gpucluster_env.traces.tables import MAX_JOB_GPUS, TraceFormatError

from gpucluster_env.cli.main import main

PHILLY = ("timestamp,duration,num_gpus,gpu_time,cluster\n"
          "2017-10-03 10:00:00,100.0,1,100.0,vc1\n"
          "2017-10-03 09:00:00,3600.0,8,28800.0,vc2\n"
          "2017-10-03 11:30:00,50.0,2,100.0,vc1\n")
HELIOS = ("job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
          "j1,uA,vcX,8,48,1,COMPLETED,2020-04-01 00:10:00,2020-04-01 00:10:05,2020-04-01 01:10:05,3600,5\n"
          "j2,uB,vcY,0,4,1,COMPLETED,2020-04-01 00:20:00,2020-04-01 00:20:00,2020-04-01 00:21:00,60,0\n"
          "j3,uB,vcY,1,6,1,FAILED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 00:00:30,30,0\n")
OPENB = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
         "scheduled_time\n"
         "p0,12000,16384,1,1000,,LS,Running,0,1000,0\n"
         "p1,6000,12288,1,460,V100M16|V100M32,LS,Succeeded,100,400,110\n")
GAVEL = ("ResNet-50 (batch size 64)\tcd %s && python3 main.py\t-n\t1\t5000\t0.000000\t4\n"
         "Transformer (batch size 128)\tcd %s && python3 train.py\t-step\t1\t95121\t6.000000\t1\n")
PAI_JOBS = "jA,1,u1,Terminated,100.0,700.0\njB,2,u2,Terminated,50.0,60.0\n"
PAI_TASKS = ("jA,worker,2,Terminated,100.0,700.0,600.0,29.0,100.0,V100\n"
             "jB,worker,1,Terminated,50.0,60.0,600.0,29.0,50,T4\n")


def job_log(gpus: int = 2) -> list[dict]:
    return [{"jobid": "application_1", "vc": "vc1", "user": "u1", "status": "Pass",
             "submitted_time": "2017-10-03 02:00:00",
             "attempts": [{"start_time": "2017-10-03 02:00:05", "end_time": "2017-10-03 02:10:05",
                           "detail": [{"ip": "m1", "gpus": [f"gpu{i}" for i in range(gpus)]}]}]},
            {"jobid": "application_2", "vc": "vc1", "user": "u1", "status": "Pass",
             "submitted_time": "2017-10-03 03:00:00",
             "attempts": [{"start_time": "2017-10-03 03:00:05", "end_time": "2017-10-03 03:10:05",
                           "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}]}]


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def cli_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the CLI expecting exit 2 and one line on stderr; return that line."""
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("name, text, old, new, fld", [
    ("philly_jobs.csv", PHILLY, ",8,28800", ",1e20,28800", "num_gpus"),
    ("philly_jobs.csv", PHILLY, ",8,28800", ",inf,28800", "num_gpus"),
    ("philly_jobs.csv", PHILLY, ",8,28800", ",2.5,28800", "num_gpus"),
    ("philly_jobs.csv", PHILLY, "3600.0,8", "inf,8", "duration"),
    ("philly_jobs.csv", PHILLY, "3600.0,8", "1e300,8", "duration"),
    ("cluster_log.csv", HELIOS, "vcX,8,48", "vcX,1e20,48", "gpu_num"),
    ("cluster_log.csv", HELIOS, ",3600,5", ",1e300,5", "duration"),
    ("openb_pod_list_a.csv", OPENB, "LS,Running,0,1000,0", "LS,Running,0,1e300,0", "deletion_time"),
    ("openb_pod_list_a.csv", OPENB, "p1,6000,12288,1", "p1,6000,12288,1e20", "num_gpu"),
    ("vcA.trace", GAVEL, "\t4\n", "\t1e20\n", "scale_factor"),
    ("vcA.trace", GAVEL, "\t5000\t", "\tinf\t", "total_steps"),
])
def test_absurd_numbers_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str,
                                   old: str, new: str, fld: str) -> None:
    assert old in text
    p = write(tmp_path, name, text.replace(old, new, 1))
    err = cli_error(capsys, "traces", "info", str(p))
    assert str(p) in err and "row " in err and f"'{fld}'" in err
    assert cli_error(capsys, "traces", "sample", "x", "--file", str(p), "--out", str(tmp_path / "o.csv"))
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("plan_gpu, inst", [("inf", "2"), ("100.0", "inf"), ("100.0", "1e20")])
def test_pai_infinite_gpus_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], plan_gpu: str,
                                      inst: str) -> None:
    jobs = write(tmp_path, "pai_job_table.csv", PAI_JOBS)
    write(tmp_path, "pai_task_table.csv", PAI_TASKS.replace("jA,worker,2", f"jA,worker,{inst}").replace(
        "29.0,100.0,V100", f"29.0,{plan_gpu},V100"))
    err = cli_error(capsys, "traces", "info", str(jobs))
    assert "pai_task_table.csv: row 1" in err and ("'plan_gpu'" in err or "'inst_num'" in err)


def test_pai_all_jobs_dropped_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = write(tmp_path, "pai_job_table.csv", PAI_JOBS)
    write(tmp_path, "pai_task_table.csv", PAI_TASKS.replace("100.0,V100", ",").replace("50,T4", ","))
    assert "no finished GPU job left" in cli_error(capsys, "traces", "info", str(jobs))


@pytest.mark.parametrize("name, text, row_text, change", [
    ("cluster_log.csv", HELIOS, "j3,uB,vcY,1,6,", "j3,uB,vcY,1,6,EXTRA,"),  # a field more: every column shifts
    ("cluster_log.csv", HELIOS, "j3,uB,vcY,1,6,", "j3,vcY,1,6,"),  # a field less
    ("philly_jobs.csv", PHILLY, "11:30:00,50.0,2,", "11:30:00,50.0,2,7,"),
    ("openb_pod_list_a.csv", OPENB, "p1,6000,", "p1,"),
    ("vcA.trace", GAVEL, "\t-step\t1\t", "\t-step\t"),
])
def test_rows_with_a_field_more_or_less_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                                   text: str, row_text: str, change: str) -> None:
    assert row_text in text
    p = write(tmp_path, name, text.replace(row_text, change))
    row = next(i for i, ln in enumerate(text.splitlines()[(0 if name.endswith(".trace") else 1):], 1)
               if row_text in ln)
    err = cli_error(capsys, "traces", "info", str(p))
    assert f"{p}: row {row}: expected" in err and "fields" in err
    df, rep = load_file(p, skip_bad_rows=True)  # --skip-bad-rows: that row skipped and reported, the rest kept
    assert rep.skipped_count == 1 and rep.skipped[0][0] == row and len(df) >= 1


def test_helios_extra_field_does_not_shift_columns_with_skip(tmp_path: Path) -> None:
    p = write(tmp_path, "cluster_log.csv", HELIOS.replace("j3,uB,vcY,1,6,", "j3,uB,vcY,1,6,EXTRA,"))
    df, _ = load_file(p, skip_bad_rows=True)
    assert df["job_id"].tolist() == ["j1"] and df["user"].tolist() == ["uA"] and df["num_gpus"].tolist() == [8]


def test_bytes_not_utf8_name_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import gzip

    p = write(tmp_path, "philly_jobs.csv", PHILLY.encode().replace(b"vc2", b"vc\xf2"))
    assert f"{p}: line 3, column" in cli_error(capsys, "traces", "info", str(p))
    g = write(tmp_path, "philly_jobs.csv.gz", gzip.compress(PHILLY.encode().replace(b"vc2", b"vc\xf2")))
    assert f"{g}: line 3" in cli_error(capsys, "traces", "info", str(g))


def test_zero_gpu_rows_dropped_by_every_loader(tmp_path: Path) -> None:
    philly = write(tmp_path, "philly_jobs.csv", PHILLY.replace("100.0,1,100.0", "100.0,0,0"))
    df, rep = load_file(philly)
    assert len(df) == 2 and rep.dropped["CPU-only"] == 1 and (df["num_gpus"] > 0).all()
    log = write(tmp_path, "cluster_job_log", json.dumps(job_log(gpus=0)))
    df, rep = load_file(log)
    assert df["job_id"].tolist() == ["application_2"] and rep.dropped["CPU-only"] == 1
    helios, _ = load_file(write(tmp_path, "cluster_log.csv", HELIOS))
    assert (helios["num_gpus"] > 0).all()


@pytest.mark.parametrize("mutate, fld", [
    (lambda j: j[0].update(attempts=5), "attempts"),
    (lambda j: j[0].update(attempts=[5]), "attempts"),
    (lambda j: j[0]["attempts"][0].update(detail=5), "attempts.detail"),
    (lambda j: j[0]["attempts"][0].update(detail=[{"gpus": 3}]), "attempts.detail.gpus"),
    (lambda j: j[0]["attempts"][0].update(start_time=5), "attempts.start_time"),
    (lambda j: j[0].update(jobid={"a": 1}), "jobid"),
    (lambda j: j.__setitem__(0, 7), "jobid"),
    (lambda j: j[0].pop("submitted_time"), "submitted_time"),
])
def test_job_log_schema_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], mutate, fld: str) -> None:
    jobs = job_log()
    mutate(jobs)
    p = write(tmp_path, "cluster_job_log", json.dumps(jobs))
    assert f"{p}: row 1: field '{fld}'" in cli_error(capsys, "traces", "info", str(p))
    df, rep = load_file(p, skip_bad_rows=True)
    assert rep.skipped_count == 1 and df["job_id"].tolist() == ["application_2"]


def test_job_log_gpus_per_job_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, "cluster_job_log", json.dumps(job_log(gpus=MAX_JOB_GPUS + 1)))
    err = cli_error(capsys, "traces", "info", str(p))
    assert f"{p}: row 1: field 'attempts.detail.gpus': not an integer from 0 to {MAX_JOB_GPUS:,}" in err
    df, rep = load_file(p, skip_bad_rows=True)
    assert rep.skipped_count == 1 and df["job_id"].tolist() == ["application_2"]


def test_pai_job_name_is_one_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = write(tmp_path, "pai_job_table.csv", PAI_JOBS + "jA,3,u3,Terminated,800.0,900.0\n")
    write(tmp_path, "pai_task_table.csv", PAI_TASKS)
    err = cli_error(capsys, "traces", "info", str(jobs))
    assert f"{jobs}: row 3: field 'job_name': repeats an earlier row's value" in err
    df, rep = load_file(jobs, skip_bad_rows=True)  # the first row stays; its tasks are not counted twice
    assert rep.skipped_count == 1 and sorted(df["job_id"]) == ["jA", "jB"]
    assert df.set_index("job_id").loc["jA", "num_gpus"] == 2


def test_job_log_nested_too_deeply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, "cluster_job_log", "[" * 100_000 + "]" * 100_000)
    assert "nested too deeply" in cli_error(capsys, "traces", "info", str(p))


def test_gavel_files_info_and_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, "vcA.trace", GAVEL)
    assert main(["traces", "info", str(p), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["stats"]["jobs"] == 2 and info["stats"]["mean duration (s)"] is None
    out = tmp_path / "s.csv"
    assert main(["traces", "sample", "x", "--file", str(p), "--jobs", "2", "--window", "all", "--out", str(out)]) == 0
    assert out.read_text().count("\n") == 3


def test_unclear_messages_made_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "nope.csv: no such file" in cli_error(capsys, "traces", "sample", "x", "--file", str(tmp_path / "nope.csv"),
                                                 "--out", str(tmp_path / "o.csv"))
    assert "nope.csv: no such file" in cli_error(capsys, "run", "--trace", str(tmp_path / "nope.csv"))
    with pytest.raises(TraceFormatError, match="row 2: expected 5 fields"):
        load_file(write(tmp_path, "philly_jobs.csv", PHILLY.replace(",8,", ",8,8,8,")))


@pytest.mark.parametrize("args", [
    ["--downscale", "0"], ["--max-gpus", "0"], ["--max-gpus", "-1", "--drop-oversize"], ["--jobs", "0"],
    ["--drop-oversize"],
])
def test_sample_rejects_absurd_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    out = tmp_path / "o.csv"
    cli_error(capsys, "traces", "sample", "synthetic:philly", "--out", str(out), *args)
    assert not out.exists()
