"""The leaderboard end to end on the tiny scenario: boards, records, resumption after a killed run, the Ray
backend against the local one, every subcommand, and one-line errors for bad arguments."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gpucluster_env.leaderboard.board import Cell, board_names, load_board, parse_board
from gpucluster_env.leaderboard.execute import execute
from gpucluster_env.leaderboard.store import ResultStore, record_checksum

from gpucluster_env.cli.main import main

VOLATILE = ("wall_s", "git_revision", "checksum")
"""Record fields that differ between two runs of the same cell (timing, the checkout's state)."""
GPUCLUSTER = [sys.executable, "-c", "import sys; from gpucluster_env.cli.main import main; sys.exit(main())"]


def _stable(d: Path) -> dict[str, dict]:
    out = {}
    for f in sorted(d.glob("*.json")):
        rec = json.loads(f.read_text())
        out[f.name] = {k: v for k, v in rec.items() if k not in VOLATILE}
    return out


def _board(policies: list[str], seeds: int) -> object:
    return parse_board({"name": "t", "seeds": seeds, "group": [{"scenarios": ["tiny"], "policies": policies}]})


def test_shipped_boards_parse_and_default_is_small() -> None:
    assert {"default", "castor", "sjf-bsbf"} <= set(board_names())
    d = load_board("default")
    assert {c.scenario for c in d.cells} == {"tiny"} and len(d.cells) <= 200
    keys = [c.key for c in load_board("castor").cells]
    assert len(keys) == len(set(keys))


def test_board_typos_are_one_line_errors(tmp_path: Path) -> None:
    f = tmp_path / "b.toml"
    for text, want in (("seed = 3\n[[group]]\nscenarios=['tiny']\npolicies=['fifo']", "unknown key(s) seed"),
                       ("[[group]]\nscenarios=['tiny']\npolicies=['fifoo']", "unknown policy 'fifoo'"),
                       ("[[group]]\nscenarios=['tinyy']\npolicies=['fifo']", "unknown scenario 'tinyy'"),
                       ("[[group]]\nscenario=['tiny']\npolicies=['fifo']", "unknown key(s) scenario"),
                       ("seeds = 0\n[[group]]\nscenarios=['tiny']\npolicies=['fifo']", "positive integer"),
                       ("[[group]\n", "line 1")):
        f.write_text(text)
        with pytest.raises(ValueError, match=want.replace("(", r"\(").replace(")", r"\)")):
            load_board(str(f))


def test_cell_keys_are_stable_and_select_overrides_seeds() -> None:
    c = Cell("tiny", "fifo", 3, {"num_jobs": 20})
    assert c.key == Cell.from_dict(json.loads(json.dumps(c.as_dict()))).key
    assert c.key != Cell("tiny", "fifo", 3, {"num_jobs": 21}).key
    b = load_board("default").select(["tiny"], ["fifo", "sjf"], 3)
    assert sorted({(x.policy, x.seed) for x in b.cells}) == [(p, s) for p in ("fifo", "sjf") for s in range(3)]
    # a second, disjoint seed set of the same board: the claims board's own count from another first seed
    claims = load_board("claims").select(None, ["fifo"], None, 200)
    assert {x.seed for x in claims.cells} == set(range(200, 280)) and claims.first_seed == 200
    assert {x.seed for x in load_board("claims").select(None, ["fifo"], 3, 500).cells} == {500, 501, 502}
    with pytest.raises(ValueError, match="--first-seed must be an integer from 0"):
        load_board("claims").select(None, ["fifo"], None, -1)


def test_a_cell_records_the_policys_own_counts() -> None:
    # Gimbal's coordinator counts (searches, attempts, early exits; gimbal §7.4) travel with the cell's metrics,
    # so `leaderboard show --metric gimbal_attempts` works; a policy without any adds nothing
    from gpucluster_env.leaderboard.cells import run_cell

    r = run_cell(Cell("tiny", "lucid+gimbal", 0, {}))
    assert r["gimbal_searches"] >= 1 and r["gimbal_attempts"] >= 1
    assert r["gimbal_early_exits"] <= r["gimbal_searches"] and r["gimbal_lgrr_steps"] >= 0
    assert not any(k.startswith("gimbal_") for k in run_cell(Cell("tiny", "fifo", 0, {})))


def test_records_are_atomic_complete_and_resumed(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r", create=True)
    rep = execute(_board(["fifo", "sjf"], 2), store)
    assert (rep.total, rep.ran, rep.skipped) == (4, 4, 0) and rep.cells_per_min > 0
    rec = json.loads(next((tmp_path / "r").glob("*.json")).read_text())
    for k in ("metrics", "per_job", "env_spec", "package_version", "git_revision", "policy_version", "wall_s"):
        assert k in rec, k
    assert rec["env_spec"]["scenario"]["name"] == "tiny" and len(rec["per_job"]["jct_s"]) == rec["metrics"]["jobs"]
    left = tmp_path / "r" / ".tmp-999999999-0badf00d-x.json.part"  # a write cut short by a kill, an hour ago
    left.write_text("{")
    os.utime(left, (time.time() - 3600, time.time() - 3600))
    again = ResultStore(tmp_path / "r")
    assert len(again) == 4 and left.exists()  # reading changes nothing
    rep2 = execute(_board(["fifo", "sjf"], 3), again)
    assert (rep2.ran, rep2.skipped) == (2, 4) and len(list((tmp_path / "r").glob("*.json"))) == 6
    assert not left.exists()  # the writer removed it


def test_stale_records_are_reported_not_mixed(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, create=True)
    execute(_board(["fifo"], 1), store)
    f = next(tmp_path.glob("*.json"))
    rec = json.loads(f.read_text())
    rec["package_version"] = "0.0.1"
    rec["checksum"] = record_checksum(rec)  # as an older package would have written it
    f.write_text(json.dumps(rec))
    with pytest.raises(ValueError, match="another spec or version.*package_version 0.0.1"):
        execute(_board(["fifo"], 1), ResultStore(tmp_path))
    assert main(["leaderboard", "show", str(tmp_path)]) == 2  # left out -> nothing to show
    rep = execute(_board(["fifo"], 1), ResultStore(tmp_path), replace_stale=True)
    assert rep.ran == 1 and json.loads(f.read_text())["package_version"] != "0.0.1"


def test_foreign_and_corrupt_files_stop_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    execute(_board(["fifo"], 1), ResultStore(tmp_path, create=True))
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["leaderboard", "show", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "notes.txt: foreign file" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "notes.txt").unlink()
    f = next(tmp_path.glob("*.json"))
    f.write_text(f.read_text()[:40])
    assert main(["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo", "--seeds", "1",
                 "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "corrupt record" in err and len(err.strip().splitlines()) == 1


def test_killed_run_resumes_to_the_same_records(tmp_path: Path) -> None:
    """Kill the run (and its workers) once some records exist; rerun; compare with an uninterrupted run."""
    args = ["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo,sjf,ssf", "--seeds", "5",
            "--workers", "2", "--no-show"]
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([*GPUCLUSTER, *args, "--out", str(killed)], start_new_session=True, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and len(list(killed.glob("*.json"))) < 3 and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = len(list(killed.glob("*.json")))
    assert 3 <= n_before < 15, f"kill came too late to test anything ({n_before} records)"
    assert main([*args, "--out", str(killed)]) == 0
    assert main([*args, "--out", str(whole), "--workers", "1"]) == 0
    got, want = _stable(killed), _stable(whole)
    assert len(want) == 15 and got == want  # none lost, none twice, the same numbers


@pytest.mark.slow
def test_ray_backend_gives_the_local_records(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'gpucluster-env[ray]')")
    import ray

    board = _board(["fifo", "sjf"], 2)
    execute(board, ResultStore(tmp_path / "local", create=True))
    try:
        rep = execute(board, ResultStore(tmp_path / "ray", create=True), workers=2, backend="ray")
        assert ray.get_runtime_context().gcs_address.startswith("127.0.0.1:")  # loopback only
    finally:
        ray.shutdown()
    assert rep.ran == 4 and _stable(tmp_path / "ray") == _stable(tmp_path / "local")


def test_every_subcommand_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "res"
    assert main(["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo,sjf", "--seeds", "2",
                 "--out", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ran"] == 4 and rep["cells_per_min"] > 0 and rep["summary"][0]["scenarios"][0]["rows"]
    assert main(["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo,sjf", "--seeds", "2",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ran 0 cell(s) (4 already recorded)" in text and "cells/min" in text and "sjf" in text
    assert main(["leaderboard", "show", str(out), "--format", "md", "--metric", "avg_jct_s",
                 "--metric", "gpu_occupancy"]) == 0
    md = capsys.readouterr().out
    assert "### tiny · avg_jct_s" in md and "### tiny · gpu_occupancy" in md and "| 1 |" in md
    assert main(["leaderboard", "show", str(out), "--format", "csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("metric,scenario,policy,rank")
    assert len(lines) == 1 + 3 * (2 + 2)  # 3 board metrics x (2 policies + 2 overall rows)
    assert main(["leaderboard", "show", str(out), "--json", "--reference", "sjf"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0]["reference"] == "sjf" and {r["policy"] for r in data[0]["scenarios"][0]["rows"]} == {"fifo", "sjf"}
    assert main(["leaderboard", "show", str(out)]) == 0
    assert "95% CI" in capsys.readouterr().out
    assert main(["leaderboard", "boards", "--json"]) == 0
    assert "default" in {b["name"] for b in json.loads(capsys.readouterr().out)}
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (the `plot` extra)")
    assert main(["leaderboard", "plot", str(out), "--out", str(tmp_path / "png"), "--json"]) == 0
    files = [Path(f) for f in json.loads(capsys.readouterr().out)]
    assert {f.name for f in files} == {"cdf-tiny.png", "bars-avg_jct_s.png"}
    assert all(f.read_bytes()[:4] == b"\x89PNG" for f in files)


@pytest.mark.parametrize("argv, want", [
    (["run", "--scenarios", "nope", "--policies", "fifo"], "unknown scenario 'nope'"),
    (["run", "--scenarios", "tiny", "--policies", "fifo,nope"], "unknown policy 'nope'"),
    (["run", "--scenarios", "tiny", "--policies", "fifo", "--seeds", "0"], "seeds must be a positive integer"),
    (["run", "no-such-board"], "unknown board 'no-such-board'"),
    (["run", "--scenarios", "tiny", "--policies", "fifo", "--workers", "0"], "--workers must be at least 1"),
    (["run", "--scenarios", "tiny", "--policies", "fifo", "--workers", "1000000"], "at most 1024, got 1000000"),
    (["show", "/nonexistent/results"], "does not exist"),
])
def test_bad_arguments_give_one_line_and_exit_2(argv: list[str], want: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    if argv[0] == "run":
        argv = [*argv, "--out", str(tmp_path / "r")]
    assert main(["leaderboard", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert want in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_a_failing_cell_is_one_line_and_keeps_finished_records(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from gpucluster_env.leaderboard import execute as ex

    real = ex.run_cell

    def run_cell(cell: Cell) -> dict:
        if cell.policy == "sjf":
            raise RuntimeError("the engine broke\nsecond line")
        return real(cell)

    monkeypatch.setattr(ex, "run_cell", run_cell)
    assert main(["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo,sjf", "--seeds", "1",
                 "--out", str(tmp_path / "r"), "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "x sjf seed 0 failed: RuntimeError: the engine broke" in err
    assert len(err.splitlines()) == 1 and len(list((tmp_path / "r").glob("*.json"))) == 1


def test_bad_env_options_stop_the_board_before_its_first_cell(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # before: the fifo group ran and recorded, then the sjf group's cell failed on n_pending = 0
    f = tmp_path / "b.toml"
    f.write_text("seeds = 1\n[[group]]\nscenarios = ['tiny']\npolicies = ['fifo']\n"
                 "[[group]]\nscenarios = ['tiny']\npolicies = ['sjf']\nenv_options = { n_pending = 0 }\n")
    assert main(["leaderboard", "run", str(f), "--out", str(tmp_path / "r"), "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{f}: group 2: env option 'n_pending'" in err and len(err.splitlines()) == 1
    assert not list((tmp_path / "r").glob("*.json"))


def test_show_counts_a_cell_in_two_folders_once(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    execute(_board(["fifo", "sjf"], 2), ResultStore(tmp_path / "a", create=True))
    execute(_board(["fifo"], 3), ResultStore(tmp_path / "b", create=True))
    assert main(["leaderboard", "show", str(tmp_path / "a"), str(tmp_path / "b"), "--json",
                 "--policies", "fifo"]) == 0
    rows = json.loads(capsys.readouterr().out)[0]["scenarios"][0]["rows"]
    assert [(r["policy"], r["n"], r["seeds"]) for r in rows] == [("fifo", 3, [0, 1, 2])]


def test_show_reference_by_label(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # a policy run with options is named by its label, as the tables print it
    board = tmp_path / "b.toml"
    board.write_text('name = "b"\ndescription = "d"\nseeds = 1\nreference = "fifo"\nmetrics = ["makespan_s"]\n'
                     '[[group]]\nscenarios = ["tiny"]\n'
                     'policies = ["fifo", { name = "gavel", options = { objective = "makespan" } }]\n')
    out = tmp_path / "res"
    assert main(["leaderboard", "run", str(board), "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    label = 'gavel (objective="makespan")'
    assert main(["leaderboard", "show", str(out), "--json", "--reference", label]) == 0
    rows = json.loads(capsys.readouterr().out)[0]["scenarios"][0]["rows"]
    assert {r["policy"]: r["improvement"] for r in rows}[label] == 0.0


def test_policy_lists_keep_commas_inside_a_label() -> None:
    # `--policies` and `--scenarios` split on commas, but not inside a variant's parentheses or brackets
    from gpucluster_env.cli.option_args import split_names as _split

    assert _split('gavel (objective="makespan"),gavel+gimbal (lgrr=false,liss=false), lucid', "policies") == [
        'gavel (objective="makespan")', "gavel+gimbal (lgrr=false,liss=false)", "lucid"]
    assert _split("tiresias (thresholds=[3600.0, 7200.0]),fifo", "policies") == [
        "tiresias (thresholds=[3600.0, 7200.0])", "fifo"]
    with pytest.raises(ValueError, match="--policies is empty"):
        _split(" , ", "policies")


def test_a_ray_address_nobody_answers_is_one_line_within_seconds(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture) -> None:
    import socket
    import time

    pytest.importorskip("ray", reason="Ray is not installed (pip install 'gpucluster-env[ray]')")
    with socket.socket() as s:  # a port that was just free: nothing listens there now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    rc = main(["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo", "--seeds", "1", "--backend", "ray",
               "--address", f"127.0.0.1:{port}", "--out", str(tmp_path / "res")])
    err = capsys.readouterr().err
    assert rc == 2 and "nothing answers there" in err and time.perf_counter() - t0 < 30, err
    assert not (tmp_path / "res").exists()  # refused before anything was written
