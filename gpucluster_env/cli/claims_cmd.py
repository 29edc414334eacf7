"""``gpucluster leaderboard claims DIR [DIR ...]``: the papers' headline claims checked against results folders."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpucluster_env.cli import Subparsers


def register_claims(lsub: Subparsers) -> None:
    """Add the ``claims`` action to ``gpucluster leaderboard``."""
    c = lsub.add_parser("claims", help="the papers' headline claims checked against results folders",
                        description="Every headline comparative claim of the papers (leaderboard/claims.toml) "
                                    "against the records of the folders: our mean improvement over seeds, its "
                                    "paired 95% interval, how many seeds agree in direction, and a verdict: the "
                                    "region the whole interval lies in (holds: within ±50% of the published "
                                    "size; direction only: above zero, outside that band; fails: at or below "
                                    "zero) or unsettled where the interval spans regions, naming them; not "
                                    "measurable. A fixed batch that runs the same on every seed is one "
                                    "deterministic run, judged on its value. Run the cells with `gpucluster "
                                    "leaderboard run claims`.")
    c.add_argument("dir", nargs="+", help="results folder(s) written by `leaderboard run` (read together)")
    c.add_argument("--claims", help="a claims file (default: the shipped leaderboard/claims.toml)")
    c.add_argument("--paper", help="only the claims of these papers, comma-separated (castor, sjf-bsbf, gimbal, "
                                   "hadar-hadare)")
    c.add_argument("--json", action="store_true", help="print the results as JSON")
    c.set_defaults(func=claims)


def check(dirs: list[str], claims_file: str | None = None, papers: list[str] | None = None) -> list[Any]:
    """The claims (of ``papers`` where given) checked against the current records of ``dirs``; notes on
    records left out go to stderr."""
    from gpucluster_env.leaderboard.claim_check import check_claims
    from gpucluster_env.leaderboard.claims import load_claims
    from gpucluster_env.leaderboard.execute import load_current

    claims = load_claims(claims_file)
    if papers:
        known = sorted({c.paper for c in claims.claims})
        bad = [p for p in papers if p not in known]
        if bad:
            raise ValueError(f"--paper {bad[0]!r}: no claims of that paper; papers: {', '.join(known)}")
        claims = type(claims)(claims.settings, claims.tables, tuple(c for c in claims.claims if c.paper in papers),
                              claims.source)
    records, notes = load_current(dirs)
    for n in notes:
        print(f"gpucluster leaderboard: note: {n}", file=sys.stderr)
    return check_claims(claims, records)


def claims(args: argparse.Namespace) -> int:
    from gpucluster_env.cli.option_args import split_names
    from gpucluster_env.leaderboard.claim_check import counts, settled_count

    results = check(args.dir, args.claims, split_names(args.paper, "paper"))
    if args.json:
        from gpucluster_env.cli.jsonout import dumps

        settled, measurable = settled_count(results)
        print(dumps({"dirs": args.dir, "counts": counts(results), "settled": settled, "measurable": measurable,
                     "claims": [r.as_dict() for r in results]}))
        return 0
    from gpucluster_env.text_tables import Col, make_console, print_indented, print_table

    console = make_console()
    cols = [Col("claim", "left", key=True), Col("paper %"), Col("ours %"), Col("95% CI", glue=True),
            Col("seeds agree"), Col("verdict", "left", text=True)]
    tally = ", ".join(f"{n} {v}" for v, n in counts(results).items())
    settled, measurable = settled_count(results)
    print_table(console, "Headline claims: improvement of policy over baseline (%)", cols,
                [r.cells() for r in results], caption=f"{len(results)} claims: {tally}; {settled} of {measurable} "
                "measurable claims settled. Improvement: 1 - policy/baseline where lower is better, policy/baseline "
                "- 1 where higher is. Verdict: the region the whole 95% interval lies in: fails (at or below zero), "
                "holds (within ±50% of the paper's size), direction only (above zero, too small or too large); "
                "unsettled where it spans regions (the regions named); a claim of no difference "
                "(paper % 0 ±T) holds within ±T "
                "of zero; deterministic: a fixed batch, the same run on every seed, judged on its one value. "
                "`--json` names each claim's setting, policies, traces and the paper's own figure.")
    for title, rows in (("Not measurable:", [r for r in results if r.verdict == "not measurable"]),
                        ("Unsettled with no interval:", [r for r in results if r.verdict != "not measurable"])):
        why = [f"{r.claim.id}: {r.why}" for r in rows if r.why]
        if why:
            console.print(title, highlight=False)
            for line in why:
                print_indented(console, line)
    return 0
