"""Files in and out (issue #25): writers never replace a device, pipe, folder or link and name the file when a
write fails; readers of a results folder never delete another writer's temporary file; inputs are read once
(pipes work), within a bound, and their format comes from their content."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import stat
import threading
import time
from pathlib import Path

import pytest
from gpucluster_env.leaderboard.board import parse_board
from gpucluster_env.leaderboard.execute import execute
from gpucluster_env.leaderboard.store import ResultStore

from gpucluster_env import input_files
from gpucluster_env.atomic_write import (
    ABANDONED_AFTER_S,
    STALE_AFTER_S,
    OutputError,
    atomic_output,
    check_output,
    is_temporary,
    remove_stale_temporaries,
    write_bytes_atomic,
)
from gpucluster_env.cli.main import main
from gpucluster_env.replay.record import read_record, write_lines
from tests.cli.test_inputs_cli import MY_TRACE

DEAD_PID = 999_999_999
"""A process id no process has (Linux ids stop at 4,194,304)."""


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 2) -> str:
    """Run the CLI expecting exit ``code`` and one line on stderr; return that line."""
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err, err
    return err


@pytest.fixture
def devices(tmp_path: Path) -> tuple[Path, Path]:
    """A null and a full device: under root, copies made with mknod (so a bug cannot replace the machine's
    own /dev/null); otherwise the system's own, which a user cannot replace."""
    if os.geteuid() != 0:
        return Path("/dev/null"), Path("/dev/full")
    null, full = tmp_path / "null", tmp_path / "full"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        null.write_bytes(b"x")  # the folder may be mounted nodev
    except OSError:
        pytest.skip("cannot make device nodes here")
    return null, full


def _is_char_device(p: Path) -> bool:
    return stat.S_ISCHR(os.lstat(p).st_mode)


# --- writers -------------------------------------------------------------------------------------------------


def test_record_onto_devices_writes_into_them(devices: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    null, full = devices
    assert main(["run", "--scenario", "tiny", "--policy", "fifo", "--record", str(null), "--json"]) == 0
    assert _is_char_device(null)  # was turned into a regular file
    capsys.readouterr()
    assert main(["run", "--scenario", "tiny", "--policy", "fifo", "--record", str(full), "--json"]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and f"{full}: cannot write: No space left on device" in err
    assert _is_char_device(full)
    assert json.loads(out)["jobs_done"] == 40  # nothing lost: the results are printed, the record kept
    kept = Path(err.split("the record is kept at ")[1].strip())
    assert read_record(kept).metrics["jobs_done"] == 40
    shutil.rmtree(kept.parent)


def test_sampled_trace_onto_devices(devices: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    null, full = devices
    assert main(["traces", "sample", "synthetic:philly", "--jobs", "5", "--out", str(null)]) == 0
    assert _is_char_device(null)
    capsys.readouterr()
    err = one_line_error(capsys, ["traces", "sample", "synthetic:philly", "--jobs", "5", "--out", str(full)])
    assert f"{full}: cannot write: No space left on device" in err
    assert _is_char_device(full)


def test_writes_into_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_lines(fifo, [{"a": 1}, {"b": 2}])
    reader.join(10)
    assert got == [b'{"a":1}\n{"b":2}\n'] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_symlink_kept_and_its_target_written(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "ep.jsonl"
    target.write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    write_lines(link, [{"a": 1}])
    assert link.is_symlink() and target.read_text() == '{"a":1}\n'
    dangling = tmp_path / "new.jsonl"
    dangling.symlink_to(tmp_path / "data" / "made.jsonl")
    write_bytes_atomic(dangling, b"x")
    assert dangling.is_symlink() and (tmp_path / "data" / "made.jsonl").read_bytes() == b"x"
    assert not [p for p in (tmp_path / "data").iterdir() if is_temporary(p.name)]


def test_folder_and_socket_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(OutputError, match="is a folder"):
        write_bytes_atomic(tmp_path, b"x")
    sock_path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))
        with pytest.raises(OutputError, match="is a socket"):
            check_output(sock_path)
    assert tmp_path.is_dir() and not sock_path.is_file()
    # refused before the episode runs, in one line
    err = one_line_error(capsys, ["run", "--scenario", "tiny", "--policy", "fifo", "--record", str(tmp_path)])
    assert f"{tmp_path}: is a folder" in err
    err = one_line_error(capsys, ["traces", "sample", "synthetic:philly", "--out", str(tmp_path / "no" / "f.csv")])
    assert f"{tmp_path / 'no' / 'f.csv'}: cannot write: folder" in err


def test_output_onto_its_own_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text(MY_TRACE)
    link = tmp_path / "same.csv"
    link.symlink_to(trace)
    err = one_line_error(capsys, ["run", "--trace", str(trace), "--cluster", "V100:2x4", "--policy", "fifo",
                                  "--record", str(link)])
    assert f"{link}: is also the input {trace}" in err
    err = one_line_error(capsys, ["traces", "sample", "x", "--file", str(trace), "--window", "all", "--jobs", "2",
                                  "--out", str(trace)])
    assert f"{trace}: is also the input" in err
    assert trace.read_text() == MY_TRACE


def test_failed_write_keeps_the_old_file_and_its_mode(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("old")
    f.chmod(0o640)
    with pytest.raises(RuntimeError), atomic_output(f) as out:
        out.write(b"half")
        raise RuntimeError("killed")
    assert f.read_text() == "old" and os.listdir(tmp_path) == ["t.csv"]
    write_bytes_atomic(f, b"new")
    assert f.read_text() == "new" and stat.S_IMODE(f.stat().st_mode) == 0o640


# --- temporary files in a results folder ------------------------------------------------------------------------


def _temp(folder: Path, pid: int, age_s: float, cell: str = "cell") -> Path:
    p = folder / f".tmp-{pid}-0badf00d-{cell}.json.part"
    p.write_text("{")
    os.utime(p, (time.time() - age_s, time.time() - age_s))
    return p


@pytest.fixture(scope="module")
def board_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("board")
    execute(parse_board({"name": "t", "seeds": 1, "group": [{"scenarios": ["tiny"], "policies": ["fifo"]}]}),
            ResultStore(d, create=True))
    return d


def test_show_never_deletes_an_in_flight_write(board_folder: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    tried: list[str] = []

    def read_only(p: object, *a: object, **k: object) -> None:
        tried.append(str(p))
        raise PermissionError(13, "Read-only file system")

    in_flight = _temp(board_folder, os.getpid(), 0)  # a writer at work right now
    stale = _temp(board_folder, DEAD_PID, 2 * ABANDONED_AFTER_S)  # one a killed run left
    monkeypatch.setattr(os, "unlink", read_only)
    monkeypatch.setattr(os, "remove", read_only)
    monkeypatch.setattr(Path, "unlink", read_only)
    assert main(["leaderboard", "show", str(board_folder), "--json"]) == 0, capsys.readouterr().err
    assert len(ResultStore(board_folder)) == 1
    assert tried == [] and in_flight.exists() and stale.exists()
    # a writer on a read-only folder does not fail on the temporaries it cannot remove
    assert remove_stale_temporaries(board_folder) == [] and tried == [str(stale)]
    monkeypatch.undo()
    in_flight.unlink()
    stale.unlink()


def test_show_output_onto_devices_and_links(board_folder: Path, devices: tuple[Path, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    null, full = devices
    assert main(["leaderboard", "show", str(board_folder), "--format", "csv", "--output", str(null)]) == 0
    assert _is_char_device(null)
    capsys.readouterr()
    err = one_line_error(capsys, ["leaderboard", "show", str(board_folder), "--format", "csv", "--output", str(full)])
    assert f"{full}: cannot write: No space left on device" in err  # the file was not named
    target = tmp_path / "table.csv"
    link = tmp_path / "latest.csv"
    link.symlink_to(target)
    assert main(["leaderboard", "show", str(board_folder), "--format", "csv", "--output", str(link)]) == 0
    assert link.is_symlink() and "fifo" in target.read_text()


def test_plots_written_whole(board_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plots"
    assert main(["leaderboard", "plot", str(board_folder), "--out", str(out), "--json"]) == 0
    pngs = sorted(out.glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert not [p for p in out.iterdir() if is_temporary(p.name)]
    before = sorted(p.name for p in board_folder.iterdir())
    assert main(["leaderboard", "plot", str(board_folder), "--out", str(board_folder)]) == 2
    assert "is the results folder" in capsys.readouterr().err
    assert sorted(p.name for p in board_folder.iterdir()) == before  # nothing written there


def test_a_writer_removes_only_stale_temporaries(tmp_path: Path) -> None:
    live = _temp(tmp_path, os.getpid(), STALE_AFTER_S + 60, "live")  # slow, but its writer is running
    fresh = _temp(tmp_path, DEAD_PID, 1, "fresh")  # just written (perhaps by another host)
    dead = _temp(tmp_path, DEAD_PID, STALE_AFTER_S + 60, "dead")
    legacy = tmp_path / ".tmp-k3j2h1"  # an older release's name, no pid
    legacy.write_text("{")
    os.utime(legacy, (time.time() - STALE_AFTER_S - 60,) * 2)
    abandoned = _temp(tmp_path, os.getpid(), ABANDONED_AFTER_S + 60, "old")  # a live pid, reused long since
    mine = tmp_path / "notes.tmp"
    mine.write_text("mine")
    removed = remove_stale_temporaries(tmp_path)
    assert sorted(p.name for p in removed) == sorted([dead.name, legacy.name, abandoned.name])
    assert live.exists() and fresh.exists() and mine.exists()


# --- inputs -----------------------------------------------------------------------------------------------------


def test_trace_from_a_pipe_is_read_once(capsys: pytest.CaptureFixture[str]) -> None:
    r, w = os.pipe()
    try:
        os.write(w, MY_TRACE.encode())
        os.close(w)
        assert main(["run", "--trace", f"/dev/fd/{r}", "--cluster", "V100:2x4", "--policy", "fifo", "--json"]) == 0
    finally:
        os.close(r)
    assert '"jobs_done": 4' in capsys.readouterr().out


def test_trace_from_a_named_fifo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "jobs"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(MY_TRACE))
    writer.start()
    assert main(["run", "--trace", str(fifo), "--cluster", "V100:2x4", "--policy", "fifo", "--json"]) == 0
    writer.join(10)
    assert '"jobs_done": 4' in capsys.readouterr().out


def test_scenario_file_from_a_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    from gpucluster_env.scenario_files import scenario_to_toml
    from gpucluster_env.scenarios import SCENARIOS

    r, w = os.pipe()
    try:
        os.write(w, scenario_to_toml(SCENARIOS["tiny"]).encode())
        os.close(w)
        assert main(["run", "--scenario", f"/dev/fd/{r}", "--policy", "fifo", "--json"]) == 0
    finally:
        os.close(r)
    assert '"scenario": "tiny"' in capsys.readouterr().out


def test_endless_or_binary_input_stops_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    err = one_line_error(capsys, ["run", "--trace", "/dev/zero", "--cluster", "V100:2x4", "--policy", "fifo"])
    assert "/dev/zero: binary data (a NUL byte at offset 0), expected text" in err
    monkeypatch.setattr(input_files, "MAX_INPUT_BYTES", 1000)
    big = tmp_path / "big.csv"
    big.write_text(MY_TRACE * 10)
    err = one_line_error(capsys, ["run", "--trace", str(big), "--cluster", "V100:2x4", "--policy", "fifo"])
    assert f"{big}: larger than 1,000 bytes (the input limit)" in err
    bomb = tmp_path / "small.csv.gz"
    bomb.write_bytes(gzip.compress(MY_TRACE.encode() * 10))
    assert bomb.stat().st_size < 1000
    err = one_line_error(capsys, ["traces", "info", str(bomb)])
    assert f"{bomb}: larger than 1,000 bytes decompressed" in err


def test_format_comes_from_the_content(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "philly_20.csv"  # named like the Philly table, holds the normalized one
    assert main(["traces", "sample", "synthetic:philly", "--jobs", "20", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["run", "--trace", str(out), "--cluster", "V100:2x4", "--policy", "fifo", "--json"]) == 0
    assert '"jobs": 20' in capsys.readouterr().out


def test_deep_nesting_and_bad_bytes_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 50_000 + "]" * 50_000 + "\n")
    err = one_line_error(capsys, ["run", "--scenario", str(deep), "--policy", "fifo"])
    assert f"{deep}: not valid TOML (nested too deeply)" in err
    err = one_line_error(capsys, ["leaderboard", "run", str(deep), "--out", str(tmp_path / "r")])
    assert f"{deep}: not valid TOML (nested too deeply)" in err
    bad = tmp_path / "board.toml"
    bad.write_bytes(b'name = "\xff\xfe"\n')
    err = one_line_error(capsys, ["leaderboard", "run", str(bad), "--out", str(tmp_path / "r")])
    assert f"{bad}: line 1, column 9: not UTF-8 text (byte 0xff)" in err
    err = one_line_error(capsys, ["run", "--scenario", str(bad), "--policy", "fifo"])
    assert f"{bad}: line 1, column 9: not UTF-8 text" in err


def test_model_metadata_and_pai_header_errors_name_the_file(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from gpucluster_env.agents.policies import read_meta

    meta = tmp_path / "meta.json"
    for text, needle in ((b"{oops", "not valid JSON (line 1, column 2"), (b"[" * 100_000, "nested too deeply"),
                         (b'{"algo": "\xff"}', "line 1, column 11: not UTF-8"), (b"[1]", "expected a JSON object")):
        meta.write_bytes(text)
        with pytest.raises(ValueError, match=f"{meta}: .*{needle}".replace("(", r"\(").replace("[", r"\[")):
            read_meta(tmp_path)
    jobs = tmp_path / "pai_job_table.csv"
    jobs.write_text("jA,1,u1,Terminated,100.0,700.0\n")
    (tmp_path / "pai_task_table.csv").write_text("jA,worker,2,Terminated,100.0,700.0,600.0,29.0,100.0,V100\n")
    (tmp_path / "pai_job_table.header").write_bytes(b"job_name,inst_id,\xffuser\n")
    err = one_line_error(capsys, ["traces", "info", str(jobs)])
    assert f"{tmp_path / 'pai_job_table.header'}: line 1, column 18: not UTF-8" in err


def test_corrupt_records_are_one_line_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "ep.jsonl.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbagegarbage")
    err = one_line_error(capsys, ["replay", str(bad)])
    assert f"{bad}: corrupt gzip stream" in err
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    err = one_line_error(capsys, ["replay", str(deep)])
    assert f"{deep}: line 1: not valid JSON (nested too deeply)" in err


def test_record_onto_its_own_scenario_file_or_a_folder_name_is_refused(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """``--record`` naming the scenario file read (or its trace file), an empty name, or a name ending in
    ``/`` writes nothing and loses nothing (issue #25's second probe)."""
    trace = tmp_path / "jobs.csv"
    trace.write_text(MY_TRACE)
    toml = tmp_path / "mine.toml"
    toml.write_text(f'name = "mine"\ncluster = "V100:2x4"\ntrace = "file"\ntrace_file = "{trace}"\nnum_jobs = 3\n')
    before = toml.read_text(), trace.read_text()
    base = ["run", "--scenario", str(toml), "--policy", "fifo", "--no-progress", "--record"]
    assert "is also the input" in one_line_error(capsys, [*base, str(toml)])
    assert "is also the input" in one_line_error(capsys, [*base, str(trace)])
    assert "empty file name" in one_line_error(capsys, [*base, ""])
    assert "names a folder" in one_line_error(capsys, [*base, str(tmp_path / "new") + "/"])
    assert (toml.read_text(), trace.read_text()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jobs.csv", "mine.toml"]
    with pytest.raises(OutputError, match="names a folder"), atomic_output(str(tmp_path / "x") + "/"):
        pass
