"""Lucid, Gandiva and Gimbal's coordination (gimbal §5, Algorithm 1, eq. 1-6) on hand-built cases.

Hand-built cases use the test catalog of conftest.py (model ``a``: 0.16 s/iteration on a ``fast`` GPU, 4.2 GB
at batch 32, GPU demand 0.9; model ``b``: demand 0.6, 2.6 GB).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import pytest
from gpucluster_env.baselines.lucid import sharing_score
from gpucluster_env.baselines.parts.gimbal_rules import TopologyRule, host_gpus, packing_sets
from gpucluster_env.baselines.parts.gimbal_search import Coordinator, local_objective, priority
from gpucluster_env.baselines.parts.job_facts import JobFacts

from gpucluster_env.engine import DONE, RUNNING, Colocate, Place, Squeeze, Swell, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import Policy, make_policy


class StubPredictor:
    """Predicts the same free-competition ratio for every pair."""

    def __init__(self, xi: float) -> None:
        self.xi = xi

    def predict_pair(self, model_a: Any, model_b: Any, gpu_type: str) -> tuple[float, float]:
        return self.xi, self.xi


class EngEnv:
    """The env surface white-box policies read: ``env.unwrapped.engine``."""

    def __init__(self, eng: Any) -> None:
        self.engine = eng
        self.unwrapped = self


def play(eng: Any, policy: Any, max_steps: int = 100_000, check: Any = None) -> list[tuple[float, Any]]:
    """Play an episode on a bare engine (lists of actions applied in turn); return the non-wait actions with
    their times. ``check(view)`` runs after every action."""
    env = EngEnv(eng)
    policy.reset(env)
    view = ClusterView(eng)
    eng.advance()
    out: list[tuple[float, Any]] = []
    for _ in range(max_steps):
        if eng.done:
            return out
        acts = policy.act(None, env)
        for a in acts if isinstance(acts, list) else [acts]:
            if not isinstance(a, Wait):
                out.append((eng.now, a))
            eng.apply(a)
            if check is not None:
                check(view)
    raise AssertionError("episode did not finish")


# ---------------------------------------------------------------- eq. 1-6 (pure)
def test_local_objectives_by_hand() -> None:
    times = np.array([100.0, 150.0])  # remaining steps / throughput of two jobs
    assert local_objective("jct", times) == pytest.approx(125.0)  # eq. 1: (100 + 150) / 2
    assert local_objective("makespan", times) == pytest.approx(150.0)  # eq. 5: max
    # eq. 3: deadlines 120 s and 100 s away: lateness max(0, 100 - 120) = 0 and max(0, 150 - 100) = 50
    assert local_objective("deadline", times, np.array([120.0, 100.0])) == pytest.approx(50.0)
    # no deadline (inf slack) is never late
    assert local_objective("deadline", times, np.array([math.inf, math.inf])) == 0.0
    with pytest.raises(ValueError, match="unknown kind"):
        local_objective("fairness", times)


def test_priorities_by_hand() -> None:
    # eq. 2: -utilization, the less utilized job is favoured
    assert priority("jct", 100.0, 1.0, 0.7) == -0.7 > priority("jct", 100.0, 1.0, 0.9)
    # eq. 6: the longer job (300 / 2 = 150 s) is favoured over the shorter (100 s)
    assert priority("makespan", 300.0, 2.0, 0.9) == pytest.approx(150.0)
    # eq. 4: headroom = slack - remaining/rate: 100 - 150 = -50 -> urgency 50; 400 - 150 = 250 -> -250
    assert priority("deadline", 300.0, 2.0, 0.9, 100.0) == pytest.approx(50.0)
    assert priority("deadline", 300.0, 2.0, 0.9, 400.0) == pytest.approx(-250.0)
    assert priority("deadline", 300.0, 2.0, 0.9, math.inf) == -math.inf


def test_lucid_sharing_score_tiers() -> None:
    # tiers at 0.85 and 0.95 of profiled utilization
    assert [sharing_score(u) for u in (0.5, 0.849, 0.85, 0.949, 0.95, 1.0)] == [0, 0, 1, 1, 2, 2]


# ---------------------------------------------------------------- the topology rule (gimbal §5.1)
def violations(view: ClusterView) -> list[str]:
    """Every breach of gimbal §5.1 in the current state (the test's own statement of the rule): each job on
    the fewest nodes; in every packing set the others share only with J_max, are smaller than it or the same
    size on exactly its GPUs, and share all their GPUs with it."""
    per_node = int(np.bincount(view.gpu_node).max())
    out: list[str] = []
    for j in view.running_jobs().tolist():
        g = view.gpus_of(j)
        if len(np.unique(view.gpu_node[g])) > math.ceil(len(g) / per_node):
            out.append(f"job {j} spans more nodes than it needs")
    for s in packing_sets(view):
        n_max, g_max = int(view.req_gpus[s.jmax]), set(view.gpus_of(s.jmax).tolist())
        for o in s.others:
            if view.partners_of(o) != [s.jmax]:
                out.append(f"job {o} shares with {view.partners_of(o)}, not only with J_max {s.jmax}")
            g_o = set(view.gpus_of(o).tolist())
            if not g_o <= g_max:
                out.append(f"job {o} runs partly off J_max {s.jmax}'s GPUs")
            if int(view.req_gpus[o]) == n_max and g_o != g_max:
                out.append(f"job {o} has J_max {s.jmax}'s size but not its GPUs")
    return out


def test_topology_rule_by_hand(build: Any) -> None:
    # 2 nodes x 2 fast GPUs (GPUs 0-1 on node 0, 2-3 on node 1)
    rows = [{"num_gpus": 2, "iterations": 1e6}, {"num_gpus": 1}, {"num_gpus": 2}, {"num_gpus": 1},
            {"num_gpus": 1}]
    eng = build([("fast", 2, 2)], rows, xi=1.5, tick_s=30.0)
    eng.advance()
    v = ClusterView(eng)
    rule = TopologyRule(v)
    eng.apply(Place(0, gpus=(0, 1)))
    assert rule.allows(1, [0])  # a smaller job beside the 2-GPU job
    assert rule.allows(2, [0, 1])  # same size: balanced co-location on the very same GPUs
    assert not rule.allows(2, [1, 2])  # spans two nodes where one would do
    assert rule.allows(2, [2, 3])  # free GPUs on one node
    assert host_gpus(v, rule, 1, 0).tolist() == [0]
    eng.apply(Colocate(1, 0, gpus=(0,)))
    assert packing_sets(v)[0].jmax == 0 and packing_sets(v)[0].others == (1,)
    assert not rule.allows(2, [0, 1])  # GPU 0 holds two jobs: no balanced packing any more
    assert rule.allows(3, [1])  # J_max takes a second small partner
    eng.apply(Place(4, gpus=(2,)))
    assert rule.allows(3, [2])  # equal sizes (1 GPU each), the very same GPU: balanced
    assert not rule.allows(2, [2, 3])  # 2 GPUs beside a 1-GPU job: only smaller beside larger
    assert violations(v) == []


@pytest.mark.parametrize("name", ["lucid+gimbal", "gandiva+gimbal"])
def test_coordination_never_violates_topology(build: Any, name: str) -> None:
    # 4 nodes x 2 GPUs; a mix of 1-, 2- and 4-GPU jobs arriving together, so unequal packing is tried
    rows = [{"num_gpus": n, "model": m, "iterations": it, "submit_s": float(i)}
            for i, (n, m, it) in enumerate([(4, "a", 4000), (2, "b", 3000), (1, "a", 2000), (1, "b", 2500),
                                             (2, "a", 1500), (4, "b", 3000), (1, "a", 800), (2, "b", 1200),
                                             (1, "b", 900), (2, "a", 700), (4, "a", 600), (1, "a", 500)])]
    eng = build([("fast", 4, 2)], rows, xi=1.4, tick_s=30.0)
    seen: list[int] = []

    def check(view: ClusterView) -> None:
        assert violations(view) == []
        seen.append(len(packing_sets(view)))

    pol = make_policy(name, predictor=StubPredictor(1.4))
    acts = play(eng, pol, check=check)
    assert max(seen) >= 1  # packing happened
    assert any(isinstance(a, Colocate) for _, a in acts)
    assert pol.coordinator.stats.searches > 0 and eng.counts["squeezes"] > 0  # coordination ran
    assert eng.n_done == len(rows)


# ---------------------------------------------------------------- §4.1's worked example through the primitives
# One fast GPU. Job A: model a (0.16 s/iteration alone, GPU demand 0.9), 1,000 iterations; job B: model b (0.12
# s/iteration alone, demand 0.6), 2,500 iterations. Free-competition ratios: A beside B 3.0, B beside A 1.2.
# The share model (performance.apply_shares, memory-contention term m = 0.1), partner's overlap
# o = max(0, min(p, d) + q - 1) / d, pressure = 1 + (xi_free - 1)(m + (1 - m) o), xi = pressure / min(1, p/d):
#   free competition (100% + 100%): xi_A = 3.0, xi_B = 1.2;
#   B squeezed five steps to 50%: o_A = (0.9 + 0.5 - 1) / 0.9 = 4/9 -> xi_A = 1 + 2 (0.1 + 0.4) = 2.0;
#   o_B = 0.5 / 0.6 -> pressure_B = 1 + 0.2 (0.1 + 0.75) = 1.17, cap 0.5 / 0.6 -> xi_B = 1.17 x 1.2 = 1.404.
# Free competition: B first at 2,500 x 0.12 x 1.2 = 360 s; A has done 360 / 0.48 = 750 iterations, the other
#   250 alone take 40 s: A at 400 s. Average 380 s (the paper's "A 10 h, B 5 h, average 7.5 h").
# B squeezed: A first at 1,000 x 0.16 x 2.0 = 320 s; B has done 320 / 0.16848 = 1,899.335 iterations, the other
#   600.665 alone (swelled back to 100%) take 72.080 s: B at 392.080 s. Average 356.040 s (the paper's "A 5 h,
#   B 7 h, average 6 h": the same shape -- A faster, B slower, the average lower).
# (The paper's exact hours cannot come out of any model where sharing never speeds a job beyond running alone:
#  A's 10 h with B leaving at 5 h means A alone needs more than 5 h, so A cannot finish at 5 h while sharing.)
WORKED = [{"model": "a", "iterations": 1000.0}, {"model": "b", "iterations": 2500.0}]
WORKED_XI = {("a", "b"): 3.0, ("b", "a"): 1.2}


def worked_engine(build: Any, **config: Any) -> Any:
    from tests.conftest import PairXi

    return build([("fast", 1, 1)], WORKED, xi=PairXi(WORKED_XI), tick_s=30.0, **config)


def run_pair(eng: Any, squeezes: int) -> tuple[float, float]:
    """Start A, pack B beside it, squeeze B ``squeezes`` steps at t = 0, swell it back when A finishes."""
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    eng.apply(Colocate(1, 0, gpus=(0,)))
    for _ in range(squeezes):
        eng.apply(Squeeze(1))
    while not eng.done:
        eng.advance()
        if eng.status[0] == DONE and eng.status[1] == RUNNING and eng.share_of(1) < 1.0:
            while eng.share_of(1) < 1.0 - 1e-9:
                eng.apply(Swell(1))
    return float(eng.finish_t[0]), float(eng.finish_t[1])


def test_worked_example_free_competition(build: Any) -> None:
    a, b = run_pair(worked_engine(build), 0)
    assert b == pytest.approx(360.0) and a == pytest.approx(400.0)
    assert (a + b) / 2 == pytest.approx(380.0)


def test_worked_example_squeezing_b_lowers_the_average(build: Any) -> None:
    a, b = run_pair(worked_engine(build), 5)
    assert a == pytest.approx(320.0)
    assert b == pytest.approx(320.0 + 0.12 * (2500.0 - 320.0 / 0.16848))  # 392.080
    assert (a + b) / 2 == pytest.approx(356.0399, abs=1e-3)


def test_worked_example_switch_overhead(build: Any) -> None:
    # Five squeezes at one instant pause B once, 3.6 s: B does nothing until 3.6 s while A runs at xi 2.0; A
    # still finishes at 320 s, B has done (320 - 3.6) / 0.16848 iterations; swelling B back at 320 s pauses it
    # another 3.6 s before it runs the rest alone.
    a, b = run_pair(worked_engine(build, calibration_overhead_s=3.6), 5)
    assert a == pytest.approx(320.0)
    assert b == pytest.approx(320.0 + 3.6 + 0.12 * (2500.0 - (320.0 - 3.6) / 0.16848))


# ---------------------------------------------------------------- each objective moves its own metric
class PairPredictor:
    """Predicts the worked example's ratios (what a perfect predictor would say), through the predictor API."""

    def predict_pair(self, model_a: Any, model_b: Any, gpu_type: str) -> tuple[float, float]:
        return WORKED_XI.get((model_a.name, model_b.name), 1.0), WORKED_XI.get((model_b.name, model_a.name), 1.0)


class PairThenCoordinate(Policy):
    """Start job 0, pack job 1 beside it, then let Gimbal's coordinator for ``kind`` calibrate every 30 s."""

    name: ClassVar[str] = "test-pair-coordinate"

    def __init__(self, kind: str, coordinate: bool = True) -> None:
        self.kind, self.coordinate = kind, coordinate

    def reset(self, env: Any) -> None:
        view = self.view(env)
        facts = JobFacts(view)
        self.coord = Coordinator(self.kind, lambda j, t: facts.demand(view, j, t), facts.deadline,
                                 predictor=PairPredictor(), share_units=view.share_units)
        self.next = 0.0

    def act(self, observation: Any, env: Any) -> Any:
        view = self.view(env)
        if view.is_pending(0):
            return Place(0, gpus=(0,))
        if view.is_pending(1):
            return Colocate(1, 0, gpus=(0,))
        if self.coordinate and view.now >= self.next:
            self.next = view.now + 30.0
            acts = self.coord.tick(view)
            if acts:
                return acts
        return Wait()


def coordinated(build: Any, kind: str, coordinate: bool, rows: list[dict] | None = None) -> Any:
    """The worked example with ten times the iterations (so the search's 3.6 s switches are small beside the
    jobs), played with or without the coordinator."""
    from tests.conftest import PairXi

    rows = [dict(r, iterations=10 * r["iterations"]) for r in (rows or WORKED)]
    eng = build([("fast", 1, 1)], rows, xi=PairXi(WORKED_XI), tick_s=30.0, calibration_overhead_s=3.6)
    play(eng, PairThenCoordinate(kind, coordinate))
    return eng.metrics()


def test_jct_coordination_lowers_average_jct(build: Any) -> None:
    free = coordinated(build, "jct", False)
    assert free["avg_jct_s"] == pytest.approx(3800.0)  # the worked example, ten times longer
    assert coordinated(build, "jct", True)["avg_jct_s"] < free["avg_jct_s"]


def test_makespan_coordination_lowers_makespan(build: Any) -> None:
    free = coordinated(build, "makespan", False)
    assert free["makespan_s"] == pytest.approx(4000.0)
    assert coordinated(build, "makespan", True)["makespan_s"] < free["makespan_s"]


def test_deadline_coordination_meets_more_deadlines(build: Any) -> None:
    # A must finish by 3,700 s (free competition: 4,000 s, late); B has till 10,000 s (free: 3,600 s)
    rows = [dict(WORKED[0], deadline_s=3700.0), dict(WORKED[1], deadline_s=10000.0)]
    free = coordinated(build, "deadline", False, rows)
    assert free["deadline_satisfaction"] == pytest.approx(0.5)
    assert coordinated(build, "deadline", True, rows)["deadline_satisfaction"] == pytest.approx(1.0)


def test_sample_stealing_keeps_global_batch_and_fits_memory(build: Any) -> None:
    # 2 nodes x 2 fast GPUs: a 4-GPU job of model b (batch 16 per GPU) and 1-GPU jobs of model a packed on
    # two of its GPUs make its workers unequal; Gimbal turns LISS on for it. After every action, every job
    # stealing samples keeps its global batch (4 x 16 = 64 per micro-step at s = 1) and each worker's LISS
    # micro-batch fits in its GPU's memory beside the GPU's other tenant.
    from gpucluster_env.performance import fits_memory, footprint_gb

    rows = [{"num_gpus": 4, "model": "b", "iterations": 20000.0},
            {"num_gpus": 1, "model": "a", "iterations": 3000.0, "submit_s": 1.0},
            {"num_gpus": 1, "model": "a", "iterations": 3000.0, "submit_s": 2.0}]
    eng = build([("fast", 2, 2)], rows, xi=1.6, tick_s=30.0)
    stole: list[int] = []

    def check(view: ClusterView) -> None:
        for j in view.running_jobs().tolist():
            if not eng.stealing[j]:
                continue
            stole.append(j)
            p = view.model(j)
            for c in eng.state.copy_consts[j]:
                b = eng.rates.liss_micro_batches(j, c)
                assert b.sum() == pytest.approx(c.n * view.batch(j) / view.accumulation(j))
                for g, bi in zip(c.gl, b.tolist(), strict=True):
                    other = [int(x) for x in view.tenants([g])[0] if x >= 0 and x != j]
                    room = float(view.type_mem[view.gpu_type[g]]) - (view.footprint(other[0]) if other else 0.0)
                    assert fits_memory(footprint_gb(p, bi, 1), room)

    pol = make_policy("lucid+gimbal", predictor=StubPredictor(1.6))
    play(eng, pol, check=check)
    assert 0 in stole and eng.n_done == 3


@pytest.mark.parametrize(("share_step", "granularity", "steps"),
                         [(0.1, 10, 1), (0.1, 20, 2), (0.1, 30, 3), (0.05, 5, 1), (0.05, 10, 2), (0.05, 30, 6)])
def test_granularity_is_percent_of_the_gpu_per_attempt(build: Any, share_step: float, granularity: int,
                                                       steps: int) -> None:
    # the worked example at t = 0: the JCT search's first plan squeezes the low-priority subset by
    # ``granularity`` percent, that many steps of the engine's share grid (eq. 2: A, utilization 0.9, is
    # squeezed to favour B, utilization 0.6)
    eng = worked_engine(build, share_step=share_step)
    eng.advance()
    eng.apply(Place(0, gpus=(0,)))
    eng.apply(Colocate(1, 0, gpus=(0,)))
    view = ClusterView(eng)
    facts = JobFacts(view)
    coord = Coordinator("jct", lambda j, t: facts.demand(view, j, t), facts.deadline, predictor=PairPredictor(),
                        granularity=granularity, share_units=view.share_units)
    acts = coord.tick(view)
    assert acts == [Squeeze(0, gpus=(0,))] * steps
    for a in acts:
        eng.apply(a)
    assert eng.share_of(0) == pytest.approx(1.0 - granularity / 100)


@pytest.mark.parametrize("bad", [5, 15, 1, 2, 0, 100, 12.5, True, "10"])
def test_granularity_must_be_a_percentage_on_the_share_grid(bad: Any) -> None:
    # 5% and 15% are not whole steps of the default 10% grid; 1, 2 (the old "tenths") are not either
    with pytest.raises(ValueError, match="granularity"):
        Coordinator("jct", None, None, granularity=bad)
    assert Coordinator("jct", None, None, granularity=5, share_units=20).steps == 1
    # the least share a search sets: 100% less whole attempts, above 0, in engine steps, the same on any grid
    least = {(g, u): Coordinator("jct", None, None, granularity=g, share_units=u).least
             for g, u in ((10, 10), (20, 10), (30, 10), (5, 20), (10, 20), (20, 20), (30, 20))}
    assert least == {(10, 10): 1, (20, 10): 2, (30, 10): 1, (5, 20): 1, (10, 20): 2, (20, 20): 4, (30, 20): 2}
    with pytest.raises(ValueError, match="granularity=5% is not a multiple of the engine's MPS share step"):
        Coordinator("jct", None, None, granularity=5, share_units=10)


def test_gimbal_policy_checks_granularity_against_the_scenario_grid(build: Any) -> None:
    # the policy option is checked as a percentage when made, against the engine's grid at reset
    with pytest.raises(ValueError, match="granularity"):
        make_policy("lucid+gimbal", granularity=1.5)
    pol = make_policy("lucid+gimbal", granularity=5, predictor=PairPredictor())
    with pytest.raises(ValueError, match=r"granularity=5% .*share_step=0.05"):
        play(worked_engine(build), pol)
    eng = worked_engine(build, share_step=0.05)
    play(eng, make_policy("lucid+gimbal", granularity=5, predictor=PairPredictor()))
    assert eng.n_done == 2
    # a coordinator made for one grid refuses an engine on another
    eng = worked_engine(build, share_step=0.05)
    eng.advance()
    coord = Coordinator("jct", lambda j, t: 0.5, lambda j: math.nan, predictor=PairPredictor())
    with pytest.raises(ValueError, match="share grid"):
        coord.tick(ClusterView(eng))


def test_a_10_percent_search_on_the_5_percent_grid_is_the_same_episode(build: Any) -> None:
    # Gimbal's 10% attempts on the 5% grid issue two engine steps per job at one instant: the pause of 3.6 s is
    # paid once per job and attempt, as on the 10% grid, so the episode is the same bit for bit (the searched
    # shares stay above 10% here) with twice the squeeze / swell actions
    runs = {}
    for step in (0.1, 0.05):
        from tests.conftest import PairXi

        rows = [dict(r, iterations=10 * r["iterations"]) for r in WORKED]
        eng = build([("fast", 1, 1)], rows, xi=PairXi(WORKED_XI), tick_s=30.0, calibration_overhead_s=3.6,
                    share_step=step)
        play(eng, PairThenCoordinate("jct", True))
        runs[step] = eng
    a, b = runs[0.1], runs[0.05]
    assert a.counts["squeezes"] > 0
    assert (b.counts["squeezes"], b.counts["swells"]) == (2 * a.counts["squeezes"], 2 * a.counts["swells"])
    assert a.finish_t.tolist() == b.finish_t.tolist()
    same = [{k: repr(v) for k, v in m.metrics().items() if k not in ("squeezes", "swells")} for m in (a, b)]
    assert same[0] == same[1]  # repr: exact floats, NaN equal to NaN


# ---------------------------------------------------------------- Table 2's job mix
def test_gimbal_mix_follows_table2() -> None:
    from gpucluster_env.traces.gimbal_mix import GIMBAL_CLASSES, class_counts, gimbal_mix, gpu_counts

    # at the paper's sizes the counts are Table 2's; at half size they are halved (largest remainders)
    assert class_counts(150, {"small": (43, 2.39), "medium": (86, 2.41), "large": (21, 4.85)}) == {
        "small": 43, "medium": 86, "large": 21}
    assert sum(class_counts(75, {"small": (43, 2.39), "medium": (86, 2.41), "large": (21, 4.85)}).values()) == 75
    # 2.39 GPUs on average: 2 or 4 GPUs, 4 with probability (2.39 - 2) / 2 = 0.195
    g = gpu_counts(2.39, 20000, np.random.default_rng(0), 32)
    assert set(g.tolist()) == {2, 4} and g.mean() == pytest.approx(2.39, abs=0.03)
    assert gpu_counts(4.85, 100, np.random.default_rng(0), 4).max() == 4  # capped at the cluster
    dur = np.arange(150, dtype=float)  # job i lasts i s: the 21 longest are the large ones
    models, gpus = gimbal_mix(dur, "philly", np.random.default_rng(1), 32)
    large = set(GIMBAL_CLASSES["large"])
    assert {i for i, m in enumerate(models) if m in large} == set(range(129, 150))
    assert sum(m in GIMBAL_CLASSES["small"] for m in models) == 43
    with pytest.raises(ValueError, match="philly and alibaba"):
        gimbal_mix(dur, "venus", np.random.default_rng(1), 32)


def test_move_to_reaches_its_target_when_a_step_merges_into_the_action_before() -> None:
    # Fixed bug: move_to stopped when a round added no action, but a round's steps may all merge into the action
    # before the call (here a swell of the same job on other GPUs, as release_lone leaves it), so a search's
    # start or restore moved a share one step instead of to its target
    coord = Coordinator("jct", None, None)
    coord.shares = {(0, 0): 1, (0, 1): 1}
    acts: list[Any] = [Swell(0, gpus=(2, 3))]
    coord.move_to(None, {(0, 0): 10, (0, 1): 10}, acts)  # type: ignore[arg-type]
    assert coord.shares == {}
    assert [sum(g in a.gpus for a in acts) for g in (0, 1)] == [9, 9]


def test_search_steps_are_step_s_apart(build: Any) -> None:
    # One search step per set every step_s (39 s by default: gimbal §7.4 Fig. 14's LGRR iteration), taken at the
    # first calibration tick at or after it is due; ticks of 13 s fall on every multiple of 39 and 26
    from tests.conftest import PairXi

    assert make_policy("lucid+gimbal").step_s == make_policy("gandiva+gimbal").step_s == 39.0
    for step in (39.0, 26.0):
        rows = [dict(r, iterations=10 * r["iterations"]) for r in WORKED]
        eng = build([("fast", 1, 1)], rows, xi=PairXi(WORKED_XI), tick_s=13.0, calibration_overhead_s=3.6)
        out = play(eng, make_policy("lucid+gimbal", predictor=PairPredictor(), step_s=step))
        times = sorted({t for t, a in out if isinstance(a, Squeeze | Swell)})
        assert len(times) >= 3
        assert min(np.diff(times)) >= step - 1e-9
        assert all(t % step == pytest.approx(0.0, abs=1e-6) for t in times[1:])
    for bad in (0, -1.0, True, "39"):
        with pytest.raises(ValueError, match="step_s"):
            make_policy("lucid+gimbal", step_s=bad)
