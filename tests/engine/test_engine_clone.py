"""ClusterEngine.clone: a copy that continues bit for bit as the original would, independent of it."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.policy import make_policy


class _Shim:
    """What a white-box policy reads of an env (``unwrapped.engine``), over a bare engine."""

    def __init__(self, eng: Any) -> None:
        self.engine = eng
        self.unwrapped = self


def _play(eng: Any, pol: Any, steps: int | None = None) -> None:
    """Step ``eng`` with ``pol`` for ``steps`` decisions (None: to the end)."""
    shim = _Shim(eng)
    n = 0
    while not eng.done and (steps is None or n < steps):
        acts = pol.act(None, shim)
        for a in acts if isinstance(acts, list) else [acts]:
            eng.apply(a)
        if isinstance(acts, list) and not acts:
            eng.advance()
        n += 1


def _twin_policy(pol: Any) -> Any:
    """A copy of a (possibly stateful) policy for the clone (its view is made again for the clone's engine)."""
    view, pol._view = pol._view, None
    out = copy.deepcopy(pol)
    pol._view = view
    return out


def _episode(scenario: str, policy: str) -> tuple[Any, Any]:
    env = GPUClusterEnv(scenario, scenario_options={"num_jobs": 60}, observation="none")
    env.reset(seed=3)
    pol = make_policy(policy)
    pol.reset(env)
    return env.engine, pol


@pytest.mark.parametrize("scenario,policy", [("castor-philly", "castor"), ("sjfbsbf-philly", "srsf"),
                                             ("gimbal-philly", "gavel+gimbal"), ("hadar-philly", "hadare")])
def test_clone_continues_as_deepcopy_and_independently(scenario: str, policy: str) -> None:
    """Sharing (Castor), calibration (Gimbal), forks and quotas (HadarE): a clone mid-episode continues as a
    full ``copy.deepcopy`` does, and running it leaves the original as an episode never cloned."""
    ref, ref_pol = _episode(scenario, policy)
    _play(ref, ref_pol)
    eng, pol = _episode(scenario, policy)
    _play(eng, pol, 80)
    twin, deep = eng.clone(), copy.deepcopy(eng)
    assert twin.now == eng.now and twin.log == eng.log
    _play(twin, _twin_policy(pol))       # the clone runs to the end first ...
    _play(deep, _twin_policy(pol))
    _play(eng, pol)                      # ... and the original is untouched by it
    assert twin.log == deep.log and eng.log == ref.log
    for a, b in ((twin.metrics(), deep.metrics()), (eng.metrics(), ref.metrics())):
        assert a.keys() == b.keys()
        for k in a:
            assert a[k] == b[k] or (isinstance(a[k], float) and np.isnan(a[k]) and np.isnan(b[k])), k


def test_clone_of_a_stateless_policy_run_ends_as_the_episode() -> None:
    """With a stateless policy (SRSF) the clone's run is the episode's own continuation, bit for bit."""
    ref, ref_pol = _episode("castor-philly", "srsf")
    _play(ref, ref_pol)
    eng, pol = _episode("castor-philly", "srsf")
    _play(eng, pol, 100)
    twin = eng.clone()
    _play(twin, make_policy("srsf"))
    assert twin.log == ref.log and twin.now == ref.now


def test_clone_shares_static_tables_and_copies_state() -> None:
    env = GPUClusterEnv("castor-philly", observation="none")
    env.reset(seed=0)
    eng = env.engine
    _play(eng, make_policy("srsf"), 100)
    twin = eng.clone()
    assert twin.catalog is eng.catalog and twin.state.xi_tab_l is eng.state.xi_tab_l and twin.jobs is eng.jobs
    assert twin.remaining is not eng.remaining and twin.events.heap is not eng.events.heap
    assert twin.log.records is not eng.log.records
    assert np.shares_memory(twin.state.slot_job_flat, twin.slot_job)
    assert not np.shares_memory(twin.slot_job, eng.slot_job)
    deep = copy.deepcopy(eng)
    assert deep.log == twin.log and np.array_equal(deep.remaining, twin.remaining)


def test_a_liss_switch_on_a_clone_leaves_the_original_as_it_was(build) -> None:
    """The running copies' constants are shared with a clone and replaced, never changed: ``SetStealing`` on the
    clone gives the clone's job new copies and leaves the original's, which is then rated as in an engine never
    cloned."""
    from gpucluster_env.engine import Place, SetStealing, Squeeze

    def mixed():  # model b on a fast and a slow GPU: LISS changes its rate
        eng = build([("fast", 1, 1), ("slow", 1, 1)], [{"model": "b", "num_gpus": 2, "iterations": 100}])
        eng.advance()
        eng.apply(Place(0, gpus=(0, 1)))
        return eng

    eng, alone = mixed(), mixed()
    twin = eng.clone()
    twin.apply(SetStealing(0, True))
    assert twin.state.copy_consts[0][0].k.stealing and not eng.state.copy_consts[0][0].k.stealing
    assert twin.rate[0] != eng.rate[0]
    for e in (eng, alone):
        e.apply(Squeeze(0))  # rated again from its copy's constants
    assert eng.rate[0] == alone.rate[0]


def test_a_clone_copies_every_dynamic_container_and_shares_its_log_start() -> None:
    """The clone's memo (``engine.state_copy``) copies each per-job array, queue and running copy flat: nothing
    dynamic is the original's object; the event log shares the records it starts from, keeps its own apart,
    and joins them only when read."""
    import pickle

    env = GPUClusterEnv("castor-philly", observation="none")
    env.reset(seed=0)
    eng = env.engine
    _play(eng, make_policy("castor"), 150)
    assert eng.state.copies and eng.state.running_set
    twin = eng.clone()
    static = eng.state._static_names
    for k, v in eng.state.__dict__.items():
        w = twin.state.__dict__[k]
        if k in static or isinstance(v, int | float | str | bool | type(None)):
            continue
        if k in ("copy_consts",):
            assert w is not v and all(w[j] == v[j] and w[j] is not v[j] for j in v)
            continue
        assert w is not v, k
    for j, arrays in eng.state.copies.items():
        assert all(a is not b and np.array_equal(a, b) for a, b in zip(arrays, twin.state.copies[j], strict=True))
    n = len(eng.log)
    assert twin.log._base is eng.log._kept() and len(twin.log) == n  # shared, not copied
    _play(twin, make_policy("castor"), 20)
    _play(eng, make_policy("castor"), 5)
    assert twin.log.records[:n] == eng.log.records[:n] and twin.log._base is None
    assert len(twin.log.records) == len(twin.log) > n
    grand = twin.clone()
    back = pickle.loads(pickle.dumps(grand.log))
    assert back == grand.log == twin.log and back._base is None
