"""A trace file in the project's own normalized format (what ``traces sample`` writes) runs with ``run --trace``,
and a record of that run (or of a scenario file) verifies: the record carries the whole scenario."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpucluster_env.traces.registry import guess_format, load_file

from gpucluster_env.cli.main import main


def _write(p: Path, rows: list[str]) -> Path:
    p.write_text("job_id,submit_s,num_gpus,duration_s,vc\n" + "\n".join(rows) + "\n")
    return p


def test_normalized_table_is_sniffed_and_checked(tmp_path: Path) -> None:
    f = _write(tmp_path / "jobs.csv", ["a,10,2,600,x", "b,0,1,300,y", "c,20,0,50,z"])
    assert guess_format(f) == "table"
    df, rep = load_file(f)
    assert list(df["job_id"]) == ["b", "a"] and list(df["submit_s"]) == [0.0, 10.0]
    assert list(df["num_gpus"]) == [1, 2] and rep.dropped["CPU-only"] == 1
    bad = _write(tmp_path / "bad.csv", ["a,0,1,600,x", "b,5,1e20,100,y"])
    with pytest.raises(ValueError, match=r"bad.csv: row 2: field 'num_gpus'"):
        load_file(bad)


def test_sampled_trace_runs_and_its_record_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path / "mine.csv", [f"j{i},{60 * i},{1 + i % 4},{900 + 300 * i},lab" for i in range(12)])
    rec = tmp_path / "mine.jsonl"
    assert main(["run", "--trace", str(f), "--cluster", "V100:2x4,K80:1x4", "--policy", "sjf-ffs",
                 "--record", str(rec), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["jobs_done"] == 12 and not res["truncated"]
    assert main(["replay", str(rec), "--verify"]) == 0
    assert "ok" in capsys.readouterr().out


def test_an_option_given_with_a_trace_is_honoured_not_replaced(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``--option num_jobs=N`` with ``--trace`` plays N jobs (what --trace derives never overrides the user's
    option); the same setting given twice, as --option and as its own flag, is one line."""
    f = _write(tmp_path / "mine.csv", [f"j{i},{60 * i},1,{600 + 60 * i},x" for i in range(12)])
    assert main(["run", "--trace", str(f), "--cluster", "V100:1x4", "--policy", "sjf", "--option", "num_jobs=5",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs_done"] == 5
    assert main(["run", "--trace", str(f), "--cluster", "V100:1x4", "--policy", "sjf", "--option", "num_jobs=5",
                 "--jobs", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--option num_jobs=... and --jobs say the same thing" in err


def test_a_record_of_a_relative_trace_path_verifies_from_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "lab").mkdir()
    _write(tmp_path / "lab" / "mine.csv", [f"j{i},{60 * i},{1 + i % 2},{600 + 60 * i},x" for i in range(6)])
    monkeypatch.chdir(tmp_path / "lab")
    assert main(["run", "--trace", "mine.csv", "--cluster", "V100:1x4", "--policy", "sjf", "--record", "r.jsonl",
                 "--no-progress"]) == 0
    assert main(["replay", "r.jsonl", "--verify"]) == 0
    monkeypatch.chdir(tmp_path)
    assert main(["replay", "lab/r.jsonl", "--verify"]) == 0
    assert capsys.readouterr().out.count(": ok:") == 2


@pytest.mark.parametrize("target", ["outside", "fifo"])
def test_a_record_opens_only_regular_files_beside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str], target: str) -> None:
    """A record someone sends you may name any path as its trace: a replay opens no FIFO or device (which would
    block or read a secret) and nothing outside the record's folder and the current folder."""
    import os

    lab, elsewhere = tmp_path / "lab", tmp_path / "elsewhere"
    lab.mkdir()
    elsewhere.mkdir()
    f = _write(lab / "mine.csv", [f"j{i},{60 * i},1,600,x" for i in range(4)])
    monkeypatch.chdir(lab)
    assert main(["run", "--trace", "mine.csv", "--cluster", "V100:1x4", "--policy", "sjf", "--record", "r.jsonl",
                 "--no-progress"]) == 0
    if target == "fifo":
        bad = lab / "pipe"
        os.mkfifo(bad)
    else:
        bad = elsewhere / "secret.csv"
        bad.write_text(f.read_text())
    lines = (lab / "r.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    header["scenario_spec"] = header["scenario_spec"].replace(str(f.resolve()), str(bad))
    (lab / "evil.jsonl").write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    capsys.readouterr()
    assert main(["replay", "evil.jsonl", "--verify"]) == 2
    err = capsys.readouterr().err
    assert ("not a regular file" if target == "fifo" else "outside the record's folder") in err, err
