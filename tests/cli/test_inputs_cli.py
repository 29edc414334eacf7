"""Your own trace on your own cluster from the command line, end to end (issue #14), and the harness faults:
truncated episodes shown as such, stated limits, Ctrl-C, closed pipes, replays written whole, fetch content
checks."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from gpucluster_env.traces import registry
from gpucluster_env.traces.fetch import ContentError, fetch_trace
from gpucluster_env.traces.registry import RemoteFile, TraceSpec

from gpucluster_env.cli.main import main
from tests.traces.test_traces_fetch_cli import PAYLOAD, Server

MY_TRACE = ("timestamp,duration,num_gpus,gpu_time,cluster\n"
            "2017-10-03 02:00:00,3600,1,3600,vc1\n"
            "2017-10-03 02:05:00,7200,4,28800,vc1\n"
            "2017-10-03 02:10:00,1800,2,3600,vc2\n"
            "2017-10-03 02:30:00,600,8,4800,vc2\n"
            "2017-10-03 03:10:00,0,0,0,vc1\n")


@pytest.fixture
def my_trace(tmp_path: Path) -> Path:
    p = tmp_path / "jobs.csv"  # a name that says nothing: the format is sniffed from the header
    p.write_text(MY_TRACE)
    return p


def test_run_own_trace_on_own_cluster(my_trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--trace", str(my_trace), "--cluster", "V100:2x4,K80:1x4,net=25", "--policy", "fifo",
                 "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["jobs"] == r["jobs_done"] == 4 and not r["truncated"] and "1 dropped (CPU-only)" in r["trace"]
    assert main(["run", "--trace", str(my_trace), "--cluster", "V100:2x4,K80:1x4", "--policy", "sjf"]) == 0
    out = capsys.readouterr().out
    assert "jobs.csv · seed 0 · 4 jobs" in out and "TRUNCATED" not in out


def test_run_own_trace_options(my_trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for annotate in ("uniform", "hadar-class", "pollux-lucid"):
        models = [] if annotate.startswith("pollux") else ["--models", "resnet50,bert"]  # Pollux has its own
        assert main(["run", "--trace", str(my_trace), "--cluster", "V100:2x4", "--annotate", annotate, *models,
                     "--jobs", "3", "--trace-format", "philly", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["jobs_done"] == 3
    assert main(["run", "--trace", str(my_trace), "--cluster", "V100:2x4", "--annotate", "pollux-lucid",
                 "--models", "resnet50,bert"]) == 2  # accepted and ignored before (issue #25)
    assert "option 'models': annotation 'pollux-lucid' uses its own models" in capsys.readouterr().err
    for argv, needle in [
        (["--annotate", "bogus"], "unknown annotation 'bogus'"),
        (["--jobs", "9"], "--jobs 9"),
        (["--models", "nope"], "unknown model"),
        (["--cluster", "V100:2x4x"], "cluster spec"),
        (["--trace-format", "helios"], "missing column"),
    ]:
        assert main(["run", "--trace", str(my_trace), *argv]) == 2
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1, err
    assert main(["run", "--annotate", "uniform"]) == 2
    assert "--annotate goes with --trace" in capsys.readouterr().err


def test_run_own_trace_in_a_scenario_file(tmp_path: Path, my_trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "lab.toml").write_text(
        'name = "lab"\ncluster = "V100:1x8,T4:2x4"\ntrace = "file"\ntrace_file = "jobs.csv"\nnum_jobs = 4\n'
        'window = "all"\nmodels = ["resnet50", "bert"]\n\n[engine]\nrestart_s = 30.0\n')
    assert main(["run", "--scenario", str(tmp_path / "lab.toml"), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["scenario"] == "lab" and r["jobs_done"] == 4 and str(my_trace) in r["trace"]


def test_truncated_episode_says_so_in_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--max-sim-days", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "TRUNCATED: fifo finished" in out.splitlines()[0] and "(truncated)" in out and "truncated:" in out
    assert main(["run", "--max-sim-days", "0.05", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["truncated"] and r["jobs_done"] < r["jobs"] and "simulated days" in r["limits"]


def test_step_limit_truncates_at_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    """``--max-steps`` stops the episode after that many steps, reporting what finished (nothing is lost)."""
    assert main(["run", "--max-steps", "10", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["truncated"] and r["steps"] == 10 and r["jobs_done"] < r["jobs"] and "10 steps" in r["limits"]
    assert main(["run", "--max-steps", "0"]) == 2
    assert "--max-steps 0: must be from 1" in capsys.readouterr().err


def test_sim_time_limit_applies_when_one_event_jumps_past_it(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A 300-day job with --max-sim-days 10: its completion lies past the limit, so the run is truncated at
    day 10 with no job finished (before: the jump to day 300 ended the episode, reported as complete)."""
    p = tmp_path / "long.csv"
    p.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n"
                 f"2017-10-03 02:00:00,{300 * 86400},1,{300 * 86400},vc1\n")
    argv = ["run", "--trace", str(p), "--cluster", "V100:1x4", "--json"]
    assert main([*argv, "--max-sim-days", "10"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["truncated"] and r["jobs_done"] == 0 and r["jobs"] == 1
    assert main(argv) == 0
    r = json.loads(capsys.readouterr().out)
    assert not r["truncated"] and r["jobs_done"] == 1 and r["avg_jct_s"] > 10 * 86400


def test_ctrl_c_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import gpucluster_env.cli.main as cli_main

    def interrupted(*a: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main, "build_parser", interrupted)  # Ctrl-C while starting up
    assert main(["run"]) == 130
    assert capsys.readouterr().err == "gpucluster: interrupted\n"


def test_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    code = ("import sys; from gpucluster_env.cli.main import main; sys.stdout.close = lambda: None;\n"
            "def boom(*a):\n    raise BrokenPipeError\n"
            "import gpucluster_env.cli.scenarios_cmd as s; s.run = boom\n"
            "sys.exit(main(['scenarios']))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 141 and p.stderr == ""


def test_record_is_written_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from gpucluster_env.replay import record

    rec = tmp_path / "run.jsonl"

    def interrupted(*a: object, **k: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(record.json, "dumps", interrupted)
    assert main(["run", "--option", "num_jobs=5", "--record", str(rec)]) == 130
    assert not rec.exists() and list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    assert main(["run", "--option", "num_jobs=5", "--record", str(rec)]) == 0
    lines = rec.read_text().splitlines()
    assert json.loads(lines[0])["format"] == "gpucluster-replay" and json.loads(lines[-1])["kind"] == "metrics"
    assert list(tmp_path.iterdir()) == [rec]


def test_traces_compare_a_file(my_trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["traces", "compare", str(my_trace), "--against", "venus", "--jobs", "500", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["stats"]["jobs"]["real"] == 4 and str(my_trace) in r["note"]


# ---------------------------------------------------------------------------------------------------- fetch
@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("GPUCLUSTER_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUCLUSTER_DATA", raising=False)
    return tmp_path / "cache"


def test_fetch_unpinned_html_page_never_enters_the_cache(cache: Path) -> None:
    with Server() as s:
        s.files["cluster_log.csv"] = b"<html><body>Not Found</body></html>\n"
        with pytest.raises(ContentError, match=r"cluster_log.csv: not a valid trace file, nothing entered the cache"):
            fetch_trace("venus", base_url=s.url, progress=False)
    assert not list(cache.rglob("cluster_log.csv*"))


def test_fetch_two_file_trace_from_one_file_is_refused(cache: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    one = tmp_path / "pai_job_table.csv"
    one.write_text("jA,1,u1,Terminated,100.0,700.0\n")
    assert main(["traces", "fetch", "alibaba", "--from", str(one)]) == 2
    assert "alibaba has 2 files" in capsys.readouterr().err and not cache.exists()


def test_fetch_folder_trace_by_url_is_refused(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["traces", "fetch", "philly-gavel", "--base-url", "http://127.0.0.1:9"]) == 2
    assert "is a folder on GitHub" in capsys.readouterr().err and not cache.exists()


def test_fetch_corrupt_archive_is_not_left_behind(cache: Path) -> None:
    spec = TraceSpec("test-log", "t", (RemoteFile("traces/philly/cluster_job_log", "https://x.invalid/t.tar.gz", None,
                                                  unpack="cluster_job_log"),), "philly-json", "philly", "", "")
    with Server() as s, pytest.MonkeyPatch.context() as mp:
        mp.setitem(registry.TRACES, spec.name, spec)
        s.files["t.tar.gz"] = b"\x1f\x8b\x08\x00garbage"
        with pytest.raises(ValueError, match="not a readable tar archive"):
            fetch_trace(spec.name, base_url=s.url, progress=False)
        assert not [p for p in cache.rglob("*") if p.is_file()]
        buf = io.BytesIO()  # a good archive whose member is not a job log
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            info = tarfile.TarInfo("trace-data/cluster_job_log")
            info.size = len(PAYLOAD)
            tar.addfile(info, io.BytesIO(PAYLOAD))
        s.files["t.tar.gz"] = buf.getvalue()
        with pytest.raises(ContentError, match="nothing entered the cache"):
            fetch_trace(spec.name, base_url=s.url, progress=False)
        assert not [p for p in cache.rglob("*") if p.is_file()]


def test_fetch_errors_name_the_url(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["traces", "fetch", "venus", "--base-url", "http://127.0.0.1:9"]) == 2
    assert "http://127.0.0.1:9/cluster_log.csv" in capsys.readouterr().err


def test_second_concurrent_fetch_gets_a_clear_error(cache: Path) -> None:
    import fcntl

    part = cache / "traces/venus/cluster_log.csv.part"
    part.parent.mkdir(parents=True)
    with open(part.with_name(part.name + ".lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(OSError, match="another gpucluster fetch is writing"):
            fetch_trace("venus", base_url="http://127.0.0.1:9", progress=False)


def test_fewer_jobs_than_asked_is_said(tmp_path: Path, my_trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "lab.toml").write_text(
        'name = "lab"\ncluster = "V100:2x4"\ntrace = "file"\ntrace_file = "jobs.csv"\nnum_jobs = 1000000\n'
        'window = "all"\n')
    assert main(["run", "--scenario", str(tmp_path / "lab.toml")]) == 0
    assert "note: the trace gave 4 jobs of the 1,000,000 asked (num_jobs)" in capsys.readouterr().out
    assert main(["run", "--scenario", str(tmp_path / "lab.toml"), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["jobs"] == 4 and r["jobs_asked"] == 1_000_000


def test_option_trace_is_a_file(my_trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--option", f"trace={my_trace}", "--option", "num_jobs=4", "--cluster", "V100:2x4",
                 "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["jobs_done"] == 4 and str(my_trace) in r["trace"]
    assert main(["traces", "info", "nope"]) == 2
    assert "unknown trace 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, needle", [
    (["run", "--max-steps", "1.5"], "gpucluster run: error: argument --max-steps: invalid int value: '1.5'"),
    (["traces", "sample", "synthetic:philly", "--downscale", "nan", "--out", "x.csv"], "argument --downscale"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["traces"], "gpucluster traces: error: an action is required (list, info"),
    (["leaderboard"], "an action is required (run, show"),
    ([], "gpucluster: error: an action is required (run, "),
])
def test_argument_errors_are_one_line(argv: list[str], needle: str, capfd: pytest.CaptureFixture[str]) -> None:
    """argparse's own errors (a value of the wrong type, a missing action) are one line without the usage block
    (issue #25's second probe)."""
    try:
        status = main(argv)
    except SystemExit as e:  # argparse's own exit
        status = e.code
    assert status == 2
    err = capfd.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1, err


def test_traces_sample_format_without_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--format`` describes ``--file``; with a trace name it was ignored (issue #25's second probe)."""
    assert main(["traces", "sample", "synthetic:philly", "--jobs", "3", "--format", "pai",
                 "--out", str(tmp_path / "x.csv")]) == 2
    assert "--format pai is the format of --file" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()
