"""``gpucluster train``: train an RL policy with stable-baselines3 / sb3-contrib (gpucluster_env.agents)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
from typing import Any


def _csv(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _size_curriculum(text: str | None) -> tuple[int, float] | None:
    """``--size-curriculum FIRST:FRACTION`` as a pair (None when not given)."""
    if text is None:
        return None
    first, sep, fraction = text.partition(":")
    try:
        return int(first), float(fraction)
    except ValueError:
        raise ValueError(f"--size-curriculum: expected FIRST:FRACTION (e.g. 60:0.5), got {text!r}") from None


DESCRIPTION = ("Train a policy with stable-baselines3 and save it with its metadata in --out. By default: MaskablePPO "
               "with the job-scoring network on the job-centric decision process, discounted by simulated time, its "
               "reward relative to SRSF on the same trace. See docs/rl.md.")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train an RL policy (MaskablePPO, PPO, A2C, DQN)", description=DESCRIPTION)
    p.add_argument("--algo", default="maskable_ppo", choices=("maskable_ppo", "ppo", "a2c", "dqn"))
    p.add_argument("--process", default="jobs", choices=("jobs", "full"),
                   help="decision process: 'jobs' (pick one job, or nothing more now; the env runs the clock) "
                        "or 'full' (the whole action vocabulary, wait as an action)")
    p.add_argument("--reference", default="srsf",
                   help="'jobs' only: the reward is relative to this heuristic on the same trace (srsf, sjf, "
                        "ssf, fifo), or 'none' for the plain reward")
    p.add_argument("--time-discount", type=float, default=None, metavar="SECONDS",
                   help="'jobs' with maskable_ppo: discount the bootstrap by exp(-dt/SECONDS) of simulated time "
                        "(default: the process's; 0: per-step gamma only)")
    p.add_argument("--input-baseline", action="store_true", help="'jobs', maskable_ppo, --n-envs >= 2: the envs "
                   "play one job table per episode; advantage = return-to-go minus the other envs' mean at the same "
                   "simulated time (Decima's per-time baseline)")
    p.add_argument("--gae-lambda", type=float, default=None, help="GAE lambda (default: the process's)")
    p.add_argument("--scenario", default="castor-philly",
                   help="scenario(s), comma-separated, one per episode (full vocabulary: one number of GPU types)")
    p.add_argument("--windows", default="busiest,random",
                   help="trace windows drawn per episode (curriculum), comma-separated; '' keeps the scenario's")
    p.add_argument("--size-curriculum", default=None, metavar="FIRST:FRACTION",
                   help="'jobs': a curriculum over episode size: episodes of FIRST jobs at the start, growing "
                        "linearly to the scenario's own over the first FRACTION of the steps (e.g. 60:0.5)")
    p.add_argument("--timesteps", type=int, default=None,
                   help="default: the process's (300,000 for 'jobs', 100,000 for 'full')")
    p.add_argument("--out", required=True, help="output directory (model.zip, meta.json, logs/, checkpoints/)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-envs", type=int, default=2, help="environments")
    p.add_argument("--vec", default=None, choices=("subproc", "dummy"),
                   help="environments in subprocesses, or in the training process (faster on 2 cores; the default "
                        "for 'jobs', subproc for 'full')")
    _add_start_args(p)
    p.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="environment keyword for every training and evaluation env (repeatable), "
                        "e.g. pending_order=remaining")
    p.add_argument("--select-seeds", default="",
                   help="validation seeds ('A-B' or a list): after training, the saved model with the lowest "
                        "average JCT on them becomes model.zip (keep them apart from evaluation seeds)")
    p.add_argument("--learning-rate", type=float, default=None, help="default: the process's")
    p.add_argument("--ent-coef", type=float, default=0.003)
    p.add_argument("--gamma", type=float, default=None, help="discount per decision (default: the process's)")
    p.add_argument("--target-kl", type=float, default=None, help="stop an update early past this KL (PPO)")
    p.add_argument("--critic-warmup", type=int, default=0,
                   help="timesteps at the start of PPO during which only the value head learns")
    p.add_argument("--n-steps", type=int, default=1024, help="rollout steps per env between updates")
    p.add_argument("--eval-freq", type=int, default=20_000, help="timesteps between evaluations")
    p.add_argument("--eval-episodes", type=int, default=2, help="evaluation episodes per scenario")
    p.add_argument("--checkpoint-freq", type=int, default=50_000)
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _add_start_args(p: argparse.ArgumentParser) -> None:
    """The options of where a run starts: another model's weights, or cloning an expert first."""
    p.add_argument("--init-model", default=None, metavar="DIR_OR_NAME",
                   help="'jobs' with maskable_ppo: start from this model's weights (a folder written by `gpucluster "
                        "train`, or a shipped model such as rl-scratch); features it lacks start with zero weights, "
                        "so the first policy is that model's; recorded in meta.json")
    p.add_argument("--bc-episodes", type=int, default=0,
                   help="warm start: behaviour-clone this many expert episodes first (MaskablePPO)")
    p.add_argument("--bc-epochs", type=int, default=20)
    p.add_argument("--bc-expert", default="castor",
                   help="reference policy cloned, or one per scenario, comma-separated")
    p.add_argument("--dagger-rounds", type=int, default=0,
                   help="after cloning: rounds in which the policy plays and the expert labels its states")
    p.add_argument("--dagger-episodes", type=int, default=10, help="episodes per DAgger round")
    p.add_argument("--bc-workers", type=int, default=1,
                   help="processes that play the cloning and DAgger episodes (the same labels as one)")
    p.add_argument("--departure-weight", type=float, default=1.0,
                   help="with --env-arg hint=srsf: weight of the cloning labels where the expert departs from "
                        "the hinted action")


TRAIN_RANGES: dict[str, tuple[float, float]] = {
    "timesteps": (1, 1e10), "seed": (0, 2**32 - 1), "n_envs": (1, 256), "bc_episodes": (0, 1e5),
    "bc_epochs": (1, 1e4), "dagger_rounds": (0, 1e3), "dagger_episodes": (1, 1e5), "learning_rate": (1e-12, 1.0),
    "ent_coef": (0.0, 10.0), "gamma": (1e-6, 1.0), "target_kl": (1e-12, 10.0), "critic_warmup": (0, 1e10),
    "n_steps": (1, 1e7), "eval_freq": (1, 1e10), "eval_episodes": (1, 1e4), "checkpoint_freq": (1, 1e10),
    "threads": (1, 1024), "time_discount": (0.0, 1e9), "gae_lambda": (0.0, 1.0),
}
"""The accepted range of each numeric ``train`` argument (inclusive); NaN is never in range."""


def check_train_args(args: argparse.Namespace) -> None:
    """Refuse, in one line naming the flag, a numeric argument out of :data:`TRAIN_RANGES`, an empty ``--out``,
    and behaviour-cloning settings given without ``--bc-episodes`` (they would be ignored)."""
    for key, (low, high) in TRAIN_RANGES.items():
        v = getattr(args, key)
        if v is not None and not (low <= v <= high):  # False for NaN
            raise ValueError(f"--{key.replace('_', '-')} {v}: must be from {low:g} to {high:g}")
    if not args.out:
        raise ValueError("--out '': give the folder to write the model in")
    if os.path.isdir(args.out):
        foreign = sorted(f for f in os.listdir(args.out) if f.endswith(".json") and f != "meta.json")
        if foreign:  # a leaderboard results folder: meta.json there would stop its next `show` as a foreign file
            raise ValueError(f"--out {args.out}: holds {foreign[0]}, not a training folder (a leaderboard's "
                             "results?); train into a new folder")
    if not args.bc_episodes:
        for flag, default in (("bc_epochs", 20), ("bc_expert", "castor")):
            if getattr(args, flag) != default:
                raise ValueError(f"--{flag.replace('_', '-')} goes with --bc-episodes N (behaviour cloning)")


def command_line(args: argparse.Namespace, command: str = "train") -> str:
    """The equivalent ``gpucluster COMMAND`` with every option spelled out (saved in meta.json)."""
    parts = ["gpucluster", command]
    for key, value in vars(args).items():
        if key in ("func", "command"):
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            parts += [flag] if value else []
        elif isinstance(value, list):
            for v in value:
                parts += [flag, shlex.quote(str(v))]
        else:
            parts += [flag, shlex.quote(str(value))]
    return " ".join(parts)


def env_args(pairs: list[str], process: str = "full") -> dict[str, Any]:
    """``KEY=VALUE`` strings as keyword arguments of the process's environment (values read as JSON where they
    parse, else strings)."""
    import inspect

    from gpucluster_env.env import GPUClusterEnv
    from gpucluster_env.env.jobs_env import JobsEnv

    cls = JobsEnv if process == "jobs" else GPUClusterEnv
    known = set(inspect.signature(cls.__init__).parameters) - {"self", "scenario"}
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ValueError(f"--env-arg: expected KEY=VALUE, got {pair!r}")
        if key.strip() not in known:
            raise ValueError(f"--env-arg: unknown environment keyword {key.strip()!r}; "
                             f"known: {', '.join(sorted(known))}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    if process == "full" and out.get("observation", "sets") != "sets":
        raise ValueError(f"--env-arg observation: only 'sets' (the permutation-invariant network on any cluster) "
                         f"may be chosen, got {out['observation']!r}; the algorithm picks 'dict' or 'box' itself")
    return out


def run(args: argparse.Namespace) -> int:
    from gpucluster_env.agents.train import TrainConfig, train
    from gpucluster_env.cli.evaluate_cmd import parse_seeds
    from gpucluster_env.scenarios import get_scenario

    check_train_args(args)
    scenarios = _csv(args.scenario)
    for s in scenarios:
        get_scenario(s)  # fail fast on a bad name
    if args.init_model:
        from gpucluster_env.agents.init_model import resolve

        resolve(args.init_model)  # fail fast on a bad name; the weights are mapped once the network is built
    tuned = {k: v for k, v in (("learning_rate", args.learning_rate), ("gamma", args.gamma),
                               ("gae_lambda", args.gae_lambda)) if v is not None}
    if args.time_discount is not None:
        tuned["time_discount_s"] = args.time_discount or None
    cfg = TrainConfig(
        out=args.out, algo=args.algo, process=args.process, scenarios=scenarios,
        reference=None if args.reference == "none" else args.reference, **tuned, windows=_csv(args.windows) or ("",),
        timesteps=args.timesteps, seed=args.seed, n_envs=args.n_envs, vec=args.vec,
        ent_coef=args.ent_coef, n_steps=args.n_steps, bc_episodes=args.bc_episodes, bc_epochs=args.bc_epochs,
        bc_experts=_csv(args.bc_expert), eval_freq=args.eval_freq, eval_episodes=args.eval_episodes,
        checkpoint_freq=args.checkpoint_freq, threads=args.threads, progress=not args.no_progress,
        select_seeds=tuple(parse_seeds(args.select_seeds)) if args.select_seeds else (),
        target_kl=args.target_kl, critic_warmup=args.critic_warmup,
        dagger_rounds=args.dagger_rounds, dagger_episodes=args.dagger_episodes,
        env_kwargs=env_args(args.env_arg, args.process),
        departure_weight=args.departure_weight, bc_workers=args.bc_workers, input_baseline=args.input_baseline,
        init_model=args.init_model, size_curriculum=_size_curriculum(args.size_curriculum),
    )
    out = train(cfg, command=command_line(args))
    print(training_summary(out, args))
    return 0


def training_summary(out: Any, args: argparse.Namespace) -> str:
    """The closing lines of ``train``: what ran, what was learned (episodes, best evaluation), where the model
    and its companions are, and the next command; read from the run's meta.json."""
    meta = json.loads((out / "meta.json").read_text())
    s = meta.get("summary", {})
    wall = meta.get("wall_s_with_selection", meta["wall_s"])
    lines = [f"trained {meta['algo']} on {args.scenario} for {meta['timesteps']:,} timesteps "
             f"({s.get('episodes', 0):,} training episodes) in {_duration(wall)} "
             f"(learning with its evaluations {_duration(meta.get('learn_s', wall))}; the rest: setting up "
             "environments, behaviour cloning, model selection)"]
    if s.get("recent_train_return") is not None:
        lines.append(f"training: mean return {s['recent_train_return']:.3f} over the last "
                     f"{s['recent_train_episodes']} episode(s)")
    if s.get("evaluations"):
        lines.append(f"evaluation: {s['evaluations']} run(s) of {args.eval_episodes} episode(s) per scenario; "
                     f"best mean return {s['best_eval_return']:.3f} at {s['best_eval_timesteps']:,} timesteps "
                     f"(saved as {out / 'best' / 'best_model.zip'})")
    else:
        lines.append(f"evaluation: none ran (every {args.eval_freq:,} timesteps, --eval-freq; this run had "
                     f"{meta['timesteps']:,})")
    if meta.get("selection"):
        lines.append(f"selection on seeds {args.select_seeds}: model.zip is {meta['selection'].get('chosen', {})}")
    lines.append(f"model: {out / 'model.zip'} (metadata: {out / 'meta.json'}; logs: {out / 'logs'}"
                 + (f"; {s['checkpoints']} checkpoint(s) in {out / 'checkpoints'}" if s.get("checkpoints") else "")
                 + ")")
    lines.append(f"next: gpucluster evaluate --model {out} --scenario {args.scenario.split(',')[0]}")
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    """``75.2`` -> ``1 min 15 s``."""
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s} s" if m else f"{s} s"
