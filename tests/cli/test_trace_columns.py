"""Any CSV of jobs runs as a trace with one ``--columns`` flag: its own column names, times in minutes or hours,
a model column used as each job's model; one list of trace formats everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpucluster_env.traces.column_map import parse_columns
from gpucluster_env.traces.registry import load_file

from gpucluster_env.cli.main import main

ROWS = ["id,arrival_min,gpus,runtime_h,arch", "a1,0,1,0.5,resnet50", "a2,2,2,0.75,bert", "a3,5,4,2,resnet50",
        "a4,9,1,0.25,ncf"]
SPEC = "job_id=id,submit_s=arrival_min:min,num_gpus=gpus,duration_s=runtime_h:h,model=arch"


def _csv(tmp_path: Path, rows: list[str] = ROWS) -> Path:
    f = tmp_path / "lab.csv"
    f.write_text("\n".join(rows) + "\n")
    return f


def test_a_column_map_reads_names_and_units(tmp_path: Path) -> None:
    df, rep = load_file(_csv(tmp_path), columns=SPEC)
    assert list(df["job_id"]) == ["a1", "a2", "a3", "a4"] and list(df["submit_s"]) == [0.0, 120.0, 300.0, 540.0]
    assert list(df["duration_s"]) == [1800.0, 2700.0, 7200.0, 900.0] and list(df["model"])[1] == "bert"
    df2, _ = load_file(_csv(tmp_path), columns="submit_s=arrival_min:min,num_gpus=gpus,duration_s=runtime_h:h")
    assert list(df2["job_id"]) == ["row-1", "row-2", "row-3", "row-4"] and "model" not in df2.columns


def test_a_users_csv_runs_with_one_flag_its_models_used_and_the_record_verifies(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    f, rec = _csv(tmp_path), tmp_path / "lab.jsonl"
    assert main(["run", "--trace", str(f), "--cluster", "V100:2x4", "--policy", "sjf", "--columns", SPEC, "--json",
                 "--no-progress", "--record", str(rec)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["jobs_done"] == 4 and not res["truncated"]
    head = json.loads(rec.read_text().splitlines()[0])
    assert 'annotate = "file-models"' in head["scenario_spec"] and "trace_columns" in head["scenario_spec"]
    assert main(["replay", str(rec), "--verify"]) == 0


@pytest.mark.parametrize(("spec", "needle"), [
    ("submit_s=arrival_min:days,num_gpus=gpus,duration_s=runtime_h", "unknown unit 'days'"),
    ("submit_s=arrival_min,duration_s=runtime_h", "missing num_gpus"),
    ("submit_s=nope,num_gpus=gpus,duration_s=runtime_h", "missing column(s) 'nope'"),
    ("submit_s=arrival_min,num_gpus=gpus:min,duration_s=runtime_h", "'num_gpus' takes no unit"),
    ("size=gpus,submit_s=arrival_min,num_gpus=gpus,duration_s=runtime_h", "unknown field 'size'"),
])
def test_a_bad_column_map_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture, spec: str, needle: str) -> None:
    assert main(["run", "--trace", str(_csv(tmp_path)), "--cluster", "V100:2x4", "--columns", spec]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1, err


def test_a_model_the_catalog_lacks_and_a_bad_row_are_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    f = _csv(tmp_path, [*ROWS, "a5,12,2,1,mysterynet"])
    assert main(["run", "--trace", str(f), "--cluster", "V100:2x4", "--columns", SPEC]) == 2
    assert "'mysterynet'" in capsys.readouterr().err
    f = _csv(tmp_path, [*ROWS, "a5,12,2,soon,bert"])
    assert main(["run", "--trace", str(f), "--cluster", "V100:2x4", "--columns", SPEC]) == 2
    err = capsys.readouterr().err
    assert "row 5" in err and "duration_s" in err, err


def test_one_list_of_formats_everywhere(capsys: pytest.CaptureFixture) -> None:
    from gpucluster_env.traces.trace_options import TRACE_FILE_FORMATS

    for argv in (["run", "--help"], ["traces", "info", "--help"], ["traces", "sample", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        text = " ".join(capsys.readouterr().out.split())
        assert "{" + ",".join(TRACE_FILE_FORMATS) + "}" in text, argv
    assert parse_columns("submit_s=a,num_gpus=b,duration_s=c")["submit_s"] == ("a", 1.0)
    # every listed format has a loader and every loader is listed; every named trace's loader is a format
    from gpucluster_env.traces.registry import TRACES, loader_for

    assert all(callable(loader_for(f)) for f in TRACE_FILE_FORMATS)
    with pytest.raises(ValueError, match="unknown trace format 'nope'; known: " + ", ".join(TRACE_FILE_FORMATS)):
        loader_for("nope")
    assert {t.loader for t in TRACES.values()} <= set(TRACE_FILE_FORMATS)


def test_a_pollux_workload_file_is_a_trace_format(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Pollux's ``workload-N.csv`` (name, time, application, num_replicas, batch_size) is sniffed and runs with
    each job's own application, GPUs and batch (recipe ``trace``)."""
    from gpucluster_env.traces.registry import guess_format

    f = tmp_path / "workload-x.csv"
    f.write_text("name,time,application,num_replicas,batch_size\ncifar10-0,0,cifar10,2,256\n"
                 "ncf-1,60,ncf,1,32768\nbert-2,90,bert,4,48\n")
    assert guess_format(f) == "pollux-workload"
    df, _ = load_file(f)
    assert list(df["model"]) == ["cifar10", "ncf", "bert"] and list(df["num_gpus"]) == [2, 1, 4]
    assert (df["iterations"] > 0).all()
    assert main(["run", "--trace", str(f), "--cluster", "T4:2x4", "--policy", "tiresias", "--json",
                 "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs_done"] == 3
    f.write_text("name,time,application,num_replicas,batch_size\nx,0,quantumnet,2,256\n")
    assert main(["run", "--trace", str(f), "--cluster", "T4:2x4"]) == 2
    assert "row 2" in capsys.readouterr().err


def test_a_trace_run_says_when_gangs_must_spread(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    f = _csv(tmp_path)  # jobs of 1, 2, 4 and 1 GPUs
    assert main(["run", "--trace", str(f), "--cluster", "V100:2x4", "--columns", SPEC, "--no-progress"]) == 0
    assert "ask for more than" not in capsys.readouterr().err  # every gang fits a 4-GPU node
    assert main(["run", "--trace", str(f), "--cluster", "V100:8x1", "--columns", SPEC, "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "warning: 2 of the 2 multi-GPU jobs" in err and "consolidated placement" in err
