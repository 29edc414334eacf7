"""The claims checker's verdicts on synthetic records (no board run): every verdict region an interval can settle,
every way it can stay unsettled, the deterministic fixed batch, claims of no difference, the counts, the JSON
fields and the trace labels."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from gpucluster_env.leaderboard.claim_check import (
    SETTLED,
    Result,
    check_claims,
    counts,
    direction_settled_count,
    judge,
    region,
    settled_count,
    trace_label,
    traces_text,
    verdict,
)
from gpucluster_env.leaderboard.claims import parse_claims

# sjf is claimed better than fifo on avg_jct_s by 1 - 1/2 = 50% (the table's rows): holds within [25%, 75%]
DATA: dict[str, Any] = {
    "settings": {"t": {"scenario": "tiny"}, "t2": {"scenario": "tiny", "scenario_options": {"load": 2.0}}},
    "table": [{"id": "tab", "paper": "p", "where": "Table 1", "setting": "t", "unit": "h",
               "columns": ["avg_jct_s"], "rows": {"fifo": [2.0], "sjf": [1.0]}}],
    "claim": [{"id": "c1", "paper": "p", "where": "Table 1", "setting": "t", "metric": "avg_jct_s",
               "policy": "sjf", "baseline": "fifo", "published": {"table": "tab"}}],
}


def claims_with(**change: Any) -> Any:
    """The one-claim file above with the claim's fields changed."""
    data = copy.deepcopy(DATA)
    data["claim"][0].update(change)
    return parse_claims(data, "f.toml")


def record(policy: str, seed: int, jct: float, trace: str = "", note: str = "", **scenario_options: Any) -> dict:
    """A record as a board writes it, with only the metric the claims read, its trace identity and note."""
    cell = {"scenario": "tiny", "scenario_options": scenario_options, "policy": policy, "policy_options": {},
            "env_options": {}, "seed": seed, "trace": trace}
    return {"key": f"{policy}-{seed}-{scenario_options}", "cell": cell, "trace": note,
            "metrics": {"avg_jct_s": jct}}


def judged(sjf: list[float], fifo: list[float] | None = None, **change: Any) -> Result:
    """The claim judged on one record per seed of each policy (fifo at 100 on every seed unless given)."""
    fifo = fifo or [100.0] * len(sjf)
    recs = [record("sjf", s, v) for s, v in enumerate(sjf)] + [record("fifo", s, v) for s, v in enumerate(fifo)]
    return check_claims(claims_with(**change), recs)[0]


@pytest.mark.parametrize(("sjf", "verdict_", "regions"), [
    ([45.0, 55.0, 50.0], "holds", ("holds",)),  # +50% [45, 55]
    ([85.0, 88.0, 90.0, 87.0], "direction only", ("too small",)),  # +12.5% [11, 14]
    ([10.0, 12.0, 11.0], "direction only", ("too large",)),  # +89% [88, 90]
    ([120.0, 130.0, 125.0], "fails", ("fails",)),  # -25% [-30, -20]
    ([90.0, 95.0, 110.0], "unsettled", ("fails", "too small")),  # +1.7% [-10, +10]
    # +25% [22, 28]: the interval straddles the band's edge, above zero: the direction is settled, the size not
    ([70.0, 80.0, 75.0, 78.0, 72.0], "unsettled", ("too small", "holds")),
    ([40.0, 120.0, 60.0, 110.0, 30.0], "unsettled", ("fails", "too small", "holds")),  # +28% [-2, 60]
])
def test_an_interval_settles_the_region_it_lies_in_and_names_those_it_spans(
        sjf: list[float], verdict_: str, regions: tuple[str, ...]) -> None:
    r = judged(sjf)
    assert (r.verdict, r.regions, r.deterministic) == (verdict_, regions, False)
    assert r.settled == (verdict_ in SETTLED) and r.why == ""
    assert r.ci[0] <= r.measured <= r.ci[1]


def test_verdict_texts_and_table_cells() -> None:
    assert judged([90.0, 95.0, 110.0]).verdict_text() == "unsettled: fails or too small (not as published)"
    assert judged([90.0, 95.0, 110.0]).excludes_published
    assert judged([40.0, 120.0, 60.0, 110.0, 30.0]).verdict_text() == "unsettled: fails, too small or holds"
    assert not judged([40.0, 120.0, 60.0, 110.0, 30.0]).excludes_published  # the interval reaches the band
    assert judged([85.0, 88.0, 90.0, 87.0]).verdict_text() == "direction only (too small)"
    straddles = judged([70.0, 80.0, 75.0, 78.0, 72.0])  # +25% [22, 28], mean at the band's edge
    assert straddles.verdict_text() == "unsettled: too small or holds"
    assert not straddles.settled and straddles.direction_settled and not straddles.excludes_published
    assert judged([45.0, 55.0, 50.0]).direction_settled
    assert not judged([90.0, 95.0, 110.0]).direction_settled  # spans zero
    r = judged([45.0, 55.0, 50.0])
    assert r.verdict_text() == "holds" and r.cells() == ["c1", "+50.0", "+50.0", "[45, 55]", "3/3", "holds"]


def test_the_rule_at_the_region_boundaries() -> None:
    # published +20%: fails <= 0 < too small < 10% <= holds <= 30% < too large
    assert [region(x, 0.2) for x in (-0.1, 0.0, 0.05, 0.1, 0.2, 0.3, 0.31)] == [
        "fails", "fails", "too small", "holds", "holds", "holds", "too large"]
    assert [region(x, None) for x in (-0.1, 0.0, 0.01)] == ["fails", "fails", "holds"]  # direction only
    assert [region(x, None, 0.05) for x in (-0.06, -0.05, 0.05, 0.06)] == ["worse", "holds", "holds", "better"]
    assert judge(0.12, 0.28, 0.2) == ("holds", ("holds",))
    assert judge(-0.3, -0.01, 0.2) == ("fails", ("fails",))
    assert judge(-0.01, 0.4, 0.2) == ("unsettled", ("fails", "too small", "holds", "too large"))
    # above zero across size regions: the direction is settled, the verdict is not
    assert judge(0.25, 0.4, 0.2) == ("unsettled", ("holds", "too large"))
    assert judge(0.05, 0.15, 0.2) == ("unsettled", ("too small", "holds"))
    assert judge(0.31, 0.5, 0.2) == ("direction only", ("too large",))
    assert judge(-0.1, 0.1, None) == ("unsettled", ("fails", "holds"))
    assert judge(-0.08, 0.01, None, 0.05) == ("unsettled", ("worse", "holds"))
    assert judge(0.06, 0.2, None, 0.05) == ("fails", ("better",))
    for lo, hi in ((math.nan, 0.1), (-math.inf, 0.2), (0.1, math.nan)):
        assert judge(lo, hi, 0.2) == ("unsettled", ())
    # one value (a deterministic run): its region's verdict, never unsettled
    assert [verdict(0.2, x) for x in (0.25, 0.1, 0.3, 0.31, 0.05, 0.0, -0.01)] == [
        "holds", "holds", "holds", "direction only", "direction only", "fails", "fails"]
    assert verdict(None, 0.01) == "holds" and verdict(None, -0.1) == "fails" and verdict(None, 0.01, 0.05) == "holds"


def test_an_interval_that_is_not_finite_is_unsettled_and_says_why() -> None:
    # two seeds on which the baseline's value is 0: a resample of only those has no ratio
    r = judged([0.0, 0.0, 50.0, 60.0], [0.0, 0.0, 100.0, 100.0])
    assert (r.verdict, r.regions) == ("unsettled", ()) and r.measured == pytest.approx(0.45)
    assert "baseline mean is 0" in r.why and r.verdict_text() == "unsettled: no interval"
    assert r.cells()[3] == "[–, –]"


def test_a_fixed_batch_is_one_deterministic_run() -> None:
    r = judged([50.0, 50.0, 50.0])  # the same episode on every seed, for both policies
    assert (r.verdict, r.regions, r.deterministic, r.n) == ("holds", ("holds",), True, 3)
    assert not any(math.isfinite(v) for v in r.ci)  # no interval: the seeds are one run
    assert r.cells()[3:] == ["none", "deterministic", "holds"] and r.verdict_text() == "holds (deterministic)"
    d = r.as_dict()
    assert d["deterministic"] is True and d["ci"] == [None, None] and d["settled"] is True
    assert judged([100.0, 100.0]).verdict == "fails"  # no difference on the one run: fails, not unsettled
    assert judged([95.0, 95.0, 95.0]).verdict_text() == "direction only (too small) (deterministic)"
    # the policy the same on every seed but the baseline not: seeds differ, so an interval
    r = judged([50.0, 50.0, 50.0], [100.0, 101.0, 99.0])
    assert not r.deterministic and r.verdict == "holds" and r.ci[0] < r.ci[1]


def test_a_claim_of_no_difference() -> None:
    same = {"published": {"no_difference": 0.05}}
    r = judged([100.0, 99.0, 101.0, 100.5], **same)
    assert (r.verdict, r.regions) == ("holds", ("holds",)) and r.claim.improvement is None
    assert r.cells()[1] == "0 ±5" and r.claim.published_text() == "no difference (improvement within ±5%)"
    assert judged([80.0, 82.0, 78.0, 81.0], **same).regions == ("better",)  # 20% better: fails
    assert judged([80.0, 82.0, 78.0, 81.0], **same).verdict == "fails"
    assert judged([120.0, 118.0, 121.0], **same).regions == ("worse",)
    r = judged([90.0, 100.0, 97.0, 93.0], **same)  # +5% [1.5, 8.5]
    assert r.verdict_text() == "unsettled: holds or better"
    with pytest.raises(ValueError, match="'published.no_difference' must be a tolerance between 0 and 1"):
        claims_with(published={"no_difference": 5})


def test_counts_and_settled_count() -> None:
    rs = [judged([45.0, 55.0, 50.0]), judged([90.0, 95.0, 110.0]), judged([120.0, 130.0, 125.0]),
          judged([50.0, 50.0], unmeasurable="a testbed run"), judged([40.0, 120.0, 60.0, 110.0, 30.0])]
    assert counts(rs) == {"holds": 1, "direction only": 0, "fails": 1, "unsettled": 2, "not measurable": 1}
    assert settled_count(rs) == (2, 4)
    rs.append(judged([70.0, 80.0, 75.0, 78.0, 72.0]))  # above zero, its interval spans two size regions
    assert settled_count(rs) == (2, 5) and direction_settled_count(rs) == 3


def test_json_fields() -> None:
    recs = [record(p, s, v, "real:abc", "real philly trace (the package's copy)") for p, vals in
            (("sjf", [45.0, 55.0, 50.0]), ("fifo", [100.0, 90.0, 110.0])) for s, v in enumerate(vals)]
    d = check_claims(claims_with(), recs)[0].as_dict()
    assert {"deterministic", "regions", "settled", "verdict_text", "traces", "no_difference_within", "ci",
            "verdict", "seeds", "seeds_agree"} <= set(d)
    assert d["traces"] == ["real philly"] and d["deterministic"] is False and d["no_difference_within"] is None
    assert d["verdict"] == "holds" and d["regions"] == ["holds"] and d["settled"] is True
    assert all(isinstance(v, float) for v in d["ci"])


def test_not_measurable_cases_are_kept() -> None:
    r = judged([50.0])
    assert r.verdict == "not measurable" and "1 seed(s)" in r.why and not r.settled
    r = check_claims(claims_with(), [record("fifo", s, 1.0) for s in range(3)])[0]
    assert r.verdict == "not measurable" and r.why == "no records of sjf on setting t"
    r = judged([50.0, 50.0], policy="no-such-policy", published={"direction": "better"})
    assert r.verdict == "not measurable" and "'no-such-policy' is not registered" in r.why


def test_a_claim_over_several_settings_averages_their_improvements() -> None:
    recs = [record("fifo", s, 100.0 + s) for s in range(3)] + [record("sjf", s, 50.0 + s) for s in range(3)]
    recs += [record("fifo", s, 100.0 + s, load=2.0) for s in range(3)]
    recs += [record("sjf", s, 90.0 + s, load=2.0) for s in range(3)]
    data = copy.deepcopy(DATA)
    claim = {k: v for k, v in data["claim"][0].items() if k != "setting"}
    data["claim"] = [{**claim, "settings": ["t", "t2"], "published": {"ratio": 1.4}}]
    r = check_claims(parse_claims(data, "f.toml"), recs)[0]
    imp = [1 - 51 / 101, 1 - 91 / 101]
    assert r.measured == pytest.approx(sum(imp) / 2) and r.agree == 3 and not r.deterministic
    assert r.verdict in ("holds", "unsettled") and "holds" in r.regions


def test_trace_labels() -> None:
    real = record("sjf", 0, 1.0, "real:1a2b", "real venus trace (the package's copy of x.csv)")
    synth = record("sjf", 0, 1.0, "synthetic", "synthetic philly trace (shipped, fitted to the real philly ...)")
    mix = record("sjf", 0, 1.0, "", "HadarE workload mix M-5 (5 jobs)")
    assert [trace_label(r) for r in (real, synth, mix)] == ["real venus", "synthetic philly",
                                                             "generated: HadarE workload mix M-5"]
    assert trace_label(record("sjf", 0, 1.0, "file:9f", "trace file x.csv")) == "trace file"
    assert traces_text(["generated: HadarE workload mix M-1", "generated: HadarE workload mix M-12"]) == (
        "generated: HadarE workload mix M-1, M-12")
    assert traces_text(["real philly"]) == "real philly" and traces_text([]) == "–"
    assert traces_text(["real philly", "synthetic venus"]) == "real philly; synthetic venus"
