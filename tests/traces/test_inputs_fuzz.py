"""Fuzzing the trace loaders (issue #14): valid files of every format, mutated by hypothesis (fields dropped,
duplicated, swapped or replaced by extreme numbers, lines duplicated or dropped, bad bytes, truncation). Each
mutated file either loads to a table that passes validation, whose numbers are the file's own (checked against
an independent reading of the file with the csv module), or `gpucluster traces info` fails with exit 2 and one
line naming the file (and the row and field when one row is at fault): never a traceback, never a silently
changed value."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from gpucluster_env.traces.registry import load_file
from gpucluster_env.traces.tables import MAX_DURATION_S, MAX_JOB_GPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucluster_env.cli.main import main
from tests.traces.test_inputs_loaders import GAVEL, HELIOS, OPENB, PAI_JOBS, PAI_TASKS, PHILLY, job_log

EXTREMES = ("1e20", "-1e20", "inf", "-inf", "nan", "NaN", "Infinity", "1e300", "-1", "0", "2.5", "", "abc", "1e-300",
            "9223372036854775808", "0x10", " 1", "1_000", "\"1\"")
BAD_BYTES = (b"\xf2", b"\x00", b"\xff\xfe", b"\r", b"\"", b",", b"\t", b"\n", b"[", b"}")
FILE_LEVEL = ("header:", "missing column", "empty file", "no data rows", "left", "not valid JSON",
              "expected a JSON list", "nested too deeply", "no job with a started attempt", "not UTF-8",
              "cannot tell the trace format", "binary data")

FORMATS = {  # format: (file name, text, separator, header lines)
    "philly-csv": ("philly_jobs.csv", PHILLY, ",", 1),
    "helios": ("cluster_log.csv", HELIOS, ",", 1),
    "openb": ("openb_pod_list_f.csv", OPENB, ",", 1),
    "gavel": ("vcF.trace", GAVEL, "\t", 0),
    "pai": ("pai_job_table.csv", PAI_JOBS, ",", 0),
}


@st.composite
def mutated_lines(draw: st.DrawFn, text: str, sep: str) -> bytes:
    """``text`` with one to three mutations of its lines and fields, as bytes."""
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        fields = lines[i].split(sep)
        op = draw(st.sampled_from(("drop", "dup", "swap", "extreme", "dup_line", "drop_line", "bytes", "truncate")))
        j = draw(st.integers(0, len(fields) - 1))
        if op == "drop" and len(fields) > 1:
            del fields[j]
        elif op == "dup":
            fields.insert(j, fields[j])
        elif op == "swap":
            k = draw(st.integers(0, len(fields) - 1))
            fields[j], fields[k] = fields[k], fields[j]
        elif op == "extreme":
            fields[j] = draw(st.sampled_from(EXTREMES))
        elif op == "dup_line":
            lines.insert(i, lines[i])
        elif op == "drop_line":
            del lines[i]
            continue
        if op in ("drop", "dup", "swap", "extreme"):
            lines[i] = sep.join(fields)
    data = ("\n".join(lines) + "\n").encode()
    if draw(st.booleans()):
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        op = draw(st.sampled_from(("bytes", "truncate", "none")))
        if op == "bytes":
            data = data[:pos] + draw(st.sampled_from(BAD_BYTES)) + data[pos:]
        elif op == "truncate":
            data = data[:pos]
    return data


def _rows(data: bytes, sep: str, header: int) -> list[list[str]] | None:
    """The file's data rows read by the csv module (blank lines skipped), or None if it is not UTF-8."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=sep) if r]
    return rows[header:]


def _num(s: str) -> float:
    try:
        return float(s)
    except ValueError:
        return math.nan


def expected(fmt: str, data: bytes) -> dict[str, list[tuple[float, float]]] | None:
    """job id -> the (GPUs, duration) its source rows give, read independently of the loader by the file's own
    header; None where this reading does not apply (no header with the needed columns)."""
    if fmt not in ("philly-csv", "helios", "openb"):
        return None
    rows = _rows(data, FORMATS[fmt][2], 0)
    if not rows:
        return None
    head = [c.strip() for c in rows[0]]
    need = {"philly-csv": ("num_gpus", "duration"), "helios": ("job_id", "gpu_num", "duration"),
            "openb": ("name", "num_gpu", "creation_time", "deletion_time")}[fmt]
    if any(head.count(c) != 1 for c in need):
        return None
    col = {c: head.index(c) for c in head if head.count(c) == 1}
    out: dict[str, list[tuple[float, float]]] = {}
    for r, row in enumerate(rows[1:], start=1):
        if len(row) != len(head):
            continue
        if fmt == "philly-csv":
            key, val = f"philly-{r}", (_num(row[col["num_gpus"]]), _num(row[col["duration"]]))
        elif fmt == "helios":
            key, val = row[col["job_id"]], (_num(row[col["gpu_num"]]), _num(row[col["duration"]]))
        else:
            start = row[col["scheduled_time"]] if "scheduled_time" in col else row[col["creation_time"]]
            key = row[col["name"]]
            val = (max(_num(row[col["num_gpu"]]), 1.0), _num(row[col["deletion_time"]]) - _num(start))
        out.setdefault(key, []).append(val)
    return out


def check_outcome(fmt: str, path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["traces", "info", str(path), "--format", fmt, "--json"])
    captured = capsys.readouterr()
    assert code in (0, 2), captured.err
    assert "Traceback" not in captured.err
    if code == 2:
        err = captured.err
        assert err.count("\n") == 1 and err.startswith("gpucluster traces: error: "), err
        assert path.name in err or "pai_task_table.csv" in err, err
        assert ("row " in err and ("field" in err or "fields" in err)) or any(p in err for p in FILE_LEVEL), err
        return
    df, _ = load_file(path, fmt)
    g = df["num_gpus"].to_numpy()
    assert g.dtype == np.int64 and ((g >= 1) & (g <= MAX_JOB_GPUS)).all()
    d = df["duration_s"].to_numpy(float)
    assert (np.isnan(d) | ((d >= 0) & (d <= MAX_DURATION_S))).all()
    s = df["submit_s"].to_numpy(float)
    assert np.isfinite(s).all() and (s >= 0).all()
    if fmt == "gavel":
        it = df["iterations"].to_numpy(float)
        assert np.isfinite(it).all() and (it > 0).all()
    want = expected(fmt, path.read_bytes())
    if want is not None:
        for jid, gpus, dur in zip(df["job_id"], g, d, strict=True):
            assert jid in want, (jid, want)
            assert any(gpus == wg and (dur == wd or (math.isnan(dur) and math.isnan(wd))) for wg, wd in want[jid]), (
                jid, gpus, dur, want[jid])


FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("fmt", ["philly-csv", "helios", "openb", "gavel"])
@FUZZ
@given(data=st.data())
def test_fuzz_csv_formats(fmt: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory,
                          capsys: pytest.CaptureFixture[str]) -> None:
    name, text, sep, _ = FORMATS[fmt]
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_bytes(data.draw(mutated_lines(text, sep)))
    check_outcome(fmt, path, capsys)


@FUZZ
@given(data=st.data())
def test_fuzz_pai_tables(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory,
                         capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    jobs, tasks = PAI_JOBS, PAI_TASKS
    if data.draw(st.booleans()):
        (folder / "pai_job_table.csv").write_bytes(data.draw(mutated_lines(jobs, ",")))
        (folder / "pai_task_table.csv").write_text(tasks)
    else:
        (folder / "pai_job_table.csv").write_text(jobs)
        (folder / "pai_task_table.csv").write_bytes(data.draw(mutated_lines(tasks, ",")))
    check_outcome("pai", folder / "pai_job_table.csv", capsys)


JSON_VALUES = (None, 1e20, -1, 0, 2.5, "", "x", "2017-13-45 99:99:99", [], {}, [1], {"a": 1}, True, "1e20")


@st.composite
def mutated_job_log(draw: st.DrawFn) -> bytes:
    """The job log with one to three values replaced, keys deleted or jobs duplicated, or bytes broken."""
    jobs = job_log()
    for _ in range(draw(st.integers(1, 3))):
        job = jobs[draw(st.integers(0, len(jobs) - 1))]
        target: dict = job
        path = draw(st.sampled_from(("job", "attempt", "detail")))
        if path != "job" and isinstance(job.get("attempts"), list) and job["attempts"] and isinstance(
                job["attempts"][0], dict):
            target = job["attempts"][0]
            if path == "detail" and isinstance(target.get("detail"), list) and target["detail"] and isinstance(
                    target["detail"][0], dict):
                target = target["detail"][0]
        if not target:
            continue
        key = draw(st.sampled_from(sorted(target)))
        op = draw(st.sampled_from(("set", "delete", "dup_job")))
        if op == "set":
            target[key] = draw(st.sampled_from(JSON_VALUES))
        elif op == "delete":
            del target[key]
        else:
            jobs.append(json.loads(json.dumps(job)))
    data = json.dumps(jobs).encode()
    if draw(st.booleans()):
        pos = draw(st.integers(0, len(data) - 1))
        data = data[:pos] + draw(st.sampled_from(BAD_BYTES + (b"",))) + data[pos + draw(st.integers(0, 3)):]
    return data


@FUZZ
@given(data=st.data())
def test_fuzz_philly_job_log(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory,
                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "cluster_job_log"
    path.write_bytes(data.draw(mutated_job_log()))
    check_outcome("philly-json", path, capsys)
