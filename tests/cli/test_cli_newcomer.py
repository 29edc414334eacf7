"""A newcomer's first hour (issue #29): --version, defaults in every --help, tables that fit the terminal,
one-line answers where tracebacks or nan/inf used to be."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from gpucluster_env.cli.main import DefaultsHelpFormatter, _nothing_to_show, build_parser, main


def _parsers(parser: argparse.ArgumentParser, path: str = "gpucluster"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_version(capsys):
    try:
        main(["--version"])
    except SystemExit as e:
        assert e.code == 0
    out = capsys.readouterr().out
    assert out.startswith("gpucluster ") and out.split()[1][0].isdigit()


def test_every_help_shows_every_default():
    """Every option of every command and subcommand whose default is something (not None, off or empty) says
    what it is in its --help line."""
    checked = 0
    for path, parser in _parsers(build_parser()):
        fmt = DefaultsHelpFormatter(path)
        text = parser.format_help()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction | argparse._HelpAction | argparse._VersionAction):
                continue
            if _nothing_to_show(action.default) or (not action.option_strings and action.nargs not in ("?", "*")):
                continue
            line = fmt._get_help_string(action)
            assert "default" in line.lower(), f"{path} {action.option_strings or action.dest}: {line!r}"
            checked += 1
        assert "%(default)" not in text
    assert checked >= 40  # the walk reached the subcommands (50 options with a default when written)


def test_reproduce_on_partial_results_is_one_line(tmp_path, capsys):
    import render_reproduction as reproduce

    out = tmp_path / "castor"
    assert main(["leaderboard", "run", "castor", "--scenarios", "castor-philly", "--policies", "fifo", "--seeds", "1",
                 "--out", str(out), "--no-show"]) == 0
    capsys.readouterr()
    assert reproduce.main([str(out), "--out", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "partial results" in err and "castor-philly x sjf" in err
    assert not (tmp_path / "r.md").exists()
    assert reproduce.main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nowhere does not exist" in err


# --- tables at 80 and 160 columns, in a pipe (rich then uses $COLUMNS) ---------------------------------------

GPUCLUSTER = str(Path(sys.executable).parent / "gpucluster")
DATA = Path(os.environ.get("GPUCLUSTER_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))


def cli(columns: int, *args: str) -> str:
    proc = subprocess.run([GPUCLUSTER, *args], capture_output=True, text=True,
                          env=dict(os.environ, COLUMNS=str(columns)))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def assert_whole(out: str, columns: int, names: list[str]) -> None:
    """Nothing cut (no ellipsis anywhere), no line wider than the console, every name whole in a table cell."""
    assert "…" not in out
    assert max(cell_len(line) for line in out.splitlines()) <= columns
    for n in names:
        assert f"│ {n} " in out or f"┃ {n} " in out, n


@pytest.fixture(scope="module")
def all_results() -> list[dict]:
    return json.loads(cli(80, "run", "--scenario", "tiny", "--option", "num_jobs=12", "--policy", "all", "--json"))


@pytest.mark.parametrize("columns", [80, 160])
def test_run_table_shows_every_number(columns, all_results):
    out = cli(columns, "run", "--scenario", "tiny", "--option", "num_jobs=12", "--policy", "all", "--no-progress")
    results = all_results
    assert_whole(out, columns, [r["policy"] for r in results])
    for r in results:
        for key in ("avg_jct_s", "p95_jct_s", "makespan_s", "avg_queue_s"):
            assert f" {r[key]:,.0f} " in out, (r["policy"], key)
    assert "left out: hadare (" in out


@pytest.mark.parametrize("columns", [80, 160])
def test_scenarios_and_policies_tables_fold_text_not_names(columns):
    from gpucluster_env.policy import policy_names
    from gpucluster_env.scenarios import SCENARIOS

    assert_whole(cli(columns, "scenarios"), columns, list(SCENARIOS))
    out = cli(columns, "policies")
    assert_whole(out, columns, policy_names())
    assert "Shortest job first" in out  # descriptions wrap instead of being squeezed to a few characters


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("board") / "res"
    subprocess.run([GPUCLUSTER, "leaderboard", "run", "--scenarios", "tiny", "--policies",
                    "fifo,castor-oracle,gavel-packed+gimbal", "--seeds", "2", "--out", str(out), "--no-show"],
                   check=True, capture_output=True)
    return out


@pytest.mark.parametrize("columns", [80, 160])
def test_leaderboard_show_shows_every_interval(results_dir, columns):
    out = cli(columns, "leaderboard", "show", str(results_dir))
    assert_whole(out, columns, ["fifo", "castor-oracle", "gavel-packed+gimbal"])
    assert out.count("[") >= 3 * 2  # every policy's mean interval and its improvement interval


def test_leaderboard_run_on_a_pipe_writes_whole_lines(tmp_path):
    """Piped to a log: progress as whole lines on stderr, nothing of it glued to the summary on stdout, and the
    partial results in the final table's unit."""
    proc = subprocess.run([GPUCLUSTER, "leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo,sjf",
                           "--seeds", "2", "--out", str(tmp_path / "r")], capture_output=True, text=True,
                          env=dict(os.environ, COLUMNS="80"))
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.splitlines()
    assert "4 cell(s) to run" in err[0] and "4/4 cells done" in err[-1]
    assert proc.stdout.startswith("ran 4 cell(s)")
    assert "…" not in proc.stdout


@pytest.mark.skipif(not (DATA / "profiles" / "gavel").is_dir(), reason=f"public profiles not found at {DATA}")
@pytest.mark.parametrize("columns", [80, 160])
def test_catalog_validate_verdicts_and_legend(columns):
    out = cli(columns, "catalog", "validate")
    assert_whole(out, columns, ["V100", "solo throughput", "share decisions"])
    assert "verdict:" in out and "legend:" in out
    for abbrev in ("scal med", "pred MdAPE", "decisions"):
        assert f"{abbrev}:" in out.split("legend:")[1].replace("\n  ", " ") or abbrev in out.split("legend:")[1]
    verdict_rows = [line for line in out.splitlines() if line.startswith("│") and ("ok ≤" in line or "ok ≥" in line)]
    assert verdict_rows and all(any(v in row for v in (" ok ", " loose ", " off ")) for row in verdict_rows)


# --- evaluate and truncation causes --------------------------------------------------------------------------


class _Waiter:
    """A policy that only ever waits (the engine stops it as stalled)."""

    name = "waiter"
    needs_observation = False
    options: dict = {}

    def env_kwargs(self) -> dict:
        return {}

    def reset(self, env) -> None:
        pass

    def act(self, observation, env):
        return 0


def test_truncation_names_its_cause():
    from gpucluster_env.cli.run_progress import EpisodeLimits
    from gpucluster_env.policy import run_episode

    stalled = run_episode("tiny", _Waiter(), 0)  # type: ignore[arg-type]
    assert stalled["truncated"] and stalled["truncated_by"] == "stalled"
    steps = run_episode("tiny", "fifo", 0, env_kwargs={"max_steps": 20})
    assert steps["truncated"] and steps["truncated_by"] == "max_steps"
    clock = run_episode("tiny", "fifo", 0, env_kwargs={"max_sim_time_s": 600.0})
    assert clock["truncated"] and clock["truncated_by"] == "max_sim_time_s"
    assert "truncated_by" not in run_episode("tiny", "fifo", 0)
    from gpucluster_env.policy import make_policy
    from gpucluster_env.registration import max_episode_steps

    own = make_policy("fifo")
    own.step_limit = lambda n_jobs: 25  # type: ignore[method-assign]  # as a learned policy's registered limit
    model = run_episode("tiny", own, 0)
    assert model["truncated"] and model["truncated_by"] == "max_episode_steps" and model["steps"] == 25
    limits = EpisodeLimits(86400.0, 20)
    said = limits.describe("max_episode_steps", 40)
    assert f"{max_episode_steps(40):,} steps" in said and "max_episode_steps" in said and "days" not in said
    assert "--max-steps" in limits.describe("max_steps") and "days" not in limits.describe("max_steps")
    assert "stalled" in limits.describe("stalled") and "--max" not in limits.describe("stalled")


def test_run_reports_the_limit_that_stopped_it():
    out = cli(80, "run", "--scenario", "tiny", "--policy", "fifo", "--max-steps", "30")
    line = " ".join(out.split("truncated: ")[-1].split())
    assert line.startswith("fifo stopped at the limit of 30 steps (--max-steps)") and "days" not in line
    r = json.loads(cli(80, "run", "--scenario", "tiny", "--policy", "fifo", "--max-sim-days", "0.01", "--json"))
    assert r["truncated_by"] == "max_sim_time_s" and "--max-steps" not in r["limits"]


def test_evaluate_summary_has_no_inf_nan_or_thin_intervals():
    import math
    import warnings

    import numpy as np
    from gpucluster_env.agents.evaluate import MIN_SEEDS_FOR_INTERVAL, _paired, _row

    from gpucluster_env.cli.evaluate_cmd import print_summary
    from gpucluster_env.text_tables import make_console

    model = np.array([100.0, math.nan, 120.0])
    ref = np.array([200.0, 210.0, 190.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m_row = _row(model, [0, 1, 2], {1: "stalled"})
        r_row = _row(ref, [0, 1, 2], {})
        r_row["model_vs_this"] = _paired(model, ref)
    assert m_row["values"] == [100.0, None, 120.0] and m_row["mean"] == 110.0 and m_row["ci95"] is None
    assert m_row["truncated"] == [{"seed": 1, "cause": "stalled"}] and r_row["model_vs_this"]["paired_seeds"] == 2
    assert MIN_SEEDS_FOR_INTERVAL > 2
    import io

    from rich.console import Console

    buf = io.StringIO()
    res = {"summary": {"tiny": {"rl:x": m_row, "fifo": r_row}}}
    print_summary(res, "avg_jct_s", "0-2", Console(file=buf, width=80))
    out = buf.getvalue()
    assert "inf" not in out and "nan" not in out.lower() and "…" not in out
    assert "seed 1: truncated (stalled" in " ".join(out.split())
    assert "n/a (2 seeds)" in out and f"fewer than {MIN_SEEDS_FOR_INTERVAL} finished seeds" in out
    assert make_console() is not None


def test_evaluate_end_to_end_without_warnings(capsys):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["evaluate", "--model", "sjf", "--scenario", "tiny", "--seeds", "0-1", "--baselines", "fifo",
                     "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    row = res["summary"]["tiny"]["fifo"]
    assert row["ci95"] is None and "interval needs at least" in row["ci_note"]
    assert main(["evaluate", "--model", "rl-castor-philly", "--scenario", "tiny", "--seeds", "0"]) == 2
    assert "cannot run on tiny" in capsys.readouterr().err


def test_traces_compare_venus_says_not_available_never_nan():
    out = cli(80, "traces", "compare", "venus", "--jobs", "2000")
    assert "nan" not in out.lower() and max(cell_len(line) for line in out.splitlines()) <= 80
    if "published aggregates" in out:  # the per-job Venus log is absent (as in the development workspace)
        assert " n/a" in out and out.rstrip().splitlines()[-1].startswith("n/a: ")

    def no_nan(text: str) -> None:
        raise AssertionError(f"JSON holds {text}")

    json.loads(cli(80, "traces", "compare", "venus", "--jobs", "2000", "--json"), parse_constant=no_nan)


def test_train_ends_with_a_summary_and_writes_only_folders_it_fills(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--process", "full", "--scenario", "tiny", "--timesteps", "256", "--n-steps", "64",
                 "--n-envs", "1", "--vec", "dummy", "--windows", "", "--no-progress", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "trained maskable_ppo on tiny for 256 timesteps" in text and "training episodes" in text
    assert "evaluation: none ran (every 20,000 timesteps" in text
    assert f"model: {out / 'model.zip'}" in text and f"next: gpucluster evaluate --model {out}" in text
    assert sorted(p.name for p in out.iterdir()) == ["logs", "meta.json", "model.zip"]
    summary = json.loads((out / "meta.json").read_text())["summary"]
    assert summary["evaluations"] == 0 and summary["checkpoints"] == 0 and summary["episodes"] >= 0
    for argv in (["run", "--scenario", "castor-philly", "--policy", f"rl:{out}"],
                 ["evaluate", "--model", str(out), "--scenario", "castor-philly", "--seeds", "0"]):
        assert main(argv) == 2  # a model trained on 3 GPU types, a cluster of 1: said in one line, not sb3's error
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "cannot run on castor-philly" in err[0]
        assert "'cluster' (12,) vs (4,)" in err[0] and "trained on 3 GPU type(s)" in err[0]


# --- replay --timeline ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("rec")
    out = []
    for pol in ("gavel+gimbal", "fifo"):  # one that shares and preempts, one that does neither
        f = d / f"{pol}.jsonl"
        assert main(["run", "--scenario", "tiny", "--policy", pol, "--no-progress", "--json", "--record", str(f)]) == 0
        out.append(f)
    return out[0], out[1]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_timeline_png_of_one_and_two_records(records, tmp_path, capsys):
    from gpucluster_env.replay.record import read_record
    from gpucluster_env.replay.timeline_png import episode_drawing

    one, two = tmp_path / "one.png", tmp_path / "two.png"
    assert main(["replay", str(records[0]), "--timeline", str(one)]) == 0
    assert main(["replay", str(records[0]), str(records[1]), "--timeline", str(two)]) == 0
    assert f"wrote {one}" in capsys.readouterr().out
    w1, h1 = _png_size(one)
    w2, h2 = _png_size(two)
    assert 800 <= w1 <= 4000 and 300 <= h1 <= 3000 and w2 > 1.5 * w1 and h2 == h1
    assert 20_000 < one.stat().st_size < 5_000_000
    d = episode_drawing(read_record(records[0]))
    assert d.preemptions and any(len(jobs) == 2 for _, jobs, _, _ in d.segments)  # what the marks stand for
    assert all(0 <= g < d.num_gpus and t0 < t1 <= d.t_end for g, _, t0, t1 in d.segments)
    fifo = episode_drawing(read_record(records[1]))
    assert not fifo.preemptions and all(len(jobs) == 1 for _, jobs, _, _ in fifo.segments)


@pytest.mark.parametrize("target, needle", [("nowhere/x.png", "does not exist"), ("x.jpg", "must end in .png")])
def test_timeline_bad_target_is_one_line(records, tmp_path, capsys, target, needle):
    assert main(["replay", str(records[0]), "--timeline", str(tmp_path / target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "--timeline" in err[0]


def test_timeline_bad_record_or_no_matplotlib_is_one_line(records, tmp_path, capsys, monkeypatch):
    assert main(["replay", str(tmp_path / "missing.jsonl"), "--timeline", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.jsonl" in err[0]
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    assert main(["replay", str(records[0]), "--timeline", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'gpucluster-env[plot]'" in err[0]
    assert not (tmp_path / "x.png").exists()


def test_glossary_explains_every_table_abbreviation():
    import re

    from gpucluster_env.cli.catalog_report import PER_GPU
    from gpucluster_env.cli.run_cmd import COLUMNS

    text = (Path(__file__).resolve().parents[2] / "docs" / "glossary.md").read_text()
    terms = " ".join(re.findall(r"\*\*([^*]+)\*\*", text))
    wanted = {"ξ", "SB mean", "SB med", "SM est", "IQM", "coloc", "MdAPE", "JCT", "GPU occ", "shared", "preempt",
              "makespan", "P(better than X)", "95% CI", "truncated", "†", "scal med", "solo med", "decisions"}
    wanted |= {head.replace(" s", "").replace("avg ", "").replace("median ", "").replace("p95 ", "")
               for _, head, _ in COLUMNS if head != "policy"}
    wanted |= {head.replace("pred ", "").replace("ξ ", "") for _, head, _ in PER_GPU}
    missing = [w for w in sorted(wanted) if w not in terms]
    assert not missing, missing
    assert "docs/glossary.md" in (Path(__file__).resolve().parents[2] / "README.md").read_text()
