"""Write docs/claims.md: every headline claim of the papers (leaderboard/claims.toml) beside ours, from the
results folders of `gpucluster leaderboard run claims` (held-out seeds 100-109), and for every failing claim
its measured cause, or a plain statement that none was found.

    gpucluster leaderboard run claims --workers 2 --out leaderboard-results/claims
    .venv/bin/python docs/_scripts/render_claims.py leaderboard-results/claims [--run "what produced it"]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
from gpucluster_env.leaderboard.board import load_board
from gpucluster_env.leaderboard.claim_check import Result, cell_key, check_claims, counts, needed_cells, pct
from gpucluster_env.leaderboard.claims import Claim, Claims, load_claims
from gpucluster_env.leaderboard.execute import load_current

OUT = Path("docs/claims.md")
CAUSES: dict[str, str] = {}
"""Measured causes of failing claims, by claim id: each states what was measured (command and figures). A
failing claim without an entry is reported as having no measured cause."""


def _setting_text(c: Claim) -> str:
    if not c.settings:
        return "–"
    if len(c.settings) == 1:
        return c.settings[0]
    return f"{c.settings[0]} … {c.settings[-1]} (mean of {len(c.settings)})"


def _row(r: Result) -> str:
    c = r.claim
    cells = r.cells()
    pub = f"{pct(c.improvement)} ({c.published_text()})" if c.improvement is not None else "better"
    ours = pct(r.measured) if r.verdict != "not measurable" else "–"
    return (f"| {c.id} | {c.paper} {c.where} | {_setting_text(c)} | {c.metric} | {c.label('policy')} vs "
            f"{c.label('baseline')} | {pub} | {ours} | {cells[3]} | {cells[4]} | **{r.verdict}** |")


def _means(c: Claim, claims: Claims, records: list[dict[str, Any]]) -> str:
    """Our mean of the claim's metric for both policies on each of its settings (hours for times)."""
    pairs = needed_cells(claims).get(c.id, [])
    hours = c.metric.endswith("_s")
    out = []
    for name, keys in zip(c.settings, pairs, strict=True):
        vals = []
        for k in keys:
            v = [r["metrics"].get(c.metric) for r in records if cell_key(r["cell"]) == k]
            v = [x for x in v if isinstance(x, int | float)]
            vals.append(f"{np.mean(v) / (3600 if hours else 1):.3g}" if v else "–")
        out.append(f"{name}: {vals[0]} vs {vals[1]}{' h' if hours else ''}")
    pub = f"; published {c.published_text()}" if c.values is not None else ""
    return "; ".join(out) + pub


def render(dirs: list[str], run_note: str = "") -> str:
    """The page for the records of ``dirs``."""
    claims = load_claims()
    records, notes = load_current(dirs)
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    results = check_claims(claims, records)
    board = load_board("claims")
    have = {r["key"] for r in records}
    done = sum(c.key in have for c in board.cells)
    seeds = sorted({r["cell"]["seed"] for r in records})
    partial = done < len(board.cells)
    tally = counts(results)
    a = ["# The papers' headline claims, checked\n",
         "<!-- written by docs/_scripts/render_claims.py; do not edit by hand -->\n",
         "Every headline comparative claim of the four papers (Castor Tables 4-6 and §9.4-9.5, SJF-BSBF Tables "
         "III-IV and Fig. 6, Gimbal Figs. 8, 9, 12 and §7.2-7.4, Hadar Fig. 4 and HadarE Figs. 8-10), as "
         "`leaderboard/claims.toml` states it, beside ours. Improvement = 1 - policy/baseline for a metric where "
         "lower is better (times), policy/baseline - 1 where higher is (deadlines met, utilization); a paper's "
         "\"1.28x\" is 1 - 1/1.28 = +21.9%. Ours: the mean over seeds of the settings' improvement, its paired 95% "
         "bootstrap interval, and the seeds where the policy beats the baseline. Verdict: **holds** (our mean in "
         "the published direction and within ±50% of its size), **direction only**, **fails** (the other way), "
         "**not measurable** (why below).\n",
         "Reproduce: `gpucluster leaderboard run claims --workers 2 --out leaderboard-results/claims`, then "
         "`gpucluster leaderboard claims leaderboard-results/claims` (the same table in the terminal) and "
         "`.venv/bin/python docs/_scripts/render_claims.py leaderboard-results/claims`.\n",
         f"**These numbers:** {len(records)} records, seeds {_span(seeds)}, {done} of the {len(board.cells)} cells "
         f"of the `claims` board (held-out seeds {_span([c.seed for c in board.cells])})"
         + (". **Partial run**: claims whose cells are missing show as not measurable, and verdicts on few seeds "
            "are tentative." if partial else ".") + (f" {run_note}" if run_note else "") + "\n",
         "**Count:** " + ", ".join(f"{n} {v}" for v, n in tally.items()) + ".\n",
         "| claim | paper, where | setting | metric | policy vs baseline | published | ours | 95% CI | seeds "
         "agree | verdict |", "|" + "---|" * 10]
    a += [_row(r) for r in results]
    a += ["", "## Not measurable\n"]
    a += [f"- `{r.claim.id}`: {r.why}." for r in results if r.verdict == "not measurable"] or ["None."]
    a += ["", "## Failing claims\n"]
    failing = [r for r in results if r.verdict == "fails"]
    if not failing:
        a.append("None on these records.")
    for r in failing:
        c = r.claim
        a += [f"### `{c.id}`: {c.label('policy')} vs {c.label('baseline')}, {c.metric} ({c.paper} {c.where})\n",
              f"Ours {pct(r.measured)} [{pct(r.ci[0])}, {pct(r.ci[1])}], {r.agree} of {r.n} seeds in the "
              f"published direction; means {_means(c, claims, records)}.\n",
              CAUSES.get(c.id, "**Cause: none found.** No measurement yet explains this failure."), ""]
    return "\n".join(a).rstrip() + "\n"


def _span(seeds: list[int]) -> str:
    if not seeds:
        return "none"
    s = sorted(set(seeds))
    return f"{s[0]}-{s[-1]}" if s == list(range(s[0], s[-1] + 1)) and len(s) > 1 else ", ".join(map(str, s))


def main(argv: list[str] | None = None) -> int:
    """Write the page (``--out``) from the results folders given."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dirs", nargs="+", help="results folders of `gpucluster leaderboard run claims`")
    p.add_argument("--out", default=str(OUT), help=f"the page to write (default {OUT})")
    p.add_argument("--run", default="", help="a sentence on the run that produced the records (shown on the page)")
    args = p.parse_args(argv)
    try:
        text = render(args.dirs, args.run)
    except (ValueError, FileNotFoundError) as e:
        print(f"render_claims: {e}", file=sys.stderr)
        return 2
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
