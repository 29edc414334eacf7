"""``gpucluster replay FILE --verify`` refuses forged records: every part of a record (header fields, the job
table, the cluster, actions, events, rate samples, metrics) is compared with a fresh replay from its header,
and a malformed header is refused naming its field, in one line (issue #25)."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpucluster_env.cli.main import main
from gpucluster_env.policy import run_episode
from gpucluster_env.replay.record import read_record
from gpucluster_env.replay.record_schema import RecordError
from gpucluster_env.replay.recorder import recording
from gpucluster_env.replay.verify import verify_record
from gpucluster_env.versions import package_versions

Lines = list[dict[str, Any]]


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Lines]:
    """Two small episodes: fifo (exclusive GPUs) and the seeded random policy with calibration ticks (MPS
    squeezes, swells, preemptions; scenario options in the header)."""
    d = tmp_path_factory.mktemp("records")
    run_episode("tiny", "fifo", 0, wrap=recording(d / "fifo.jsonl"))
    run_episode("tiny", "random", 0, scenario_options={"num_jobs": 12, "tick_s": 30.0},
                wrap=recording(d / "random.jsonl"))
    return {p: [json.loads(x) for x in (d / f"{p}.jsonl").read_text().splitlines()] for p in ("fifo", "random")}


def _write(lines: Lines, path: Path) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _kind(lines: Lines, kind: str, k: int = 0) -> int:
    """The line index of the ``k``-th line of ``kind``."""
    return [i for i, x in enumerate(lines) if x.get("kind") == kind][k]


def _set(*keys: Any, value: Any) -> Callable[[Lines], None]:
    """An edit setting ``lines[0][keys...]`` (the header) to ``value``."""
    def edit(lines: Lines) -> None:
        d = lines[0]
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return edit


def _metric(name: str, value: Any = None, delete: bool = False) -> Callable[[Lines], None]:
    def edit(lines: Lines) -> None:
        if delete:
            del lines[-1][name]
        else:
            lines[-1][name] = value
    return edit


def _rate(fn: Callable[[Lines, int], None], k: int = 3) -> Callable[[Lines], None]:
    return lambda lines: fn(lines, _kind(lines, "rate", k))


def _move_after_next_act(kind: str) -> Callable[[Lines], None]:
    """Move the first line of ``kind`` that an action follows to just after that action."""
    def edit(lines: Lines) -> None:
        i = next(i for i, x in enumerate(lines) if x.get("kind") == kind and lines[i + 1].get("kind") == "act")
        lines.insert(i + 1, lines.pop(i))
    return edit


def _event(kind: str, **change: Any) -> Callable[[Lines], None]:
    """Change the third event of ``kind`` (``dt``: move it later by that many seconds)."""
    def edit(lines: Lines) -> None:
        e = lines[_kind(lines, kind, 2)]
        e["t"] += change.pop("dt", 0.0)
        e.update(change)
    return edit


# (name, record, edit, what the one-line verdict must contain). Each edit keeps the file readable and each field
# well-typed, so only a replay can tell the forgery.
FORGERIES: list[tuple[str, str, Callable[[Lines], None], str]] = [
    ("policy renamed", "fifo", _set("policy", value="sjf"), "policy 'sjf' of the header chooses"),
    ("policy renamed (random)", "random", _set("policy", value="fifo"), "policy 'fifo' of the header chooses"),
    ("policy option", "random", _set("policy_options", value={"seed": 1}), "policy 'random' of the header chooses"),
    ("scenario renamed", "fifo", _set("scenario", value="castor-philly"),
     'header scenario: record has "castor-philly", replay has "tiny"'),
    ("scenario option added", "fifo", _set("scenario_options", value={"num_jobs": 12}),
     "header scenario_options.num_jobs: the replay has no such field"),
    ("scenario option changed", "random", _set("scenario_options", "tick_s", value=60.0),
     "header scenario_options.tick_s: record has 60.0, replay has 30.0"),
    ("scenario option deleted", "random", lambda x: x[0]["scenario_options"].pop("tick_s"),
     "header scenario_options.tick_s: the record lacks it"),
    ("scenario spec", "fifo", lambda x: x[0].update(scenario_spec=x[0]["scenario_spec"].replace(
        "num_jobs = 40", "num_jobs = 39")), "header "),
    ("seed changed", "fifo", _set("seed", value=1), "header jobs[0]"),
    ("job model", "fifo", _set("jobs", 3, "model", value="imagenet"), "header jobs[3].model: record has"),
    ("job gpus", "fifo", _set("jobs", 5, "gpus", value=2), "header jobs[5].gpus: record has 2, replay has 1"),
    ("job iterations", "random", _set("jobs", 2, "iterations", value=100.0), "header jobs[2].iterations"),
    ("job submit", "fifo", _set("jobs", 4, "submit_s", value=1.0), "header jobs[4].submit_s"),
    ("job id", "fifo", _set("jobs", 4, "id", value="x"), "header jobs[4].id"),
    ("job added", "fifo", lambda x: x[0]["jobs"].append(x[0]["jobs"][0]), "header jobs: record has 41 entries, "
     "replay has 40"),
    ("iterations as int", "fifo", _set("jobs", 0, "iterations", value=6200),
     "header jobs[0].iterations: record has 6200, replay has 6200.0"),
    ("gpu type", "fifo", _set("cluster", 2, 0, value="V100"), 'header cluster[2][0]: record has "V100"'),
    ("node size", "fifo", _set("cluster", 3, 1, value=8), "header cluster[3][1]"),
    ("node added", "fifo", lambda x: x[0]["cluster"].append(["K80", 4]), "header cluster: record has 5 entries"),
    ("share step", "fifo", _set("share_step", value=0.05), "header share_step: record has 0.05, replay has 0.1"),
    ("trace note", "fifo", _set("trace", value="philly"), "header trace"),
    ("generator state with a seed", "fifo", _set("rng_state", value={"bit_generator": "PCG64"}),
     "header rng_state: the replay has no such field"),
    ("env setting", "random", _set("env", "n_pending", value=4), "policy 'random' of the header chooses"),
    ("action changed", "fifo", lambda x: x.__setitem__(_kind(x, "act", 2), {"kind": "act", "a": {"type": "wait"}}),
     'action 2: record has {"type": "wait"}'),
    ("event time", "fifo", _event("start", dt=1.0), "record has start of job"),
    ("event gpus", "random", _event("squeeze", gpus=[15]), "record has squeeze of job"),
    ("event field added", "fifo", _event("finish", x=1), "record has finish of job"),
    ("event moved past an action", "fifo", _move_after_next_act("arrive"), "record has it after event"),
    ("rate sample deleted", "fifo", _rate(lambda x, i: x.pop(i)), "rate sample 3"),
    ("last rate sample deleted", "fifo", _rate(lambda x, i: x.pop(i), -1),
     "rate samples: record has 39, replay has 40"),
    ("all rate samples deleted", "random",
     lambda x: x.__setitem__(slice(None), [y for y in x if y.get("kind") != "rate"]),
     "rate samples: record has 0, replay has"),
    ("rate scaled", "random", _rate(lambda x, i: x[i]["jobs"][0].__setitem__(2, x[i]["jobs"][0][2] * 1.01)),
     "rate sample 3 (t="),
    ("rate xi", "random", _rate(lambda x, i: x[i]["jobs"][0].__setitem__(3, 9.99)),
     ").jobs[0][3]: record has 9.99, replay has"),
    ("rate sample duplicated", "fifo", _rate(lambda x, i: x.insert(i, x[i])), "rate sample"),
    ("rate moved past an action", "fifo", _move_after_next_act("rate"), "record has it after action"),
    ("metric deleted", "fifo", _metric("avg_jct_s", delete=True), "metric avg_jct_s: the record lacks it"),
    ("metric deleted (null)", "fifo", _metric("sharing_benefit", delete=True), "metric sharing_benefit"),
    ("metric changed", "random", _metric("makespan_s", 1.0), "metric makespan_s: record has 1.0"),
    ("metric added", "fifo", _metric("bonus", 1), "metric bonus: the replay has no such field"),
    ("metric type", "fifo", _metric("jobs_done", 40.0), "metric jobs_done: record has 40.0, replay has 40"),
    ("count of actions", "fifo", _metric("actions", 118), "metric actions: record has 118, replay has 119"),
    ("count of events", "random", _metric("events", 1), "metric events: record has 1"),
    ("count of jobs", "fifo", _metric("jobs", 41), "metric jobs: record has 41, replay has 40"),
    ("end", "fifo", _metric("end", "truncated"), 'metric end: record has "truncated", replay has "terminated"'),
]


@pytest.mark.parametrize("name, which, edit, needle", FORGERIES, ids=[f[0] for f in FORGERIES])
def test_a_forged_record_fails_verification_naming_what_differs(records, tmp_path, name, which, edit, needle):
    lines = copy.deepcopy(records[which])
    edit(lines)
    assert json.dumps(lines) != json.dumps(records[which]), name
    res = verify_record(read_record(_write(lines, tmp_path / "forged.jsonl")))
    assert not res.ok, name
    assert needle in res.message and "\n" not in res.message, res.message


@pytest.mark.parametrize("which", ["fifo", "random"])
def test_the_unedited_record_and_version_notes(records, tmp_path, which, capsys):
    """The record as written verifies (a package version is informational); when a record fails, the package
    versions that differ from those that made it are noted on the same line."""
    res = verify_record(read_record(_write(records[which], tmp_path / "ok.jsonl")))
    assert res.ok and "the header, all" in res.message, res.message
    assert records[which][0]["versions"] == package_versions()
    assert set(package_versions()) == {"python", "numpy", "scipy", "xgboost", "numba", "gymnasium", "torch",
                                       "gpucluster-env"}
    lines = copy.deepcopy(records[which])
    lines[0]["versions"]["numpy"] = "0.0.1"
    assert verify_record(read_record(_write(lines, tmp_path / "v.jsonl"))).ok
    lines[-1]["makespan_s"] = 1.0
    res = verify_record(read_record(_write(lines, tmp_path / "v.jsonl")))
    here = package_versions()["numpy"]
    assert not res.ok and res.message.endswith(f"; note: recorded with numpy 0.0.1 (here {here})"), res.message
    assert main(["replay", str(tmp_path / "v.jsonl"), "--verify"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "metric makespan_s" in err


# (name, edit, what the one-line error must contain): headers that cannot be read or replayed are bad input
MALFORMED: list[tuple[str, Callable[[Lines], None], str]] = [
    ("seed float", _set("seed", value=0.9), "header: 'seed': expected an integer >= 0 or null, got 0.9"),
    ("seed string", _set("seed", value="0"), "header: 'seed': expected an integer >= 0 or null, got \"0\""),
    ("seed bool", _set("seed", value=False), "header: 'seed': expected an integer >= 0 or null, got false"),
    ("seed negative", _set("seed", value=-1), "header: 'seed': expected an integer >= 0 or null, got -1"),
    ("seed list", _set("seed", value=[0]), "header: 'seed': expected an integer >= 0 or null, got [0]"),
    ("unknown header key", _set("extra", value=1), "header: unknown key(s) 'extra'; known: format"),
    ("header key missing", lambda x: x[0].pop("policy_options"), "header: lacks 'policy_options'"),
    ("version bool", _set("version", value=True), "record version True is not one this reader knows"),
    ("unknown env key", _set("env", "bogus", value=1), "header 'env': unknown key(s) 'bogus'; known: n_pending"),
    ("env value type", _set("env", "n_pending", value="16"), "header 'env': 'n_pending': expected a positive"),
    ("env value refused", _set("env", "objective", value="speed"), "line 1: header 'env': objective must be one of"),
    ("job field missing", lambda x: x[0]["jobs"][2].pop("model"), "header 'jobs': job 2: lacks 'model'"),
    ("job gpus zero", _set("jobs", 2, "gpus", value=0), "header 'jobs': job 2: 'gpus': expected a positive integer"),
    ("job field unknown", _set("jobs", 2, "deadline", value=5), "header 'jobs': job 2: unknown key(s) 'deadline'"),
    ("cluster junk", _set("cluster", value=[["V100"]]), "header: 'cluster': expected a list of [gpu_type, gpus]"),
    ("share step text", _set("share_step", value="0.1"), "header: 'share_step': expected a number in (0, 1]"),
    ("unknown policy option", _set("policy_options", value={"bogus": 1}),
     "line 1: header 'policy_options': policy 'fifo': unknown option(s) bogus"),
    ("unknown scenario", lambda x: (x[0].pop("scenario_spec"), x[0].update(scenario="nowhere")),
     "line 1: header 'scenario': unknown scenario 'nowhere'"),
    ("unknown scenario option", lambda x: (x[0].pop("scenario_spec"), x[0].update(scenario_options={"bogus": 1})),
     "line 1: header 'scenario_options': "),
    ("scenario spec junk", _set("scenario_spec", value="num_jobs = ["), "line 1: header 'scenario_spec': "),
    ("policy catalog without one", _set("catalog", value="policy"), "line 1: header 'catalog': 'policy' needs"),
    ("generator state junk", lambda x: x[0].update(seed=None, rng_state={"bit_generator": "Nope"}),
     "line 1: header 'rng_state': "),
]


@pytest.mark.parametrize("name, edit, needle", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_header_is_refused_naming_the_field(records, tmp_path, capsys, name, edit, needle):
    lines = copy.deepcopy(records["fifo"])
    edit(lines)
    path = _write(lines, tmp_path / "bad.jsonl")
    with pytest.raises(RecordError) as ei:
        verify_record(read_record(path))
    assert str(ei.value).startswith(f"{path}: line 1: ") and needle in str(ei.value), str(ei.value)
    assert main(["replay", str(path), "--verify"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"gpucluster replay: error: {path}: line 1: "), err


def test_a_corrupt_gzip_record_is_refused_in_one_line(records, tmp_path, capsys):
    data = bytearray(gzip.compress("".join(json.dumps(x) + "\n" for x in records["fifo"]).encode()))
    for i in range(len(data) // 2, len(data) // 2 + 40):
        data[i] ^= 0x5A
    path = tmp_path / "corrupt.jsonl.gz"
    path.write_bytes(bytes(data))
    assert main(["replay", str(path), "--verify"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: corrupt gzip stream" in err, err


def test_records_of_other_action_layouts_and_pending_orders_verify(tmp_path):
    """The environment settings that change what an int action means (``action_layout``, ``pending_order``,
    ``min_run_s``; rl-castor-philly's model runs with ``pending_order="remaining"``) are in the header, so such
    a record replays; saying otherwise in the header fails it."""
    import numpy as np

    from gpucluster_env.env import GPUClusterEnv
    from gpucluster_env.replay.recorder import RecordingWrapper

    env = RecordingWrapper(GPUClusterEnv("tiny", scenario_options={"num_jobs": 12}, action_layout="full",
                                         pending_order="remaining", min_run_s=120.0, observation="none"),
                           tmp_path / "ep.jsonl", policy="rollout")
    env.reset(seed=4)
    rng = np.random.default_rng(2)
    done = False
    while not done:
        valid = np.flatnonzero(env.unwrapped.action_masks())
        a = int(rng.choice(valid[1:])) if len(valid) > 1 and rng.random() < 0.5 else 0
        _, _, term, trunc, _ = env.step(a)
        done = term or trunc
    lines = [json.loads(x) for x in env.written[0].read_text().splitlines()]
    assert {k: lines[0]["env"][k] for k in ("action_layout", "pending_order", "min_run_s")} == {
        "action_layout": "full", "pending_order": "remaining", "min_run_s": 120.0}
    res = verify_record(read_record(env.written[0]))
    assert res.ok and "policy 'rollout' is not a registered one" in res.message, res.message
    for key, other in (("pending_order", "queue"), ("action_layout", "compact")):
        forged = copy.deepcopy(lines)
        forged[0]["env"][key] = other
        res = verify_record(read_record(_write(forged, tmp_path / f"{key}.jsonl")))
        assert not res.ok and "\n" not in res.message, (key, res.message)
    # a record from before these settings were written replays with the environment's defaults
    old = copy.deepcopy(lines)
    for k in ("action_layout", "pending_order", "min_run_s"):
        del old[0]["env"][k]
    assert not verify_record(read_record(_write(old, tmp_path / "old.jsonl"))).ok


def test_a_cli_record_names_the_options_it_ran_with(tmp_path, capsys):
    """``run --option`` changes the scenario: the header's ``scenario_options`` say so (they were ``{}``), and
    the record verifies from the command line."""
    path = tmp_path / "o.jsonl"
    assert main(["run", "--scenario", "tiny", "--option", "num_jobs=6", "--option", "load=2.0", "--policy", "sjf",
                 "--record", str(path), "--json"]) == 0
    assert read_record(path).header["scenario_options"] == {"num_jobs": 6, "load": 2.0}
    capsys.readouterr()
    assert main(["replay", str(path), "--verify"]) == 0
    assert capsys.readouterr().out.startswith(f"{path}: ok: ")


@pytest.mark.parametrize("action, needle", [
    ({"type": "place", "job": "x", "gpus": [0]}, "'job' must be an integer >= 0"),
    ({"type": "place", "job": 0, "gpu_type": 5}, "'gpu_type' must be a GPU type name"),
    ({"type": "place", "job": 0, "gpus": "ab"}, "'gpus' must be a list of GPU indices"),
    ({"type": "place", "job": 0, "accumulation": True}, "'accumulation' must be an integer >= 0"),
])
def test_a_mistyped_action_is_refused_naming_its_line(records, tmp_path, action, needle):
    lines = copy.deepcopy(records["fifo"])
    k = _kind(lines, "act")
    lines[k]["a"] = action
    with pytest.raises(RecordError, match=rf"bad\.jsonl: line {k + 1}: bad place action .*: {needle}"):
        read_record(_write(lines, tmp_path / "bad.jsonl"))


def test_an_action_the_replay_refuses_fails_in_one_line(records, tmp_path):
    """An agent's (unregistered) record whose action names a GPU type the cluster lacks: the replay refuses it
    (it was an internal error)."""
    lines = copy.deepcopy(records["fifo"])
    lines[0]["policy"] = "agent"
    lines[_kind(lines, "act")]["a"] = {"type": "place", "job": 0, "gpu_type": "Z9"}
    res = verify_record(read_record(_write(lines, tmp_path / "a.jsonl")))
    assert not res.ok and "\n" not in res.message
    assert res.message.startswith("action 0 (") or res.message.startswith("event 1:"), res.message


@pytest.mark.parametrize("edit, needle", [
    (lambda x: x[_kind(x, "act")].update(gpus=[0]), r"act line with unknown key\(s\) 'gpus'"),
    (lambda x: x[_kind(x, "rate")].update(zz=1), r"rate line with unknown key\(s\) 'zz'"),
    (lambda x: x[_kind(x, "rate")].update(jobs=[["junk"]]), r"rate sample entry 0 is not \[job, remaining"),
    (lambda x: x[_kind(x, "rate")]["jobs"][0].__setitem__(0, 99), r"rate sample entry 0 is not"),
    (lambda x: x[_kind(x, "rate")]["jobs"][0].__setitem__(2, "fast"), r"rate sample entry 0 is not"),
    (lambda x: x[-1].update(colocations=False), r"metric 'colocations': expected a number or null, got false"),
    (lambda x: x[-1].update(avg_jct_s="x"), r"metric 'avg_jct_s': expected a number or null, got \"x\""),
    (lambda x: x[-1].update(end=5), r"metric 'end': expected 'terminated', 'truncated' or 'wrapper', got 5"),
])
def test_a_malformed_line_is_refused_naming_it(records, tmp_path, capsys, edit, needle):
    """Lines the viewer reads as well as --verify: an unknown key, a junk rate entry or a metric of the wrong
    type is refused when the file is read (``--no-live`` failed on some without naming the file)."""
    lines = copy.deepcopy(records["fifo"])
    edit(lines)
    path = _write(lines, tmp_path / "bad.jsonl")
    with pytest.raises(RecordError, match=rf"^{path}: line \d+: {needle}"):
        read_record(path)
    assert main(["replay", str(path), "--no-live"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_policy_that_cannot_act_in_the_header_s_world_fails_in_one_line(records, tmp_path, monkeypatch):
    """The header's policy raising on the replayed state (rl-castor-philly under a header saying
    ``observation: "none"`` did: an internal error) fails verification naming the action and the policy."""
    from gpucluster_env.policy import registered_policies

    def act(self, observation, env):
        raise IndexError("only integers are valid indices")

    monkeypatch.setattr(registered_policies()["fifo"], "act", act)
    res = verify_record(read_record(_write(records["fifo"], tmp_path / "f.jsonl")))
    assert not res.ok and res.message == ("action 0: policy 'fifo' of the header cannot act in the replay "
                                          "(IndexError: only integers are valid indices)"), res.message


def test_view_options_are_refused_where_no_frame_is_shown(records: dict[str, Lines], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """``--frames``, ``--at``, ``--zoom``, ``--shares`` with ``--verify`` or ``--json`` would be ignored:
    refused by name; ``--frames`` is bounded and a bad ``--at`` names the flag (issue #25's second probe)."""
    f = str(_write(records["fifo"], tmp_path / "r.jsonl"))
    for argv, needle in [(["--verify", "--at", "100"], "--at sets what the view shows; --verify"),
                         (["--verify", "--frames", "3"], "--frames"), (["--json", "--zoom", "V100"], "--json"),
                         (["--verify", "--shares"], "--shares"), (["--no-live", "--frames", "100000000"], "1 to 1000"),
                         (["--no-live", "--at", "5parsecs"], "--at 5parsecs: not a time")]:
        assert main(["replay", f, *argv]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1, err
