"""Each claim of :mod:`.claims` checked against leaderboard records, with a verdict:

- ``holds``: the mean improvement over seeds has the published direction and lies within ±50%
  (:data:`SIZE_BAND`) of the published size; a claim that publishes only the direction holds on the direction;
- ``direction only``: the direction holds, the size is off by more than half;
- ``fails``: ours goes the other way, or shows no difference;
- ``not measurable``: no setting of ours reproduces it, a policy is not registered, or fewer than
  :data:`MIN_SEEDS` seeds have the metric for both policies in every setting of the claim.

The verdict reads the mean; the paired 95% interval and the count of seeds that agree in direction stand beside
it, so a verdict resting on a few noisy seeds shows as such. Seeds pair up by (trace, seed): the same seed of
the same trace is the same job list for both policies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from gpucluster_env.leaderboard import stats
from gpucluster_env.leaderboard.cell_options import canonical, canonical_scenario_options, check_env_options
from gpucluster_env.leaderboard.claims import Claim, Claims

MIN_SEEDS = 2
"""The fewest seeds (run by both policies) a claim is judged on: a bootstrap interval needs two."""
SIZE_BAND = 0.5
"""A claim holds when ours is within this fraction of the published improvement (±50%)."""
VERDICTS = ("holds", "direction only", "fails", "not measurable")

CellKey = tuple[str, str, str, str, str]
"""(scenario, scenario options, env options, policy, policy options), the options in canonical JSON."""


@dataclass
class Result:
    """A claim checked against records."""

    claim: Claim
    verdict: str
    why: str = ""
    n: int = 0
    measured: float = float("nan")
    ci: stats.Interval = stats.NAN_INTERVAL
    agree: int = 0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json`` (NaN as None)."""
        c = self.claim

        def num(v: float | None) -> float | None:
            return None if v is None or not math.isfinite(v) else v

        return {"id": c.id, "paper": c.paper, "where": c.where, "settings": list(c.settings), "metric": c.metric,
                "policy": c.label("policy"), "baseline": c.label("baseline"), "published": c.published_text(),
                "published_improvement": num(c.improvement), "seeds": self.n, "improvement": num(self.measured),
                "ci": [num(self.ci[0]), num(self.ci[1])], "seeds_agree": self.agree, "verdict": self.verdict,
                "why": self.why}

    def cells(self) -> list[str]:
        """The row of the claims table: id, published and our improvement in percent, our paired 95% interval
        (whole percents), seeds agreeing of seeds, verdict."""
        pub = self.claim.improvement
        pub_text = pct(pub, sign=False) if pub is not None else "better"
        if self.verdict == "not measurable":
            return [self.claim.id, pub_text, "–", "–", "–", self.verdict]
        lo, hi = (f"{100 * v:.0f}" if math.isfinite(v) else "–" for v in self.ci)
        return [self.claim.id, pub_text, pct(self.measured, sign=False), f"[{lo}, {hi}]", f"{self.agree}/{self.n}",
                self.verdict]


def pct(v: float | None, sign: bool = True) -> str:
    """An improvement in percent with its sign (``+18.1%``; without ``sign``: ``+18.1``; beyond ±100: no
    decimals); ``–`` where undefined."""
    if v is None or not math.isfinite(v):
        return "–"
    text = f"{100 * v:+.0f}" if abs(v) >= 1.0 else f"{100 * v:+.1f}"
    return text + ("%" if sign else "")


def verdict(published: float | None, measured: float) -> str:
    """The verdict of a measured mean improvement against the published one (None: direction only)."""
    if not measured > 0:
        return "fails"
    if published is None or abs(measured - published) <= SIZE_BAND * published:
        return "holds"
    return "direction only"


def cell_key(cell: dict[str, Any]) -> CellKey:
    """The key of a record's cell, without seed and trace."""
    return (cell["scenario"], canonical(cell["scenario_options"]), canonical(cell["env_options"]), cell["policy"],
            canonical(cell["policy_options"]))


def needed_cells(claims: Claims) -> dict[str, list[tuple[CellKey, CellKey]]]:
    """The cells each measurable claim needs, per setting: ``{claim id: [(policy cell, baseline cell), ...]}``,
    options in the canonical form a board writes (so they match its records). A claim whose policy is not
    registered, or that has no setting, needs none. A bad option is a one-line ``ValueError`` naming the claims
    file and the entry."""
    from gpucluster_env.policy import check_policy_options, policy_names

    known = set(policy_names())
    canon: dict[str, tuple[str, str, str]] = {}
    out: dict[str, list[tuple[CellKey, CellKey]]] = {}
    for c in claims.claims:
        if c.unmeasurable or not {c.policy, c.baseline} <= known:
            continue
        where = f"{claims.source}: claim {c.id!r}: "
        try:
            sides = [(p, canonical(check_policy_options(p, o, where))) for p, o in ((c.policy, c.policy_options),
                                                                                   (c.baseline, c.baseline_options))]
        except ValueError as e:
            raise ValueError(str(e).splitlines()[0]) from None
        pairs = []
        for name in c.settings:
            if name not in canon:
                s = claims.settings[name]
                w = f"{claims.source}: setting {name!r}"
                try:
                    canon[name] = (s.scenario, canonical(canonical_scenario_options(s.scenario, s.scenario_options, w)),
                                   canonical(check_env_options(s.env_options, f"{w}: ")))
                except ValueError as e:
                    raise ValueError(str(e).splitlines()[0]) from None
            pk, bk = ((*canon[name], p, o) for p, o in sides)
            pairs.append((pk, bk))
        out[c.id] = pairs
    return out


def check_claims(claims: Claims, records: list[dict[str, Any]]) -> list[Result]:
    """Every claim of ``claims`` checked against ``records`` (of one or more results folders)."""
    from gpucluster_env.policy import policy_names

    index: dict[CellKey, dict[tuple[str, int], dict[str, Any]]] = {}
    for r in records:
        index.setdefault(cell_key(r["cell"]), {})[(r["cell"]["trace"], int(r["cell"]["seed"]))] = r
    needed = needed_cells(claims)
    known = set(policy_names())
    out = []
    for c in claims.claims:
        if c.unmeasurable:
            out.append(Result(c, "not measurable", c.unmeasurable))
            continue
        missing = [p for p in (c.policy, c.baseline) if p not in known]
        if missing:
            out.append(Result(c, "not measurable", f"policy {missing[0]!r} is not registered in this version"))
            continue
        out.append(_check(c, needed[c.id], index))
    return out


def _check(c: Claim, pairs: list[tuple[CellKey, CellKey]], index: dict[CellKey, dict[tuple[str, int], Any]]) -> Result:
    common: set[tuple[str, int]] | None = None
    series = []
    for name, (pk, bk) in zip(c.settings, pairs, strict=True):
        p, b = index.get(pk, {}), index.get(bk, {})
        if not p or not b:
            who = " and ".join(c.label(w) for w, side in (("policy", p), ("baseline", b)) if not side)
            return Result(c, "not measurable", f"no records of {who} on setting {name}")
        pv, bv = _values(p, c.metric), _values(b, c.metric)
        series.append((pv, bv))
        both = set(pv) & set(bv)
        common = both if common is None else common & both
    seeds = sorted(common or ())
    if len(seeds) < MIN_SEEDS:
        return Result(c, "not measurable", f"{len(seeds)} seed(s) have {c.metric} of both policies in every "
                                           f"setting; a verdict needs {MIN_SEEDS}", len(seeds))
    xs = [np.array([pv[s] for s in seeds]) for pv, _ in series]
    refs = [np.array([bv[s] for s in seeds]) for _, bv in series]
    if any(float(np.mean(r)) == 0.0 for r in refs):
        return Result(c, "not measurable", f"the baseline's mean {c.metric} is 0", len(seeds))
    lower = stats.lower_is_better(c.metric)
    measured = stats.mean_improvement(xs, refs, lower)
    with np.errstate(divide="ignore", invalid="ignore"):  # a seed whose baseline is 0: no direction
        per_seed = [stats.mean_improvement([x[i:i + 1] for x in xs], [r[i:i + 1] for r in refs], lower)
                    for i in range(len(seeds))]
    return Result(c, verdict(c.improvement, measured), "", len(seeds), measured,
                  stats.mean_improvement_ci(xs, refs, lower), sum(v > 0 for v in per_seed))


def _values(recs: dict[tuple[str, int], dict[str, Any]], metric: str) -> dict[tuple[str, int], float]:
    out = {}
    for k, r in recs.items():
        v = r["metrics"].get(metric)
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            out[k] = float(v)
    return out


def counts(results: list[Result]) -> dict[str, int]:
    """How many claims have each verdict."""
    return {v: sum(r.verdict == v for r in results) for v in VERDICTS}
