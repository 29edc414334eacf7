"""A user's own policy from the command line: ``module:Class`` references (duck-typed or Policy subclasses) in
``run``, boards with worker processes, plugins by entry point; built-in names are never replaced."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gpucluster_env.cli.main import main
from gpucluster_env.policy import POLICIES, Policy, make_policy, policy_names, register_policy, run_episode
from gpucluster_env.settings import SettingError

MODULE = '''
"""A user's policies in their own file."""
import numpy as np

from gpucluster_env.policy import Policy


class LastLegal:
    """The last legal action of the mask (duck-typed: no base class)."""

    def __init__(self, skip_wait: bool = True):
        self.skip_wait = skip_wait

    def act(self, obs, env):
        legal = np.flatnonzero(env.unwrapped.action_masks())
        return int(legal[-1]) if self.skip_wait or len(legal) == 1 else 0


class FirstLegal(Policy):
    """The first legal non-wait action, else wait."""

    name = "first-legal"

    def act(self, obs, env):
        legal = np.flatnonzero(env.unwrapped.action_masks())
        return int(legal[1]) if len(legal) > 1 else 0
'''


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """``userpol.py`` in the current folder; the references it registered are removed afterwards."""
    name = f"userpol_{abs(hash(str(tmp_path))) % 10**8}"  # a module name no other test imported
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.chdir(tmp_path)
    before = set(policy_names())  # the built-ins loaded first: only the test's own are removed
    yield name
    for k in set(POLICIES) - before:
        del POLICIES[k]


def test_a_reference_runs_and_is_named_as_written(user_module: str, capsys: pytest.CaptureFixture) -> None:
    for cls in ("LastLegal", "FirstLegal"):
        assert main(["run", "--policy", f"{user_module}:{cls}", "--json", "--no-progress"]) == 0
        res = json.loads(capsys.readouterr().out)
        assert res["policy"] == f"{user_module}:{cls}" and res["jobs_done"] == 40
    pol = make_policy(f"{user_module}:LastLegal", skip_wait=False)
    assert pol.kind == "user" and pol.options == {"skip_wait": False}


def test_a_board_runs_a_reference_in_worker_processes(user_module: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    spec = f"{user_module}:LastLegal"
    assert main(["leaderboard", "run", "--scenarios", "tiny", "--policies", f"{spec},sjf", "--seeds", "2",
                 "--workers", "2", "--out", str(tmp_path / "res"), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ran"] == 4
    records = [json.loads(f.read_text()) for f in (tmp_path / "res").glob("tiny_*.json")]
    assert len(records) == 4 and {r["cell"]["policy"] for r in records} == {spec, "sjf"}


@pytest.mark.parametrize(("spec", "needle"), [
    ("MOD:Nope", "has no Nope"),
    ("nosuchmodule_xyz:P", "cannot import nosuchmodule_xyz"),
    ("MOD:np", "is not a policy class"),
    ("bad name:P", "expected package.module:Class"),
])
def test_a_bad_reference_is_one_line(user_module: str, capsys: pytest.CaptureFixture, spec: str, needle: str) -> None:
    assert main(["run", "--policy", spec.replace("MOD", user_module)]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1, err


def test_a_duck_typed_object_plays_in_python() -> None:
    class Waits:
        def act(self, obs, env):  # noqa: ANN001, ANN202
            legal = np.flatnonzero(env.unwrapped.action_masks())
            return int(legal[-1])

    r = run_episode("tiny", Waits(), 0)
    assert r["jobs_done"] == 40 and r["policy"] == "Waits"
    with pytest.raises(TypeError, match="object with act"):
        run_episode("tiny", object(), 0)


def test_a_built_in_name_is_never_replaced() -> None:
    policy_names()  # the built-ins registered
    before = POLICIES["sjf"]
    with pytest.raises(ValueError, match="'sjf' is taken by"):
        @register_policy
        class Mine(Policy):
            name = "sjf"

    from gpucluster_env.policy_plugins import _register, as_policy_class

    class Duck:
        def act(self, obs, env):  # noqa: ANN001, ANN202
            return 0

    with pytest.raises(SettingError, match="cannot replace it"):
        _register("fifo", as_policy_class(Duck, "fifo"))
    assert POLICIES["sjf"] is before


def test_an_installed_plugin_registers_and_a_clash_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    import gpucluster_env.policy_plugins as plugins

    eps = [EntryPoint("plugged-in", "gpucluster_env.baselines.fifo:FIFO", plugins.ENTRY_POINT_GROUP),
           EntryPoint("sjf", "gpucluster_env.baselines.fifo:FIFO", plugins.ENTRY_POINT_GROUP)]
    policy_names()  # the built-ins registered first, as make_policy and every command do
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: eps if group == plugins.ENTRY_POINT_GROUP
                        else [])
    try:
        with pytest.warns(UserWarning, match="policy plugin 'sjf'.*left out"):
            plugins.load_entry_points()
        assert make_policy("plugged-in").name == "plugged-in" and POLICIES["sjf"].__name__ != "FIFO"
    finally:
        POLICIES.pop("plugged-in", None)


def test_a_policys_options_are_listed(capsys: pytest.CaptureFixture) -> None:
    assert main(["policies", "tiresias", "--json"]) == 0
    rows = {r["option"]: r for r in json.loads(capsys.readouterr().out)["options"]}
    assert rows["order"]["accepts"] == "one of submit, start" and rows["order"]["default"] == "submit"
    assert main(["policies", "fifo"]) == 0 and "takes no options" in capsys.readouterr().out
    assert main(["policies", "no-such-policy"]) == 2
