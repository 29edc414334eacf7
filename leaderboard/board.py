"""Boards: what a leaderboard run covers (scenarios x policies x seeds, with options), read from a TOML file.

A board file (``leaderboard/boards/NAME.toml``, or any path) looks like::

    name = "castor"
    description = "Castor's Tables 5-6 and its load sweep"
    seeds = 5                       # seeds 0..4 of every cell
    reference = "fifo"              # the policy others are compared with in `leaderboard show`
    metrics = ["avg_jct_s", "avg_queue_s"]
    scenario_options = { restart_s = 30 }   # applied to every group (a group's own options win)

    [[group]]                       # one or more groups; each is a product scenarios x policies x seeds
    scenarios = ["castor-philly", "castor-venus"]
    policies = ["fifo", "sjf", { name = "tiresias", options = { thresholds = [3600.0] } }]
    scenario_options = { num_jobs = 480 }
    env_options = { xi = 1.5 }      # `xi`: a constant interference ratio in the world; others: env keywords

A :class:`Cell` is one episode: scenario, its options, policy, its options, env options and seed. Its
:attr:`Cell.key` names it in the results folder, so a rerun finds the cells already done.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ..input_files import parse_toml, read_text

BOARD_KEYS = {"name", "description", "seeds", "reference", "metrics", "scenario_options", "group"}
GROUP_KEYS = {"scenarios", "policies", "scenario_options", "policy_options", "env_options", "seeds"}
ENV_OPTION_KEYS = {"xi", "objective", "max_sim_time_s", "n_pending", "n_running", "n_accum", "reward_scale"}
"""Env options a board may set: ``xi`` injects a constant interference ratio (sjf-bsbf Fig. 6(b)); the others
are :class:`~gpucluster_env.env.GPUClusterEnv` keywords."""
DEFAULT_METRICS = ("avg_jct_s", "avg_queue_s", "makespan_s")


def canonical(obj: Any) -> str:
    """Canonical JSON text (sorted keys, no spaces): the form options are compared and hashed in."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def options_label(opts: dict[str, Any]) -> str:
    """``{"num_jobs": 480}`` -> ``num_jobs=480`` (JSON values, sorted keys); empty for no options."""
    return ",".join(f"{k}={canonical(v)}" for k, v in sorted(opts.items()))


@dataclass(frozen=True)
class Cell:
    """One episode of a board: the unit that is run, recorded and resumed."""

    scenario: str
    policy: str
    seed: int
    scenario_options: dict[str, Any] = field(default_factory=dict)
    policy_options: dict[str, Any] = field(default_factory=dict)
    env_options: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The cell as plain JSON data (stored in its record)."""
        return {"scenario": self.scenario, "scenario_options": self.scenario_options, "policy": self.policy,
                "policy_options": self.policy_options, "env_options": self.env_options, "seed": self.seed}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Cell:
        """The inverse of :meth:`as_dict`."""
        return cls(d["scenario"], d["policy"], int(d["seed"]), dict(d.get("scenario_options") or {}),
                   dict(d.get("policy_options") or {}), dict(d.get("env_options") or {}))

    @property
    def key(self) -> str:
        """A stable file-name-safe identifier: readable names, then a hash of the options and the seed."""
        digest = hashlib.sha1(canonical(self.as_dict()).encode()).hexdigest()[:10]
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in f"{self.scenario}.{self.policy}")
        return f"{safe.replace('.', '__')}__s{self.seed}__{digest}"

    @property
    def scenario_label(self) -> str:
        """The scenario with its options and env options, e.g. ``sjfbsbf-philly (num_jobs=480)``."""
        opts = options_label({**self.scenario_options, **self.env_options})
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

    def select(self, scenarios: list[str] | None, policies: list[str] | None, seeds: int | None) -> Board:
        """The board restricted to some scenarios and policies (by name), with ``seeds`` seeds per cell."""
        cells = [c for c in self.cells if (not scenarios or c.scenario in scenarios)
                 and (not policies or c.policy in policies)]
        if scenarios and not cells:
            raise ValueError(f"board {self.name!r} has no cell for scenario(s) {', '.join(scenarios)}")
        if seeds is not None:
            check_seeds(seeds)
            cells = _with_seeds({replace(c, seed=0).key: replace(c, seed=0) for c in cells}.values(), seeds)
        return Board(self.name, self.description, tuple(cells), self.reference, self.metrics, self.source)


def check_seeds(seeds: Any) -> int:
    """``seeds`` as a positive int, or a one-line ``ValueError``."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds must be a positive integer, got {seeds!r}")
    return seeds


def _with_seeds(cells: Any, seeds: int) -> list[Cell]:
    return [Cell(c.scenario, c.policy, s, c.scenario_options, c.policy_options, c.env_options)
            for c in cells for s in range(seeds)]


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
    """Validate a board's TOML data (names of scenarios and policies included) and expand its cells."""
    _check_keys(data, BOARD_KEYS, where)
    seeds = check_seeds(data.get("seeds", 5))
    common = _table(data.get("scenario_options", {}), f"{where}: scenario_options")
    groups = data.get("group")
    if not isinstance(groups, list) or not groups:
        raise ValueError(f"{where}: needs at least one [[group]] with scenarios and policies")
    cells: list[Cell] = []
    for i, g in enumerate(groups, 1):
        cells += _group_cells(g, f"{where}: group {i}", seeds, common)
    metrics = data.get("metrics", list(DEFAULT_METRICS))
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise ValueError(f"{where}: metrics must be a list of metric names")
    reference = data.get("reference", "fifo")
    if reference not in {c.policy for c in cells}:
        raise ValueError(f"{where}: reference policy {reference!r} is not among the board's policies")
    return Board(str(data.get("name", where)), str(data.get("description", "")), tuple(_unique(cells)),
                 reference, tuple(metrics), where)


def cells_from_args(scenarios: list[str], policies: list[str], seeds: int,
                    scenario_options: dict[str, Any] | None = None) -> Board:
    """A board given on the command line (``--scenarios A,B --policies X,Y --seeds N``)."""
    group = {"scenarios": scenarios, "policies": policies, "scenario_options": scenario_options or {}}
    data = {"name": "command line", "seeds": seeds, "group": [group],
            "reference": "fifo" if "fifo" in policies else (policies[0] if policies else "fifo")}
    return parse_board(data, "--scenarios/--policies")


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


def _group_cells(g: Any, where: str, seeds: int, common: dict[str, Any]) -> list[Cell]:
    from ..baselines import policy_names
    from ..scenarios import get_scenario

    if not isinstance(g, dict):
        raise ValueError(f"{where}: must be a table")
    _check_keys(g, GROUP_KEYS, where)
    scenarios, pols = g.get("scenarios"), g.get("policies")
    if not isinstance(scenarios, list) or not scenarios:
        raise ValueError(f"{where}: scenarios must be a non-empty list of scenario names")
    if not isinstance(pols, list) or not pols:
        raise ValueError(f"{where}: policies must be a non-empty list of policy names")
    sopts = {**common, **_table(g.get("scenario_options", {}), f"{where}: scenario_options")}
    eopts = _table(g.get("env_options", {}), f"{where}: env_options")
    bad = set(eopts) - ENV_OPTION_KEYS
    if bad:
        raise ValueError(f"{where}: unknown env option(s) {', '.join(sorted(bad))}; allowed: "
                         f"{', '.join(sorted(ENV_OPTION_KEYS))}")
    shared_popts = _table(g.get("policy_options", {}), f"{where}: policy_options")
    n = check_seeds(g.get("seeds", seeds))
    for s in scenarios:
        if not isinstance(s, str):
            raise ValueError(f"{where}: scenario names must be strings, got {s!r}")
        get_scenario(s, **sopts)  # unknown scenario or option: one line
    known = set(policy_names())
    cells: list[Cell] = []
    for p in pols:
        name, popts = _policy_entry(p, where)
        if name not in known and not name.startswith("rl:"):
            raise ValueError(f"{where}: unknown policy {name!r}; known: {', '.join(sorted(known))}")
        popts = {**shared_popts, **popts}
        cells += [Cell(s, name, 0, sopts, popts, eopts) for s in scenarios]
    return _with_seeds(cells, n)


def _policy_entry(p: Any, where: str) -> tuple[str, dict[str, Any]]:
    if isinstance(p, str):
        return p, {}
    if isinstance(p, dict) and isinstance(p.get("name"), str) and set(p) <= {"name", "options"}:
        return p["name"], _table(p.get("options", {}), f"{where}: policy {p['name']} options")
    raise ValueError(f"{where}: a policy is a name or {{ name = \"...\", options = {{ ... }} }}, got {p!r}")
