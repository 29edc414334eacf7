"""Episode records: every reference policy's record replays to the same events and metrics; corrupt and
truncated files fail naming the line; the recording wrapper for RL rollouts; the cluster state rebuilt from a
record matches the engine's at every step."""

from __future__ import annotations

import gzip
import json
import math

import gymnasium as gym
import numpy as np
import pytest

import gpucluster_env  # noqa: F401  (registers the env ids)
from gpucluster_env.engine import Place, Squeeze, Wait
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.policy import registered_policies, run_episode
from gpucluster_env.replay.record import action_from_json, action_to_json, read_record, write_lines
from gpucluster_env.replay.record_schema import RECORD_VERSION, RecordError
from gpucluster_env.replay.recorder import RecordingWrapper, recording, scenario_options_of
from gpucluster_env.replay.timeline import Timeline
from gpucluster_env.replay.verify import verify_record
from gpucluster_env.scenarios import get_scenario

NUMERIC = ("jobs_done", "avg_jct_s", "makespan_s", "gpu_occupancy", "colocations", "preemptions")


def _same(a, b) -> bool:
    return (a is None and (b is None or (isinstance(b, float) and math.isnan(b)))) or a == b


@pytest.mark.parametrize("policy", [p for p, c in registered_policies().items() if c.applies_to(get_scenario("tiny"))])
def test_record_then_verify_gives_the_same_metrics(policy, tmp_path):
    path = tmp_path / f"{policy}.jsonl"
    result = run_episode("tiny", policy, 3, wrap=recording(path))
    rec = read_record(path)
    assert rec.header["version"] == RECORD_VERSION and rec.header["policy"] == policy
    assert len(rec.actions) == result["steps"] and rec.metrics["actions"] == result["steps"]
    for k in NUMERIC:
        assert _same(rec.metrics[k], result[k]), k
    res = verify_record(rec)
    assert res.ok, res.message
    assert res.events_checked == len(rec.events) == rec.metrics["events"]
    # the record alone (no engine) gives the same end-of-episode metrics
    end = Timeline(rec).metrics(rec.events[-1]["t"])
    assert end["jobs_done"] == result["jobs_done"]
    assert end["avg_jct_s"] == pytest.approx(result["avg_jct_s"], rel=1e-9)
    assert end["gpu_occupancy"] == pytest.approx(result["gpu_occupancy"], rel=1e-6)


def test_verify_names_the_first_mismatching_event(tmp_path):
    path = tmp_path / "ep.jsonl"
    run_episode("tiny", "sjf-ffs", 0, wrap=recording(path))
    lines = path.read_text().splitlines()
    rec = read_record(path)
    # the 10th start event moves by a second: verification fails at exactly that event
    k = [i for i, e in enumerate(rec.events) if e["kind"] == "start"][9]
    target = json.dumps(rec.events[k], separators=(",", ":"))
    bad = rec.events[k] | {"t": rec.events[k]["t"] + 1.0}
    lines[lines.index(target)] = json.dumps(bad, separators=(",", ":"))
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    res = verify_record(read_record(tampered))
    assert not res.ok and res.mismatch_event == k
    assert res.message.startswith(f"event {k}: record has start of job {bad['job']}")


def test_verify_catches_a_changed_action_and_changed_metrics(tmp_path):
    path = tmp_path / "ep.jsonl"
    run_episode("tiny", "fifo", 0, wrap=recording(path))
    text = path.read_text()
    first_place = next(x for x in text.splitlines() if '"kind":"act"' in x and "place" in x)
    swapped = text.replace(first_place, '{"kind":"act","a":{"type":"wait"}}', 1)
    (tmp_path / "a.jsonl").write_text(swapped)
    res = verify_record(read_record(tmp_path / "a.jsonl"))
    # the header's policy is re-run: it would not have waited there
    assert not res.ok and res.message.startswith('action 0: record has {"type": "wait"}, policy \'fifo\'')
    lines = text.splitlines()
    m = json.loads(lines[-1])
    m["avg_jct_s"] += 1.0
    (tmp_path / "m.jsonl").write_text("\n".join([*lines[:-1], json.dumps(m)]) + "\n")
    res = verify_record(read_record(tmp_path / "m.jsonl"))
    assert not res.ok and res.message.startswith("metric avg_jct_s")


def test_corrupt_or_truncated_records_name_the_line(tmp_path):
    path = tmp_path / "ep.jsonl"
    run_episode("tiny", "fifo", 0, wrap=recording(path))
    lines = path.read_text().splitlines()
    n = len(lines)
    cases = {
        "cut_mid_line": ("\n".join(lines[:40]) + "\n" + lines[40][:15], "line 41: not valid JSON"),
        "no_metrics": ("\n".join(lines[:-1]) + "\n", f"line {n - 1}: file ends without its metrics line"),
        "garbage": ("\n".join([*lines[:4], "{oops", *lines[5:]]) + "\n", "line 5: not valid JSON"),
        "not_a_record": ('{"format": "other"}\n', "line 1: not a gpucluster-replay record"),
        "empty": ("", "line 1: empty file"),
        "bad_event": ("\n".join([*lines[:6], '{"t": 1.0, "kind": "start", "job": 0}', *lines[6:]]) + "\n",
                      "line 7: start event without its 'gpus'"),
        "back_in_time": ("\n".join([*lines[:-1], '{"t": -5.0, "kind": "arrive", "job": 0}', lines[-1]]) + "\n",
                         f"line {n}: event time -5.0 goes back in time"),
        "after_end": ("\n".join([*lines, lines[1]]) + "\n", f"line {n + 1}: content after the final metrics"),
        "bad_version": (lines[0].replace('"version":2', '"version":99') + "\n", "line 1: record version 99"),
    }
    for name, (text, needle) in cases.items():
        p = tmp_path / f"{name}.jsonl"
        p.write_text(text)
        with pytest.raises(RecordError) as ei:
            read_record(p)
        assert str(ei.value) == f"{p}: {needle}" or str(ei.value).startswith(f"{p}: {needle}"), (name, ei.value)
    gz = tmp_path / "cut.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes())[:-30])
    with pytest.raises(RecordError, match=r"cut\.jsonl\.gz: corrupt gzip stream"):
        read_record(gz)


def test_gzip_records_and_atomic_writes(tmp_path):
    path = tmp_path / "sub" / "ep.jsonl.gz"
    run_episode("tiny", "castor", 1, wrap=recording(path))
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert verify_record(read_record(path)).ok
    assert [p.name for p in path.parent.iterdir()] == ["ep.jsonl.gz"]  # no temporary left behind
    # a write that fails half way leaves the previous file untouched and no temporary
    before = path.read_bytes()
    with pytest.raises(ValueError):
        write_lines(path, [{"format": "x"}, {"bad": float("nan")}])
    assert path.read_bytes() == before and len(list(path.parent.iterdir())) == 1


def test_typed_actions_round_trip_through_json():
    for a in (Wait(), Place(3, gpus=(0, 1)), Place(2, gpu_type="V100", accumulation=2), Squeeze(4, gpus=(7,)), 5):
        assert action_from_json(json.loads(json.dumps(action_to_json(a)))) == a
    with pytest.raises(ValueError, match="not an action"):
        action_from_json({"type": "teleport"})


def _random_rollout(env, rng, seed) -> None:
    env.reset(seed=seed)
    done = False
    while not done:
        valid = np.flatnonzero(env.unwrapped.action_masks())
        _, _, term, trunc, _ = env.step(rng.choice(valid))  # numpy ints, as RL libraries give
        done = term or trunc


def test_recording_wrapper_for_rl_rollouts(tmp_path):
    """Episodes reset with a seed, then without one (as vector envs do after the first), then one cut short by
    gymnasium's TimeLimit: all three records verify."""
    env = RecordingWrapper(gym.make("gpucluster_env/Tiny-v1", scenario_options={"num_jobs": 10}),
                           tmp_path / "ep{episode}.jsonl", policy="rl-rollout")
    rng = np.random.default_rng(0)
    _random_rollout(env, rng, 7)
    _random_rollout(env, rng, None)
    assert [p.name for p in env.written] == ["ep0.jsonl", "ep1.jsonl"]
    recs = [read_record(p) for p in env.written]
    assert recs[0].header["seed"] == 7 and recs[1].header["seed"] is None and recs[1].header["rng_state"]
    assert recs[0].header["jobs"] != recs[1].header["jobs"]
    for rec in recs:
        assert rec.header["scenario_options"] == {"num_jobs": 10} and rec.metrics["end"] == "terminated"
        assert rec.header["env"]["observation"] == "dict" and all(isinstance(a, int) for a in rec.actions)
        res = verify_record(rec)
        assert res.ok and "policy 'rl-rollout' is not a registered one" in res.message, res.message
    short = RecordingWrapper(gym.make("gpucluster_env/Tiny-v1", max_episode_steps=25), tmp_path / "short.jsonl")
    _random_rollout(short, rng, 1)
    rec = read_record(short.written[0])
    assert rec.metrics["end"] == "wrapper" and len(rec.actions) == 25 and rec.metrics["jobs_done"] < 40
    assert verify_record(rec).ok


def test_scenario_options_are_read_off_the_scenario():
    sc = get_scenario("castor-philly", num_jobs=30, load=2.0, restart_s=5.0)
    assert scenario_options_of(sc) == {"num_jobs": 30, "load": 2.0, "restart_s": 5.0}


# calibration ticks on, so squeeze and swell are allowed (the env permits share changes only where a scenario
# calibrates)
@pytest.mark.parametrize("scenario, options", [("tiny", {"tick_s": 30.0}),
                                               ("hadar-philly", {"num_jobs": 30, "tick_s": 120.0})])
def test_state_from_the_record_matches_the_engine_at_every_step(scenario, options, tmp_path):
    """Random masked actions (every kind: colocations, squeezes, swells, preemptions, forks where rounds exist);
    after each step the GPU slots and MPS shares rebuilt from the record equal the engine's."""
    env = RecordingWrapper(GPUClusterEnv(scenario, scenario_options=options, observation="none"),
                           tmp_path / "ep.jsonl", policy="random-rollout")
    env.reset(seed=5)
    eng = env.unwrapped.engine
    rng = np.random.default_rng(1)
    snaps = []
    for _ in range(4000):
        mask = env.unwrapped.action_masks()
        valid = np.flatnonzero(mask)
        # favour non-wait actions so the episode visits sharing states
        a = int(rng.choice(valid[1:])) if len(valid) > 1 and rng.random() < 0.6 else 0
        _, _, term, trunc, _ = env.step(a)
        snaps.append((len(eng.log.records), eng.slot_job.copy(), eng.slot_share.copy()))
        if term or trunc:
            break
    assert term or trunc
    tl = Timeline(read_record(env.written[0]))
    for n, slot_job, slot_share in snaps[:: max(1, len(snaps) // 300)]:
        st = tl.state(n)
        for g in range(eng.num_gpus):
            want = {(int(j), int(s)) for j, s in zip(slot_job[g], slot_share[g], strict=True) if j >= 0}
            got = {(j, st.share[(g, j)]) for j in st.slots[g]}
            assert got == want, (n, g)
    kinds = {e["kind"] for e in tl.events}
    assert {"start", "finish", "preempt", "squeeze", "swell"} <= kinds, kinds
    assert any(len(s) == 2 for s in tl.state(len(tl.events) // 2).slots) or tl.record.metrics["colocations"] > 0
    if scenario == "hadar-philly":
        assert "fork" in kinds


def test_events_that_contradict_each_other_name_their_line(tmp_path):
    """A record whose lines parse but whose events cannot happen in that order (a job finishing twice, a third
    job on a GPU) is refused when its state is rebuilt, naming the line."""
    path = tmp_path / "ep.jsonl"
    run_episode("tiny", "fifo", 0, wrap=recording(path))
    lines = path.read_text().splitlines()
    fin = next(i for i, x in enumerate(lines) if '"kind":"finish"' in x)
    twice = tmp_path / "twice.jsonl"
    twice.write_text("\n".join([*lines[:fin + 1], lines[fin], *lines[fin + 1:]]) + "\n")
    with pytest.raises(RecordError, match=rf"twice\.jsonl: line {fin + 2}: finish of job \d+, which is done"):
        Timeline(read_record(twice))
    k = next(i for i, x in enumerate(lines) if '"kind":"start"' in x)
    start = json.loads(lines[k])
    fork = {"t": start["t"], "kind": "fork", "job": start["job"], "gpus": start["gpus"]}
    same_gpus = tmp_path / "same.jsonl"
    same_gpus.write_text("\n".join([*lines[:k + 1], json.dumps(fork), *lines[k + 1:]]) + "\n")
    with pytest.raises(RecordError, match=rf"same\.jsonl: line {k + 2}: fork of job \d+ on GPU \d+, which cannot"):
        Timeline(read_record(same_gpus))
    outside = tmp_path / "outside.jsonl"
    outside.write_text("\n".join([*lines[:k + 1], json.dumps(fork | {"gpus": [99]}), *lines[k + 1:]]) + "\n")
    with pytest.raises(RecordError, match=rf"outside\.jsonl: line {k + 2}: fork event names a GPU outside"):
        read_record(outside)
