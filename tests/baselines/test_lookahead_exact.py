"""The search expert's exact speed-ups and its truncated rollouts (baselines/lookahead.py,
baselines/parts/rollouts.py): a rollout the real episode follows at one instant stands for the next decision's
own rollout, bit for bit; the candidate list's array form equals the list as first written; ``max_events``
truncates the heuristic's rollout and scores every candidate to where it stopped."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpucluster_env.baselines.lookahead import CandidateLister, Lookahead
from gpucluster_env.baselines.parts.rollouts import rollout

from gpucluster_env.engine import Place, Preempt, Wait
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.policy import make_policy

OPTS = {"num_jobs": 60}


def test_a_truncated_search_scores_every_candidate_to_where_the_heuristics_rollout_stopped() -> None:
    env = GPUClusterEnv("sjfbsbf-philly", scenario_options=OPTS, observation="none")
    env.reset(seed=5)
    pol = Lookahead(max_events=2)
    pol.reset(env)
    checked = 0
    while not env.engine.done and checked < 15:
        cands, costs = pol.search(env)
        if costs is not None and pol._played[0][1] == 0:  # a fresh own rollout (not one taken over)
            own = rollout(env.engine.clone(), cands[0], make_policy("srsf"), env.engine.now + 3600.0, True, 2)
            assert own.events <= 2 and own.cost == costs[0]
            end = own.stop if own.cut else env.engine.now + 3600.0
            for a, c in zip(cands[1:], costs[1:], strict=True):
                assert rollout(env.engine.clone(), a, make_policy("srsf"), end, True).cost == c
            checked += own.cut
        best = cands[0] if costs is None else cands[int(np.argmin(costs))]
        pol.note(env, best)
        env.step(best)
    assert checked >= 5


@pytest.mark.parametrize("max_events", [None, 3])
def test_a_followed_rollout_stands_for_the_next_own_rollout_bit_for_bit(max_events: int | None) -> None:
    """Where the search takes over a rollout the real episode followed at the same instant, its costs equal those
    of a search that plays every rollout again (a fresh search object at each decision point)."""
    env = GPUClusterEnv("castor-philly", scenario_options={"num_jobs": 80}, observation="none")
    env.reset(seed=1)
    pol = Lookahead(max_events=max_events)
    pol.reset(env)
    taken = 0
    while not env.engine.done:
        cands, costs = pol.search(env)
        if costs is not None:
            fresh = Lookahead(max_events=max_events)
            fresh.reset(env)
            assert fresh.rollout_costs(env, cands) == costs
            taken += pol._played[0][1] > 0
        best = cands[0] if costs is None else cands[int(np.argmin(costs))]
        pol.note(env, best)
        env.step(best)
    assert taken > 5


def _reference_candidates(lister: CandidateLister, view: Any, own: Any, min_run_s: float) -> list:
    """The candidate list as first written (a plan asked for every waiting job in turn; the movable jobs by a
    Python loop): the reference the lister's array form must equal."""
    out = [own]
    service = view.remaining_solo_time() * view.req_gpus
    if view.num_pending:
        out.append(Wait())
        recent = lister._preempted if lister._preempted_at == view.now else set()
        pend = view.pending_jobs()
        found = 0
        for j in pend[np.lexsort((pend, service[pend]))].tolist():
            if found == lister.starts:
                break
            if j not in recent and view.plan_place(j) is not None:
                out.append(Place(j))
                found += 1
        movable = [int(j) for j in view.running_jobs() if view.now - view.last_start(int(j)) >= min_run_s]
        if movable:
            out.append(Preempt(max(movable, key=lambda j: (service[j], j))))
    seen: list = []
    for a in out:
        if a not in seen:
            seen.append(a)
    return seen


def test_the_candidate_list_equals_its_reference_over_an_episode() -> None:
    env = GPUClusterEnv("castor-philly", scenario_options={"num_jobs": 120}, observation="none")
    env.reset(seed=2)
    pol, srsf = make_policy("tiresias"), make_policy("srsf")
    pol.reset(env)
    lister = CandidateLister(3)
    view = srsf.view(env)
    compared = 0
    while not env.engine.done:
        own = srsf.act(None, env)
        assert lister.actions(view, own, 600.0) == _reference_candidates(lister, view, own, 600.0)
        compared += 1
        a = pol.act(None, env)
        lister.chosen(view, a)
        env.step(a)
    assert compared > 200


