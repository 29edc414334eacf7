"""Trace loaders on small fixture files written in each official schema, on the real files in ../shared/data
(skipped when absent), and on bad input (one-line errors naming file, row and field; --skip-bad-rows)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from gpucluster_env.traces.alibaba import load_openb_pods, load_pai
from gpucluster_env.traces.gavel import load_gavel_dir, load_gavel_trace, parse_job_type
from gpucluster_env.traces.helios import load_helios
from gpucluster_env.traces.philly import load_philly_csv, load_philly_job_log
from gpucluster_env.traces.registry import load_file
from gpucluster_env.traces.tables import NORMALIZED_COLUMNS, TraceFormatError


def shared_data() -> Path | None:
    env = os.environ.get("GPUCLUSTER_DATA")
    root = Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared" / "data"
    return root if root.exists() else None


def real_file(rel: str) -> Path:
    root = shared_data()
    if root is None or not (root / rel).exists():
        pytest.skip(f"real trace file {rel} not found under $GPUCLUSTER_DATA or ../shared/data")
    return root / rel


PHILLY_CSV = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-03 10:00:00,100.0,1,100.0,vc1
2017-10-03 09:00:00,3600.0,8,28800.0,vc2
2017-10-03 11:30:00,50.0,2,100.0,vc1
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_philly_csv_fixture(tmp_path: Path) -> None:
    df, rep = load_philly_csv(write(tmp_path, "philly_jobs.csv", PHILLY_CSV))
    assert list(df.columns[:7]) == list(NORMALIZED_COLUMNS)
    assert df["submit_s"].tolist() == [0.0, 3600.0, 9000.0]
    assert df["num_gpus"].tolist() == [8, 1, 2]
    assert df["vc"].tolist() == ["vc2", "vc1", "vc1"]
    assert df.attrs["start_hour"] == 9.0 and rep.rows_read == 3


def test_philly_csv_gzip_is_read_by_content(tmp_path: Path) -> None:
    p = tmp_path / "philly_jobs.csv.gz"
    p.write_bytes(gzip.compress(PHILLY_CSV.encode()))
    assert len(load_file(p)[0]) == 3


@pytest.mark.parametrize(
    "text, row, field",
    [
        (PHILLY_CSV.replace("2017-10-03 09:00:00", "yesterday"), 2, "timestamp"),
        (PHILLY_CSV.replace("3600.0,8", "-5,8"), 2, "duration"),
        (PHILLY_CSV.replace("50.0,2,", "50.0,two,"), 3, "num_gpus"),
    ],
)
def test_philly_csv_bad_row_names_file_row_field(tmp_path: Path, text: str, row: int, field: str) -> None:
    p = write(tmp_path, "philly_jobs.csv", text)
    with pytest.raises(TraceFormatError) as e:
        load_philly_csv(p)
    msg = str(e.value)
    assert str(p) in msg and f"row {row}" in msg and repr(field) in msg and "\n" not in msg
    df, rep = load_philly_csv(p, skip_bad_rows=True)
    assert len(df) == 2 and rep.skipped_count == 1 and rep.skipped[0][:2] == (row, field)
    assert "1 bad rows skipped" in rep.summary()


def test_missing_column_empty_file_and_fake_gzip(tmp_path: Path) -> None:
    p = write(tmp_path, "philly_jobs.csv", PHILLY_CSV.replace("num_gpus", "gpus"))
    with pytest.raises(TraceFormatError, match=r"philly_jobs.csv: missing column\(s\) 'num_gpus'"):
        load_philly_csv(p)
    with pytest.raises(TraceFormatError, match="empty file"):
        load_philly_csv(write(tmp_path, "empty.csv", ""))
    with pytest.raises(TraceFormatError, match="named .gz but is not gzip"):
        load_philly_csv(write(tmp_path, "philly_jobs.csv.gz", PHILLY_CSV))


def test_philly_job_log_fixture(tmp_path: Path) -> None:
    jobs = [
        {
            "jobid": "application_1",
            "vc": "vc1",
            "user": "u1",
            "status": "Pass",
            "submitted_time": "2017-10-03 02:00:00",
            "attempts": [
                {
                    "start_time": "2017-10-03 02:00:05",
                    "end_time": "2017-10-03 02:10:05",
                    "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}],
                }
            ],
        },
        {
            "jobid": "application_2",
            "vc": "vc2",
            "user": "u2",
            "status": "Killed",
            "submitted_time": "2017-10-03 02:30:00",
            "attempts": [],
        },
        {
            "jobid": "application_3",
            "vc": "vc2",
            "user": "u2",
            "status": "Failed",
            "submitted_time": "2017-10-03 03:00:00",
            "attempts": [
                {
                    "start_time": "2017-10-03 03:00:00",
                    "end_time": "2017-10-03 03:01:00",
                    "detail": [{"ip": "m1", "gpus": ["gpu0"]}],
                },
                {
                    "start_time": "2017-10-03 03:05:00",
                    "end_time": "2017-10-03 03:10:00",
                    "detail": [{"ip": "m2", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]}],
                },
            ],
        },
    ]
    p = write(tmp_path, "cluster_job_log", json.dumps(jobs))
    df, rep = load_file(p)
    assert df["job_id"].tolist() == ["application_1", "application_3"]
    assert df["num_gpus"].tolist() == [2, 4] and df["duration_s"].tolist() == [600.0, 600.0]
    assert df["submit_s"].tolist() == [0.0, 3600.0] and df["status"].tolist() == ["Pass", "Failed"]
    assert rep.dropped["never started"] == 1
    jobs[2]["attempts"][1]["end_time"] = "2017-10-03 02:00:00"
    with pytest.raises(TraceFormatError, match=r"row 3: field 'attempts.end_time'"):
        load_philly_job_log(write(tmp_path, "cluster_job_log", json.dumps(jobs)))


GAVEL = (
    "ResNet-50 (batch size 64)\tcd %s && python3 main.py\t-n\t1\t5000\t0.000000\t4\n"
    "Transformer (batch size 128)\tcd %s && python3 train.py\t-step\t1\t95121\t6.000000\t1\n"
)


def test_gavel_trace_fixture(tmp_path: Path) -> None:
    p = write(tmp_path, "vcA.trace", GAVEL)
    df, _ = load_gavel_trace(p, throughputs={("ResNet-50 (batch size 64)", 4): 10.0})
    assert df["model"].tolist() == ["resnet50", "transformer"]
    assert df["job_type"].tolist()[0] == "ResNet-50 (batch size 64)"
    # 5000 steps summed over 4 workers = 1250 iterations of the gang
    assert df["num_gpus"].tolist() == [4, 1] and df["iterations"].tolist() == [1250, 95121]
    assert df["duration_s"].iloc[0] == 500.0 and df["duration_s"].isna().iloc[1]
    assert df["vc"].iloc[0] == "vcA" and parse_job_type("LM (batch size 20)") == ("lm", 20)
    with pytest.raises(TraceFormatError, match=r"row 2: field 'total_steps'"):
        load_gavel_trace(write(tmp_path, "vcB.trace", GAVEL.replace("95121", "-3")))


HELIOS = """job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
j1,uA,vcX,8,48,1,COMPLETED,2020-04-01 00:10:00,2020-04-01 00:10:05,2020-04-01 01:10:05,3600,5
j2,uB,vcY,0,4,1,COMPLETED,2020-04-01 00:20:00,2020-04-01 00:20:00,2020-04-01 00:21:00,60,0
j3,uB,vcY,1,6,1,FAILED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 00:00:30,30,0
"""


def test_helios_fixture(tmp_path: Path) -> None:
    df, rep = load_helios(write(tmp_path, "cluster_log.csv", HELIOS))
    assert df["job_id"].tolist() == ["j3", "j1"] and df["submit_s"].tolist() == [0.0, 600.0]
    assert df["status"].tolist() == ["FAILED", "COMPLETED"] and df["user"].tolist() == ["uB", "uA"]
    assert rep.dropped["CPU-only"] == 1
    with pytest.raises(TraceFormatError, match=r"cluster_log.csv: row 1: field 'submit_time'"):
        load_helios(write(tmp_path, "cluster_log.csv", HELIOS.replace("2020-04-01 00:10:00", "04/01/2020")))


def test_pai_fixture_headerless(tmp_path: Path) -> None:
    write(tmp_path, "pai_job_table.header", "job_name,inst_id,user,status,start_time,end_time\n")
    jobs = write(
        tmp_path,
        "pai_job_table.csv",
        "jA,1,u1,Terminated,100.0,700.0\njB,2,u2,Terminated,50.0,60.0\njC,3,u1,Running,80.0,\n",
    )
    write(
        tmp_path,
        "pai_task_table.csv",
        "jA,worker,2,Terminated,100.0,700.0,600.0,29.0,100.0,V100\n"
        "jA,ps,1,Terminated,100.0,700.0,600.0,29.0,50.0,V100\n"
        "jB,worker,1,Terminated,50.0,60.0,600.0,29.0,,\n"
        "jC,worker,1,Running,80.0,,600.0,29.0,100.0,T4\n",
    )
    df, rep = load_pai(jobs)
    assert df["job_id"].tolist() == ["jA"] and df["num_gpus"].tolist() == [3]
    assert df["gpu_request"].iloc[0] == 2.5 and df["gpu_type"].iloc[0] == "V100"
    assert df["duration_s"].iloc[0] == 600.0
    assert rep.dropped == {"unfinished": 1, "CPU-only": 1}


OPENB = """\
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,12000,16384,1,1000,,LS,Running,0,12537496,0
p1,6000,12288,1,460,V100M16|V100M32,LS,Succeeded,100,400,110
p2,6000,12288,0,0,,BE,Running,50,400,50
p3,6000,12288,2,1000,,BE,Pending,60,,
"""


def test_openb_fixture_keeps_fraction_and_spec(tmp_path: Path) -> None:
    df, rep = load_openb_pods(write(tmp_path, "openb_pod_list_x.csv", OPENB))
    assert df["job_id"].tolist() == ["p0", "p1"] and df["gpu_milli"].tolist() == [1000, 460]
    assert df["gpu_spec"].tolist() == ["", "V100M16|V100M32"] and df["duration_s"].tolist() == [12537496, 290]
    assert rep.dropped == {"never scheduled": 1, "CPU-only": 1}
    with pytest.raises(TraceFormatError, match=r"row 2: field 'deletion_time'"):
        load_openb_pods(write(tmp_path, "openb_pod_list_y.csv", OPENB.replace(",100,400,110", ",100,50,110")))


@pytest.mark.data
def test_real_philly_csv_complete() -> None:
    """Every row of the real Philly CSV read (its speed is ``gpucluster bench``'s business, not a test's)."""
    p = real_file("traces/philly/philly_jobs.csv")
    df, rep = load_philly_csv(p)
    assert len(df) == 82247 and rep.skipped_count == 0
    assert (df["num_gpus"] == 1).sum() == 76627 and df["duration_s"].median() == pytest.approx(1144, rel=0.01)
    assert df["vc"].nunique() == 15


@pytest.mark.data
def test_real_gavel_and_openb() -> None:
    df, _ = load_gavel_dir(real_file("traces/philly/gavel_msr_seed0"))
    assert len(df) == 15264 and df["vc"].nunique() == 15 and df["num_gpus"].max() <= 64
    pods, rep = load_openb_pods(real_file("traces/alibaba/gpu_v2023/openb_pod_list_default.csv"))
    assert rep.rows_read == 8152 and len(pods) == 6203 and (pods["gpu_milli"] < 1000).any()
    spec, _ = load_openb_pods(real_file("traces/alibaba/gpu_v2023/openb_pod_list_gpuspec33.csv"))
    assert (spec["gpu_spec"] != "").any()
