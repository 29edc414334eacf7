"""Trained policies: the train / evaluate / run commands end to end, the shipped model, determinism, masks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from gpucluster_env.agents.policies import SHIPPED_DIR

from gpucluster_env.cli.main import main
from gpucluster_env.policy import make_policy, policy_names, run_episode

SHIPPED_SCENARIOS = ("castor-philly", "sjfbsbf-philly")


class MaskChecked:
    """Wraps a policy; asserts each int action it returns is allowed by the env's mask."""

    def __init__(self, pol):  # noqa: ANN001
        self.pol = pol
        self.checked = 0

    def __getattr__(self, name):  # noqa: ANN001
        return getattr(self.pol, name)

    def act(self, obs, env):  # noqa: ANN001
        a = self.pol.act(obs, env)
        assert env.unwrapped.action_masks()[a], a
        self.checked += 1
        return a


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short MaskablePPO run on tiny through the CLI: behaviour cloning of SRSF and one DAgger round, the
    pending window by remaining work, 2 subprocess envs, evaluation and checkpoint callbacks."""
    out = tmp_path_factory.mktemp("rl") / "run"
    rc = main(["train", "--process", "full", "--scenario", "tiny", "--timesteps", "256", "--n-steps", "64",
               "--out", str(out), "--bc-episodes", "1", "--bc-epochs", "1", "--bc-expert", "srsf",
               "--dagger-rounds", "1",
               "--dagger-episodes", "1", "--env-arg", "pending_order=remaining", "--eval-freq", "128",
               "--eval-episodes", "1", "--checkpoint-freq", "128", "--select-seeds", "0,1", "--critic-warmup", "64",
               "--no-progress", "--windows", ""])
    assert rc == 0
    return out


@pytest.mark.slow
def test_training_writes_model_metadata_logs_and_checkpoints(trained: Path) -> None:
    meta = json.loads((trained / "meta.json").read_text())
    assert meta["algo"] == "maskable_ppo" and meta["timesteps"] >= 256
    assert meta["versions"]["gpucluster-env"] and meta["seeds"]["model"] == 0
    assert meta["env_spec"]["id"] == "gpucluster_env/Tiny-v1"
    bc = meta["behaviour_cloning"]
    assert bc["samples"] > 0 and meta["command"].startswith("gpucluster train")
    assert [h["round"] for h in bc["history"]] == [0, 1] and bc["history"][1]["new_samples"] > 0
    assert bc["samples"] == bc["history"][1]["samples"] > bc["history"][0]["samples"]
    assert 0.0 <= bc["history"][1]["agreement_before_fit"] <= 1.0
    assert meta["env_kwargs"] == {"observation": "dict", "pending_order": "remaining"}
    # the kinds the training masks allowed (tiny neither calibrates shares nor has rounds)
    assert {"wait", "place"} <= set(meta["trained_actions"]) and not {"squeeze", "swell", "fork"} & set(
        meta["trained_actions"])
    assert "--env-arg pending_order=remaining" in meta["command"]
    sel = meta["selection"]
    assert sel["first"] == "bc" and sel["seeds"] == [0, 1]
    assert {"bc", "final", "step 128", "step 256"} <= set(sel["scores"])
    chosen = sel["scores"][sel["chosen"]]
    assert (trained / "model.zip").read_bytes() == (trained / chosen["file"].replace("model.zip", "final_model.zip")
                                                     if chosen["file"] == "model.zip" else
                                                     trained / chosen["file"]).read_bytes()
    # the chosen one is the first candidate or one significantly better than it on the validation episodes
    assert sel["chosen"] == "bc" or chosen["vs_first"]["ci95"][1] < 0
    assert (trained / "model.zip").is_file() and (trained / "bc_model.zip").is_file()
    assert (trained / "final_model.zip").is_file()
    assert (trained / "logs" / "progress.csv").is_file()
    assert any((trained / "checkpoints").iterdir()) and (trained / "best" / "best_model.zip").is_file()


def test_evaluate_and_run_a_trained_model(trained: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["evaluate", "--model", str(trained), "--scenario", "tiny", "--seeds", "0,1",
                 "--baselines", "fifo", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    rows = res["summary"]["tiny"]
    assert set(rows) == {f"rl:{trained}", "fifo"} and len(rows["fifo"]["values"]) == 2
    assert main(["run", "--scenario", "tiny", "--policy", f"rl:{trained}", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["jobs_done"] == run["jobs"]


def test_evaluation_is_deterministic_and_inside_the_mask(trained: Path) -> None:
    pol = MaskChecked(make_policy(f"rl:{trained}"))
    a = run_episode("tiny", pol, 3)
    b = run_episode("tiny", make_policy(f"rl:{trained}"), 3)
    assert pol.checked > 0 and not a["truncated"]
    same = [json.dumps({k: v for k, v in r.items() if k != "wall_s"}, sort_keys=True, default=str) for r in (a, b)]
    assert same[0] == same[1]  # (as JSON: NaN metrics compare equal)


def test_critic_warmup_freezes_the_cloned_policy(tmp_path: Path) -> None:
    import torch
    from gpucluster_env.agents.policies import load_model
    from gpucluster_env.agents.train import TrainConfig, train

    out = train(TrainConfig(out=str(tmp_path / "w"), process="full", scenarios=("tiny",), windows=("",),
                            timesteps=128, n_steps=64, n_envs=1, vec="dummy", bc_episodes=1, bc_epochs=1,
                            critic_warmup=10_000,
                            eval_freq=10_000, progress=False))
    final, _ = load_model(out)
    cloned, _ = load_model(out, "bc_model.zip")
    a, b = final.policy, cloned.policy
    for mod in ("action_net", "mlp_extractor.policy_net"):
        pa, pb = a.get_submodule(mod).state_dict(), b.get_submodule(mod).state_dict()
        assert all(torch.equal(pa[k], pb[k]) for k in pa), mod
    va, vb = a.value_net.state_dict(), b.value_net.state_dict()
    assert not all(torch.equal(va[k], vb[k]) for k in va)  # the critic learned
    assert torch.distributions.Distribution._validate_args  # training restored torch's default


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_flat_variants_train(tmp_path: Path, algo: str) -> None:
    from gpucluster_env.agents.policies import load_model
    from gpucluster_env.agents.train import TrainConfig, train

    out = train(TrainConfig(out=str(tmp_path / algo), algo=algo, process="full", scenarios=("tiny",), timesteps=128,
                            n_steps=64, n_envs=1, vec="dummy", eval_freq=10_000, progress=False))
    model, meta = load_model(out)
    assert meta["env_kwargs"]["observation"] == "box" and model.num_timesteps >= 128
    r = run_episode("tiny", make_policy(f"rl:{out}"), 0)
    assert r["jobs"] > 0


@pytest.mark.parametrize("algo", ["maskable_ppo", "ppo", "a2c"])
def test_job_centric_runs_train_and_play_anywhere(tmp_path: Path, algo: str) -> None:
    """The default process: each algorithm trains on the job-centric env, pins its features in meta.json, and
    the model plays through the common runner on a cluster of another number of GPU types."""
    from gpucluster_env.agents.job_model import JobModelPolicy
    from gpucluster_env.agents.train import TrainConfig, train

    out = train(TrainConfig(out=str(tmp_path / algo), algo=algo, scenarios=("tiny",), windows=("",), timesteps=256,
                            n_steps=64, batch_size=64, n_envs=1, vec="dummy", eval_freq=128, eval_episodes=1,
                            progress=False))
    meta = json.loads((out / "meta.json").read_text())
    assert meta["config"]["process"] == "jobs" and meta["env_kwargs"]["features"][0][0] == "pending"
    pol = make_policy(f"rl:{out}")
    assert isinstance(pol, JobModelPolicy) and pol.kind == "RL from scratch"
    for scenario in ("tiny", "hadar-philly"):
        r = run_episode(scenario, pol, 0, scenario_options={"num_jobs": 30})
        assert r["jobs_done"] == 30 and not r["truncated"]


def test_train_refuses_bad_arguments_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for extra, needle in ((["--env-arg", "foo=1"], "unknown environment keyword 'foo'"),
                          (["--env-arg", "pending_order"], "expected KEY=VALUE"),
                          (["--dagger-rounds", "1"], "give bc_episodes too"),
                          # issue #25's second probe: out of range, or ignored
                          (["--gamma", "2"], "--gamma 2.0: must be from"),
                          (["--learning-rate", "nan"], "--learning-rate nan"),
                          (["--n-envs", "100000"], "--n-envs 100000"),
                          (["--threads", "0"], "--threads 0"),
                          (["--bc-epochs", "3"], "--bc-epochs goes with --bc-episodes"),
                          (["--select-seeds", "0-99999999999"], "--seeds '0-99999999999'"),
                          (["--process", "full", "--bc-episodes", "1", "--bc-expert", "lookahead:depth=2"],
                           "expert 'lookahead:depth=2'"),
                          (["--process", "full", "--bc-episodes", "1", "--bc-expert", "lookahead:candidates=0"],
                           "candidates"),
                          (["--bc-episodes", "1"], "belong to process 'full'"),
                          (["--algo", "dqn"], "DQN has no action masks"),
                          (["--reference", "castor"], "unknown reference 'castor'"),
                          (["--time-discount", "-1"], "--time-discount -1.0")):
        assert main(["train", "--scenario", "tiny", "--out", str(tmp_path / "x"), *extra]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1, err
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "tiny_fifo__s0__0123456789.json").write_text("{}")
    assert main(["train", "--scenario", "tiny", "--out", str(tmp_path / "res")]) == 2
    assert "not a training folder" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == ["tiny_fifo__s0__0123456789.json"]
    for extra, needle in ((["--seeds", "0-99999999999"], "a seed is an integer"), (["--seeds", "1,1"], "twice"),
                          (["--seeds", "5-1"], "A <= B"), (["--metric", "nope"], "not an episode metric")):
        assert main(["evaluate", "--model", "fifo", "--scenario", "tiny", *extra]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1, err


def test_an_expert_spec_carries_options_to_the_labels() -> None:
    """``--bc-expert lookahead:horizon_s=600:candidates=1`` labels with that setting: the same labels as the
    policy made with those options; a plain name is the registered policy."""
    from gpucluster_env.agents.expert import make_expert, play

    pol = make_expert("lookahead:horizon_s=600:candidates=1")
    assert (pol.horizon_s, pol.candidates, pol.rollout) == (600.0, 1, "srsf")
    rows: dict[str, list] = {"spec": [], "made": []}
    play("tiny", "lookahead:horizon_s=600:candidates=1", 3, record=rows["spec"])
    play("tiny", make_policy("lookahead", horizon_s=600.0, candidates=1), 3, record=rows["made"])
    assert [r[1] for r in rows["spec"]] == [r[1] for r in rows["made"]]
    assert make_expert("srsf").name == "srsf"


def test_masks_sent_with_each_step_are_the_envs_own() -> None:
    """MaskablePPO reads masks from the vector env; those sent back with each step's result (and the reset
    state's after an episode ends) must equal each worker env's own ``action_masks()``."""
    from gpucluster_env.agents.train import TrainConfig, make_vec

    for vec_kind in ("dummy", "subproc"):
        vec = make_vec(TrainConfig(out="unused", scenarios=("tiny",), windows=("",), n_envs=2, vec=vec_kind,
                                   progress=False))
        try:
            vec.reset()
            rng = np.random.default_rng(0)
            ends = 0
            for _ in range(400):
                cached = np.stack(vec.env_method("action_masks"))
                direct = np.stack(vec.venv.env_method("action_masks"))
                assert cached.dtype == direct.dtype and (cached == direct).all()
                acts = np.array([rng.choice(np.flatnonzero(m)) for m in cached])
                _, _, dones, _ = vec.step(acts)
                ends += int(dones.sum())
            assert ends > 0  # episodes ended and reset inside the loop
        finally:
            vec.close()


def test_pending_window_by_remaining_work() -> None:
    from gpucluster_env.env import GPUClusterEnv

    env = GPUClusterEnv("tiny", observation="none", pending_order="remaining", n_pending=4)
    env.reset(seed=0)
    eng, seen = env.engine, 0
    for _ in range(200):
        env.action_masks()
        pend = eng.pending_head(eng.num_pending)
        left = eng.solo_time[pend] * eng.remaining[pend] / eng.iterations[pend]
        want = pend[np.argsort(left, kind="stable")[:4]]
        assert env.pending_window.tolist() == want.tolist()
        seen += len(pend) > 4
        _, _, term, trunc, _ = env.step(0)
        if term or trunc:
            break
    assert seen > 0  # the queue was longer than the window at some point
    with pytest.raises(ValueError, match="pending_order"):
        GPUClusterEnv("tiny", pending_order="shortest")


def test_bad_model_directory_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["run", "--policy", f"rl:{tmp_path}"]) == 2
    assert "meta.json" in capsys.readouterr().err


def test_random_and_shipped_policies_are_listed() -> None:
    names = policy_names()
    assert "random" in names and any(n.startswith("rl") for n in names)
    r = run_episode("tiny", "random", 0)
    assert r["jobs_done"] == r["jobs"]


@pytest.mark.parametrize("scenario", SHIPPED_SCENARIOS)
def test_shipped_model_completes_its_scenarios_inside_the_mask(scenario: str) -> None:
    assert (SHIPPED_DIR / "model.zip").is_file()
    pol = MaskChecked(make_policy("rl-castor-philly"))
    r = run_episode(scenario, pol, 0)
    assert not r["truncated"] and r["jobs_done"] == r["jobs"] and pol.checked == r["steps"]


def test_shipped_model_applies_only_to_one_type_clusters() -> None:
    cls = type(make_policy("rl-castor-philly"))
    from gpucluster_env.scenarios import get_scenario

    assert cls.applies_to(get_scenario("castor-philly")) and not cls.applies_to(get_scenario("tiny"))


def test_bench_measures_training_speed() -> None:
    from gpucluster_env.agents.train import measure_train_speed

    assert measure_train_speed(256, n_envs=2, n_steps=64) > 0
    assert np.isfinite(measure_train_speed(128, n_envs=1, n_steps=64, vec="dummy"))


def test_a_model_on_an_env_of_other_shapes_is_one_line_naming_both() -> None:
    """Other GPU types (tiny: 3) or other slots (16 running): a ValueError naming the shapes that differ and
    the sizes behind them, from the Python path (run_episode, or act on one's own env) as from the CLI."""
    from gpucluster_env.env import GPUClusterEnv

    with pytest.raises(ValueError, match=r"^rl-castor-philly cannot run on tiny: .*'cluster' \(4,\) vs \(12,\); "
                                         r"actions 161 vs 209.*trained on 1 GPU type\(s\) .* this env has 3"):
        run_episode("tiny", "rl-castor-philly", 0)
    pol = make_policy("rl-castor-philly")
    env = GPUClusterEnv("castor-philly", n_running=16, pending_order="remaining")
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError, match=r"'running' \(512,\) vs \(256,\).*32 running slots.* with 16 and 16"):
        pol.act(obs, env)
    ok = GPUClusterEnv("castor-philly", pending_order="remaining")
    obs, _ = ok.reset(seed=0)
    assert ok.action_masks()[pol.act(obs, ok)]
