"""Shortcuts of one environment step, compared with the plain path on real runs: a step whose ``info`` nobody
reads (``full_info=False``, what :func:`run_episode` sets without a wrapper) and the engine's named-GPU checks
over a tuple of ints (``ActionChecks.gpu_list`` against ``check_gpus``), and the
rows that run as granted read from the copies and counts (``ClusterView.runs_as``) against the slots."""

from __future__ import annotations

import numpy as np
import pytest

from gpucluster_env.engine import ActionError, Squeeze
from gpucluster_env.env import GPUClusterEnv
from gpucluster_env.policy import make_policy, run_episode

SCENARIO_OPTIONS = {"num_jobs": 60}


def _play(env: GPUClusterEnv, policy: str) -> list[tuple]:
    """Every step's (action, reward, terminated, truncated) and the last info, with ``policy`` acting."""
    pol = make_policy(policy)
    obs, _ = env.reset(seed=1)
    pol.reset(env)
    out: list[tuple] = []
    done = False
    while not done:
        acts = pol.act(obs, env) or []
        for a in acts if isinstance(acts, list) else [acts]:
            obs, r, term, trunc, info = env.step(a)
            out.append((repr(a), r, term, trunc))
            done = term or trunc
            if done:
                break
        if isinstance(acts, list) and not acts:
            obs, r, term, trunc, info = env.step(0)
            out.append(("wait", r, term, trunc))
            done = term or trunc
    out.append(info)
    return out


@pytest.mark.parametrize(("scenario", "policy"), [("gimbal-philly", "gavel+gimbal"), ("hadar-philly", "gavel")])
def test_lean_info_gives_the_same_episode(scenario: str, policy: str) -> None:
    lean = GPUClusterEnv(scenario, scenario_options=SCENARIO_OPTIONS, observation="none")
    lean.full_info = False
    full = GPUClusterEnv(scenario, scenario_options=SCENARIO_OPTIONS, observation="none")
    a, b = _play(lean, policy), _play(full, policy)
    assert len(a) > 50 and repr(a) == repr(b)  # every step's reward and ends, the whole last info (NaNs too)
    assert "metrics" in a[-1] and lean.engine.log == full.engine.log


def test_run_episode_result_with_and_without_a_wrapper() -> None:
    plain = run_episode("gimbal-philly", "gavel+gimbal", 2, scenario_options=SCENARIO_OPTIONS)
    wrapped = run_episode("gimbal-philly", "gavel+gimbal", 2, scenario_options=SCENARIO_OPTIONS,
                          wrap=lambda env, pol: env)
    plain.pop("wall_s")
    wrapped.pop("wall_s")
    assert plain == wrapped and plain["steps"] > 50


def test_gpu_list_matches_check_gpus() -> None:
    env = GPUClusterEnv("gimbal-philly", observation="none")
    env.reset(seed=0)
    checks = env.engine.checks
    n = env.engine.num_gpus
    rng = np.random.default_rng(0)
    cases: list = [(), (0,), (n - 1,), (n,), (-1,), (1, 1), (3, 0, 2), (0, True), (1.0,), np.array([2, 1])]
    cases += [tuple(int(x) for x in rng.integers(-2, n + 2, rng.integers(1, 5))) for _ in range(300)]
    for gpus in cases:
        act = Squeeze(0, gpus)
        try:
            want: list[int] | str = checks.check_gpus(act, gpus).tolist()
        except ActionError as e:
            want = str(e)
        try:
            got: list[int] | str = checks.gpu_list(act, gpus)
        except ActionError as e:
            got = str(e)
        assert got == want, gpus


def _slot_pass(view) -> dict[int, int]:  # noqa: ANN001
    """``alone_types`` by a pass over every GPU's slots in GPU order (what the engine did before it read the
    running jobs' copies): the reference for its answer and for its order."""
    out: dict[int, int] = {}
    sj = view._st.slot_job
    for j0, j1, t in zip(sj[:, 0].tolist(), sj[:, 1].tolist(), view.gpu_type.tolist(), strict=True):
        if j0 < 0:
            continue
        if j1 >= 0:
            out[j0] = out[j1] = -1
        elif out.setdefault(j0, t) != t:
            out[j0] = -1
    return {j: t for j, t in out.items() if view.is_running(j)}


def _runs_as_by_slots(view, rows: list[tuple[tuple[int, ...], int]]) -> list[bool]:  # noqa: ANN001
    """``runs_as`` from a pass over every GPU's slots: a job alone on one type (:func:`_slot_pass`), or a pair
    whose two jobs hold the same GPUs, all of the type asked."""
    alone = _slot_pass(view)
    held: dict[int, set[int]] = {}
    for x, (j0, j1) in enumerate(view._st.slot_job.tolist()):
        for j in (j0, j1):
            if j >= 0:
                held.setdefault(j, set()).add(x)
    gt = view.gpu_type.tolist()
    out = []
    for key, k in rows:
        if len(key) == 1:
            out.append(alone.get(key[0], -1) == k)
            continue
        gi, gj = held.get(key[0]), held.get(key[1])
        out.append(bool(gi) and gi == gj and all(gt[x] == k for x in gi) and view.is_running(key[0])
                   and view.is_running(key[1]))
    return out


@pytest.mark.parametrize(("scenario", "policy"), [("hadar-philly", "gavel"), ("castor-philly", "gavel-packed"),
                                                  ("gavel-hetero", "gavel-packed")])
def test_runs_as_is_the_slots_answer(monkeypatch: pytest.MonkeyPatch, scenario: str, policy: str) -> None:
    """``ClusterView.runs_as`` (read from the jobs' copies and counts) gives, at every round of a real Gavel run,
    for the round's grants and for every running job and pair of partners on each type, what a fresh pass over
    the slots gives; and ``alone_types`` agrees with the same pass, in its order."""
    from gpucluster_env.engine.view import ClusterView

    fast = ClusterView.runs_as
    calls = {"n": 0, "kept": 0}

    def checked(view: ClusterView, rows: list[tuple[tuple[int, ...], int]]) -> list[bool]:
        got = fast(view, rows)
        assert got == _runs_as_by_slots(view, rows)
        run = view.running_jobs().tolist()
        pairs = [(j, p) for j in run for p in view.partners_of(j)]
        every = [((j,), k) for j in run for k in range(len(view.type_names))]
        every += [(p, k) for p in pairs for k in range(len(view.type_names))]
        assert fast(view, every) == _runs_as_by_slots(view, every)
        assert list(view.alone_types().items()) == list(_slot_pass(view).items())
        calls["n"] += 1
        calls["kept"] += sum(got)
        return got

    monkeypatch.setattr(ClusterView, "runs_as", checked)
    run_episode(scenario, policy, 0, scenario_options=SCENARIO_OPTIONS)
    assert calls["n"] > 20 and calls["kept"] > 0
