"""Gavel+Gimbal (gimbal §7.2, makespan): Gavel's minimize-makespan rounds, the jobs a round leaves waiting packed
under Gimbal's topology rule, and Gimbal's makespan coordination (eq. 5-6).

Hand-built cases use the test catalog of conftest.py and the worked example of tests/baselines/test_gimbal.py
(job A: model ``a``, job B: model ``b``; free-competition ratios A beside B 3.0, B beside A 1.2).
"""

from __future__ import annotations

from typing import Any

import pytest
from gpucluster_env.baselines.gavel_gimbal import GavelGimbal
from gpucluster_env.baselines.parts.gimbal_rules import packing_sets

from gpucluster_env.engine import Colocate
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import make_policy, registered_policies
from tests.baselines.test_baselines import play_env
from tests.baselines.test_gimbal import WORKED, WORKED_XI, PairPredictor, StubPredictor, play, violations


def test_registered_with_gavels_makespan_policy() -> None:
    pol = make_policy("gavel+gimbal")
    assert isinstance(pol, GavelGimbal) and registered_policies()["gavel+gimbal"] is GavelGimbal
    assert pol.host.objective == "makespan" and pol.gimbal_objective == "makespan"
    assert make_policy("gavel+gimbal", objective="max-min").gimbal_objective == "makespan"
    with pytest.raises(ValueError, match="objective"):
        make_policy("gavel+gimbal", objective="fastest")


def test_finishes_a_gimbal_scenario_with_invariants() -> None:
    # 30 jobs of gimbal-philly on its 16 x 2 A40 with the shipped predictor; every step keeps the engine's
    # invariants and Gimbal's topology rule, jobs are packed and coordinated, every job finishes
    from gpucluster_env.env import GPUClusterEnv

    env = GPUClusterEnv("gimbal-philly", scenario_options={"num_jobs": 30}, observation="none")
    env.reset(seed=1)
    pol = make_policy("gavel+gimbal")
    view = ClusterView(env.engine)
    packed = [0]

    def check() -> None:
        assert violations(view) == []
        packed[0] = max(packed[0], len(packing_sets(view)))

    info = play_env(env, pol, check)
    assert info["metrics"]["jobs_done"] == 30
    assert packed[0] >= 1 and pol.coordinator.stats.searches > 0


def test_the_makespan_lp_is_the_partner_class_lp_by_default() -> None:
    # #44: gavel-packed (makespan) and gavel-packed+gimbal solve the partner-class LP by default, the same one so
    # that Gimbal coordinates the pairs gavel-packed forms; Gavel's own pair LP stays as an option
    assert make_policy("gavel-packed+gimbal").host.pair_lp == "warm"
    assert make_policy("gavel-packed", objective="makespan").pair_lp == "warm"
    assert make_policy("gavel-packed+gimbal", pair_lp="pairs").host.pair_lp == "pairs"
    with pytest.raises(ValueError, match="pair_lp"):
        make_policy("gavel-packed+gimbal", pair_lp="all")


def test_coordination_on_gavels_own_packed_pairs() -> None:
    # gavel-packed+gimbal: Gavel's packed minimize-makespan LP picks the pairs (equal GPU counts, on exactly one
    # gang), Gimbal's makespan coordination squeezes inside them; 30 jobs of gimbal-philly all finish, every
    # step keeps the topology rule, and the pairs it runs are only the LP's (equal sizes)
    from gpucluster_env.engine import Colocate as C
    from gpucluster_env.env import GPUClusterEnv

    pol = make_policy("gavel-packed+gimbal")
    assert pol.host.objective == "makespan" and pol.gimbal_objective == "makespan"
    env = GPUClusterEnv("gimbal-philly", scenario_options={"num_jobs": 30}, observation="none")
    env.reset(seed=1)
    view = ClusterView(env.engine)
    eng = env.engine
    sizes_ok, packs = [True], [0]
    orig = eng.apply

    def apply(a: Any) -> Any:
        if isinstance(a, C):
            packs[0] += 1
            sizes_ok[0] &= bool(eng.req_gpus[a.job] == eng.req_gpus[a.partner])
        return orig(a)

    eng.apply = apply  # type: ignore[method-assign]
    info = play_env(env, pol, lambda: violations(view) == [] or pytest.fail(str(violations(view))))
    assert info["metrics"]["jobs_done"] == 30 and info["metrics"]["colocations"] > 0
    assert packs[0] == info["metrics"]["colocations"] and sizes_ok[0]
    assert pol.coordinator.stats.searches > 0 and info["metrics"]["squeezes"] > 0
    assert pol.episode_stats()["gimbal_searches"] == pol.coordinator.stats.searches


MIXED_SIZES = [{"num_gpus": n, "model": m, "iterations": it, "submit_s": float(i)}
               for i, (n, m, it) in enumerate([(4, "a", 4000), (2, "b", 3000), (1, "a", 2000), (1, "b", 2500),
                                                (2, "a", 1500), (4, "b", 3000), (1, "a", 800), (2, "b", 1200),
                                                (1, "b", 900), (2, "a", 700), (4, "a", 600), (1, "a", 500)])]
"""1-, 2- and 4-GPU jobs of models ``a`` and ``b`` arriving one second apart (4 nodes x 2 GPUs below)."""


def test_coordination_never_violates_topology(build: Any) -> None:
    # 4 nodes x 2 GPUs; 1-, 2- and 4-GPU jobs arriving together, rounds of 120 s so Gavel reshuffles often:
    # the jobs each round leaves waiting are packed (unequal sizes too) and coordinated, never against the rule
    rows = MIXED_SIZES
    eng = build([("fast", 4, 2)], rows, xi=1.4, tick_s=30.0, calibration_overhead_s=3.6)
    sets: list[int] = []

    def check(view: ClusterView) -> None:
        assert violations(view) == []
        sets.append(len(packing_sets(view)))

    pol = make_policy("gavel+gimbal", round_s=120.0, predictor=StubPredictor(1.4))
    acts = play(eng, pol, check=check)
    assert max(sets) >= 1
    unequal = [a for _, a in acts if isinstance(a, Colocate) and eng.req_gpus[a.job] < eng.req_gpus[a.partner]]
    assert unequal  # Gimbal's relaxation: smaller jobs packed on larger ones
    assert pol.coordinator.stats.searches > 0 and eng.counts["squeezes"] > 0
    assert eng.n_done == len(rows)


def test_equal_packing_option_packs_only_equal_sizes(build: Any) -> None:
    # the case above with unequal=False (and both mechanisms off): Gavel with conservative packing, the
    # baseline of gimbal §7.2-7.3. Jobs are still packed, but only beside running jobs of their own size, on
    # exactly their GPUs, and nothing is squeezed.
    rows = MIXED_SIZES
    eng = build([("fast", 4, 2)], rows, xi=1.4, tick_s=30.0, calibration_overhead_s=3.6)
    pol = make_policy("gavel+gimbal", round_s=120.0, predictor=StubPredictor(1.4), unequal=False, lgrr=False,
                      liss=False)
    acts = play(eng, pol, check=lambda view: None)
    packs = [a for _, a in acts if isinstance(a, Colocate)]
    assert packs and all(eng.req_gpus[a.job] == eng.req_gpus[a.partner] for a in packs)
    assert eng.counts["squeezes"] == 0 and eng.n_done == len(rows)


def worked_makespan(build: Any, name: str, **options: Any) -> float:
    """Makespan of the worked example (ten times the iterations: A 1,600 s alone, B 3,000 s) on one GPU, both
    jobs at t = 0, under ``name``."""
    from tests.conftest import PairXi

    rows = [dict(r, iterations=10 * r["iterations"]) for r in WORKED]
    eng = build([("fast", 1, 1)], rows, xi=PairXi(WORKED_XI), tick_s=30.0, calibration_overhead_s=3.6)
    play(eng, make_policy(name, **options))
    assert eng.n_done == 2
    return float(eng.metrics()["makespan_s"])


def test_makespan_moves_the_right_way(build: Any) -> None:
    # Gavel alone time-slices the one GPU in 360 s rounds: A's 1,600 s take 5 rounds (the last 160 s, the GPU
    # idle till the next boundary), B's 3,000 s 9 rounds, B's 120 s last: 13 x 360 + 120 = 4,800 s. Packing the
    # job a round leaves waiting beside the granted one (free competition: together 1/3 + 1/1.2 > 1 GPU's worth
    # of work) shortens it to 4,000 s; the makespan coordination (eq. 5-6: B, the longer job, swelled; A
    # squeezed) shortens it further.
    gavel = worked_makespan(build, "gavel", objective="makespan")
    assert gavel == pytest.approx(4800.0)
    packed = worked_makespan(build, "gavel+gimbal", lgrr=False, liss=False, predictor=PairPredictor())
    full = worked_makespan(build, "gavel+gimbal", predictor=PairPredictor())
    assert packed == pytest.approx(4000.0)
    assert full < packed < gavel
