"""Statistical efficiency in the ground truth (``Reallocate``'s ``batch``; ``engine.rates``, ``engine.job_progress``):
a job at the batch its work is stated at progresses exactly as before; at another total batch its progress is its
throughput times Pollux's gain (``catalog.pollux_efficiency.progress_gain``), with the noise scale of each tenth
of training; each refusal is one clear line.

The job model is the test model ``a`` (tests/conftest.py: ``t_comp(b) = 0.01 b / speed``, 1 + 0.1 b GB) named
``cifar10`` so that Pollux's cifar10 noise data apply (validated total batch 128 to 4096); on one "fast" GPU
(speed 2, 16 GB) at per-GPU batch 128 an iteration takes 0.64 s.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import TEST_MODELS, make_catalog, make_jobs

from gpucluster_env.catalog.pollux_efficiency import POLLUX_PGNS, efficiency, progress_gain
from gpucluster_env.engine import ActionError, ClusterEngine, EngineConfig, Place, Preempt, Reallocate
from gpucluster_env.hardware import ClusterSpec


def _engine(rows: list[dict], restart_s: float = 10.0, round_s: float = 8.0) -> ClusterEngine:
    cat = make_catalog()
    cat.models["cifar10"] = replace(TEST_MODELS["a"], name="cifar10", batch_size=128, batch_sizes=(128,))
    rows = [{"model": "cifar10", "batch_size": 128, **r} for r in rows]
    return ClusterEngine(ClusterSpec.from_groups([("fast", 1, 2)]), make_jobs(rows), cat,
                         EngineConfig(restart_s=restart_s, round_s=round_s))


def _run(eng: ClusterEngine, j: int = 0) -> float:
    while eng.status[j] != 3:
        eng.advance()
    return float(eng.finish_t[j])


def test_progress_gain_is_samples_times_the_efficiency_ratio():
    assert progress_gain("cifar10", 256, 256, 0.5) == 1.0
    assert progress_gain("a", 64, 32, 0.5) == 2.0  # no noise data: samples only
    phi = POLLUX_PGNS["cifar10"][3]  # 30-40% done
    assert progress_gain("cifar10", 512, 128, 0.35) == pytest.approx(4 * (phi + 128) / (phi + 512), rel=1e-15)
    assert progress_gain("cifar10", 512, 128, 0.35) == pytest.approx(
        4 * float(efficiency(512, 128, phi)), rel=1e-15)


def test_a_job_at_its_stated_batch_progresses_as_before():
    # 100 iterations x 0.64 s, the same on one GPU as model a's plain path, whatever its name
    eng = _engine([{}])
    eng.advance()
    eng.apply(Place(0))
    assert _run(eng) == 64.0


def test_rebatching_in_place_charges_the_gain_part_by_part_without_a_restart():
    # 8 s at batch 128: 12.5 it done. Then batch 256 on the same GPU: 26.6 GB does not fit 16 GB, so
    # accumulation 2 (13.8 GB), 2 x 0.64 = 1.28 s per iteration, no restart (same GPUs). Each iteration makes
    # progress_gain(256 vs 128) stated iterations, the noise scale of each tenth of training in turn.
    eng = _engine([{}])
    eng.advance()
    eng.apply(Place(0))
    eng.advance()
    assert eng.now == 8.0
    eng.apply(Reallocate(0, gpus=(0,), batch=256))
    assert eng.accum[0] == 2 and eng.counts["reallocations"] == 0 and eng.active_from[0] <= 8.0
    expect, done = 8.0, 12.5
    for k in range(1, 10):
        end = 10.0 * (k + 1)
        gain = 2 * (POLLUX_PGNS["cifar10"][k] + 128) / (POLLUX_PGNS["cifar10"][k] + 256)
        expect += (end - done) * 1.28 / gain
        done = end
    assert _run(eng) == pytest.approx(expect, rel=1e-12)
    assert [r for r in eng.log if r["kind"] == "reallocate"][0]["batch"] == 256


def test_a_resized_job_of_a_model_with_noise_data_pays_its_efficiency():
    # elastic 1..2 GPUs at 128 per GPU: on 2 GPUs the total batch is 256, so the same gain applies; moving
    # pays the restart (10 s)
    eng = _engine([{"min_gpus": 1, "max_gpus": 2}])
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    eng.advance()
    eng.apply(Reallocate(0, gpus=(0, 1)))
    t_iter = eng.iter_time_for(0, eng.gpus_of(0), 1)
    rate0 = 2 * (POLLUX_PGNS["cifar10"][1] + 128) / (POLLUX_PGNS["cifar10"][1] + 256) / t_iter
    assert eng.rate[0] == pytest.approx(rate0, rel=1e-15) and eng.active_from[0] == 18.0


def test_preemption_returns_the_job_to_its_stated_batch():
    eng = _engine([{}])
    eng.advance()
    eng.apply(Place(0))
    eng.advance()
    eng.apply(Reallocate(0, gpus=(0,), batch=200))
    assert eng.state.batch_l[0] == 200
    eng.apply(Preempt(0))
    assert eng.state.batch_l[0] == 128


def test_a_batch_is_episode_state_a_clone_and_a_reset_do_not_share():
    # the batch now is dynamic state: a clone re-batching leaves the original alone, and an episode after a
    # reset starts every job at its stated batch again (the re-batched job finished without a preemption)
    eng = _engine([{}])
    eng.advance()
    eng.apply(Place(0))
    eng.advance()
    twin = eng.clone()
    twin.apply(Reallocate(0, gpus=(0,), batch=256))
    assert eng.state.batch_l[0] == 128 and twin.state.batch_l[0] == 256
    assert _run(eng) == 64.0
    _run(twin)
    twin.reset()
    twin.advance()
    twin.apply(Place(0))
    assert twin.state.batch_l[0] == 128 and _run(twin) == 64.0


@pytest.mark.parametrize(("batch", "model", "message"), [
    (0, "cifar10", "batch must be a positive integer (per-GPU samples), got 0"),
    ("64", "cifar10", "batch must be a positive integer (per-GPU samples), got '64'"),
    (8192, "cifar10", "total batch 1 x 8192 = 8192 is outside cifar10's validated range [128, 4096]"),
    (64, "cifar10", "total batch 1 x 64 = 64 is outside cifar10's validated range [128, 4096]"),
    (64, "a", "job 0's model a has no statistical-efficiency data (no validated batch range)"),
    (128, "cifar10", "job 0 already runs on those GPUs at accumulation 1 and batch 128"),
])
def test_batch_refusals_are_one_line(batch, model, message):
    eng = _engine([{}]) if model == "cifar10" else _engine([{"model": "a", "batch_size": 32}])
    eng.advance()
    eng.apply(Place(0))
    with pytest.raises(ActionError) as e:
        eng.apply(Reallocate(0, gpus=(0,), batch=batch))
    assert message in str(e.value) and "\n" not in str(e.value)
