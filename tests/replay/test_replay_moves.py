"""Records of episodes with the moves of running jobs (Reallocate, DropCopy, MoveCopy): the typed actions round
trip through JSON, the record verifies by replay, and the cluster rebuilt from the record alone equals the
engine's after every step."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpucluster_env.engine import DropCopy, MoveCopy, Reallocate
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.replay.record import action_from_json, action_to_json, read_record
from gpucluster_env.replay.recorder import RecordingWrapper
from gpucluster_env.replay.timeline import Timeline
from gpucluster_env.replay.verify import verify_record
from tests.engine.test_engine_properties import move_actions


def test_move_actions_round_trip_through_json():
    for a in (Reallocate(3), Reallocate(2, gpus=(0, 1), accumulation=2), Reallocate(1, gpu_type="K80"),
              DropCopy(4, 1), MoveCopy(5, 0, (6, 7))):
        assert action_from_json(json.loads(json.dumps(action_to_json(a)))) == a
    assert action_to_json(MoveCopy(5, 0, (6, 7))) == {"type": "move_copy", "job": 5, "copy": 0, "gpus": [6, 7]}


@pytest.mark.parametrize("scenario, options", [
    ("tiny", {"round_s": 60.0, "copy_startup_s": 5.0, "restart_s": 3.0, "num_jobs": 20}),
    ("hadar-philly", {"num_jobs": 25, "copy_startup_s": 10.0}),
])
def test_records_with_moves_verify_and_rebuild_the_cluster(scenario, options, tmp_path):
    env = RecordingWrapper(GPUClusterEnv(scenario, scenario_options=options, observation="none"),
                           tmp_path / "ep.jsonl", policy="random-moves")
    env.reset(seed=3)
    eng = env.unwrapped.engine
    rng = np.random.default_rng(2)
    snaps = []
    for _ in range(3000):
        moves = [m for j in eng.running_jobs().tolist() for m in move_actions(eng, j)]
        valid = np.flatnonzero(env.unwrapped.action_masks())
        r = rng.random()
        if moves and r < 0.3:
            a = moves[int(rng.integers(len(moves)))]
        else:
            a = int(rng.choice(valid[1:])) if len(valid) > 1 and r < 0.7 else 0
        _, _, term, trunc, info = env.step(a)
        assert "rejected" not in info["action"], info["action"]
        snaps.append((len(eng.log.records), eng.slot_job.copy(), eng.slot_share.copy()))
        if term or trunc:
            break
    assert term or trunc
    rec = read_record(env.written[0])
    kinds = {e["kind"] for e in rec.events}
    assert {"reallocate", "drop_copy", "move_copy"} <= kinds, kinds
    res = verify_record(rec)
    assert res.ok, res.message
    tl = Timeline(rec)
    for n, slot_job, slot_share in snaps:
        st = tl.state(n)
        for g in range(eng.num_gpus):
            want = {(int(j), int(s)) for j, s in zip(slot_job[g], slot_share[g], strict=True) if j >= 0}
            assert {(j, st.share[(g, j)]) for j in st.slots[g]} == want, (n, g)
