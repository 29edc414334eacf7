"""The papers' headline claims: the shipped file and its board agree, a bad claims file is one line naming the
entry and field, verdicts on synthetic records, and `gpucluster leaderboard claims` end to end on a tiny run."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from gpucluster_env.leaderboard.board import load_board
from gpucluster_env.leaderboard.claim_check import cell_key, check_claims, needed_cells, verdict
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
    assert {c.seed for c in board.cells} == set(range(100, 110))  # held out: the other boards run 0-9
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


def test_verdict_rule() -> None:
    assert verdict(0.2, 0.25) == "holds" and verdict(0.2, 0.1) == "holds" and verdict(0.2, 0.3) == "holds"
    assert verdict(0.2, 0.31) == "direction only" and verdict(0.2, 0.05) == "direction only"
    assert verdict(0.2, -0.01) == "fails" and verdict(0.2, 0.0) == "fails" and verdict(None, -0.1) == "fails"
    assert verdict(None, 0.01) == "holds"


def _rec(policy: str, seed: int, jct: float, options: dict[str, Any] | None = None) -> dict[str, Any]:
    cell = {"scenario": "tiny", "scenario_options": options or {}, "policy": policy, "policy_options": {},
            "env_options": {}, "seed": seed, "trace": "embedded"}
    return {"key": f"{policy}{seed}{options}", "cell": cell, "metrics": {"avg_jct_s": jct}}


def test_verdicts_on_synthetic_records() -> None:
    # sjf improves on fifo by 1 - 1/2 = 50% (published, from the table); three seeds at a time
    def run(sjf: list[float], fifo: list[float] | None = None, **claim: Any) -> Any:
        fifo = fifo or [100.0] * len(sjf)
        recs = [_rec("sjf", s, v) for s, v in enumerate(sjf)] + [_rec("fifo", s, v) for s, v in enumerate(fifo)]
        return check_claims(_claims(**claim), recs)[0]

    r = run([45.0, 55.0, 50.0])
    assert (r.verdict, r.n, r.agree) == ("holds", 3, 3) and r.measured == pytest.approx(0.5)
    assert r.ci[0] <= 0.5 <= r.ci[1]
    assert run([90.0, 95.0, 110.0]).verdict == "direction only"  # +1.7% against +50%
    r = run([120.0, 130.0, 90.0])
    assert (r.verdict, r.agree) == ("fails", 1)
    assert run([50.0, 50.0, 50.0], published={"ratio": 1.5}).verdict == "holds"  # 1 - 1/1.5 = 33% vs 50%
    r = run([50.0])
    assert r.verdict == "not measurable" and "1 seed(s)" in r.why
    r = check_claims(_claims(), [_rec("fifo", s, 1.0) for s in range(3)])[0]
    assert r.verdict == "not measurable" and r.why == "no records of sjf on setting t"
    r = run([50.0, 50.0], policy="no-such-policy", published={"direction": "better"})
    assert r.verdict == "not measurable" and "'no-such-policy' is not registered" in r.why
    r = run([50.0, 50.0], unmeasurable="a testbed run")
    assert (r.verdict, r.why) == ("not measurable", "a testbed run")


def test_claim_over_several_settings_averages_their_improvements() -> None:
    recs = [_rec("fifo", s, 100.0) for s in range(2)] + [_rec("sjf", s, 50.0) for s in range(2)]
    recs += [_rec("fifo", s, 100.0, {"load": 2.0}) for s in range(2)]
    recs += [_rec("sjf", s, 90.0, {"load": 2.0}) for s in range(2)]
    r = check_claims(_multi(), recs)[0]
    assert r.measured == pytest.approx((0.5 + 0.1) / 2) and r.verdict == "holds" and r.agree == 2


def _multi() -> Any:
    data = copy.deepcopy(BASE)
    claim = {k: v for k, v in data["claim"][0].items() if k != "setting"}
    data["claim"] = [{**claim, "settings": ["t", "t2"], "published": {"ratio": 1.4}}]
    return parse_claims(data, "f.toml")


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
    assert by_id["sjf-fifo"]["seeds"] == 2 and by_id["sjf-fifo"]["verdict"] in ("holds", "direction only", "fails")
    assert by_id["fifo-sjf-queue"]["verdict"] == ("fails" if by_id["fifo-sjf-queue"]["improvement"] <= 0 else "holds")
    assert by_id["lucid"]["verdict"] == "not measurable" and "no records of lucid" in by_id["lucid"]["why"]
    assert sum(data["counts"].values()) == 3
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
    assert render_claims.main([str(out), "--out", str(page), "--run", "Test run."]) == 0
    text = page.read_text()
    assert "seeds 100-101" in text and "**Partial run**" in text and "Test run." in text
    row = next(line for line in text.splitlines() if line.startswith("| hadare-f9-aws-m5 |"))
    assert "2/2" in row or "0/2" in row  # judged on the two held-out seeds that ran
    assert "| castor-t5-sjf |" in text and "no records of castor and sjf on setting castor-philly" in text
    assert render_claims.main([str(tmp_path / "missing"), "--out", str(page)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
