"""The mechanisms Gavel, Hadar and HadarE need: Reallocate (move, change type, resize), restart overhead on every
new allocation, HadarE's per-copy step quotas, copy start-up, DropCopy and MoveCopy; each against a
hand-computed finish time, and every refusal's message.

The test model ``a`` (tests/conftest.py) on one GPU at batch 32, s = 1: t_iter = beta * 32 / speed = 0.32 /
speed, so 0.16 s on a "fast" GPU (6.25 it/s) and 0.32 s on a "slow" one (3.125 it/s).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpucluster_env.engine import (
    ActionError,
    ClusterView,
    Colocate,
    DropCopy,
    Fork,
    MoveCopy,
    Place,
    Preempt,
    Reallocate,
)
from gpucluster_env.jobs import JobTableError
from gpucluster_env.scenario_files import scenario_from_toml
from gpucluster_env.scenarios import get_scenario


def run_until_done(eng, j):
    while eng.status[j] != 3:
        eng.advance()
    return float(eng.finish_t[j])


# ---------------------------------------------------------------- restart overhead on every new allocation
def test_restart_on_allocation_charges_the_first_start(build):
    # 100 iterations at 0.16 s = 16 s; Hadar's rule adds restart_s = 10 s to the first start too: 26 s
    eng = build([("fast", 1, 1)], [{}], restart_s=10.0, restart_on_allocation=True)
    eng.advance()
    eng.apply(Place(0))
    assert run_until_done(eng, 0) == 26.0
    # without the rule the first start is free: 16 s
    eng = build([("fast", 1, 1)], [{}], restart_s=10.0)
    eng.advance()
    eng.apply(Place(0))
    assert run_until_done(eng, 0) == 16.0


def test_restart_after_preemption_is_charged_once_per_start(build):
    # restart_on_allocation: start at 0 pays 10 (active from 10); preempted at round 12 after 2 s of work
    # (12.5 it); restarted at 12, pays 10 again: 87.5 it * 0.16 = 14 s from 22 -> 36
    eng = build([("fast", 1, 1)], [{}], restart_s=10.0, restart_on_allocation=True, round_s=12.0)
    eng.advance()
    eng.apply(Place(0))
    eng.advance()
    assert eng.now == 12.0
    eng.apply(Preempt(0))
    eng.apply(Place(0))
    assert run_until_done(eng, 0) == pytest.approx(36.0, abs=1e-9)


def test_hadar_philly_charges_every_allocation():
    sc = get_scenario("hadar-philly")
    assert sc.config.restart_on_allocation and sc.config.restart_s == 10.0
    assert not get_scenario("castor-philly").config.restart_on_allocation
    assert get_scenario("tiny", restart_on_allocation=True, copy_startup_s=3.0).config.copy_startup_s == 3.0


def test_new_settings_from_a_scenario_file():
    text = ('name = "x"\ncluster = "V100:1x4"\ntrace = "tiny"\nnum_jobs = 3\n\n[engine]\nround_s = 60.0\n'
            'restart_on_allocation = true\ncopy_startup_s = 5.0\n')
    sc = scenario_from_toml(text)
    assert sc.config.restart_on_allocation is True and sc.config.copy_startup_s == 5.0
    with pytest.raises(ValueError, match="copy_startup_s"):
        scenario_from_toml(text.replace("5.0", "-1.0"))


# ---------------------------------------------------------------- Reallocate
def test_reallocate_to_another_type_pays_restart_and_keeps_progress(build):
    # on slow from 0: at the round t = 8, 8 / 0.32 = 25 it done, 75 left; moved to fast with restart_s = 10:
    # active from 18, 75 * 0.16 = 12 s -> finishes at 30
    eng = build([("fast", 1, 1), ("slow", 1, 1)], [{}], restart_s=10.0, round_s=8.0)
    eng.advance()
    eng.apply(Place(0, gpu_type="slow"))
    eng.advance()
    assert eng.now == 8.0 and eng.remaining_now()[0] == 75.0
    eng.apply(Reallocate(0, gpu_type="fast"))
    assert eng.gpus_of(0).tolist() == [0] and eng.busy_gpus == 1 and eng.free_mask()[1]
    assert [r["kind"] for r in eng.log][-1] == "reallocate" and eng.counts["reallocations"] == 1
    assert run_until_done(eng, 0) == 30.0


def test_reallocate_to_an_overlapping_set(build):
    # a 2-GPU job on GPUs 0, 1 of a 4-GPU fast node moves to 1, 2: GPU 1 is kept, 0 freed, 2 taken at once
    eng = build([("fast", 1, 4)], [{"num_gpus": 2}], round_s=5.0)
    eng.advance()
    eng.apply(Place(0, gpus=(0, 1)))
    eng.advance()
    eng.apply(Reallocate(0, gpus=(1, 2)))
    assert sorted(eng.gpus_of(0).tolist()) == [1, 2]
    assert eng.slot_job[:, 0].tolist() == [-1, 0, 0, -1] and eng.held[0] == 2 and eng.busy_gpus == 2


def test_reallocate_beside_another_job_is_a_colocation(build):
    # job 1 moves from GPU 1 onto GPU 0, which job 0 holds: counted and measured as Preempt + Colocate there would be
    def two_alone():
        eng = build([("fast", 1, 2)], [{}, {}], round_s=5.0)
        eng.advance()
        eng.apply(Place(0, gpus=(0,)))
        eng.apply(Place(1, gpus=(1,)))
        eng.advance()
        return eng

    moved, restarted = two_alone(), two_alone()
    moved.apply(Reallocate(1, gpus=(0,)))
    restarted.apply(Preempt(1))
    restarted.apply(Colocate(1, partner=0, gpus=(0,)))
    for eng in (moved, restarted):
        assert eng.slot_job[0].tolist() == [0, 1] and eng.counts["colocations"] == 1 and eng.n_colocated[1] == 1
    assert moved.sharing_benefits == restarted.sharing_benefits and len(moved.sharing_benefits) == 1
    # a move onto free GPUs is no colocation
    alone = two_alone()
    alone.apply(Preempt(0))
    alone.apply(Reallocate(1, gpus=(0,)))
    assert alone.counts["colocations"] == 0 and not alone.sharing_benefits


def test_resize_elastic_job_scales_progress(build):
    # model a elastic 1..2 GPUs; 1 fast GPU until the round at 8: 50 it done, 50 left. On 2 GPUs of one node:
    # t_comm = alpha_comm (1 + log2 2) * 1 node + 2 (2-1)/2 * 0.1 GB / 100 GB/s = 0.004 + 0.001 = 0.005 s;
    # eq. 3 with delta 2: t_iter = sqrt(0.16^2 + 0.005^2); each of its iterations does 2 / 1 global batches,
    # so 50 left take 25 t_iter: finish at 8 + 25 sqrt(0.025625)
    eng = build([("fast", 1, 2)], [{"min_gpus": 1, "max_gpus": 2}], round_s=8.0)
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    eng.advance()
    eng.apply(Reallocate(0, gpus=(0, 1)))
    assert run_until_done(eng, 0) == pytest.approx(8 + 25 * math.sqrt(0.025625), rel=1e-12)


def test_reallocate_refusals(build):
    eng = build([("fast", 1, 2), ("slow", 2, 1)], [{}, {"num_gpus": 2}], round_s=50.0)
    eng.advance()
    with pytest.raises(ActionError, match="job 0 is pending, not running"):
        eng.apply(Reallocate(0))
    eng.apply(Place(0, gpus=(0,)))
    with pytest.raises(ActionError, match=r"runs on exactly 1 GPUs \(not elastic"):
        eng.apply(Reallocate(0, gpus=(0, 1)))
    with pytest.raises(ActionError, match="already runs on those GPUs at accumulation 1"):
        eng.apply(Reallocate(0, gpus=(0,)))
    with pytest.raises(ActionError, match="not every GPU named is a fast"):
        eng.apply(Reallocate(0, gpus=(2,), gpu_type="fast"))
    with pytest.raises(ActionError, match="unknown GPU type 'H100'"):
        eng.apply(Reallocate(0, gpu_type="H100"))
    with pytest.raises(ActionError, match="accumulation must be a power of two"):
        eng.apply(Reallocate(0, gpus=(1,), accumulation=3))
    with pytest.raises(ActionError, match="GPU indices must lie in"):
        eng.apply(Reallocate(0, gpus=(9,)))
    eng.apply(Place(1, gpus=(2, 3)))
    with pytest.raises(ActionError, match=r"no room for job 1's 2 GPUs \(fast\)"):
        eng.apply(Reallocate(1, gpu_type="fast"))  # one fast GPU free beside job 0's
    eng.apply(Reallocate(0, gpus=(1,)))  # an exact set on the same node is fine
    assert eng.gpus_of(0).tolist() == [1]


def test_reallocate_refuses_a_forked_job(build):
    eng = build([("fast", 1, 1), ("slow", 1, 1)], [{}], round_s=50.0)
    eng.advance()
    eng.apply(Place(0))
    eng.apply(Fork(0))
    with pytest.raises(ActionError, match="runs 2 copies .forked.; move one with MoveCopy"):
        eng.apply(Reallocate(0, gpu_type="slow"))


def test_elastic_columns_are_checked_at_load(build):
    with pytest.raises(JobTableError, match="field 'max_gpus'"):
        build([("fast", 1, 2)], [{"num_gpus": 2, "max_gpus": 1}])
    with pytest.raises(JobTableError, match="field 'min_gpus'"):
        build([("fast", 1, 2)], [{"min_gpus": 0}])


# ---------------------------------------------------------------- HadarE copies
def test_quotas_of_two_copies_of_different_speeds(build):
    # 200 it on fast (6.25 it/s) forked at 0 onto slow (3.125 it/s) with a 2 s copy start-up. Quotas by
    # throughput: fast 200 * 6.25 / 9.375 = 133.33, slow 66.67. Fast is done at 133.33 / 6.25 = 21.33 s and
    # idles; slow starts at 2 and is done at 2 + 66.67 / 3.125 = 23.33 s: the job finishes then (progress
    # simply added up, it would finish at 2 + (200 - 12.5) / 9.375 = 22 s)
    eng = build([("fast", 1, 1), ("slow", 1, 1)], [{"iterations": 200.0}, {"submit_s": 10.0}], round_s=100.0,
                copy_startup_s=2.0)
    eng.advance()
    eng.apply(Place(0, gpu_type="fast"))
    eng.apply(Fork(0))
    eng.advance()  # the arrival at 10: fast did 62.5 it, slow 8 * 3.125 = 25 it
    view = ClusterView(eng)
    cs = view.copy_states(0)
    assert [c["gpus"].tolist() for c in cs] == [[0], [1]] and [c["rate"] for c in cs] == [6.25, 3.125]
    assert cs[0]["quota"] == pytest.approx(200 * 2 / 3 - 62.5) and cs[1]["quota"] == pytest.approx(200 / 3 - 25)
    # the job's progress is the sum of its copies'
    done_by_copies = (200 * 2 / 3 - cs[0]["quota"]) + (200 / 3 - cs[1]["quota"])
    assert 200 - eng.remaining_now()[0] == pytest.approx(done_by_copies) == pytest.approx(87.5)
    assert run_until_done(eng, 0) == pytest.approx(2 + (200 / 3) / 3.125, rel=1e-12)


def test_round_boundary_splits_the_steps_again(build):
    # as above but rounds every 10 s with a 1 s consolidation. At 10: fast has done 62.5 (quota left 70.83),
    # slow 25 (41.67); the 112.5 left are split again 75 / 37.5, both done 12 s after the pause -- but the round
    # at 20 comes first: from 11 to 20 they do 56.25 + 28.125, 28.125 left, split 18.75 / 9.375; after the
    # pause to 21 both are done 3 s later: 24
    eng = build([("fast", 1, 1), ("slow", 1, 1)], [{"iterations": 200.0}], round_s=10.0, copy_startup_s=2.0,
                consolidation_s=1.0)
    eng.advance()
    eng.apply(Place(0, gpu_type="fast"))
    eng.apply(Fork(0))
    assert run_until_done(eng, 0) == pytest.approx(24.0, rel=1e-12)


def test_drop_copy(build):
    # 200 it, two copies from 0 (no start-up): 9.375 it/s; at 10 (an arrival) 93.75 done; the slow copy is
    # dropped: 106.25 * 0.16 = 17 s more -> 27
    eng = build([("fast", 1, 1), ("slow", 1, 1)], [{"iterations": 200.0}, {"submit_s": 10.0}], round_s=100.0)
    eng.advance()
    eng.apply(Place(0, gpu_type="fast"))
    eng.apply(Fork(0))
    eng.advance()
    eng.apply(DropCopy(0, 1))
    assert eng.gpus_of(0).tolist() == [0] and eng.free_mask()[1] and 0 not in eng.state.forked_set
    assert run_until_done(eng, 0) == pytest.approx(27.0, rel=1e-12)


def test_move_copy_pays_startup(build):
    # fork at 0 onto slow node 1 (ready at 2); at 10: fast did 62.5, slow 25, 112.5 left; the slow copy
    # moves to slow node 2 (ready at 12) and 112.5 is split 75 / 37.5: fast done at 10 + 12 = 22, the moved
    # copy at 12 + 37.5 / 3.125 = 24
    eng = build([("fast", 1, 1), ("slow", 2, 1)], [{"iterations": 200.0}, {"submit_s": 10.0}], round_s=100.0,
                copy_startup_s=2.0)
    eng.advance()
    eng.apply(Place(0, gpu_type="fast"))
    eng.apply(Fork(0, gpus=(1,)))
    eng.advance()
    eng.apply(MoveCopy(0, 1, (2,)))
    assert sorted(eng.gpus_of(0).tolist()) == [0, 2] and eng.free_mask()[1]
    assert eng.log.records[-1][1] == "move_copy" and eng.log.records[-1][3] == {"gpus": [2], "from": [1]}
    assert run_until_done(eng, 0) == pytest.approx(24.0, rel=1e-12)


def test_copy_refusals(build):
    eng = build([("fast", 1, 2), ("slow", 2, 1)], [{}], round_s=100.0)
    eng.advance()
    eng.apply(Place(0, gpu_type="fast"))
    with pytest.raises(ActionError, match="runs one copy .not forked.; use Preempt or Reallocate"):
        eng.apply(DropCopy(0, 0))
    eng.apply(Fork(0, gpus=(2,)))
    with pytest.raises(ActionError, match=r"no copy 2 of job 0 \(it runs copies 0 to 1\)"):
        eng.apply(DropCopy(0, 2))
    with pytest.raises(ActionError, match="a copy moves to free GPUs"):
        eng.apply(MoveCopy(0, 1, (0,)))
    with pytest.raises(ActionError, match="nodes the job's other copies do not use"):
        eng.apply(MoveCopy(0, 1, (1,)))
    with pytest.raises(ActionError, match="already runs on those GPUs"):
        eng.apply(MoveCopy(0, 1, (2,)))
    with pytest.raises(ActionError, match="runs on 1 GPUs, got 2"):
        eng.apply(MoveCopy(0, 1, (2, 3)))


def test_view_exposes_moves(build):
    eng = build([("fast", 1, 2), ("slow", 1, 1)], [{"min_gpus": 1, "max_gpus": 2}, {}], round_s=100.0)
    eng.advance()
    view = ClusterView(eng)
    assert view.size_range(0) == (1, 2) and view.is_elastic(0) and not view.is_elastic(1)
    assert not view.can_reallocate(0)
    eng.apply(Place(0, gpus=(0,)))
    assert view.can_reallocate(0) and view.plan_reallocate(0, "slow").tolist() == [2]
    assert view.plan_reallocate(0, n=2).tolist() == [0, 1]
    eng.apply(Fork(0))
    assert not view.can_reallocate(0)
    assert [g.tolist() for g in view.copies_of(0)] == [[0], [2]]  # a copy goes on another node


def test_typed_moves_through_the_env_and_its_rules():
    from gpucluster_env.env.cluster_env import GPUClusterEnv

    env = GPUClusterEnv("hadare-aws", invalid_action="raise")
    env.reset(seed=0)
    eng = env.engine
    j = int(eng.pending_jobs()[0])
    env.step(Place(j, gpu_type="V100"))
    env.step(Fork(j))
    _, _, _, _, info = env.step(DropCopy(j, 1))
    assert "rejected" not in info["action"] and len(eng.copies[j]) == 1
    free = [int(g) for g in np.flatnonzero(eng.free_mask())]
    _, _, _, _, info = env.step(Reallocate(j, gpus=(free[0],)))
    assert "rejected" not in info["action"]
    assert env.rules.started[j] == env.rules.instant  # counts as its start: no preemption at this instant
