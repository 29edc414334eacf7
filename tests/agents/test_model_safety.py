"""Loading a model folder runs no code from it, and a broken or mismatched folder is one line (exit 2)."""

from __future__ import annotations

import base64
import json
import shutil
import zipfile
from pathlib import Path

import cloudpickle
import pytest
from gpucluster_env.agents.model_meta import load_model

from gpucluster_env.cli.main import main
from gpucluster_env.policy import make_policy

SHIPPED = Path(__file__).resolve().parents[2] / "agents" / "models" / "rl-scratch"


class _Payload:
    """Unpickling this creates the marker file: what a crafted model.zip would do with SB3's own loader."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):  # noqa: ANN204
        return (open, (self.marker, "w"))


def _rewrite_zip(src: Path, dst: Path, replace: dict[str, bytes | None]) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            if name in replace:
                if replace[name] is not None:
                    zout.writestr(name, replace[name])
            else:
                zout.writestr(name, zin.read(name))


def _crafted(tmp_path: Path, marker: Path) -> Path:
    """The shipped model with every pickled entry of ``data`` replaced by the payload."""
    out = tmp_path / "crafted"
    out.mkdir()
    shutil.copy(SHIPPED / "meta.json", out / "meta.json")
    with zipfile.ZipFile(SHIPPED / "model.zip") as z:
        data = json.loads(z.read("data"))
    blob = base64.b64encode(cloudpickle.dumps(_Payload(marker))).decode()
    for key, value in data.items():
        if isinstance(value, dict) and ":serialized:" in value:
            data[key] = {":type:": "x", ":serialized:": blob}
    _rewrite_zip(SHIPPED / "model.zip", out / "model.zip", {"data": json.dumps(data).encode()})
    return out


def test_the_payload_would_run_under_sb3s_own_loader(tmp_path: Path) -> None:
    """The test's payload is real: SB3's ``load`` unpickles it (and then fails), creating the marker."""
    from sb3_contrib import MaskablePPO

    marker = tmp_path / "marker"
    crafted = _crafted(tmp_path, marker)
    with pytest.raises(Exception):  # noqa: B017,PT011 - whatever SB3 makes of an open file as a policy class
        MaskablePPO.load(crafted / "model.zip", device="cpu")
    assert marker.exists()


def test_loading_a_crafted_model_runs_none_of_its_code(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    marker = tmp_path / "marker"
    crafted = _crafted(tmp_path, marker)
    model, meta = load_model(crafted)  # the weights are the shipped ones, so it loads and plays
    assert meta["algo"] == "maskable_ppo" and not marker.exists()
    make_policy(f"rl:{crafted}")
    assert main(["evaluate", "--model", str(crafted), "--scenario", "tiny", "--seeds", "0", "--baselines", "sjf"]) == 0
    assert main(["run", "--scenario", "tiny", "--policy", f"rl:{crafted}"]) == 0
    capsys.readouterr()
    assert not marker.exists()


def test_loaded_weights_equal_the_saved_ones() -> None:
    import torch
    from sb3_contrib import MaskablePPO

    model, _ = load_model(SHIPPED)
    ref = MaskablePPO.load(SHIPPED / "model.zip", device="cpu")  # our own file: trusted here, to compare
    a, b = model.policy.state_dict(), ref.policy.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert model.observation_space == ref.observation_space and model.action_space == ref.action_space


def _broken(tmp_path: Path, name: str, zip_replace: dict | None = None, meta_edit=None) -> Path:  # noqa: ANN001
    out = tmp_path / name
    out.mkdir()
    meta = json.loads((SHIPPED / "meta.json").read_text())
    if meta_edit:
        meta_edit(meta)
    (out / "meta.json").write_text(json.dumps(meta))
    _rewrite_zip(SHIPPED / "model.zip", out / "model.zip", zip_replace or {})
    return out


def _algo(meta: dict, algo: str) -> None:
    meta["algo"] = meta["config"]["algo"] = algo


@pytest.mark.parametrize(("name", "zip_replace", "meta_edit", "expect"), [
    ("garbage-weights", {"policy.pth": b"not a torch file"}, None, "weights do not load"),
    ("no-weights", {"policy.pth": None}, None, "no policy.pth"),
    ("no-data", {"data": None}, None, None),  # data is never read: the weights alone load
    ("other-algo", None, lambda m: _algo(m, "ppo"), "weights do not load into the ppo network"),
    ("algo-disagrees", None, lambda m: m.update(algo="a2c"), "'algo' is 'a2c' but config.algo"),
    ("env-kwargs-list", None, lambda m: m.update(env_kwargs=[1, 2]), "'env_kwargs' must be a JSON object"),
    ("unknown-setting", None, lambda m: m["config"].update(warp=9), "unknown training settings in 'config': warp"),
    ("no-config", None, lambda m: m.pop("config"), "no training configuration"),
])
def test_broken_model_folders_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture, name: str,
                                           zip_replace: dict | None, meta_edit, expect: str | None) -> None:  # noqa: ANN001
    folder = _broken(tmp_path, name, zip_replace, meta_edit)
    rc = main(["run", "--scenario", "tiny", "--policy", f"rl:{folder}"])
    err = capsys.readouterr().err
    if expect is None:
        assert rc == 0, err
        return
    assert rc == 2 and expect in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "weights_only=False" not in err
