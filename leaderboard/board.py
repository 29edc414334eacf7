"""Boards: what a leaderboard run covers (scenarios x policies x seeds, with options), read from a TOML file.

A board file (``leaderboard/boards/NAME.toml``, or any path) looks like::

    name = "castor"
    description = "Castor's Tables 5-6 and its load sweep"
    seeds = 5                       # seeds 0..4 of every cell
    first_seed = 0                  # optional: seeds first_seed.. (held-out seeds, e.g. 100..109)
    reference = "fifo"              # the policy others are compared with in `leaderboard show`
    metrics = ["avg_jct_s", "avg_queue_s"]
    scenario_options = { restart_s = 30 }   # applied to every group (a group's own options win)

    [[group]]                       # one or more groups; each is a product scenarios x policies x seeds
    scenarios = ["castor-philly", "castor-venus"]
    policies = ["fifo", "sjf", { name = "tiresias", options = { thresholds = [3600.0] } }]
    scenario_options = { num_jobs = 480 }
    env_options = { xi = 1.5 }      # `xi`: a constant interference ratio in the world; others: env keywords

A :class:`Cell` is one episode: scenario, its options, policy, its options, env options, seed and the trace
the scenario reads (real, synthetic, or a trace file's content hash: :func:`trace_identity`). Options are kept
in one canonical form (:mod:`~gpucluster_env.leaderboard.cell_options`: checked by their declared settings,
numbers by their type, options equal to their default left out), so equivalent spellings are one cell. Its
:attr:`Cell.key` names it in the results folder, so a rerun finds the cells already done.

A board is checked whole before anything runs, by the same settings the command line uses: scenario and
policy options, env options (:data:`~gpucluster_env.leaderboard.cell_options.ENV_OPTION_SETTINGS`), seed counts
(at most :data:`MAX_SEEDS` per cell) and its size (at most :data:`MAX_CELLS` cells); each mistake is one line
naming the file, group and field.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from gpucluster_env.leaderboard.cell_options import (
    canonical,
    canonical_scenario_options,
    check_env_options,
    checked_scenario,
    options_label,
)

from gpucluster_env.input_files import parse_toml, read_text

BOARD_KEYS = {"name", "description", "seeds", "first_seed", "reference", "metrics", "scenario_options", "group"}
GROUP_KEYS = {"scenarios", "policies", "scenario_options", "policy_options", "env_options", "seeds"}
DEFAULT_METRICS = ("avg_jct_s", "avg_queue_s", "makespan_s")
MAX_SEEDS = 1000
"""The most seeds a cell may have (seeds 0..N-1): far beyond what a bootstrap interval needs."""
MAX_FIRST_SEED = 1_000_000
"""The largest first seed a board may start from."""
MAX_CELLS = 100_000
"""The most cells a board may expand to (checked before the cells are made)."""
KEY_NAME_CHARS = 80
"""The readable part of a cell's key is cut to this length, so its record's file name stays short (the hash
after it keeps keys apart)."""


@dataclass(frozen=True)
class Cell:
    """One episode of a board: the unit that is run, recorded and resumed."""

    scenario: str
    policy: str
    seed: int
    scenario_options: dict[str, Any] = field(default_factory=dict)
    policy_options: dict[str, Any] = field(default_factory=dict)
    env_options: dict[str, Any] = field(default_factory=dict)
    trace: str = ""
    """The trace the scenario reads (:func:`trace_identity`): part of the identity, as two traces give two
    different episodes for one seed."""

    def as_dict(self) -> dict[str, Any]:
        """The cell as plain JSON data (stored in its record)."""
        return {"scenario": self.scenario, "scenario_options": self.scenario_options, "policy": self.policy,
                "policy_options": self.policy_options, "env_options": self.env_options, "seed": self.seed,
                "trace": self.trace}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Cell:
        """The inverse of :meth:`as_dict`; a field of the wrong type is a one-line ``ValueError`` naming it."""
        if not isinstance(d, dict):
            raise ValueError(f"cell must be an object, got {d!r}")
        for name in ("scenario", "policy", "trace"):
            if not isinstance(d.get(name), str):
                raise ValueError(f"cell field {name!r} must be a string, got {d.get(name)!r}")
        for name in ("scenario_options", "policy_options", "env_options"):
            if not isinstance(d.get(name), dict):
                raise ValueError(f"cell field {name!r} must be an object, got {d.get(name)!r}")
        seed = d.get("seed")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"cell field 'seed' must be an integer >= 0, got {seed!r}")
        return cls(d["scenario"], d["policy"], seed, dict(d["scenario_options"]), dict(d["policy_options"]),
                   dict(d["env_options"]), d["trace"])

    @property
    def key(self) -> str:
        """A stable file-name-safe identifier: readable names (a scenario file by its stem, at most
        :data:`KEY_NAME_CHARS` characters), then the seed and a hash of the whole cell."""
        digest = hashlib.sha1(canonical(self.as_dict()).encode()).hexdigest()[:10]
        scenario = Path(self.scenario).stem if self.scenario.lower().endswith(".toml") else self.scenario
        safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in f"{scenario}.{self.policy}")
        return f"{safe[:KEY_NAME_CHARS]}__s{self.seed}__{digest}"

    @property
    def labelled_options(self) -> dict[str, Any]:
        """What sets the cell's scenario apart, as shown in its label: scenario options, env options and the
        trace (``trace_id="synthetic"``; not ``trace``, a scenario option) where it has one."""
        return {**self.scenario_options, **self.env_options, **({"trace_id": self.trace} if self.trace else {})}

    @property
    def scenario_label(self) -> str:
        """The scenario with its options, env options and trace, e.g. ``sjfbsbf-philly (num_jobs=480)``."""
        opts = options_label(self.labelled_options)
        return f"{self.scenario} ({opts})" if opts else self.scenario

    @property
    def policy_label(self) -> str:
        """The policy with its options, e.g. ``tiresias (thresholds=[3600.0])``."""
        opts = options_label(self.policy_options)
        return f"{self.policy} ({opts})" if opts else self.policy


@dataclass(frozen=True)
class Board:
    """A board: its cells and how to present them."""

    name: str
    description: str
    cells: tuple[Cell, ...]
    reference: str = "fifo"
    metrics: tuple[str, ...] = DEFAULT_METRICS
    source: str = ""
    first_seed: int = 0
    """A cell's seeds are ``first_seed`` .. ``first_seed + seeds - 1`` (the claims board: held-out seeds)."""

    def select(self, scenarios: list[str] | None, policies: list[str] | None, seeds: int | None,
               first_seed: int | None = None) -> Board:
        """The board restricted to some scenarios and policies (by name), with ``seeds`` seeds per cell from
        ``first_seed`` (None: the board's own count and first seed; a second seed set of the same board is
        ``first_seed`` past the first). A name the board does not have, or a selection with no cell, is a
        one-line ``ValueError``."""
        for want, have, what in ((scenarios, {c.scenario for c in self.cells}, "scenario"),
                                 (policies, {c.policy for c in self.cells}, "policy")):
            missing = [x for x in want or () if x not in have]
            if missing:
                raise ValueError(f"board {self.name!r} has no {what} {missing[0]!r}; its {what} names: "
                                 f"{', '.join(sorted(have))}")
        cells = [c for c in self.cells if (not scenarios or c.scenario in scenarios)
                 and (not policies or c.policy in policies)]
        if not cells:
            raise ValueError(f"board {self.name!r} has no cell for scenario(s) {', '.join(scenarios or ['any'])} "
                             f"x policy(ies) {', '.join(policies or ['any'])}")
        if first_seed is not None:
            check_first_seed(first_seed, "--first-seed")
            seeds = seeds if seeds is not None else len({c.seed for c in self.cells})
        if seeds is not None:
            check_seeds(seeds, "--seeds")
            base = {replace(c, seed=0).key: replace(c, seed=0) for c in cells}
            if len(base) * seeds > MAX_CELLS:
                raise ValueError(f"--seeds {seeds}: the selection would have {len(base) * seeds:,} cells; at most "
                                 f"{MAX_CELLS:,}")
            first = self.first_seed if first_seed is None else first_seed
            cells = _with_seeds(base.values(), seeds, first)
            return replace(self, cells=tuple(cells), first_seed=first)
        return replace(self, cells=tuple(cells))


def check_seeds(seeds: Any, where: str = "seeds") -> int:
    """A number of seeds per cell (seeds 0..N-1) as an int from 1 to :data:`MAX_SEEDS`, or a one-line
    ``ValueError`` naming ``where`` (a float, bool, list or string is refused, not rounded)."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        raise ValueError(f"{where} must be a positive integer (a number of seeds, at most {MAX_SEEDS:,}), "
                         f"got {seeds!r}")
    return seeds


def check_first_seed(first: Any, where: str = "first_seed") -> int:
    """A board's first seed as an int from 0 to :data:`MAX_FIRST_SEED`, or a one-line ``ValueError`` naming
    ``where``."""
    if isinstance(first, bool) or not isinstance(first, int) or not 0 <= first <= MAX_FIRST_SEED:
        raise ValueError(f"{where} must be an integer from 0 to {MAX_FIRST_SEED:,}, got {first!r}")
    return first


def _with_seeds(cells: Any, seeds: int, first: int = 0) -> list[Cell]:
    return [replace(c, seed=s) for c in cells for s in range(first, first + seeds)]


def board_names() -> list[str]:
    """The boards shipped with the package (``leaderboard/boards/*.toml``)."""
    root = resources.files("gpucluster_env.leaderboard") / "boards"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def load_board(name_or_path: str) -> Board:
    """A shipped board by name (``castor``) or a board file by path; one-line ``ValueError`` on any mistake."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.exists() or path.is_dir():
            raise ValueError(f"board file {name_or_path} not found")
        text, where = read_text(path), str(path)
    else:
        res = resources.files("gpucluster_env.leaderboard") / "boards" / f"{name_or_path}.toml"
        if not res.is_file():
            raise ValueError(f"unknown board {name_or_path!r}; shipped boards: {', '.join(board_names())} "
                             "(or give a .toml path)")
        text, where = res.read_text(), f"board {name_or_path}"
    return parse_board(parse_toml(text, where), where)


def parse_board(data: dict[str, Any], where: str = "board") -> Board:
    """Validate a board's TOML data whole (names, options of scenarios, policies and env, seeds, size) and
    expand its cells; the first mistake is a one-line ``ValueError`` naming ``where`` and the field."""
    _check_keys(data, BOARD_KEYS, where)
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise ValueError(f"{where}: {key} must be a string, got {data[key]!r}")
    seeds = check_seeds(data.get("seeds", 5), f"{where}: seeds")
    first = check_first_seed(data.get("first_seed", 0), f"{where}: first_seed")
    common = _table(data.get("scenario_options", {}), f"{where}: scenario_options")
    groups = data.get("group")
    if not isinstance(groups, list) or not groups:
        raise ValueError(f"{where}: needs at least one [[group]] with scenarios and policies")
    cells: list[Cell] = []
    for i, g in enumerate(groups, 1):
        cells += _group_cells(g, f"{where}: group {i}", seeds, common, MAX_CELLS - len(cells), first)
    metrics = data.get("metrics", list(DEFAULT_METRICS))
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise ValueError(f"{where}: metrics must be a list of metric names")
    reference = data.get("reference", "fifo")
    if reference not in {c.policy for c in cells}:
        raise ValueError(f"{where}: reference policy {reference!r} is not among the board's policies")
    return Board(str(data.get("name", where)), str(data.get("description", "")), tuple(_unique(cells)),
                 reference, tuple(metrics), where, first)


def cells_from_args(scenarios: list[str], policies: list[str] | None, seeds: int,
                    scenario_options: dict[str, Any] | None = None) -> tuple[Board, list[str]]:
    """A board given on the command line (``--scenarios A,B --policies X,Y --seeds N``) and notes on what it
    leaves out. Without ``policies``: every registered policy that can run on each scenario (one note per
    policy left out); a policy named that cannot run on a scenario is a one-line ``ValueError``."""
    from gpucluster_env.policy import policy_names

    notes: list[str] = []
    groups = []
    for s in scenarios:
        names = policies
        if names is None:
            sc = checked_scenario(s, scenario_options or {}, "--scenarios")
            names = [p for p in policy_names() if runnable(p, sc) is None]
            notes += [f"{p} left out on {s}: {runnable(p, sc)}" for p in policy_names() if p not in names]
        groups.append({"scenarios": [s], "policies": names, "scenario_options": scenario_options or {}})
    names = [p for g in groups for p in g["policies"]]
    data = {"name": "command line", "seeds": seeds, "group": groups,
            "reference": "fifo" if "fifo" in names else (names[0] if names else "fifo")}
    return parse_board(data, "--scenarios/--policies"), notes


def runnable(policy: str, sc: Any) -> str | None:
    """Why ``policy`` cannot run on scenario ``sc``, or None: a trained model (``rl:DIR`` or shipped) needs a
    cluster with as many GPU types as it was trained on (its spaces depend on that number); a reference policy
    says so by its ``applies_to``. A missing ``rl:DIR`` is a one-line ``FileNotFoundError``."""
    from gpucluster_env.agents.policies import SHIPPED_DIR, RLPolicy, read_meta

    from gpucluster_env.policy import registered_policies

    cls = registered_policies().get(policy)
    if policy.startswith("rl:") or (cls is not None and issubclass(cls, RLPolicy)):
        trained = read_meta(policy[3:] if policy.startswith("rl:") else SHIPPED_DIR).get("gpu_types")
        here = len({n.gpu_type for n in sc.cluster.nodes})
        if trained is None or trained == here:
            return None
        return f"the model was trained on clusters with {trained} GPU type(s), {sc.name} has {here}"
    if cls is None or cls.applies_to(sc):
        return None
    doc = (cls.applies_to.__doc__ or "").strip().splitlines()
    return f"it cannot run on this cluster ({doc[0].rstrip('.')})" if doc else "it cannot run on this cluster"


def trace_identity(sc: Any) -> str:
    """The trace identity of a scenario (see :func:`gpucluster_env.traces.scenario_jobs.trace_identity`)."""
    from gpucluster_env.traces.scenario_jobs import trace_identity as identity

    return identity(sc)


def _unique(cells: list[Cell]) -> list[Cell]:
    seen: dict[str, Cell] = {}
    for c in cells:
        seen.setdefault(c.key, c)
    return list(seen.values())


def _check_keys(d: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = set(d) - allowed
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(allowed))}")


def _table(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ValueError(f"{where} must be a table (e.g. {{ num_jobs = 480 }}), got {v!r}")
    return dict(v)


def _group_cells(g: Any, where: str, seeds: int, common: dict[str, Any], room: int, first: int = 0) -> list[Cell]:
    from gpucluster_env.policy import check_policy_options, policy_names

    if not isinstance(g, dict):
        raise ValueError(f"{where}: must be a table")
    _check_keys(g, GROUP_KEYS, where)
    scenarios, pols = g.get("scenarios"), g.get("policies")
    if not isinstance(scenarios, list) or not scenarios:
        raise ValueError(f"{where}: scenarios must be a non-empty list of scenario names")
    if not isinstance(pols, list) or not pols:
        raise ValueError(f"{where}: policies must be a non-empty list of policy names")
    sopts = {**common, **_table(g.get("scenario_options", {}), f"{where}: scenario_options")}
    eopts = check_env_options(_table(g.get("env_options", {}), f"{where}: env_options"), f"{where}: ")
    shared_popts = _table(g.get("policy_options", {}), f"{where}: policy_options")
    n = check_seeds(g.get("seeds", seeds), f"{where}: seeds")
    if len(scenarios) * len(pols) * n > room:
        raise ValueError(f"{where}: {len(scenarios)} scenario(s) x {len(pols)} policy(ies) x {n} seeds make the "
                         f"board larger than {MAX_CELLS:,} cells")
    entries = [_policy_entry(p, where) for p in pols]
    for name, _ in entries:
        if ":" in name and not name.startswith("rl:"):  # package.module:Class: imported and registered here
            from gpucluster_env.policy_plugins import load_reference
            from gpucluster_env.settings import SettingError

            try:
                load_reference(name)
            except SettingError as e:
                raise ValueError(f"{where}: {e}") from None
    known = set(policy_names())
    for name, _ in entries:
        if name not in known and not name.startswith("rl:"):
            raise ValueError(f"{where}: unknown policy {name!r}; known: {', '.join(sorted(known))}")
    entries = [(name, check_policy_options(name, {**shared_popts, **popts}, f"{where}: ")) for name, popts in entries]
    cells: list[Cell] = []
    for s in scenarios:
        if not isinstance(s, str):
            raise ValueError(f"{where}: scenario names must be strings, got {s!r}")
        canon = canonical_scenario_options(s, sopts, f"{where}: scenario {s}")
        sc = checked_scenario(s, canon, f"{where}: scenario {s}")
        try:
            trace = trace_identity(sc)
        except (ValueError, OSError) as e:
            raise ValueError(f"{where}: scenario {s}: {e}") from None
        for name, popts in entries:
            try:
                why = runnable(name, sc)
            except (ValueError, OSError) as e:
                raise ValueError(f"{where}: policy {name}: {str(e).splitlines()[0]}") from None
            if why is not None:
                raise ValueError(f"{where}: policy {name!r} cannot run on scenario {s}: {why}")
            cells.append(Cell(s, name, 0, canon, popts, eopts, trace))
    return _with_seeds(cells, n, first)
def _policy_entry(p: Any, where: str) -> tuple[str, dict[str, Any]]:
    if isinstance(p, str):
        return p, {}
    if isinstance(p, dict) and isinstance(p.get("name"), str) and set(p) <= {"name", "options"}:
        return p["name"], _table(p.get("options", {}), f"{where}: policy {p['name']} options")
    raise ValueError(f"{where}: a policy is a name or {{ name = \"...\", options = {{ ... }} }}, got {p!r}")
