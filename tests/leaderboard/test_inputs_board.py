"""Bad input to the leaderboard's cells, found by the "numbers you can trust" probe (#25): a cell's identity
covers everything that fixes its episode, records with invalid metrics stop the command with one line, boards
are checked whole by the command line's own settings before any cell runs, selections that match nothing are
refused, workers die with their parent, and records carry the versions that made them."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from gpucluster_env.leaderboard.board import MAX_SEEDS, cells_from_args, parse_board
from gpucluster_env.leaderboard.execute import current_records, execute
from gpucluster_env.leaderboard.store import ResultStore
from gpucluster_env.leaderboard.summary import labelled

from gpucluster_env.cli.main import main

GPUCLUSTER = [sys.executable, "-c", "import sys; from gpucluster_env.cli.main import main; sys.exit(main())"]


def _board(group: dict, seeds: int = 1, where: str = "b.toml") -> object:
    return parse_board({"name": "t", "seeds": seeds, "group": [group]}, where)


def _one_line_error(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "internal error" not in err, err
    return err


# 1. identity -------------------------------------------------------------------------------------------------

def test_equivalent_option_spellings_are_one_cell() -> None:
    # tiny's own values are num_jobs = 40, load = 1.0: three spellings of one episode
    b = parse_board({"name": "t", "seeds": 1, "group": [
        {"scenarios": ["tiny"], "policies": ["fifo"]},
        {"scenarios": ["tiny"], "policies": ["fifo"], "scenario_options": {"num_jobs": 40, "load": 1}},
        {"scenarios": ["tiny"], "policies": ["fifo"], "scenario_options": {"load": 1.0}}]})
    assert len(b.cells) == 1 and b.cells[0].scenario_label == "tiny"
    two = _board({"scenarios": ["tiny"], "policies": ["fifo"], "scenario_options": {"load": 2}})
    assert two.cells[0].scenario_options == {"load": 2.0}  # an int for a float option is the float
    pol = parse_board({"name": "t", "seeds": 1, "reference": "tiresias", "group": [
        {"scenarios": ["tiny"], "policies": ["tiresias", {"name": "tiresias", "options": {"thresholds": [3600]}}]}]})
    assert {c.policy_label for c in pol.cells} == {"tiresias", "tiresias (thresholds=[3600.0])"}


def test_trace_source_is_part_of_the_identity_and_the_label(monkeypatch: pytest.MonkeyPatch) -> None:
    import gpucluster_env.traces.scenario_jobs as sj

    group = {"scenarios": ["castor-philly"], "policies": ["fifo"]}
    monkeypatch.setenv("GPUCLUSTER_TRACE_SOURCE", "synthetic")
    syn = _board(group).cells[0]
    assert syn.trace == "synthetic"
    monkeypatch.setenv("GPUCLUSTER_TRACE_SOURCE", "auto")
    monkeypatch.setattr(sj, "trace_identity", lambda sc: "real:0123456789ab")
    real = _board(group).cells[0]
    assert real.trace == "real:0123456789ab" and real.key != syn.key
    recs = [{"cell": c.as_dict()} for c in (syn, real)]
    (a, _), (b, _) = labelled(recs)[0]
    assert a != b and 'trace_id="synthetic"' in a  # two rows, each saying which trace
    assert labelled(recs[:1])[1] == 'trace_id="synthetic"'  # one trace only: said once, for every cell


def test_a_scenario_on_one_trace_keeps_its_plain_label(monkeypatch: pytest.MonkeyPatch) -> None:
    # a folder holding gimbal-philly on the real trace and tiny on the synthetic one: each scenario ran on one
    # trace, so `--scenarios gimbal-philly` must select it by its plain name; a trace is named where it differs
    import gpucluster_env.traces.scenario_jobs as sj

    monkeypatch.setattr(sj, "trace_identity", lambda sc: "real:0123456789ab" if sc.name == "castor-philly"
                        else "synthetic")
    cells = _board({"scenarios": ["castor-philly", "tiny"], "policies": ["fifo"]}).cells
    labels, common = labelled([{"cell": c.as_dict()} for c in cells])
    assert sorted(s for s, _ in labels) == ["castor-philly", "tiny"] and common == ""


def _lab(tmp_path: Path, rows: int) -> Path:
    (tmp_path / "jobs.csv").write_text("job_id,submit_s,num_gpus,duration_s\n" + "\n".join(
        f"j{i},{60 * i},1,{600 + 60 * i}" for i in range(rows)) + "\n")
    f = tmp_path / "lab.toml"
    f.write_text('name = "lab"\ncluster = "V100:1x4"\ntrace = "file"\ntrace_file = "jobs.csv"\nnum_jobs = 4\n'
                 'window = "all"\nmodels = ["resnet50"]\n')
    return f


def test_an_edited_trace_file_is_another_cell(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    lab = _lab(tmp_path, 4)
    board = tmp_path / "b.toml"
    board.write_text(f"seeds = 1\n[[group]]\nscenarios = [{json.dumps(str(lab))}]\npolicies = ['fifo']\n")
    out = tmp_path / "r"
    assert main(["leaderboard", "run", str(board), "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ran"] == 1
    _lab(tmp_path, 6)  # same scenario file, other jobs
    assert main(["leaderboard", "run", str(board), "--out", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ran"] == 1 and rep["skipped"] == 0  # before: 0 run, the old cell counted as done
    keep, notes = current_records(ResultStore(out))
    assert len(keep) == 1 and len(notes) == 1 and "trace file:" in notes[0]
    assert main(["leaderboard", "show", str(out), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)[0]["scenarios"][0]["rows"]
    assert [r["n"] for r in rows] == [1]  # the old file's cell is not mixed in


# 2. records ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def one_record(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    d = tmp_path_factory.mktemp("rec")
    execute(_board({"scenarios": ["tiny"], "policies": ["fifo"]}), ResultStore(d, create=True))
    f = next(d.glob("*.json"))
    return f.name, f.read_text()


@pytest.mark.parametrize("value", ['"fast"', "NaN", "Infinity", "null", "[1, 2]", "-5000", "true", None])
def test_a_record_with_an_invalid_metric_stops_show_and_run(value: str | None, one_record: tuple[str, str],
                                                             tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    name, text = one_record
    rec = json.loads(text)
    if value is None:
        del rec["metrics"]["avg_jct_s"]
    raw = json.dumps(rec, separators=(",", ":"))
    if value is not None:
        raw = raw.replace(f'"avg_jct_s":{json.dumps(rec["metrics"]["avg_jct_s"])}', f'"avg_jct_s":{value}')
        assert value in raw
    (tmp_path / name).write_text(raw)
    err = _one_line_error(["leaderboard", "show", str(tmp_path)], capsys)
    assert name in err and "'avg_jct_s'" in err
    err = _one_line_error(["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo", "--seeds", "1",
                           "--out", str(tmp_path)], capsys)
    assert name in err and "'avg_jct_s'" in err


def test_a_record_with_a_bad_cell_field_is_named(one_record: tuple[str, str], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    name, text = one_record
    rec = json.loads(text)
    rec["cell"]["seed"] = 0.9
    (tmp_path / name).write_text(json.dumps(rec))
    assert "'seed'" in _one_line_error(["leaderboard", "show", str(tmp_path)], capsys)


def test_records_carry_versions_shown_by_show_json(one_record: tuple[str, str], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    name, text = one_record
    rec = json.loads(text)
    assert set(rec["versions"]) == {"python", "numpy", "scipy", "xgboost", "numba", "gymnasium", "torch",
                                    "gpucluster-env"}
    assert rec["versions"]["numpy"] and rec["versions"]["python"].count(".") == 2
    assert "versions" not in rec["cell"]  # not part of the identity
    (tmp_path / name).write_text(text)
    assert main(["leaderboard", "show", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["versions"]["numpy"] == [rec["versions"]["numpy"]]


# 3. one validation path, whole board first ---------------------------------------------------------------------

@pytest.mark.parametrize("group, want", [
    ({"policies": [{"name": "tiresias", "options": {"thresholds": [-1.0]}}]}, "'thresholds'"),
    ({"policies": [{"name": "tiresias", "options": {"thresholds": [True]}}]}, "'thresholds'"),
    ({"policies": ["fifo"], "env_options": {"max_sim_time_s": -5}}, "env option 'max_sim_time_s'"),
    ({"policies": ["fifo"], "env_options": {"n_pending": 10**8}}, "env option 'n_pending'"),
    ({"policies": ["fifo"], "env_options": {"objective": "fastest"}}, "env option 'objective'"),
    ({"policies": ["fifo"], "env_options": {"xi": 0.5}}, "env option 'xi'"),
    ({"policies": ["fifo"], "scenario_options": {"num_jobs": 2.5}}, "'num_jobs'"),
    ({"policies": ["fifo"], "seeds": 2**70}, "group 1: seeds"),
    ({"policies": ["rl:somewhere", ], "policy_options": {"x": 1}}, "takes no options"),
])
def test_boards_refuse_what_the_command_line_refuses(group: dict, want: str) -> None:
    with pytest.raises(ValueError, match=want) as e:
        _board({"scenarios": ["tiny"], **group})
    assert str(e.value).startswith("b.toml: group 1") and "\n" not in str(e.value)


@pytest.mark.parametrize("seeds", [1e9, 2**70, MAX_SEEDS + 1, 0, -3, 0.9, True, [1, 2], "5"])
def test_bad_seed_counts_are_refused_by_name(seeds: object) -> None:
    with pytest.raises(ValueError, match=r"^b.toml: seeds must be a positive integer"):
        parse_board({"seeds": seeds, "group": [{"scenarios": ["tiny"], "policies": ["fifo"]}]}, "b.toml")


def test_seed_bound_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    err = _one_line_error(["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo", "--seeds",
                           str(2**40), "--out", str(tmp_path)], capsys)
    assert "--seeds must be a positive integer" in err


def test_board_and_cli_share_policy_option_checks(capsys: pytest.CaptureFixture) -> None:
    err = _one_line_error(["run", "--policy", "tiresias", "--policy-option", "thresholds=[-1]"], capsys)
    with pytest.raises(ValueError) as e:
        _board({"scenarios": ["tiny"], "policies": [{"name": "tiresias", "options": {"thresholds": [-1]}}]})
    assert err.split("'thresholds': ")[1].split(",")[0] == str(e.value).split("'thresholds': ")[1].split(",")[0]


# 4. selections -------------------------------------------------------------------------------------------------

def test_scenarios_without_policies_leave_out_those_that_cannot_run() -> None:
    board, notes = cells_from_args(["tiny"], None, 1)
    pols = {c.policy for c in board.cells}
    assert "rl-castor-philly" not in pols and "fifo" in pols
    assert any(n.startswith("rl-castor-philly left out on tiny") for n in notes)


def test_a_policy_that_cannot_run_is_refused_before_any_cell(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    err = _one_line_error(["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo,rl-castor-philly",
                           "--seeds", "1", "--out", str(tmp_path / "r")], capsys)
    assert "'rl-castor-philly' cannot run on scenario tiny" in err
    assert not list((tmp_path / "r").glob("*.json"))


@pytest.mark.parametrize("argv, want", [
    (["default", "--policies", "random"], "board 'default' has no policy 'random'"),
    (["default", "--scenarios", "castor-philly"], "board 'default' has no scenario 'castor-philly'"),
    (["default", "--policies", "fifo,random"], "has no policy 'random'"),
])
def test_a_selection_that_matches_nothing_is_an_error(argv: list[str], want: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    err = _one_line_error(["leaderboard", "run", *argv, "--out", str(tmp_path / "r")], capsys)
    assert want in err


def test_scenarios_accepts_a_scenario_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    lab = _lab(tmp_path, 4)
    assert main(["leaderboard", "run", "--scenarios", str(lab), "--policies", "fifo,sjf", "--seeds", "1",
                 "--out", str(tmp_path / "r"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ran"] == 2


# 5. workers die with their parent ------------------------------------------------------------------------------

def _children(pid: int) -> set[int]:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_when_the_run_is_killed(tmp_path: Path) -> None:
    args = ["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo,sjf", "--seeds", "200",
            "--workers", "2", "--no-show", "--out", str(tmp_path / "r")]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([*GPUCLUSTER, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list((tmp_path / "r").glob("*.json")) and proc.poll() is None:
            time.sleep(0.05)
        workers = {p for p in _children(proc.pid) if "multiprocessing" in Path(f"/proc/{p}/cmdline").read_text()}
        assert len(workers) >= 2 and proc.poll() is None
        os.kill(proc.pid, signal.SIGKILL)  # the parent only, as `kill -9 PID` does
        proc.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.05)
        assert not any(_alive(p) for p in workers)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# 7. more of the same -------------------------------------------------------------------------------------------

def test_a_long_scenario_path_gives_a_short_record_name(tmp_path: Path) -> None:
    # before: the key held the whole path, and writing the record failed (file name too long) after the episode
    deep = tmp_path / ("d" * 120) / ("e" * 120)
    deep.mkdir(parents=True)
    lab = _lab(deep, 4)
    cell = _board({"scenarios": [str(lab)], "policies": ["fifo"]}).cells[0]
    assert len(cell.key) < 120 and cell.key.startswith("lab_fifo__s0__")
    store = ResultStore(tmp_path / "r", create=True)
    assert execute(_board({"scenarios": [str(lab)], "policies": ["fifo"]}), store).ran == 1


@pytest.mark.parametrize("text", ["{", '{"reference": 5}', '{"metrics": []}', '{"metrics": "avg_jct_s"}', "[]"])
def test_corrupt_board_settings_beside_the_records_are_named(text: str, one_record: tuple[str, str], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    # before: silently ignored, so show ranked by another metric against another reference than the board's
    name, rec = one_record
    (tmp_path / name).write_text(rec)
    (tmp_path / ".board").mkdir()
    (tmp_path / ".board" / "board.json").write_text(text)
    assert "board.json: corrupt board settings" in _one_line_error(["leaderboard", "show", str(tmp_path)], capsys)


def _rec(scenario_options: dict, policy: str, seed: int, **metrics: float | None) -> dict:
    from gpucluster_env.leaderboard.board import Cell

    return {"cell": Cell("tiny", policy, seed, scenario_options).as_dict(), "metrics": metrics, "truncated": False}


def test_a_zero_reference_mean_is_said_not_divided_by() -> None:
    # before: sjf's runs over fifo's mean of 0 gave inf, and the overall score pooled them with the other scenario
    from gpucluster_env.leaderboard.summary import summarize

    recs = [_rec({}, p, s, avg_queue_s=v) for p, vals in (("fifo", (0.0, 0.0)), ("sjf", (5.0, 7.0)))
            for s, v in enumerate(vals)]
    recs += [_rec({"load": 2.0}, p, s, avg_queue_s=v) for p, vals in (("fifo", (10.0, 12.0)), ("sjf", (5.0, 6.0)))
             for s, v in enumerate(vals)]
    summ = summarize(recs, "avg_queue_s", "fifo")
    assert {o.policy: o.scenarios for o in summ.overall} == {"fifo": 1, "sjf": 1}
    assert all(np.isfinite(o.mean) for o in summ.overall)
    assert any("tiny: fifo's mean avg_queue_s is 0" in n for n in summ.notes)


def test_records_without_a_value_of_the_metric_are_counted_in_a_note() -> None:
    from gpucluster_env.leaderboard.summary import summarize
    from gpucluster_env.leaderboard.summary_tables import render

    recs = [_rec({}, "fifo", s, avg_jct_s=v) for s, v in enumerate((10.0, None, 12.0))]
    summ = summarize(recs, "avg_jct_s", "fifo")
    assert summ.scenarios[0].rows[0].n == 2
    assert "tiny · fifo: 1 of 3 record(s) have no avg_jct_s" in render([summ], "md")


@pytest.mark.parametrize("field, value", [
    ("truncated", "no"), ("trace", 5), ("wall_s", "fast"), ("steps", -1), ("versions", 5),
    ("versions", {"numpy": 2}), ("per_job", [1]), ("per_job", {"jct_s": ["x"]}), ("per_job", {"jct_s": [1.0]}),
    ("per_job", {"gpus": [True] * 40}),
])
def test_a_record_with_a_bad_field_stops_show(field: str, value: object, one_record: tuple[str, str],
                                              tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # before: a string wall_s or a garbage versions/per_job crashed show, plot or the reproduction page
    name, text = one_record
    rec = json.loads(text)
    rec[field] = value
    (tmp_path / name).write_text(json.dumps(rec))
    err = _one_line_error(["leaderboard", "show", str(tmp_path)], capsys)
    assert name in err and f"field '{field}" in err


def test_an_env_option_that_would_replace_a_policys_world_is_refused(tmp_path: Path) -> None:
    # before: xi = 1.5 silently replaced castor-timeslice's time-slicing catalog, so it ran in the MPS world
    board = _board({"scenarios": ["tiny"], "policies": ["fifo", "castor-timeslice"], "env_options": {"xi": 1.5}})
    store = ResultStore(tmp_path, create=True)
    with pytest.raises(ValueError, match="x castor-timeslice: env option xi=1.5 would replace the policy's own"):
        execute(board, store)
    assert len(store) == 0


def test_a_trained_model_for_other_clusters_is_refused_before_any_cell(tmp_path: Path) -> None:
    # before: rl:DIR was only checked by loading it, and failed mid-run on the observation's shape
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "meta.json").write_text(json.dumps({"algo": "maskable_ppo", "gpu_types": 1}))
    with pytest.raises(ValueError, match=r"^b.toml: group 1: policy 'rl:.*' cannot run on scenario tiny: the model "
                                         r"was trained on clusters with 1 GPU type\(s\), tiny has 3"):
        _board({"scenarios": ["tiny"], "policies": [f"rl:{tmp_path / 'm'}"]})
    with pytest.raises(ValueError, match=r"^b.toml: group 1: policy rl:.*nowhere: no meta.json"):
        _board({"scenarios": ["tiny"], "policies": [f"rl:{tmp_path / 'nowhere'}"]})


def test_a_trace_option_and_the_trace_identity_are_both_shown(tmp_path: Path) -> None:
    lab = _lab(tmp_path, 4)
    cell = _board({"scenarios": ["tiny"], "policies": ["fifo"],
                   "scenario_options": {"trace": str(tmp_path / "jobs.csv")}}).cells[0]
    assert cell.trace.startswith("file:") and lab.exists()
    assert f'trace="{tmp_path / "jobs.csv"}"' in cell.scenario_label and 'trace_id="file:' in cell.scenario_label


def test_a_trace_that_cannot_be_built_stops_the_run_before_any_cell(tmp_path: Path) -> None:
    # before: the fifo cell on tiny ran and was recorded, then the cell on the unknown trace failed mid-run
    with pytest.raises(ValueError, match=r"group 2: scenario tiny: .*unknown trace '/nonexistent.csv'"):
        parse_board({"name": "t", "seeds": 1, "group": [
            {"scenarios": ["tiny"], "policies": ["fifo"]},
            {"scenarios": ["tiny"], "policies": ["fifo"], "scenario_options": {"trace": "/nonexistent.csv"}}]})
    bad = tmp_path / "bad.csv"  # a trace file that exists but whose rows cannot be read
    bad.write_text("timestamp,duration,num_gpus\nnot-a-time,-1,x\n")
    board = parse_board({"name": "t", "seeds": 1, "group": [
        {"scenarios": ["tiny"], "policies": ["fifo"]},
        {"scenarios": ["tiny"], "policies": ["fifo"], "scenario_options": {"trace": str(bad)}}]})
    store = ResultStore(tmp_path / "r", create=True)
    with pytest.raises(ValueError, match=r"its jobs cannot be built: .*bad.csv"):
        execute(board, store)
    assert len(store) == 0


def test_a_reference_that_ran_only_with_options_must_be_named_by_its_label(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture) -> None:
    # before: `--reference tiresias` was accepted, matched no row, and every comparison was silently empty
    board = parse_board({"name": "t", "seeds": 1, "group": [{"scenarios": ["tiny"], "policies": [
        "fifo", {"name": "tiresias", "options": {"thresholds": [600.0]}}]}]})
    execute(board, ResultStore(tmp_path, create=True))
    err = _one_line_error(["leaderboard", "show", str(tmp_path), "--reference", "tiresias"], capsys)
    assert "ran only with options" in err and "'tiresias (thresholds=[600.0])'" in err
    assert main(["leaderboard", "show", str(tmp_path), "--json", "--reference", "tiresias (thresholds=[600.0])"]) == 0


def test_a_scenario_without_the_reference_is_said() -> None:
    from gpucluster_env.leaderboard.summary import summarize

    recs = [_rec({}, "fifo", 0, avg_jct_s=10.0), _rec({}, "sjf", 0, avg_jct_s=8.0),
            _rec({"load": 2.0}, "sjf", 0, avg_jct_s=9.0)]
    summ = summarize(recs, "avg_jct_s", "fifo")
    assert any(n.startswith("tiny (load=2.0): no avg_jct_s of fifo here") for n in summ.notes)


def test_a_version_1_record_is_named_with_what_to_do(one_record: tuple[str, str], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    name, text = one_record
    rec = json.loads(text)
    rec["format_version"] = 1
    (tmp_path / name).write_text(json.dumps(rec))
    err = _one_line_error(["leaderboard", "show", str(tmp_path)], capsys)
    assert f"{name}: record format version 1 (made before" in err and "new results folder" in err


def test_an_episode_on_another_trace_than_planned_is_not_recorded(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # e.g. the real file appeared between planning (synthetic) and running: the record would carry the wrong trace
    from gpucluster_env.leaderboard import execute as ex

    monkeypatch.setenv("GPUCLUSTER_TRACE_SOURCE", "synthetic")
    board = _board({"scenarios": ["castor-philly"], "policies": ["fifo"], "scenario_options": {"num_jobs": 4}})
    monkeypatch.setattr(ex, "run_cell", lambda cell: {"trace": "real philly trace (/data/philly.csv)",
                                                      "jobs": 4, "jobs_done": 4})
    store = ResultStore(tmp_path, create=True)
    with pytest.raises(ValueError, match="ran on 'real philly trace .*', not on the synthetic trace it was planned"):
        execute(board, store)
    assert len(store) == 0


def test_a_metric_no_cell_records_stops_the_board_before_its_first_cell(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture) -> None:
    # before: every cell ran, then the run stopped at the end on "no record has metric 'avg_jtc_s'"
    f = tmp_path / "b.toml"
    f.write_text("seeds = 1\nmetrics = ['avg_jtc_s']\n[[group]]\nscenarios = ['tiny']\npolicies = ['fifo']\n")
    err = _one_line_error(["leaderboard", "run", str(f), "--out", str(tmp_path / "r"), "--json"], capsys)
    assert f"{f}: metric 'avg_jtc_s' is not recorded" in err and not list((tmp_path / "r").glob("*.json"))
    # a policy's own counts are known where the board has that policy
    ok = parse_board({"seeds": 1, "metrics": ["gimbal_attempts"], "reference": "lucid+gimbal",
                      "group": [{"scenarios": ["tiny"], "policies": ["lucid+gimbal"]}]}, "g.toml")
    from gpucluster_env.leaderboard.execute import check_metric_names

    check_metric_names(ok)
    fifo_only = dataclasses.replace(_board({"scenarios": ["tiny"], "policies": ["fifo"]}), metrics=("gimbal_attempts",))
    with pytest.raises(ValueError, match="metric 'gimbal_attempts' is not recorded"):
        check_metric_names(fifo_only)


def test_a_record_with_a_fraction_above_one_stops_show(one_record: tuple[str, str], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    """A forged occupancy of 250% is not shown as a result (issue #25's second probe)."""
    name, text = one_record
    rec = json.loads(text)
    rec["metrics"]["gpu_occupancy"] = 2.5
    (tmp_path / name).write_text(json.dumps(rec))
    err = _one_line_error(["leaderboard", "show", str(tmp_path)], capsys)
    assert name in err and "'gpu_occupancy'" in err and "at most 1" in err


def test_show_output_into_a_results_folder_is_refused(one_record: tuple[str, str], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    """``show --output`` onto a record, or beside the records (read as a foreign record next time), writes
    nothing; ``--address`` without Ray is refused, not ignored (issue #25's second probe)."""
    name, text = one_record
    (tmp_path / name).write_text(text)
    for out in (tmp_path / name, tmp_path / "table.json", tmp_path / "." / "t.csv"):
        err = _one_line_error(["leaderboard", "show", str(tmp_path), "--format", "json", "--output", str(out)],
                              capsys)
        assert "is in the results folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [name] and (tmp_path / name).read_text() == text
    err = _one_line_error(["leaderboard", "show", str(tmp_path), "--output", ""], capsys)
    assert "empty file name" in err
    err = _one_line_error(["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo", "--seeds", "1",
                           "--address", "10.0.0.1:6379", "--out", str(tmp_path)], capsys)
    assert "--address" in err and "--backend ray" in err
    err = _one_line_error(["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo", "--seeds", "1",
                           "--out", ""], capsys)
    assert "--out ''" in err


def test_a_metric_named_twice_is_shown_once(one_record: tuple[str, str], tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    name, text = one_record
    (tmp_path / name).write_text(text)
    assert main(["leaderboard", "show", str(tmp_path), "--metric", "avg_jct_s", "--metric", "avg_jct_s",
                 "--format", "csv"]) == 0
    assert capsys.readouterr().out.count("avg_jct_s,tiny,fifo,") == 1


def test_a_hand_edited_metric_is_refused_by_its_checksum(one_record: tuple[str, str], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    name, text = one_record
    rec = json.loads(text)
    assert len(rec["checksum"]) == 32
    (tmp_path / name).write_text(text)
    assert main(["leaderboard", "show", str(tmp_path), "--format", "csv"]) == 0
    capsys.readouterr()
    rec["metrics"]["avg_jct_s"] = rec["metrics"]["avg_jct_s"] * 0.5  # still a valid number: only the sum sees it
    (tmp_path / name).write_text(json.dumps(rec))
    err = _one_line_error(["leaderboard", "show", str(tmp_path)], capsys)
    assert f"{name}: record edited after it was written" in err
    rec.pop("checksum")
    (tmp_path / name).write_text(json.dumps(rec))
    assert "record edited after it was written" in _one_line_error(["leaderboard", "show", str(tmp_path)], capsys)


def test_first_seed_is_checked_and_needs_a_board(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    err = _one_line_error(["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo", "--first-seed", "5",
                           "--out", str(tmp_path / "r")], capsys)
    assert "--first-seed applies to a board" in err
    err = _one_line_error(["leaderboard", "run", "claims", "--policies", "fifo", "--first-seed", "-3",
                           "--out", str(tmp_path / "r")], capsys)
    assert "--first-seed must be an integer from 0" in err
    assert not (tmp_path / "r").exists()
