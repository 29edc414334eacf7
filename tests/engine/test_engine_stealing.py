"""Sample stealing (Gimbal's LISS) per job: the ``SetStealing`` action, free to switch, memory re-checked for
the larger per-worker batches, initialised from the scenario's setting, and recorded in replay records."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import TEST_GPUS, TEST_MODELS, make_jobs

from gpucluster_env.catalog import Catalog
from gpucluster_env.engine import ActionError, ClusterEngine, Colocate, EngineConfig, Place, SetStealing, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.hardware import ClusterSpec
from gpucluster_env.interference import ConstantInterference
from gpucluster_env.replay.record import action_from_json, action_to_json, read_record
from gpucluster_env.replay.recorder import RecordingWrapper
from gpucluster_env.replay.verify import verify_record
from gpucluster_env.workloads import ModelProfile

REL = 1e-9
DELTA = 1.5  # model b's eq. 3 exponent
COMM = 0.003 * (1 + 1) * 2 + 2 * 1 / 2 * 0.2 / 12.5  # model b on 2 GPUs over 2 nodes (test_engine_model)
PACED = ((0.04 + 0.02 * 16) ** DELTA + COMM**DELTA) ** (1 / DELTA)  # slow worker paces the micro-step
LISS = (0.18**DELTA + COMM**DELTA) ** (1 / DELTA)  # b_fast 25, b_slow 7: (0.04 + 0.5) / 3 = (0.04 + 0.14) / 1


def _mixed(build, **config):
    """Model b on one fast and one slow GPU (two nodes), 100 iterations, placed at 0."""
    eng = build([("fast", 1, 1), ("slow", 1, 1)], [{"model": "b", "num_gpus": 2, "iterations": 100}], **config)
    eng.advance()
    eng.apply(Place(0, gpus=(0, 1)))
    return eng


def test_switch_on_mid_run_at_no_cost(build):
    """Calibration ticks every 10 s (a decision point) and a 5 s calibration pause for share changes, which a
    LISS switch does not pay. Paced until 10 s: 10 / PACED iterations; then LISS: JCT = 10 + (100 - 10 / PACED)
    * LISS."""
    eng = _mixed(build, tick_s=10.0, calibration_overhead_s=5.0)
    assert not eng.stealing[0]
    assert 1 / eng.rate[0] == pytest.approx(PACED, rel=REL)
    eng.advance()
    assert eng.now == pytest.approx(10.0)
    eng.apply(SetStealing(0, True))
    assert eng.stealing[0] and 1 / eng.rate[0] == pytest.approx(LISS, rel=REL)
    while not eng.done:
        eng.advance()
    assert eng.finish_t[0] == pytest.approx(10 + (100 - 10 / PACED) * LISS, rel=REL)


def test_flag_starts_from_the_scenario_and_switches_off(build):
    eng = _mixed(build, sample_stealing=True)
    view = ClusterView(eng)  # what agents read of it (Gimbal keeps its predicted rates by it)
    assert eng.stealing.tolist() == [True] and 1 / eng.rate[0] == pytest.approx(LISS, rel=REL)
    assert view.stealing(0) is True
    eng.apply(SetStealing(0, False))
    assert 1 / eng.rate[0] == pytest.approx(PACED, rel=REL)
    assert view.stealing(0) is False
    eng.reset()
    assert eng.stealing.tolist() == [True]


def test_pending_job_keeps_its_setting_when_it_starts(build):
    eng = build([("fast", 1, 1), ("slow", 1, 1)], [{"model": "b", "num_gpus": 2, "iterations": 100}])
    eng.advance()
    eng.apply(SetStealing(0, True))
    eng.apply(Place(0, gpus=(0, 1)))
    assert 1 / eng.rate[0] == pytest.approx(LISS, rel=REL)


def test_bad_switches_are_action_errors(build):
    eng = build([("fast", 1, 1)], [{"iterations": 10}, {"iterations": 10, "submit_s": 50.0}])
    eng.advance()
    with pytest.raises(ActionError, match=r"job 1 is future, not pending or running"):
        eng.apply(SetStealing(1, True))
    with pytest.raises(ActionError, match=r"no job with index 7"):
        eng.apply(SetStealing(7, True))
    with pytest.raises(ActionError, match=r"on must be True or False"):
        eng.apply(SetStealing(0, "yes"))


def test_liss_batches_that_do_not_fit_are_refused():
    """Model 'w' is b with 0.25 GB per sample: 1 + 0.25 * 16 = 5 GB at its batch of 16. A 'big' tenant holds
    10 GB of the fast GPU (16 GB): 6 GB left, w fits there paced. Under LISS with xi 1.5 on the shared fast
    worker: v_fast = 3 / 1.5 = 2, v_slow = 1; tc = (2 * 0.04 + 0.02 * 16 * 2) / 3 = 0.24; b_fast = (0.24 * 2 -
    0.04) / 0.02 = 22, b_slow = (0.24 - 0.04) / 0.02 = 10 (sum 32). The fast worker then needs 1 + 0.25 * 22 =
    6.5 GB > 6 GB: refused, naming job 1 and GPU 0; nothing changes."""
    w = ModelProfile("w", batch_size=16, batch_sizes=(16,), alpha_s=0.04, beta_s=0.02, grad_mb=200.0,
                     alpha_comm_s=0.003, delta=1.5, mem_base_gb=1.0, mem_per_sample_gb=0.25, gpu_demand=0.6,
                     speed={"fast": 3.0, "slow": 1.0})
    cat = Catalog(gpu_types=dict(TEST_GPUS), models={**TEST_MODELS, "w": w}, interference=ConstantInterference(1.5))
    jobs = make_jobs([{"model": "big", "iterations": 1e4}, {"model": "w", "num_gpus": 2, "iterations": 100}])
    eng = ClusterEngine(ClusterSpec.from_groups([("fast", 1, 1), ("slow", 1, 1)]), jobs, cat, EngineConfig())
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    eng.apply(Colocate(1, 0, gpus=(0, 1)))
    assert eng.footprint.tolist() == pytest.approx([10.0, 5.0])
    c = eng.state.copy_consts[1][0]
    assert eng.rates.liss_micro_batches(1, c).tolist() == pytest.approx([22.0, 10.0], rel=REL)
    rate = eng.rate[1]
    with pytest.raises(ActionError, match=r"job 1's LISS micro-batch of 22.0 samples on GPU 0 needs 6.5 GB, "
                                          r"6.0 GB free there"):
        eng.apply(SetStealing(1, True))
    assert not eng.stealing[1] and eng.rate[1] == rate


def test_set_stealing_records_and_verifies(tmp_path):
    """A white-box episode on 'tiny' (multi-GPU jobs on mixed nodes) that places jobs first-fit and turns LISS
    on for every other started job: the record holds the typed actions and replays to the same events."""
    assert action_from_json(json.loads(json.dumps(action_to_json(SetStealing(3, True))))) == SetStealing(3, True)
    env = RecordingWrapper(GPUClusterEnv("tiny", scenario_options={"num_jobs": 12}), tmp_path / "ep.jsonl",
                           policy="white-box")
    env.reset(seed=2)
    eng = env.unwrapped.engine
    done, tried = False, set()
    while not done:
        action = Wait()
        for j in eng.pending_jobs().tolist():
            if eng.plan_place(j) is not None:
                action = Place(j)
                break
        else:
            run = [j for j in eng.running_jobs().tolist() if j % 2 == 0 and j not in tried]
            if run:
                action = SetStealing(run[0], True)
                tried.add(run[0])
        _, _, term, trunc, _ = env.step(action)
        done = term or trunc
    # a switch whose LISS batches do not fit is refused (counted invalid), the others apply
    assert 0 < np.count_nonzero(eng.stealing) <= len(tried)
    rec = read_record(env.written[0])
    assert sum(isinstance(action_from_json(a), SetStealing) for a in rec.actions) == len(tried)
    res = verify_record(rec)
    assert res.ok, res.message
