"""Decisions of the reference policies on hand-built cases, and every policy on every paper scenario.

Hand-built cases use the test catalog of conftest.py: model ``a`` takes 0.16 s/iteration on a ``fast`` GPU
(0.32 s on ``slow``), 4.2 GB at batch 32; model ``big`` is (0.01 + 0.005 b) s / speed per micro-step and needs
2 + 0.5 b GB, so beside an ``a`` worker (4.2 GB) on an 8 GB ``slow`` GPU only sub-batches b <= 3 fit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from gpucluster_env.baselines.castor import Castor
from gpucluster_env.baselines.castor_oracle import CastorOracle
from gpucluster_env.baselines.parts.castor_pairs import best_sub_batch, theorem1
from gpucluster_env.baselines.sjf_ffs import SJFFFS
from gpucluster_env.baselines.tiresias import Tiresias

from gpucluster_env.engine import Colocate, Place, Preempt, Wait
from gpucluster_env.engine.simulator import RUNNING
from gpucluster_env.policy import make_policy, policy_names, registered_policies, run_episode

ALL = ["fifo", "sjf", "ssf", "yarn-cs", "tiresias", "srsf", "sjf-ffs", "castor", "castor-oracle"]


class StubPredictor:
    """Predicts the same ratio for every pair."""

    def __init__(self, xi: float) -> None:
        self.xi = xi
        self.calls = 0

    def predict_pair(self, model_a: Any, model_b: Any, gpu_type: str) -> tuple[float, float]:
        self.calls += 1
        return self.xi, self.xi


class EngEnv:
    """The minimal env surface white-box policies read: ``env.unwrapped.engine``."""

    def __init__(self, eng: Any) -> None:
        self.engine = eng
        self.unwrapped = self


def check_invariants(eng: Any) -> None:
    sj = eng.slot_job
    assert ((sj[:, 1] < 0) | (sj[:, 0] >= 0)).all(), "slot 1 used while slot 0 is empty"
    assert (sj[:, 0] != sj[:, 1])[sj[:, 1] >= 0].all(), "a job twice on one GPU"
    fp = np.where(sj >= 0, eng.footprint[np.maximum(sj, 0)], 0.0).sum(axis=1)
    assert (fp <= eng.type_mem[eng.gpu_type] + 1e-6).all(), "GPU memory exceeded"
    for j in eng.running_jobs():  # whole gangs: one per copy of a forked (HadarE) job
        held = len(eng.gpus_of(int(j)))
        assert held >= eng.req_gpus[j] and held % eng.req_gpus[j] == 0, "gang size broken"
    assert (eng.queue_s >= -1e-9).all()


def drive(eng: Any, policy: Any, max_steps: int = 100_000) -> list[tuple[float, Any]]:
    """Play an episode on a bare engine (a policy's list of actions applied in turn); return the non-wait
    actions with their times."""
    env = EngEnv(eng)
    policy.reset(env)
    eng.advance()
    acts: list[tuple[float, Any]] = []
    for _ in range(max_steps):
        if eng.done:
            return acts
        out = policy.act(None, env)
        for a in out if isinstance(out, list) else [out]:
            if not isinstance(a, Wait):
                acts.append((eng.now, a))
            eng.apply(a)
            check_invariants(eng)
    raise AssertionError("episode did not finish")


def play_env(env: Any, policy: Any, after_step: Callable[[], None] | None = None,
             max_steps: int = 200_000) -> dict:
    """Play an episode of a reset ``GPUClusterEnv`` (a policy's list of actions applied in turn), checking the
    engine's invariants, and ``after_step`` when given, after every step; return the last step's info."""
    policy.reset(env)
    info: dict = {}
    for _ in range(max_steps):
        out = policy.act(None, env)
        for a in out if isinstance(out, list) else [out]:
            _, _, term, trunc, info = env.step(a)
            check_invariants(env.engine)
            if after_step is not None:
                after_step()
            if term or trunc:
                assert not trunc, "episode truncated"
                return info
    raise AssertionError("episode did not finish")


# ---------------------------------------------------------------- Theorem 1 and Algorithm 2 (pure)
def test_theorem1_shares_when_interference_small() -> None:
    # A: 100 it left at 1 s (shared 1.2 s); B: 50 it at 1 s (shared 1.2 s).
    share, shared, seq = theorem1(1.0, 1.2, 100.0, 1.0, 1.2, 50.0)
    # B first: T_B = 60; T_A = 60 + (100 - 50) = 110 -> 85.  Sequential: (100 + 150) / 2 = 125.
    assert share and shared == pytest.approx(85.0) and seq == pytest.approx(125.0)


def test_theorem1_refuses_when_interference_large() -> None:
    # xi = 2: T_B = 100, T_A = 100 + (100 - 50) = 150 -> 125 = sequential 125: tie goes to sequential.
    share, shared, seq = theorem1(1.0, 2.0, 100.0, 1.0, 2.0, 50.0)
    assert not share and shared == pytest.approx(125.0) and seq == pytest.approx(125.0)
    share, shared, seq = theorem1(1.0, 2.5, 100.0, 1.0, 2.5, 50.0)
    assert not share and shared > seq


def test_theorem1_matches_closed_form_condition() -> None:
    # Case 2 of the proof (A finishes first): sharing wins iff 2 xi_B + xi_A - 2 xi_A xi_B > 0.
    for xa, xb in [(1.1, 1.1), (1.3, 1.4), (1.6, 1.6), (2.0, 1.2), (1.2, 2.0)]:
        share, _, _ = theorem1(1.0, xa, 10.0, 1.0, xb, 1000.0)
        assert share == (2 * xb + xa - 2 * xa * xb > 0)


def test_algorithm2_keeps_best_and_ties_to_smaller_sub_batch() -> None:
    # s = 1 is slow when shared, s = 2 is fastest, s = 4 no better than s = 2 (tie -> smaller sub-batch).
    plan = best_sub_batch(1.0, 1.2, 100.0, 1.0, [(1, 3.0), (2, 1.2), (4, 1.2)], 50.0)
    assert plan is not None and plan.share and plan.accumulation == 4
    plan = best_sub_batch(1.0, 1.2, 100.0, 1.0, [(1, 3.0), (2, 1.2), (4, 1.3)], 50.0)
    assert plan.accumulation == 2 and plan.t == pytest.approx(85.0)
    assert best_sub_batch(1.0, 1.2, 100.0, 1.0, [], 50.0) is None


# ---------------------------------------------------------------- Castor on an engine
def one_gpu_pair(build: Any, xi: float, model_b: str = "a", gpu: str = "fast", iters_b: float = 500.0) -> Any:
    """One GPU; job 0 (model a, 1000 iterations) starts at t = 0, job 1 arrives at t = 1."""
    rows = [{"iterations": 1000.0}, {"submit_s": 1.0, "model": model_b, "iterations": iters_b}]
    return build([(gpu, 1, 1)], rows, xi=xi)


def test_castor_accepts_pair_where_sharing_wins(build: Any) -> None:
    eng = one_gpu_pair(build, xi=1.2)
    pol = Castor(predictor=StubPredictor(1.2))
    acts = drive(eng, pol)
    assert acts[0] == (0.0, Place(0))
    t, a = acts[1]
    assert t == 1.0 and isinstance(a, Colocate) and (a.job, a.partner, a.gpus) == (1, 0, (0,))
    # model a has alpha = 0: on one GPU every sub-batch gives the same time, and Algorithm 2's "<=" keeps the
    # last (smallest) one, b = 1, s = 32
    assert a.accumulation == 32
    d = pol.decisions[0]
    assert len(pol.decisions) == 1 and d.predicted_pair_jct < d.predicted_seq_jct
    assert eng.metrics()["colocations"] == 1


def test_castor_refuses_pair_where_sequential_wins(build: Any) -> None:
    eng = one_gpu_pair(build, xi=2.5)
    pol = Castor(predictor=StubPredictor(2.5))
    acts = drive(eng, pol)
    assert [a for _, a in acts] == [Place(0), Place(1)]
    assert acts[1][0] == pytest.approx(1000 * 0.16)  # job 1 waits for job 0 to finish
    assert eng.metrics()["colocations"] == 0


def test_castor_uses_predictor_not_truth_and_oracle_uses_truth(build: Any) -> None:
    # Truth: xi = 2.5 (sharing hurts); the predictor says 1.2 (sharing helps).
    stub = StubPredictor(1.2)
    acts = drive(one_gpu_pair(build, xi=2.5), Castor(predictor=stub))
    assert stub.calls > 0 and isinstance(acts[1][1], Colocate)
    acts = drive(one_gpu_pair(build, xi=2.5), CastorOracle(predictor=StubPredictor(1.2)))
    assert all(isinstance(a, Place) for _, a in acts)


def test_castor_picks_algorithm2_sub_batch(build: Any) -> None:
    # Job 1 is 'big' (batch 32) beside an 'a' worker on an 8 GB slow GPU: room 3.8 GB -> sub-batch b <= 3.6,
    # feasible s in {16, 32}. Shared micro-step times: s=16: 16 (0.01 + 0.005 * 2) = 0.32 s x xi;
    # s=32: 32 (0.01 + 0.005) = 0.48 s x xi -> Algorithm 2 keeps s = 16 (b = 2).
    eng = one_gpu_pair(build, xi=1.1, model_b="big", gpu="slow", iters_b=200.0)
    pol = Castor(predictor=StubPredictor(1.1))
    env = EngEnv(eng)
    pol.reset(env)
    eng.advance()
    eng.apply(pol.act(None, env))  # place job 0
    eng.advance()
    assert eng.now == 1.0
    plan = pol.plan_pair(pol.view(env), 1, 0)
    assert plan is not None and plan.share and plan.accumulation == 16
    a = pol.act(None, env)
    assert isinstance(a, Colocate) and a.accumulation == 16
    eng.apply(a)
    assert eng.accum[1] == 16 and eng.status[1] == RUNNING
    check_invariants(eng)


PARTNER_ROWS = [{"iterations": 5000.0}, {"submit_s": 0.5, "iterations": 300.0},
                {"submit_s": 1.0, "iterations": 100.0}]


def test_castor_ranks_partners_by_pair_jct(build: Any) -> None:
    # Two GPUs: job 0 long (5000 it) on GPU 0 from t = 0, job 1 short (300 it) on GPU 1 from t = 0.5. A new
    # job must share; the pair with the short job has the smaller pair JCT, so Castor takes GPU 1.
    eng = build([("fast", 1, 2)], PARTNER_ROWS, xi=1.2)
    pol = Castor(predictor=StubPredictor(1.2))
    acts = drive(eng, pol)
    assert [a for _, a in acts[:2]] == [Place(0), Place(1)]
    assert eng.job_table()["gpus"].tolist()[:2] == [[0], [1]]
    t, a = acts[2]
    assert t == 1.0 and isinstance(a, Colocate) and a.partner == 1 and a.gpus == (1,)


def test_castor_array_pass_matches_pair_by_pair() -> None:
    # At every decision of a loaded run: the one-pass plans of every (pending, partner) pair equal
    # plan_pair's, bit for bit (pairs left out by the prefilter do not share), and the GPUs taken for a pair
    # are the engine's colocation rule's (else the partner's single GPUs).
    from gpucluster_env.env import GPUClusterEnv

    env = GPUClusterEnv("tiny", observation="none", scenario_options={"load": 4.0, "num_jobs": 120})
    env.reset(seed=1)
    class Mixed:  # ratios from 1.05 to 2.4 by model pair, so some pairs share and some do not
        def predict_pair(self, a: Any, b: Any, gpu_type: str) -> tuple[float, float]:
            k = (len(a.name) + 3 * len(b.name)) % 7
            return 1.05 + 0.225 * k, 1.05 + 0.225 * ((k + 3) % 7)

    pol = Castor(predictor=Mixed())
    pol.reset(env)
    checked = shared = 0
    for _ in range(5000):
        view = pol.view(env)
        pol.begin(view)
        jobs = view.pending_jobs().tolist()
        if jobs:
            holders, rows, cols, plans = pol.pair_plans(view, jobs)
            for p in holders:  # the single GPUs kept by partner are the engine's now (Algorithm 1 takes them)
                assert pol._singles[p][1].tolist() == view.single_gpus_of(p).tolist()
            got = {(jobs[r], holders[c]): plans.plan(i) for i, (r, c) in enumerate(zip(rows, cols, strict=True))}
            for j in jobs:
                for p in holders:
                    ref = pol.plan_pair(view, j, p)
                    if (j, p) in got:
                        assert got[j, p] == ref
                    else:
                        assert ref is None or not ref.share
                    singles = view.single_gpus_of(p)
                    gb = view.plan_colocate(j, p)
                    want = singles[: int(view.req_gpus[j])] if gb is None else gb
                    assert pol.colocation_gpus(view, j, p, singles).tolist() == want.tolist()
                    checked += 1
                    shared += ref is not None and ref.share
        _, _, term, trunc, _ = env.step(pol.act(None, env))
        if term or trunc:
            break
    assert term and checked > 1000 and 10 < shared < checked - 100


def test_sjf_ffs_colocates_even_when_interference_hurts(build: Any) -> None:
    acts = drive(one_gpu_pair(build, xi=2.5), SJFFFS())
    assert isinstance(acts[1][1], Colocate) and acts[1][0] == 1.0


def test_sjf_ffs_first_fit_takes_lowest_single_gpu(build: Any) -> None:
    eng = build([("fast", 1, 2)], PARTNER_ROWS, xi=1.2)
    acts = drive(eng, SJFFFS())
    a = acts[2][1]
    assert isinstance(a, Colocate) and a.gpus == (0,)


# ---------------------------------------------------------------- exclusive policies
def test_ssf_orders_by_gpu_service_sjf_by_duration(build: Any) -> None:
    # Blocker holds both GPUs until t = 16. Then: job 1 needs 2 GPUs for 50 it (8 s, 16 GPU-s);
    # job 2 needs 1 GPU for 60 it (9.6 s, 9.6 GPU-s). SJF starts job 1 first, SSF job 2.
    rows = [{"num_gpus": 2, "iterations": 100.0}, {"submit_s": 1.0, "num_gpus": 2, "iterations": 50.0},
            {"submit_s": 1.0, "iterations": 60.0}]
    sjf = drive(build([("fast", 1, 2)], rows), make_policy("sjf"))
    ssf = drive(build([("fast", 1, 2)], rows), make_policy("ssf"))
    assert isinstance(sjf[1][1], Place) and sjf[1][1].job == 1
    assert isinstance(ssf[1][1], Place) and ssf[1][1].job == 2


def test_yarn_cs_backfills_fifo_does_not(build: Any) -> None:
    # Job 0 holds 1 of 2 GPUs; job 1 (2 GPUs) heads the queue; job 2 (1 GPU) could run on the free GPU.
    rows = [{"iterations": 1000.0}, {"submit_s": 1.0, "num_gpus": 2}, {"submit_s": 2.0}]
    fifo = drive(build([("fast", 1, 2)], rows), make_policy("fifo"))
    yarn = drive(build([("fast", 1, 2)], rows), make_policy("yarn-cs"))
    assert fifo[1][0] == pytest.approx(160.0) and fifo[1][1].job == 1
    assert yarn[1][0] == 2.0 and yarn[1][1].job == 2


def test_tiresias_preempts_job_past_queue_threshold(build: Any) -> None:
    # Job 0 runs alone; job 1 arrives at t = 4000 when job 0 has attained 4000 GPU-s > 3600: demoted and
    # preempted.
    rows = [{"iterations": 100_000.0}, {"submit_s": 4000.0, "iterations": 100.0}]
    eng = build([("fast", 1, 1)], rows, restart_s=30.0)
    acts = drive(eng, Tiresias(thresholds=(3600.0,)))
    assert acts[1] == (4000.0, Preempt(0)) and acts[2] == (4000.0, Place(1))
    assert acts[3] == (pytest.approx(4016.0), Place(0))
    # job 0 pays the 30 s restart overhead: 4000 + 16 + 30 + (100000 - 25000) * 0.16
    assert eng.finish_t[0] == pytest.approx(4046.0 + 75_000 * 0.16)


def test_tiresias_default_threshold_is_pollux_16_gpu_hours(build: Any) -> None:
    # Pollux's Tiresias demotes at 3600 x 16 GPU-seconds: job 0 (4000 GPU-s attained at t = 4000) stays in the
    # top queue and keeps its GPU; a 4-GPU job has attained 60000 GPU-s > 57600 by t = 15000: demoted, preempted.
    assert Tiresias().thresholds == (57_600.0,)
    rows = [{"iterations": 100_000.0}, {"submit_s": 4000.0, "iterations": 100.0}]
    acts = drive(build([("fast", 1, 1)], rows, restart_s=30.0), Tiresias())
    assert not any(isinstance(a, Preempt) for _, a in acts)
    rows = [{"iterations": 400_000.0, "num_gpus": 4}, {"submit_s": 15_000.0, "num_gpus": 4, "iterations": 100.0}]
    acts = drive(build([("fast", 1, 4)], rows, restart_s=30.0), Tiresias())
    assert any(t == 15_000.0 and a == Preempt(0) for t, a in acts)


def test_tiresias_time_service_ignores_gpu_count(build: Any) -> None:
    # A 4-GPU job has run 1000 s (4000 GPU-s) when another 4-GPU job arrives for its GPUs, queues split at 3600:
    # by GPU-time (default) it is demoted and preempted; by time run (Tiresias' dlas, the authors' testbed) it
    # has attained 1000 s < 3600, stays in the top queue, and keeps its GPUs.
    rows = [{"iterations": 100_000.0, "num_gpus": 4}, {"submit_s": 1000.0, "num_gpus": 4, "iterations": 100.0}]
    gpu = drive(build([("fast", 1, 4)], rows, restart_s=30.0), Tiresias(thresholds=(3600.0,)))
    assert (1000.0, Preempt(0)) in gpu
    timed = drive(build([("fast", 1, 4)], rows, restart_s=30.0), Tiresias(thresholds=(3600.0,), service="time"))
    assert not any(isinstance(a, Preempt) for _, a in timed)
    assert Tiresias().service == "gpu"
    with pytest.raises(ValueError, match="service"):
        Tiresias(service="gpus")


def test_tiresias_does_not_preempt_within_same_queue(build: Any) -> None:
    rows = [{"iterations": 10_000.0}, {"submit_s": 1000.0, "iterations": 100.0}]
    eng = build([("fast", 1, 1)], rows, restart_s=30.0)
    acts = drive(eng, Tiresias())
    assert not any(isinstance(a, Preempt) for _, a in acts)
    assert eng.metrics()["preemptions"] == 0


def test_tiresias_start_order_keeps_running_jobs_ahead_in_their_queue(build: Any) -> None:
    # Two 8,000 s jobs submitted together on one GPU, queues split at 3,600 GPU-s, a decision point every 600 s.
    # Job 0 runs, is demoted at t = 3600 and job 1 (top queue) takes the GPU; at t = 7200 job 1 is demoted too.
    # By submission (Pollux's order) job 0 is ahead in the low queue and preempts job 1 again; in Tiresias'
    # simulator's order the running job 1 stays ahead and finishes first.
    rows = [{"iterations": 50_000.0}, {"iterations": 50_000.0}]
    by_submit = build([("fast", 1, 1)], rows, restart_s=30.0, round_s=600.0)
    drive(by_submit, Tiresias(thresholds=(3600.0,)))
    by_start = build([("fast", 1, 1)], rows, restart_s=30.0, round_s=600.0)
    acts = drive(by_start, Tiresias(thresholds=(3600.0,), order="start"))
    assert by_submit.metrics()["preemptions"] == 2 and by_start.metrics()["preemptions"] == 1
    assert [a for _, a in acts if isinstance(a, Preempt)] == [Preempt(0)]
    assert by_start.finish_t[1] == pytest.approx(3600.0 + 8000.0)  # its first start: no restart overhead
    assert by_start.finish_t[0] == pytest.approx(by_start.finish_t[1] + 30.0 + 8000.0 - 3600.0)
    assert by_submit.finish_t[0] < by_submit.finish_t[1]
    with pytest.raises(ValueError, match="order"):
        Tiresias(order="arrival")


def test_srsf_preempts_the_most_remaining_service_after_the_quantum(build: Any) -> None:
    # Job 0 (1 GPU, 16,000 s alone) runs; job 1 (100 iterations, 16 s) arrives at t = 300, inside job 0's
    # 600 s quantum: it waits. At t = 600 job 0 may be preempted and has far more service left: preempted, job
    # 1 runs, job 0 restarts when it finishes (paying the 30 s restart overhead).
    from gpucluster_env.baselines.srsf import SRSF

    rows = [{"iterations": 100_000.0}, {"submit_s": 300.0, "iterations": 100.0}]
    eng = build([("fast", 1, 1)], rows, restart_s=30.0, round_s=600.0)
    acts = drive(eng, SRSF())
    assert (300.0, Place(1)) not in acts
    assert acts[1] == (pytest.approx(600.0), Preempt(0)) and acts[2] == (pytest.approx(600.0), Place(1))
    assert acts[3] == (pytest.approx(616.0), Place(0))
    assert eng.finish_t[0] == pytest.approx(616.0 + 30.0 + (100_000 - 600 / 0.16) * 0.16)
    # without a quantum the short job starts on arrival; a job with less service left is never preempted
    acts = drive(build([("fast", 1, 1)], rows, restart_s=30.0), SRSF(min_run_s=0.0))
    assert acts[1] == (300.0, Preempt(0)) and acts[2] == (300.0, Place(1))
    rows = [{"iterations": 1000.0}, {"submit_s": 10.0, "iterations": 100_000.0}]
    acts = drive(build([("fast", 1, 1)], rows), SRSF(min_run_s=0.0))
    assert not any(isinstance(a, Preempt) for _, a in acts)
    with pytest.raises(ValueError, match="min_run_s"):
        SRSF(min_run_s=-1.0)


# ---------------------------------------------------------------- registry and paper scenarios
def test_policies_listed_with_description_and_paper() -> None:
    names = policy_names()
    for n in ALL + ["castor-timeslice"]:
        assert n in names
        cls = registered_policies()[n]
        assert cls.description and "\n" not in cls.description and cls.paper
        assert n == n.lower() and " " not in n


def test_every_policy_completes_tiny_with_invariants() -> None:
    from gpucluster_env.env import GPUClusterEnv

    for name in ALL:
        env = GPUClusterEnv("tiny", observation="none")
        env.reset(seed=3)
        pol = make_policy(name, **({"predictor": StubPredictor(1.3)} if name == "castor" else {}))
        pol.reset(env)
        for _ in range(100_000):
            _, _, term, trunc, info = env.step(pol.act(None, env))
            check_invariants(env.engine)
            if term or trunc:
                break
        assert term and not trunc and info["metrics"]["jobs_done"] == env.engine.n_jobs, name


@pytest.mark.parametrize("scenario", ["castor-philly", "castor-venus", "sjfbsbf-philly"])
def test_every_policy_completes_paper_scenarios(scenario: str) -> None:
    from gpucluster_env.env import GPUClusterEnv

    try:
        GPUClusterEnv(scenario, observation="none").reset(seed=0)
    except Exception as e:  # pragma: no cover - trace source not available on this machine
        pytest.skip(f"{scenario}: {e}")
    for name in ALL:
        env = GPUClusterEnv(scenario, scenario_options={"num_jobs": 80}, observation="none")
        env.reset(seed=1)
        pol = make_policy(name, **({"predictor": StubPredictor(1.3)} if name == "castor" else {}))
        pol.reset(env)
        steps = 0
        while True:
            _, _, term, trunc, info = env.step(pol.act(None, env))
            steps += 1
            if steps % 25 == 0:
                check_invariants(env.engine)
            if term or trunc:
                break
        check_invariants(env.engine)
        m = info["metrics"]
        assert term and not trunc and m["jobs_done"] == m["jobs"], (scenario, name)
        assert m["avg_jct_s"] > 0 and m["avg_queue_s"] >= 0 and m["makespan_s"] > 0
        if name in ("fifo", "sjf", "ssf", "yarn-cs", "tiresias", "srsf"):
            assert m["colocations"] == 0
        if name not in ("tiresias", "srsf"):
            assert m["preemptions"] == 0


def test_runner_builds_the_world_a_policy_declares() -> None:
    """``Policy.env_kwargs`` is honoured by ``run_episode``: castor-timeslice runs on the time-slicing catalog
    by itself; the caller's ``env_kwargs`` still win."""
    from gpucluster_env.baselines.castor_timeslice import TimeSliceInterference

    from gpucluster_env.catalog import default_catalog
    from gpucluster_env.interference import ConstantInterference
    from gpucluster_env.policy import Policy

    assert make_policy("fifo").env_kwargs() == {}
    assert isinstance(make_policy("castor-timeslice").env_kwargs()["catalog"].interference, TimeSliceInterference)
    seen: list[object] = []

    class Probe(Policy):
        name = "probe"

        def env_kwargs(self) -> dict[str, object]:
            return {"catalog": default_catalog().with_interference(ConstantInterference(1.7))}

        def reset(self, env: object) -> None:
            seen.append(env.unwrapped.engine.catalog.interference)  # type: ignore[attr-defined]

        def act(self, observation: object, env: object) -> object:
            from gpucluster_env.baselines.fifo import FIFO

            return FIFO().act(observation, env)

    run_episode("tiny", Probe(), 0)
    assert isinstance(seen[-1], ConstantInterference) and seen[-1].xi == 1.7
    run_episode("tiny", Probe(), 0, env_kwargs={"catalog": default_catalog()})
    assert not isinstance(seen[-1], ConstantInterference)


@pytest.mark.parametrize("order", ["submit", "start"])
def test_tiresias_priority_order_is_the_tuple_sort(order: str) -> None:
    # The one-pass order (queues over arrays, one lexsort) is the sort by (queue, [waiting, first start,]
    # submission, index) at every decision of a run that preempts and promotes.
    class Checked(Tiresias):
        def act(self, observation: Any, env: Any) -> Any:
            view = self.view(env)
            jobs = view.pending_jobs().tolist() + self._running.tolist()
            if order == "start":
                def key(j: int) -> tuple:
                    return (self.queue_of(j), not view.is_running(j), self._first[j], view.submit[j], j)
            else:
                def key(j: int) -> tuple:
                    return (self.queue_of(j), view.submit[j], j)
            self.checked += len(jobs) > 1
            self.queues.update(self.queue_of(j) for j in jobs)
            assert self._by_priority(view, np.array(jobs, dtype=np.int64)).tolist() == sorted(jobs, key=key)
            return super().act(observation, env)

    pol = Checked(thresholds=(600.0, 6000.0), starve_factor=2.0, order=order)
    pol.checked, pol.queues = 0, set()
    run_episode("tiny", pol, 0, scenario_options={"load": 3.0, "num_jobs": 80})
    assert pol.checked > 50 and pol.queues == {0, 1, 2}
