"""The papers' headline comparative claims (``leaderboard/claims.toml``) checked against leaderboard records.

A claim says a policy beats a baseline on a metric in a setting (a scenario with options), with the published
size: both values, a relative improvement, a ratio, or only the direction; or that the two do not differ
(``no_difference``, within a tolerance the claims file states). It is checked on the records of
that setting: per seed (seeds of one trace pair up) the improvement of the policy over the baseline
(:func:`~gpucluster_env.leaderboard.stats.improvement`: ``1 - policy/baseline`` for a lower-is-better metric),
its mean over seeds with a paired 95% bootstrap interval, how many seeds agree in direction, and a verdict
that the interval settles or leaves unsettled (:mod:`.claim_check`).

The same file holds the published tables (castor Tables 5-6, sjf-bsbf Tables III-IV) that the claims and
:mod:`.papers` read, so every published number is written once.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from gpucluster_env.leaderboard import stats
from gpucluster_env.leaderboard.cell_options import canonical, options_label

from gpucluster_env.input_files import parse_toml, read_text

PUBLISHED_KINDS = ("table", "values", "improvement", "ratio", "direction", "no_difference")
_TOP_KEYS = {"settings", "table", "claim"}
_SETTING_KEYS = {"scenario", "scenario_options", "env_options"}
_TABLE_KEYS = {"id", "paper", "where", "setting", "unit", "columns", "rows"}
_CLAIM_KEYS = {"id", "paper", "where", "setting", "settings", "metric", "policy", "policy_options", "baseline",
               "baseline_options", "published", "unmeasurable"}


@dataclass(frozen=True)
class Setting:
    """A scenario with its options as a board runs it."""

    name: str
    scenario: str
    scenario_options: dict[str, Any] = field(default_factory=dict)
    env_options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Table:
    """A published table: one row of values per policy (our names), one column per metric."""

    id: str
    paper: str
    where: str
    setting: str
    unit: str
    columns: tuple[str, ...]
    rows: dict[str, tuple[float, ...]]

    def value(self, policy: str, column: str) -> float | None:
        """The published value of ``policy`` in ``column``; None where the table has no such row or column."""
        row = self.rows.get(policy)
        return row[self.columns.index(column)] if row is not None and column in self.columns else None


@dataclass(frozen=True)
class Claim:
    """One comparative claim: ``policy`` is better than ``baseline`` on ``metric`` in ``settings`` (averaged
    over them where there are several)."""

    id: str
    paper: str
    where: str
    settings: tuple[str, ...]
    metric: str
    policy: str
    baseline: str
    published: dict[str, Any]
    policy_options: dict[str, Any] = field(default_factory=dict)
    baseline_options: dict[str, Any] = field(default_factory=dict)
    unmeasurable: str = ""
    values: tuple[float, float] | None = None
    """The published (policy, baseline) values where the paper gives both (``values`` or ``table``)."""

    @property
    def improvement(self) -> float | None:
        """The published improvement (as :func:`.stats.improvement` defines it); None where only the
        direction is published, or no difference."""
        lower = stats.lower_is_better(self.metric)
        if self.values is not None:
            return stats.improvement(np.array([self.values[0]]), np.array([self.values[1]]), lower)
        if "improvement" in self.published:
            return float(self.published["improvement"])
        if "ratio" in self.published:
            r = float(self.published["ratio"])
            return stats.improvement(np.array([1.0 if lower else r]), np.array([r if lower else 1.0]), lower)
        return None

    @property
    def null_band(self) -> float | None:
        """The tolerance of a claim of no difference (``published = { no_difference = T }``: our improvement
        within ±T of zero); None for every other claim."""
        v = self.published.get("no_difference")
        return None if v is None else float(v)

    def label(self, which: str) -> str:
        """The label of ``policy`` or ``baseline`` as the leaderboard's tables show it."""
        name, opts = (self.policy, self.policy_options) if which == "policy" else (self.baseline,
                                                                                   self.baseline_options)
        return f"{name} ({options_label(opts)})" if opts else name

    def published_text(self) -> str:
        """The published number as the paper states it."""
        if self.values is not None:
            return f"{self.values[0]:g} vs {self.values[1]:g}"
        if "ratio" in self.published:
            return f"{self.published['ratio']:g}x"
        if "improvement" in self.published:
            return f"{100 * self.published['improvement']:g}%"
        if self.null_band is not None:
            return f"no difference (improvement within ±{100 * self.null_band:g}%)"
        return "better"


@dataclass(frozen=True)
class Claims:
    """The claims file: settings, published tables and claims."""

    settings: dict[str, Setting]
    tables: dict[str, Table]
    claims: tuple[Claim, ...]
    source: str = ""


def load_claims(path: str | Path | None = None) -> Claims:
    """The shipped claims file (``leaderboard/claims.toml``), or one at ``path``; a mistake in it is a
    one-line ``ValueError`` naming the file, the entry and the field."""
    if path is None:
        return _shipped()
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"claims file {path} not found")
    return parse_claims(parse_toml(read_text(p), str(p)), str(p))


@functools.cache
def _shipped() -> Claims:
    res = resources.files("gpucluster_env.leaderboard") / "claims.toml"
    return parse_claims(parse_toml(res.read_text(), "claims.toml"), "claims.toml")


def parse_claims(data: dict[str, Any], where: str = "claims") -> Claims:
    """Validate a claims file's TOML data whole; the first mistake is a one-line ``ValueError``."""
    _keys(data, _TOP_KEYS, where)
    settings = {name: _setting(name, s, f"{where}: setting {name!r}")
                for name, s in _mapping(data.get("settings", {}), f"{where}: settings").items()}
    tables: dict[str, Table] = {}
    for i, t in enumerate(_list(data.get("table", []), f"{where}: table"), 1):
        tab = _table(t, f"{where}: table {i}", settings)
        if tab.id in tables:
            raise ValueError(f"{where}: table {tab.id!r}: id used twice")
        tables[tab.id] = tab
    claims: dict[str, Claim] = {}
    for i, c in enumerate(_list(data.get("claim", []), f"{where}: claim"), 1):
        cid = c.get("id") if isinstance(c, dict) else None
        claim = _claim(c, f"{where}: claim {cid!r}" if isinstance(cid, str) else f"{where}: claim {i}",
                       settings, tables)
        if claim.id in claims:
            raise ValueError(f"{where}: claim {claim.id!r}: id used twice")
        claims[claim.id] = claim
    if not claims:
        raise ValueError(f"{where}: needs at least one [[claim]]")
    return Claims(settings, tables, tuple(claims.values()), where)


def _keys(d: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")


def _mapping(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ValueError(f"{where} must be a table, got {v!r}")
    return v


def _list(v: Any, where: str) -> list[Any]:
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise ValueError(f"{where} must be an array of tables ([[...]])")
    return v


def _text(d: dict[str, Any], key: str, where: str, required: bool = True) -> str:
    v = d.get(key, None if required else "")
    if not isinstance(v, str) or (required and not v):
        raise ValueError(f"{where}: field {key!r} must be {'a non-empty' if required else 'a'} string, got {v!r}")
    return v


def _setting(name: str, s: Any, where: str) -> Setting:
    s = _mapping(s, where)
    _keys(s, _SETTING_KEYS, where)
    return Setting(name, _text(s, "scenario", where), dict(_mapping(s.get("scenario_options", {}),
                                                                    f"{where}: field 'scenario_options'")),
                   dict(_mapping(s.get("env_options", {}), f"{where}: field 'env_options'")))


def _table(t: dict[str, Any], where: str, settings: dict[str, Setting]) -> Table:
    _keys(t, _TABLE_KEYS, where)
    tid = _text(t, "id", where)
    where = f"{where.rsplit(':', 1)[0]}: table {tid!r}"
    setting = _text(t, "setting", where)
    if setting not in settings:
        raise ValueError(f"{where}: field 'setting': unknown setting {setting!r}")
    cols = t.get("columns")
    if not isinstance(cols, list) or not cols or not all(isinstance(c, str) for c in cols):
        raise ValueError(f"{where}: field 'columns' must be a non-empty list of metric names")
    rows: dict[str, tuple[float, ...]] = {}
    for pol, vals in _mapping(t.get("rows"), f"{where}: field 'rows'").items():
        ok = isinstance(vals, list) and len(vals) == len(cols) and all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in vals)
        if not ok:
            raise ValueError(f"{where}: field 'rows.{pol}' must be {len(cols)} numbers >= 0 (one per column)")
        rows[pol] = tuple(float(v) for v in vals)
    unit = _text(t, "unit", where)
    if unit not in ("h", "s"):
        raise ValueError(f"{where}: field 'unit' must be \"h\" or \"s\", got {unit!r}")
    return Table(tid, _text(t, "paper", where), _text(t, "where", where), setting, unit, tuple(cols), rows)


def _claim(c: dict[str, Any], where: str, settings: dict[str, Setting], tables: dict[str, Table]) -> Claim:
    _keys(c, _CLAIM_KEYS, where)
    cid, metric = _text(c, "id", where), _text(c, "metric", where)
    names = _claim_settings(c, where, settings)
    pub = _mapping(c.get("published"), f"{where}: field 'published'")
    if len(pub) != 1 or next(iter(pub)) not in PUBLISHED_KINDS:
        raise ValueError(f"{where}: field 'published' must have exactly one of {', '.join(PUBLISHED_KINDS)}, "
                         f"got {pub!r}")
    policy, baseline = _text(c, "policy", where), _text(c, "baseline", where)
    popts = dict(_mapping(c.get("policy_options", {}), f"{where}: field 'policy_options'"))
    bopts = dict(_mapping(c.get("baseline_options", {}), f"{where}: field 'baseline_options'"))
    if (policy, canonical(popts)) == (baseline, canonical(bopts)):
        raise ValueError(f"{where}: policy and baseline are the same ({policy})")
    claim = Claim(cid, _text(c, "paper", where), _text(c, "where", where), names, metric, policy, baseline, pub,
                  popts, bopts, _text(c, "unmeasurable", where, required=False),
                  _published_values(pub, where, names, metric, policy, baseline, tables))
    _check_published(claim, where)
    return claim


def _claim_settings(c: dict[str, Any], where: str, settings: dict[str, Setting]) -> tuple[str, ...]:
    if "setting" in c and "settings" in c:
        raise ValueError(f"{where}: give 'setting' or 'settings', not both")
    names = [c["setting"]] if "setting" in c else c.get("settings", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{where}: field 'settings' must be a list of setting names")
    if not names and not c.get("unmeasurable"):
        raise ValueError(f"{where}: needs a 'setting' (or 'settings'), or 'unmeasurable' saying why it has none")
    for n in names:
        if n not in settings:
            raise ValueError(f"{where}: field 'setting': unknown setting {n!r}; known: {', '.join(sorted(settings))}")
    return tuple(names)


def _published_values(pub: dict[str, Any], where: str, names: tuple[str, ...], metric: str, policy: str,
                      baseline: str, tables: dict[str, Table]) -> tuple[float, float] | None:
    if "values" in pub:
        v = pub["values"]
        if not (isinstance(v, list) and len(v) == 2 and all(
                isinstance(x, int | float) and not isinstance(x, bool) and x > 0 for x in v)):
            raise ValueError(f"{where}: field 'published.values' must be two numbers > 0 (policy, baseline)")
        return float(v[0]), float(v[1])
    if "table" not in pub:
        return None
    tab = tables.get(pub["table"]) if isinstance(pub["table"], str) else None
    if tab is None:
        raise ValueError(f"{where}: field 'published.table': unknown table {pub['table']!r}")
    if names != (tab.setting,):
        raise ValueError(f"{where}: field 'published.table': table {tab.id!r} is of setting {tab.setting!r}, "
                         f"the claim of {', '.join(names) or 'none'}")
    got = (tab.value(policy, metric), tab.value(baseline, metric))
    if None in got:
        raise ValueError(f"{where}: field 'published.table': table {tab.id!r} has no {metric!r} of "
                         f"{policy if got[0] is None else baseline!r}")
    return got  # type: ignore[return-value]


def _check_published(claim: Claim, where: str) -> None:
    pub = claim.published
    if "direction" in pub and pub["direction"] != "better":
        raise ValueError(f"{where}: field 'published.direction' must be \"better\" (name the better policy as "
                         f"'policy'), got {pub['direction']!r}")
    for k in ("improvement", "ratio", "no_difference"):
        if k in pub and (isinstance(pub[k], bool) or not isinstance(pub[k], int | float)):
            raise ValueError(f"{where}: field 'published.{k}' must be a number, got {pub[k]!r}")
    if "no_difference" in pub and not 0 < pub["no_difference"] < 1:
        raise ValueError(f"{where}: field 'published.no_difference' must be a tolerance between 0 and 1 (0.05: "
                         f"within ±5% of no difference), got {pub['no_difference']!r}")
    imp = claim.improvement
    if imp is not None and not (math.isfinite(imp) and imp > 0):
        raise ValueError(f"{where}: field 'published': says the policy is not better than the baseline "
                         f"(improvement {imp:+.3f}); a claim names the better policy as 'policy'")
