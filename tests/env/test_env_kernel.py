"""The environment computes its action mask and observation with a compiled kernel (gpucluster_env.env.kernel):
at every step they must equal, bit for bit, the plain numpy oracle computed from scratch
(``tests/env/mask_observation_oracle.py``)."""

from __future__ import annotations

import mask_observation_oracle as oracle
import numpy as np
import pytest

from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.env.observation import ObservationBuilder


def _from_scratch(env: GPUClusterEnv) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    eng = env.unwrapped.engine
    L = env.layout
    pending, running = eng.pending_head(L.n_pending), eng.running_head(L.n_running)
    mask = oracle.mask(env.codec, eng, pending, running, env.allowed)
    n_p = len(pending)
    placeable = mask[L.place_off:L.place_off + n_p * L.place_width].reshape(n_p, L.place_width).any(axis=1)
    env.rules.restrict(mask, L, pending, running, eng.now)  # the decision rules, after the engine's validity
    obs = oracle.observation(ObservationBuilder(eng, L.n_pending, L.n_running), pending, running, placeable)
    return mask, obs


@pytest.mark.parametrize("scenario", ["tiny", "castor-philly", "hadar-philly", "gimbal-philly", "hadare-testbed",
                                      "gimbal-philly:share_step=0.05"])
@pytest.mark.parametrize("observation", ["dict", "box"])
@pytest.mark.parametrize("layout", ["compact", "full"])
def test_kernel_mask_and_observation_match_the_numpy_reference(scenario: str, observation: str, layout: str) -> None:
    """Every feature (deadline slack, GPU type and nodes of running jobs, accumulation, predicted pair
    slowdowns, the horizon clock, the mean MPS share on the 5% grid included) and every mask entry, bit for
    bit, on both action layouts."""
    name, _, step = scenario.partition(":share_step=")
    env = GPUClusterEnv(name, observation=observation, action_layout=layout,
                        scenario_options={"share_step": float(step)} if step else None)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(400):
        mask, fresh = _from_scratch(env)
        got = env.action_masks()
        assert np.array_equal(got, mask)
        if observation == "box":
            assert obs.tobytes() == oracle.flatten(fresh).tobytes()
        else:
            assert all(obs[k].tobytes() == fresh[k].tobytes() for k in fresh)
        valid = np.flatnonzero(got)
        obs, _, term, trunc, _ = env.step(int(valid[rng.integers(len(valid))]))
        if term or trunc:
            obs, _ = env.reset()


def test_observation_arrays_are_fresh_each_step() -> None:
    env = GPUClusterEnv("tiny")
    obs, _ = env.reset(seed=0)
    before = {k: v.copy() for k, v in obs.items()}
    for _ in range(5):
        env.step(int(np.flatnonzero(env.action_masks())[-1]))
    assert all(np.array_equal(obs[k], before[k]) for k in obs)
    m = env.action_masks()
    m[:] = False
    assert env.action_masks().any()


def test_engine_reset_under_the_env_is_seen() -> None:
    env = GPUClusterEnv("tiny")
    env.reset(seed=0)
    for _ in range(30):
        env.step(int(np.flatnonzero(env.action_masks())[-1]))
    eng = env.unwrapped.engine
    eng.reset()
    eng.advance()
    env._observe()
    mask, _ = _from_scratch(env)
    assert np.array_equal(env.action_masks(), mask)


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_copies_continue_identically(how: str) -> None:
    import copy
    import pickle

    env = GPUClusterEnv("castor-philly")
    env.reset(seed=2)
    rng = np.random.default_rng(2)
    for _ in range(200):
        env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
    clone = pickle.loads(pickle.dumps(env)) if how == "pickle" else copy.deepcopy(env)
    for _ in range(300):
        m1, m2 = env.action_masks(), clone.action_masks()
        assert np.array_equal(m1, m2)
        a = int(rng.choice(np.flatnonzero(m1)))
        o1, r1, *_ = env.step(a)
        o2, r2, *_ = clone.step(a)
        assert r1 == r2 and all(o1[k].tobytes() == o2[k].tobytes() for k in o1)
    assert env.engine.log == clone.engine.log


@pytest.mark.parametrize("scenario", ["tiny", "hadar-philly"])
def test_mask_without_observations_matches_the_reference(scenario: str) -> None:
    env = GPUClusterEnv(scenario, observation="none")
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(200):
        mask, _ = _from_scratch(env)
        got = env.action_masks()
        assert np.array_equal(got, mask)
        _, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(got))))
        if term or trunc:
            env.reset()


@pytest.mark.parametrize("observation", ["dict", "none"])
def test_mask_and_observation_computed_once_per_decision_point(observation: str) -> None:
    """One kernel run per decision point: with an observation, reset and every step run it once (mask and
    observation together), and the mask read again at that point (``action_masks``, the step's own check) is
    not recomputed; without, the mask is computed when first asked for at a point, and only then."""
    env = GPUClusterEnv("castor-philly", observation=observation)
    calls: list[bool] = []
    run = env.point.run_kernel
    env.point.run_kernel = lambda obs: (calls.append(obs), run(obs))[-1]  # type: ignore[method-assign]
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    for _ in range(60):
        before = len(calls)
        m1, m2 = env.action_masks(), env.action_masks()
        assert np.array_equal(m1, m2)
        env.step(int(rng.choice(np.flatnonzero(m1))))
        if observation == "dict":
            assert calls[before:] == [True]
        else:
            assert calls[before:] == [False]
    assert len(calls) == 60 + (observation == "dict")  # and the reset's run with an observation
