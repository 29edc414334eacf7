"""The job-centric decision process (gpucluster_env/<Scenario>Jobs-v1): checkers, determinism, no forced waits as
steps, the return as the episode's JCT, features declared once, and one engine with the full vocabulary."""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpucluster_env
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.env.job_features import CONTEXT_FEATURES, JOB_FEATURES, default_features
from gpucluster_env.env.jobs_env import JobsEnv, JobsView
from gpucluster_env.policy import Policy, run_episode

JOB_IDS = [i for i in gpucluster_env.JOBS_ENV_IDS if not i.endswith("PhillyScaleJobs-v1")]


def test_one_job_id_per_scenario_registered():
    from gpucluster_env.scenarios import SCENARIOS

    assert len(gpucluster_env.JOBS_ENV_IDS) == len(SCENARIOS) + 1  # the generic one first
    assert gpucluster_env.jobs_env_id("castor-philly") == "gpucluster_env/CastorPhillyJobs-v1"
    assert all(i in gym.registry for i in gpucluster_env.JOBS_ENV_IDS)


@pytest.mark.parametrize("env_id", JOB_IDS)
def test_checkers_pass_on_every_job_id(env_id):
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    env = gym.make(env_id, render_mode="rgb_array")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=False)
        sb3_check(gym.make(env_id).unwrapped, warn=True, skip_render_check=True)
    env.close()


def _random_play(env: JobsEnv, seed: int) -> tuple[list[tuple], dict]:
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    out = []
    while True:
        mask = env.action_masks()
        assert mask[1:].any(), "a step is only asked where some job action is legal"
        a = int(rng.choice(np.flatnonzero(mask)))
        obs, r, term, trunc, info = env.step(a)
        out.append((a, r, obs["jobs"].copy(), obs["context"].copy(), info["time_s"]))
        if term or trunc:
            return out, info


def test_same_seed_same_episode_and_pickles_mid_episode():
    a, ia = _random_play(JobsEnv("tiny"), 5)
    b, ib = _random_play(JobsEnv("tiny"), 5)
    assert len(a) == len(b) and ia["metrics"]["avg_jct_s"] == ib["metrics"]["avg_jct_s"]
    for x, y in zip(a, b, strict=True):
        assert x[0] == y[0] and x[1] == y[1] and np.array_equal(x[2], y[2]) and np.array_equal(x[3], y[3])
    env = JobsEnv("tiny")
    env.reset(seed=2)
    for _ in range(15):
        env.step(int(np.flatnonzero(env.action_masks())[-1]))
    twin = pickle.loads(pickle.dumps(env))
    for _ in range(20):
        a = int(np.flatnonzero(env.action_masks())[-1])
        o1, r1, *_ = env.step(a)
        o2, r2, *_ = twin.step(a)
        assert r1 == r2 and all(np.array_equal(o1[k], o2[k]) for k in o1)


def test_return_is_minus_total_jct_over_solo_time_and_steps_grow_with_jobs():
    env = JobsEnv("tiny")
    steps, info = _random_play(env, 0)
    eng = env.engine
    jct = eng.finish_t - eng.submit
    total = sum(s[1] for s in steps)
    assert total == pytest.approx(-jct.sum() / eng.solo_time.sum(), rel=1e-9)
    # every step starts or preempts a job, or is a decision point with a choice: a few per job, no forced waits
    assert len(steps) < 12 * eng.n_jobs
    assert info["metrics"]["jobs_done"] == eng.n_jobs


def test_nothing_more_now_runs_the_clock_and_dt_is_reported():
    env = JobsEnv("tiny")
    env.reset(seed=1)
    t0 = env.engine.now
    _, _, term, _, info = env.step(0)
    assert term or env.engine.now > t0
    assert info["dt"] == pytest.approx(env.engine.now - t0)


def test_masked_action_counts_or_raises():
    env = JobsEnv("tiny", invalid_action="raise")
    env.reset(seed=0)
    off = np.flatnonzero(~env.action_masks())
    with pytest.raises(ValueError, match="masked out"):
        env.step(int(off[0]))
    with pytest.raises(ValueError, match="action must be an int"):
        env.step(1.5)
    soft = JobsEnv("tiny")
    soft.reset(seed=0)
    _, _, _, _, info = soft.step(int(np.flatnonzero(~soft.action_masks())[0]))
    assert info["invalid_actions"] == 1


def test_features_declared_once_and_none_constant_on_castor_philly():
    names = [f.name for f in JOB_FEATURES] + [f.name for f in CONTEXT_FEATURES]
    assert len(names) == len(set(names)) and all(f.unit and f.meaning for f in JOB_FEATURES + CONTEXT_FEATURES)
    env = JobsEnv("castor-philly")
    assert env.features == default_features(1, False)
    assert "best_speed" not in env.features[0] and "free_type0" not in env.features[1]
    rows, ctx = [], []
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    for _ in range(400):
        obs, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        valid = obs["job_mask"] > 0
        rows.append(obs["jobs"].reshape(len(valid), -1)[valid])
        ctx.append(obs["context"])
        if term or trunc:
            break
    rows_a, ctx_a = np.concatenate(rows), np.stack(ctx)
    for k, n in enumerate(env.features[0]):
        assert rows_a[:, k].std() > 0, f"job feature {n} is constant"
    for k, n in enumerate(env.features[1]):
        assert ctx_a[:, k].std() > 0, f"context feature {n} is constant"
    hetero = JobsEnv("hadar-philly")
    assert "best_speed" in hetero.features[0] and "free_type2" in hetero.features[1]


def test_a_pinned_feature_list_is_used_and_unknown_names_refused():
    env = JobsEnv("hadar-philly", features=(("pending", "gpus"), ("free_gpus",)))
    obs, _ = env.reset(seed=0)
    assert obs["jobs"].shape == (128,) and obs["job_mask"].shape == (64,) and obs["context"].shape == (1,)
    with pytest.raises(ValueError, match="unknown job feature 'speed'"):
        JobsEnv("tiny", features=(("pending", "speed"), ("free_gpus",)))


class _FirstRow(Policy):
    """Start (or preempt) the job of the first legal row, through the job-centric view of the runner's env."""

    name = "first-row-test"

    def __init__(self) -> None:
        env = JobsEnv("tiny")
        self.view = JobsView(env.view.n_pending, env.view.n_running, *env.features)

    def env_kwargs(self) -> dict:
        return self.view.env_kwargs()

    def act(self, observation, env) -> int:
        ints = self.view.layout_ints(env.unwrapped)
        legal = np.flatnonzero(self.view.mask(env.unwrapped, ints)[1:])
        return int(ints[1 + legal[0]]) if len(legal) else 0


def test_the_runner_plays_the_same_episode_through_the_full_vocabulary():
    env = JobsEnv("tiny")
    env.reset(seed=3)
    while True:
        legal = np.flatnonzero(env.action_masks()[1:])
        _, _, term, trunc, info = env.step(int(1 + legal[0]) if len(legal) else 0)
        if term or trunc:
            break
    # JobsEnv seeds its wrapped env from its own generator; the runner's env is seeded directly
    wrapped_seed = int(gym.utils.seeding.np_random(3)[0].integers(0, 2**31 - 1))
    res = run_episode("tiny", _FirstRow(), seed=wrapped_seed)
    assert res["avg_jct_s"] == info["metrics"]["avg_jct_s"] and res["jobs_done"] == env.engine.n_jobs


def test_view_kwargs_make_a_plain_env():
    view = JobsView(8, 4, ("pending",), ("free_gpus",))
    env = GPUClusterEnv("tiny", **view.env_kwargs())
    env.reset(seed=0)
    assert view.mask(env)[1] and not view.mask(env)[0] and view.observe(env, view.mask(env))["jobs"].shape == (12,)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), n_running=st.sampled_from([0, 4, 32]))
def test_invariants_under_random_play(seed, n_running):
    env = JobsEnv("tiny", scenario_options={"num_jobs": 20}, n_running=n_running)
    _, info = _random_play(env, seed)
    eng = env.engine
    assert info["metrics"]["jobs_done"] == eng.n_jobs  # each job done once
    assert np.all(eng.finish_t - eng.submit >= eng.solo_time * (1 - 1e-9))  # JCT >= solo time on the fastest type
    if n_running == 0:
        assert eng.counts["preemptions"] == 0


def test_an_agent_cannot_end_an_episode_by_idling():
    """'Nothing more now' every step: the last jobs must still be started (an idle cluster with nothing ahead
    masks it), so the episode ends with every job done, never cut as stalled."""
    env = JobsEnv("tiny", work_conserving=False)
    env.reset(seed=0)
    while True:
        mask = env.action_masks()
        _, _, term, trunc, info = env.step(0 if mask[0] else int(np.flatnonzero(mask)[0]))
        if term or trunc:
            break
    assert term and not trunc and info["metrics"]["jobs_done"] == env.engine.n_jobs


def test_work_conserving_by_default():
    """'Nothing more now' is legal exactly where no pending row can start (the default), and anywhere but an idle
    cluster with nothing ahead without it."""
    for wc in (True, False):
        env = JobsEnv("tiny", work_conserving=wc)
        env.reset(seed=4)
        rng = np.random.default_rng(0)
        seen = set()
        while True:
            m = env.action_masks()
            can_start = m[1:1 + env.view.n_pending].any()
            if wc:
                assert m[0] == (not can_start)
            seen.add((bool(m[0]), bool(can_start)))
            _, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(m))))
            if term or trunc:
                break
        assert ((True, True) in seen) == (not wc)


def test_docs_list_the_features_as_declared():
    from pathlib import Path

    from gpucluster_env.env.job_features import features_markdown

    doc = (Path(__file__).resolve().parents[2] / "docs" / "rl.md").read_text()
    assert features_markdown() in doc, "docs/rl.md's feature tables differ from job_features.py (features_markdown())"


def test_pace_reads_the_rate_where_a_job_runs_and_the_type_a_pending_job_would_get():
    """``pace`` (opt-in): a running job's rate over its best solo rate; a pending job's speed on the fastest type
    with room for it now over its fastest type's, 0 where no type has room."""
    from gpucluster_env.env.job_features import default_features

    job, ctx = default_features(3, False)
    assert "pace" not in job  # opt-in: no registered id's default observation changes
    env = JobsEnv("tiny", features=(job + ("pace",), ctx))
    rng = np.random.default_rng(3)
    env.reset(seed=3)
    checked_run = checked_pend = 0
    for _ in range(150):
        obs, _, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if term or trunc:
            break
        eng, u = env.engine, env.wrapped
        pend, run = list(u.pending_window), list(u.running_window)[:env.view.n_running]
        pace = obs["jobs"].reshape(env.view.rows, -1)[:, -1]
        for k, j in enumerate(pend):
            free = eng.type_total - eng.busy_t
            room = [t for t in eng.type_order(j) if eng.fits_type[j, t] and free[t] >= eng.req_gpus[j]]
            speeds = eng.speed_mt[eng.job_model[j]]
            want = speeds[room[0]] / speeds.max() if room else 0.0
            assert pace[k] == pytest.approx(want, abs=1e-6)
            checked_pend += 1
        for k, j in enumerate(run):
            want = eng.rate[j] * eng.solo_time[j] / eng.iterations[j]
            assert pace[env.view.n_pending + k] == pytest.approx(min(want, 1.0), abs=1e-5)
            assert want <= 1.0 + 1e-9  # no job runs faster than alone on its fastest type
            checked_run += 1
    assert checked_run > 50 and checked_pend > 50


@pytest.mark.parametrize("rule", ["queued", "blocked"])
def test_preempt_when_leaves_only_slow_jobs_preemptible_where_no_start_needs_room(rule: str) -> None:
    """``preempt_when="queued"``: where no job is pending, a running row's preemption is legal only where its job
    runs below its solo rate on its fastest type; ``"blocked"``: the same wherever every pending row can start
    now. Elsewhere the mask is the default one. Played by a policy that never preempts, the episode is the
    default view's with fewer decision points (those where only a preemption of a full-pace job was legal are
    skipped)."""

    def play(**kw: str) -> tuple[int, float, int, int]:
        env = JobsEnv("tiny", **kw)
        plain = JobsEnv("tiny").view
        env.reset(seed=5)
        restricted = unrestricted = steps = 0
        while True:
            u, eng = env.wrapped, env.engine
            mask, default = env.action_masks(), plain.mask(u)
            run = np.asarray(u.running_window[:env.view.n_running], dtype=int)
            rows = slice(1 + env.view.n_pending, 1 + env.view.n_pending + len(run))
            n_p = len(u.pending_window)
            free = n_p == 0 if rule == "queued" else bool(default[1:1 + n_p].all())
            if not kw or not free:
                assert (mask == default).all()
                unrestricted += bool(n_p) and bool(len(run))
            else:
                pace = eng.rate[run] * eng.solo_time[run] / np.maximum(eng.iterations[run], 1.0)
                assert (mask[rows] == (default[rows] & (pace < 1.0 - 1e-9))).all()
                restricted += int((default[rows] & ~mask[rows]).sum())
            starts = np.flatnonzero(mask[1:1 + env.view.n_pending])
            _, _, term, trunc, info = env.step(int(starts[0]) + 1 if len(starts) else 0)
            steps += 1
            if term or trunc:
                return steps, info["metrics"]["avg_jct_s"], restricted, unrestricted

    steps, jct, restricted, unrestricted = play(preempt_when=rule)
    steps_plain, jct_plain, _, _ = play()
    assert jct == jct_plain and steps < steps_plain and unrestricted > 0 and restricted > 0
    with pytest.raises(ValueError, match="preempt_when"):
        JobsEnv("tiny", preempt_when="never")
