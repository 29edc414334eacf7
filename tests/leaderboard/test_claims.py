"""The papers' headline claims: the shipped file and its board agree, a bad claims file is one line naming the
entry and field, and `gpucluster leaderboard claims` end to end on a tiny run (the verdicts on synthetic records:
test_claims_verdicts.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from gpucluster_env.leaderboard.board import load_board
from gpucluster_env.leaderboard.claim_check import cell_key, judge, needed_cells
from gpucluster_env.leaderboard.claims import load_claims, parse_claims
from gpucluster_env.leaderboard.papers import PAPER, PAPER_SIZES

from gpucluster_env.cli.main import main

BASE: dict[str, Any] = {
    "settings": {"t": {"scenario": "tiny"}, "t2": {"scenario": "tiny", "scenario_options": {"load": 2.0}}},
    "table": [{"id": "tab", "paper": "p", "where": "Table 1", "setting": "t", "unit": "h",
               "columns": ["avg_jct_s", "avg_queue_s"], "rows": {"fifo": [2.0, 1.0], "sjf": [1.0, 0.5]}}],
    "claim": [{"id": "c1", "paper": "p", "where": "Table 1", "setting": "t", "metric": "avg_jct_s",
               "policy": "sjf", "baseline": "fifo", "published": {"table": "tab"}}],
}


def _claims(**claim: Any) -> Any:
    data = copy.deepcopy(BASE)
    data["claim"] = [{**data["claim"][0], **claim}]
    return parse_claims(data, "f.toml")


def test_shipped_claims_load_and_feed_the_papers_tables() -> None:
    claims = load_claims()
    assert len(claims.claims) >= 33 and {c.paper for c in claims.claims} == {"castor", "sjf-bsbf", "gimbal",
                                                                              "hadar-hadare"}
    # the tables papers.py reads are the claims file's, Lucid's and Pollux's rows included
    assert PAPER[("castor-venus", "")]["lucid"] == (3.35, 2.07)
    assert PAPER[("sjfbsbf-philly", "num_jobs=480")]["castor"] == (1.57, 0.69)
    assert PAPER_SIZES["num_jobs=480"]["sjf"] == (7.00, 1.90, 5.35, 1.35)
    t6 = next(c for c in claims.claims if c.id == "castor-t6-lucid")
    assert t6.values == (2.89, 3.35) and t6.improvement == pytest.approx(1 - 2.89 / 3.35)  # the paper's 13.7%
    g = next(c for c in claims.claims if c.id == "gimbal-f8-lucid-ph")
    assert g.improvement == pytest.approx(1 - 1 / 1.28)


def test_claims_board_runs_exactly_the_cells_the_claims_need() -> None:
    claims = load_claims()
    need = {k for pairs in needed_cells(claims).values() for pair in pairs for k in pair}
    board = load_board("claims")
    have = {cell_key(c.as_dict()) for c in board.cells}
    assert have == need
    assert {c.seed for c in board.cells} == set(range(100, 180))  # held out: the other boards run 0-9
    assert {c.seed for c in board.select(None, None, 2).cells} == {100, 101}


@pytest.mark.parametrize(("change", "message"), [
    ({"metric": 3}, "claim 'c1': field 'metric' must be a non-empty string"),
    ({"setting": "nope"}, "claim 'c1': field 'setting': unknown setting 'nope'"),
    ({"published": {"ratio": 1.2, "improvement": 0.1}}, "claim 'c1': field 'published' must have exactly one"),
    ({"published": {"ratio": 0.8}}, "claim 'c1': field 'published': says the policy is not better"),
    ({"published": {"values": [1.0]}}, "claim 'c1': field 'published.values' must be two numbers"),
    ({"published": {"table": "zzz"}}, "claim 'c1': field 'published.table': unknown table 'zzz'"),
    ({"published": {"direction": "worse"}}, "claim 'c1': field 'published.direction' must be \"better\""),
    ({"baseline": "sjf"}, "claim 'c1': policy and baseline are the same"),
    ({"policy": "tiresias"}, "table 'tab' has no 'avg_jct_s' of 'tiresias'"),
    ({"colour": "red"}, "claim 'c1': unknown field(s) colour"),
    ({"setting": "t2"}, "table 'tab' is of setting 't', the claim of t2"),
])
def test_bad_claim_is_one_line_naming_entry_and_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=None) as e:
        _claims(**change)
    assert message in str(e.value) and str(e.value).startswith("f.toml: ") and "\n" not in str(e.value)


def test_bad_table_and_settings_are_one_line() -> None:
    data = copy.deepcopy(BASE)
    data["table"][0]["rows"]["sjf"] = [1.0]
    with pytest.raises(ValueError, match="table 'tab': field 'rows.sjf' must be 2 numbers"):
        parse_claims(data, "f.toml")
    data = copy.deepcopy(BASE)
    data["claim"].append(copy.deepcopy(data["claim"][0]))
    with pytest.raises(ValueError, match="claim 'c1': id used twice"):
        parse_claims(data, "f.toml")
    data = copy.deepcopy(BASE)
    data["settings"]["t"]["scenario_options"] = 5
    with pytest.raises(ValueError, match="setting 't': field 'scenario_options' must be a table"):
        parse_claims(data, "f.toml")


def test_cli_claims_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "res"
    assert main(["leaderboard", "run", "--scenarios", "tiny", "--policies", "fifo,sjf", "--seeds", "2",
                 "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    f = tmp_path / "claims.toml"
    f.write_text('[settings]\nt = { scenario = "tiny" }\n\n[[claim]]\nid = "sjf-fifo"\npaper = "p"\nwhere = "Fig. 1"\n'
                 'setting = "t"\nmetric = "avg_jct_s"\npolicy = "sjf"\nbaseline = "fifo"\npublished = { ratio = 1.3 }\n'
                 '\n[[claim]]\nid = "fifo-sjf-queue"\npaper = "p"\nwhere = "Fig. 2"\nsetting = "t"\n'
                 'metric = "avg_queue_s"\npolicy = "fifo"\nbaseline = "sjf"\npublished = { direction = "better" }\n'
                 '\n[[claim]]\nid = "lucid"\npaper = "q"\nwhere = "Fig. 3"\nsetting = "t"\nmetric = "avg_jct_s"\n'
                 'policy = "lucid"\nbaseline = "fifo"\npublished = { improvement = 0.2 }\n')
    assert main(["leaderboard", "claims", str(out), "--claims", str(f), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by_id = {c["id"]: c for c in data["claims"]}
    sjf = by_id["sjf-fifo"]
    assert sjf["seeds"] == 2 and sjf["verdict"] in ("holds", "direction only", "fails", "unsettled")
    q = by_id["fifo-sjf-queue"]  # the verdict is the interval's (or the one value's, if both seeds ran the same)
    lo, hi = (q["improvement"], q["improvement"]) if q["deterministic"] else q["ci"]
    v, regions = judge(lo, hi, None)
    assert q["verdict"] == v and q["regions"] == list(regions)
    assert by_id["lucid"]["verdict"] == "not measurable" and "no records of lucid" in by_id["lucid"]["why"]
    assert sum(data["counts"].values()) == 3 and set(data["counts"]) >= {"unsettled"}
    assert data["measurable"] == 2 and data["settled"] == sum(c["settled"] for c in data["claims"])
    assert sjf["traces"] and all(t.startswith("generated") for t in sjf["traces"])  # tiny's own jobs
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["leaderboard", "claims", str(out), "--claims", str(f), "--paper", "p"]) == 0
    text = capsys.readouterr().out
    assert "sjf-fifo" in text and "lucid" not in text and max(map(len, text.splitlines())) <= 80
    f.write_text(f.read_text().replace('metric = "avg_queue_s"', 'metric = 7'))
    assert main(["leaderboard", "claims", str(out), "--claims", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "claim 'fifo-sjf-queue': field 'metric'" in err


def test_render_claims_page_on_a_partial_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from dataclasses import replace

    import render_claims
    from gpucluster_env.leaderboard.execute import execute
    from gpucluster_env.leaderboard.store import ResultStore

    out = tmp_path / "res"
    board = load_board("claims").select(["hadare-aws"], ["gavel", "hadar"], 2)  # seeds 100, 101
    board = replace(board, cells=tuple(c for c in board.cells if not c.scenario_options))  # mix M-5 only
    assert execute(board, ResultStore(out, create=True)).ran == 4
    page = tmp_path / "claims.md"
    assert render_claims.main([str(out), "--out", str(page), "--run", "Test run.", "--commit", "0123abc"]) == 0
    text = page.read_text()
    assert text.splitlines()[2] == (f"**Rendered by** `python docs/_scripts/render_claims.py {out} --out {page} "
                                    '--run "…" --commit 0123abc` **at commit** `0123abc`.')
    assert "seeds 100-101" in text and "**Partial run**" in text and "Test run." in text
    row = next(line for line in text.splitlines() if line.startswith("| hadare-f9-aws-m5 |"))
    # the mix is a fixed batch: the two held-out seeds ran the same episode, one deterministic run
    assert "| deterministic |" in row and "| none |" in row and "generated: HadarE workload mix M-5" in row
    assert "measurable claims settled" in text and "unsettled" in text
    assert "| castor-t5-sjf |" in text and "no records of castor and sjf on setting castor-philly" in text
    assert render_claims.main([str(tmp_path / "missing"), "--out", str(page)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
