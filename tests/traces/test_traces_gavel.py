"""Gavel ``.trace`` files in both layouts (7 fields: the OSDI'20 artifact's files; 10 fields: what Gavel's
current generator writes), step units (Gavel counts an n-GPU job's steps summed over its workers) and
one-line errors naming the file, the row and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpucluster_env.traces.gavel import GAVEL_COLUMNS_10, gavel_layout, load_gavel_dir, load_gavel_trace
from gpucluster_env.traces.tables import TraceFormatError

SEVEN = (
    "LM (batch size 80)\tcd %s && python3 main.py\t--steps\t1\t6000\t0.000000\t2\n"
    "ResNet-18 (batch size 32)\tcd %s && python3 main.py\t--num_steps\t1\t900\t30.000000\t1\n"
)
# job_type, command, working_directory, num_steps_arg, needs_data_dir, total_steps, scale_factor,
# priority_weight, SLO, arrival_time
TEN = (
    "LM (batch size 80)\tpython3 main.py\tlanguage_modeling\t--steps\t1\t8000\t4\t1.000000\t-1.000000\t12.0\n"
    "ResNet-50 (batch size 64)\tpython3 main.py\timage_classification\t-n\t1\t300\t1\t5.000000\t2.000000\t0.0\n"
)


def write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def test_seven_field_layout_steps_per_gang(tmp_path: Path) -> None:
    # LM at 2 GPUs, 6000 steps summed over both workers: 6000 / 2 = 3000 gang iterations. With Gavel's
    # throughput 60 steps/s at scale factor 2 (also summed over workers), the solo time is 6000 / 60 = 100 s.
    df, _ = load_gavel_trace(write(tmp_path, "vc1.trace", SEVEN), throughputs={("LM (batch size 80)", 2): 60.0})
    assert df["model"].tolist() == ["lm", "resnet18"] and df["num_gpus"].tolist() == [2, 1]
    assert df["iterations"].tolist() == [3000.0, 900.0]
    assert df["duration_s"].iloc[0] == 100.0 and df["submit_s"].tolist() == [0.0, 30.0]
    assert "priority_weight" not in df.columns


def test_ten_field_layout(tmp_path: Path) -> None:
    p = write(tmp_path, "vc2.trace", TEN)
    assert gavel_layout(p) == GAVEL_COLUMNS_10
    df, _ = load_gavel_trace(p, throughputs={("LM (batch size 80)", 4): 80.0})
    # sorted by arrival: ResNet-50 (t=0) then LM (t=12, submit from the first arrival: 12 s)
    assert df["model"].tolist() == ["resnet50", "lm"] and df["batch_size"].tolist() == [64, 80]
    assert df["submit_s"].tolist() == [0.0, 12.0] and df["num_gpus"].tolist() == [1, 4]
    # LM: 8000 steps over 4 workers = 2000 iterations; 8000 / 80 steps/s = 100 s; ResNet-50 has no throughput
    assert df["iterations"].tolist() == [300.0, 2000.0]
    assert df["duration_s"].iloc[1] == 100.0 and df["duration_s"].isna().iloc[0]
    # SLO -1 (Gavel's "none") becomes NaN; a positive SLO and the priority weight are kept
    assert df["priority_weight"].tolist() == [5.0, 1.0]
    assert df["slo"].iloc[0] == 2.0 and df["slo"].isna().iloc[1]


def test_layouts_mix_in_a_folder(tmp_path: Path) -> None:
    write(tmp_path, "a.trace", SEVEN)
    write(tmp_path, "b.trace", TEN)
    df, rep = load_gavel_dir(tmp_path)
    assert len(df) == 4 and rep.rows_read == 4 and sorted(df["vc"].unique()) == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (TEN.replace("\t4\t1.000000", "\tfour\t1.000000"), r"vc\.trace: row 1: field 'scale_factor'"),
        (TEN.replace("\t-1.000000\t12.0", "\tsoon\t12.0"), r"vc\.trace: row 1: field 'slo'"),
        (TEN.replace("\t5.000000\t", "\t0\t"), r"vc\.trace: row 2: field 'priority_weight'"),
        (TEN.replace("\t8000\t", "\t-8\t"), r"vc\.trace: row 1: field 'total_steps'"),
        (TEN.replace("\t12.0\n", "\tlater\n"), r"vc\.trace: row 1: field 'arrival_time_s'"),
        (SEVEN.replace("\t30.000000\t", "\t-5\t"), r"vc\.trace: row 2: field 'arrival_time_s'"),
        (SEVEN.replace("\t1\n", "\t0\n"), r"vc\.trace: row 2: field 'scale_factor'"),
        ("LM (batch size 80)\tcmd\t--steps\t1\t6000\n", r"vc\.trace: row 1: expected 7 .* or 10 .*found 5"),
        (TEN + SEVEN, r"vc\.trace: row 3: expected 10 fields"),
        # a batch size of 0 ran as the model's default (64), one of 99999999999 gave a JCT of 1e13 s
        (SEVEN.replace("batch size 32", "batch size 0"), r"vc\.trace: row 2: field 'job_type': batch size must be"),
        (SEVEN.replace("batch size 80", "batch size 99999999999"),
         r"vc\.trace: row 1: field 'job_type': batch size must be from 1 to 1,048,576"),
    ],
)
def test_malformed_rows_name_file_row_field(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(TraceFormatError, match=match) as e:
        load_gavel_trace(write(tmp_path, "vc.trace", text))
    assert "\n" not in str(e.value)


def test_skip_bad_rows_keeps_the_rest(tmp_path: Path) -> None:
    df, rep = load_gavel_trace(write(tmp_path, "vc.trace", TEN.replace("\t5.000000\t", "\t-1\t")),
                               skip_bad_rows=True)
    assert df["model"].tolist() == ["lm"] and rep.skipped[0][:2] == (2, "priority_weight")
