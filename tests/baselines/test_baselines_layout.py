"""``baselines/`` read like the papers (issue #26): every registered reference policy in the module named after it,
the shared pieces in ``baselines/parts/`` (which registers nothing), "+Gimbal" as a wrapper around any host
policy, and policy options checked by their declared settings however a policy is made."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import gpucluster_env.baselines as baselines
import gpucluster_env.baselines.parts as parts
import pytest
from gpucluster_env.baselines.lucid import Lucid
from gpucluster_env.baselines.parts.gimbal_layer import GimbalOptions, WithGimbal
from gpucluster_env.baselines.tiresias import Tiresias

from gpucluster_env.cli.main import main
from gpucluster_env.cli.option_args import parse_policy_options
from gpucluster_env.policy import make_policy, registered_policies, run_episode
from gpucluster_env.policy_options import declared_options
from gpucluster_env.settings import SettingError, check_value

HOMES = {"gavel": "gavel_maxmin"}
"""The registered names whose module is not the name itself: ``gavel``'s (``traces/gavel.py`` reads Gavel's traces
and module names are unique across the package)."""


def test_every_reference_policy_lives_in_the_module_named_after_it() -> None:
    found = {name: cls.__module__ for name, cls in registered_policies().items()
             if cls.__module__.startswith("gpucluster_env.baselines.")}
    assert len(found) >= 25
    for name, module in found.items():
        expected = HOMES.get(name, name.replace("-", "_").replace("+", "_"))
        assert module == f"gpucluster_env.baselines.{expected}", (name, module)


def test_parts_register_no_policy() -> None:
    before = dict(registered_policies())
    for info in pkgutil.iter_modules(parts.__path__):
        module = importlib.import_module(f"{parts.__name__}.{info.name}")
        assert not any(getattr(c, "__module__", None) == module.__name__ for c in before.values()), info.name
    assert registered_policies() == before
    top = {info.name for info in pkgutil.iter_modules(baselines.__path__)}
    assert not top & {info.name for info in pkgutil.iter_modules(parts.__path__)}


def test_gimbal_wraps_any_host() -> None:
    # sjf-ffs packs greedily; wrapped, Gimbal's coordinator searches its packing sets and squeezes; with both
    # mechanisms off the wrapper plays exactly the host's episode
    plain = run_episode("tiny", "sjf-ffs", 0)
    off = WithGimbal(make_policy("sjf-ffs"), "jct", GimbalOptions(lgrr=False, liss=False))
    assert run_episode("tiny", off, 0)["avg_jct_s"] == plain["avg_jct_s"]
    on = WithGimbal(make_policy("sjf-ffs"), "jct")
    result = run_episode("tiny", on, 0)
    assert result["jobs_done"] == result["jobs"] and result["squeezes"] > 0
    assert on.episode_stats()["gimbal_searches"] > 0 and result["avg_jct_s"] != plain["avg_jct_s"]


@pytest.mark.parametrize("make, words", [
    (lambda: Lucid(threshold=7), ("'lucid'", "'threshold'", "<= 4")),
    (lambda: Lucid(7), ("'lucid'", "'threshold'")),
    (lambda: Tiresias(order="later"), ("'tiresias'", "'order'", "submit, start")),
    (lambda: Lucid(bogus=1), ("'lucid'", "unknown option(s) bogus")),
    (lambda: make_policy("gavel-packed", objective="ftf"), ("'gavel-packed'", "'objective'", "max-min, makespan")),
    (lambda: make_policy("lucid+gimbal", granularity=150), ("'lucid+gimbal'", "'granularity'", "<= 99")),
    (lambda: make_policy("hadar", dp_window=-1), ("'hadar'", "'dp_window'", ">= 0")),
    (lambda: make_policy("hadar", dp_window=63), ("'hadar'", "'dp_window'", "<= 62")),  # a bit mask of the window
])
def test_policy_made_in_python_checks_its_options(make, words) -> None:
    with pytest.raises(SettingError) as e:
        make()
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


@pytest.mark.parametrize("policy, text", [
    ("lucid", "threshold=7"), ("tiresias", "order=later"), ("gavel", "objective=fastest"),
    ("hadar", "estimate=guess"), ("hadare", "comm_weight=-1"), ("srsf", "min_run_s=-1"),
    ("lucid+gimbal", "granularity=0"), ("gandiva+gimbal", "step_s=0"), ("gavel-packed+gimbal", "objective=ftf"),
])
def test_bad_declared_options_on_the_command_line(policy: str, text: str, capsys: pytest.CaptureFixture[str]
                                                  ) -> None:
    assert main(["run", "--policy", policy, "--policy-option", text]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and text.split("=")[0] in err and repr(policy) in err


def test_zero_where_the_constructor_allows_it() -> None:
    # SRSF without a run quantum, Gavel recomputing its allocation every round, Hadar without a DP window, pollux's
    # default seed
    assert parse_policy_options(["min_run_s=0"], "srsf") == {"min_run_s": 0.0}
    assert parse_policy_options(["min_reset_s=0"], "gavel") == {"min_reset_s": 0.0}
    assert parse_policy_options(["dp_window=0", "comm_weight=0"], "hadar") == {"dp_window": 0, "comm_weight": 0.0}
    assert parse_policy_options(["seed=0"], "pollux") == {"seed": 0}


def _imports(path: Path) -> set[str]:
    """The ``gpucluster_env`` modules ``path`` imports (``from pkg import mod`` as ``pkg.mod``)."""
    out: set[str] = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("gpucluster_env"):
            out.update(f"{n.module}.{a.name}" for a in n.names)
        elif isinstance(n, ast.Import):
            out.update(a.name for a in n.names if a.name.startswith("gpucluster_env"))
    return out


def test_baselines_import_only_downward_and_parts_only_parts() -> None:
    folder = Path(baselines.__file__).parent
    upward = ("agents", "leaderboard", "cli", "replay", "traces")
    for path in sorted(folder.rglob("*.py")):
        names = _imports(path)
        assert not [m for m in names if m.split(".")[1] in upward], path
        if path.parent.name == "parts":
            siblings = {m for m in names if m.startswith("gpucluster_env.baselines.")}
            assert all(m.startswith("gpucluster_env.baselines.parts.") for m in siblings), (path, siblings)


def test_declared_defaults_fit_their_settings() -> None:
    # a default always passes the constructor's check (it is the author's), but it should fit its declaration
    # too, else the command line refuses a value the policy runs with by default
    for name, cls in registered_policies().items():
        for setting, default in declared_options(cls).values():
            if default is not inspect.Parameter.empty and setting.check is None:
                check_value(setting, default, f"policy {name!r}: default of option ")
    assert make_policy("random", seed=0).seed == 0 and make_policy("pollux", seed=0).options == {"seed": 0}
