"""Decima's per-time input-dependent baseline (Mao et al., SIGCOMM 2019; ICLR 2019) for MaskablePPO on the
job-centric process: the ``n_envs`` envs of a run play **the same job table** each episode, and a step's advantage
is its return-to-go minus the mean return-to-go of the *other* envs on that table at the same simulated time.

Why: about two thirds of the return's variance on castor-philly is the job table, not the policy (docs/rl.md).
A critic ``V(s)`` sees the jobs that arrived, never the ones still to come; envs that replay one table share their
future arrivals, so their returns from a moment ``t`` on differ only by what the policies did.

What is computed, for the envs of one group (every env of the run: one group of ``n_envs``):

* **the same table**: :class:`SameTable` gives every member's ``i``-th episode the same reset seed (the ``i``-th
  draw of a generator seeded by the run's seed; the trace windows are drawn from one seed too), so the members'
  ``i``-th episodes have one job table. A member that finishes episode ``i`` before the others *waits* at the
  start of episode ``i + 1`` until all have reached it: its steps meanwhile are **padding** (the env is not stepped,
  reward 0, ``info["input_baseline_pad"]``), left out of the update (:meth:`InputBaselineBuffer.get`) and out of
  the run's timestep count (:class:`GroupSteps`). So the members play each table at about the same time, as
  Decima's agents do.
* **the return-to-go** of each step ``k`` of an episode, ``G_k = r_k + d_k G_{k+1}``, ``d_k = gamma *
  exp(-dt_k / time_discount_s)`` (``gamma`` alone with ``time_discount_s = 0``), the discount of
  :mod:`.time_discount`; the rewards are the env's (relative to SRSF with ``--reference srsf``). A finished episode
  ends in 0; one still running at the rollout's end is bootstrapped by the critic's value of its current state
  (the episode's steps from earlier rollouts are kept, so its curve spans the whole episode).
* **the baseline** of a step taken at simulated time ``t`` (the time at its decision) by member ``j`` on table
  ``i``: ``b_j(t)`` = the mean over the *other* members ``j'`` of ``G_{j', i}(t)``, each curve linearly
  interpolated between its decision times (where several steps share a time, the first one's return-to-go: the
  return from the moment ``t`` was reached), 0 after a finished episode's end. **Leave-one-out**: ``b_j`` does not
  depend on member ``j``'s own actions (the other members sample theirs independently, on the same input), so
  ``G - b_j`` is an unbiased advantage estimate; Decima averages over all agents, itself included, which with
  ``k`` agents scales the advantage by ``(k - 1) / k`` and adds a small bias (PPO's per-batch normalisation
  undoes the scale). The advantage of the step is ``G_{j, i}(t) - b_j(t)``.
* **where no other member's curve reaches ``t``** (at a rollout's end, the member furthest ahead in simulated time
  has steps beyond the others' current time), the step keeps the critic's GAE advantage (:mod:`.time_discount`):
  a state-dependent baseline, also unbiased. The share of steps with the per-time baseline is logged as
  ``input_baseline/covered`` (and the padding as ``input_baseline/padding``).
* the critic's targets (``returns``) stay the GAE lambda-returns, so the value function learns as without this
  option (it serves the bootstraps and the uncovered steps).

Departures from Decima: PPO's clipped updates on 1,024-step rollouts rather than REINFORCE on whole episodes
(hence the bootstraps and the GAE fallback above); leave-one-out rather than the mean over all agents; a group of
``n_envs`` (2 by default) rather than Decima's 16 agents; discounting by simulated time rather than Decima's
differential reward; an episode truncated by a step limit counts as ended (its bootstrap is in its last reward,
as SB3 adds it, and its return-to-go after the cut is taken as 0). The group lives in one process (``vec='dummy'``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gpucluster_env.agents.time_discount import NoteStepTimes, TimeDiscountBuffer
from gpucluster_env.agents.vec_masks import KEY as MASK_KEY

PAD = "input_baseline_pad"
"""``info`` key of a padding step (a member waiting for the group at the start of its next episode)."""
EPISODE = "input_baseline_episode"
"""``info`` key: which of the member's episodes (from 1) a step belongs to."""


# ---------------------------------------------------------------- the arithmetic (pure functions, tested alone)

def returns_to_go(rewards: np.ndarray, discounts: np.ndarray, tail: float = 0.0) -> np.ndarray:
    """``G_k = r_k + d_k G_{k+1}`` over one episode's steps, ``G_n = tail`` (0 for a finished episode, the critic's
    value of the current state for one still running)."""
    out = np.empty(len(rewards), dtype=np.float64)
    g = float(tail)
    for k in range(len(rewards) - 1, -1, -1):
        g = float(rewards[k]) + float(discounts[k]) * g
        out[k] = g
    return out


@dataclass
class Curve:
    """One episode's return-to-go as a function of simulated time: knots ``times`` / ``values``, known up to
    ``until`` (``inf`` for a finished episode, whose return-to-go is 0 after its end)."""

    times: np.ndarray
    values: np.ndarray
    until: float

    def at(self, t: np.ndarray) -> np.ndarray:
        """The return-to-go at times ``t`` (linear between knots); NaN where ``t`` is past ``until``."""
        t = np.asarray(t, dtype=np.float64)
        out = np.interp(t, self.times, self.values)
        return np.where(t <= self.until, out, np.nan)


def episode_curve(times: np.ndarray, dts: np.ndarray, rtg: np.ndarray, finished: bool, tail: float) -> Curve:
    """The :class:`Curve` of an episode whose steps were taken at simulated ``times``, ran ``dts`` seconds and
    have returns-to-go ``rtg``: a knot at each distinct decision time (the first step there), and one at the end
    of the last step (``tail``: 0 when ``finished``, else the bootstrap)."""
    end = float(times[-1] + dts[-1])
    t = np.append(np.asarray(times, dtype=np.float64), end)
    g = np.append(np.asarray(rtg, dtype=np.float64), 0.0 if finished else float(tail))
    t_u, first = np.unique(t, return_index=True)
    return Curve(t_u, g[first], np.inf if finished else end)


def leave_one_out(own: int, curves: dict[int, Curve], times: np.ndarray) -> np.ndarray:
    """``b(t)`` for member ``own`` at ``times``: the mean over the other members' curves (``curves`` by member)
    that reach each time; NaN where none does."""
    cols = [c.at(times) for m, c in curves.items() if m != own]
    if not cols:
        return np.full(len(times), np.nan)
    vals = np.stack(cols)
    seen = ~np.isnan(vals)
    n = seen.sum(0)
    total = np.where(seen, vals, 0.0).sum(0)
    return np.where(n > 0, total / np.maximum(n, 1), np.nan)


# ---------------------------------------------------------------- the group of envs on one table

class GroupMembers:
    """The episode count of each env of one group (shared by its members' :class:`SameTable` wrappers, so the
    members live in one process)."""

    def __init__(self, n: int) -> None:
        self.episodes = [0] * n

    def waiting(self, member: int) -> bool:
        """Whether ``member`` has started an episode that some other member has not reached yet."""
        return min(self.episodes) < self.episodes[member]


class SameTable(gym.Wrapper):
    """Member ``member`` of a group: its ``i``-th episode's reset seed is the ``i``-th draw of a generator seeded
    by ``seed`` (the same in every member, so the members' ``i``-th episodes have one job table, whatever seed
    the vector env passes), and while the group has not caught up with its episode it waits (padding steps)."""

    def __init__(self, env: gym.Env, group: GroupMembers, member: int, seed: int) -> None:
        super().__init__(env)
        self.group, self.member = group, member
        self._rng = np.random.default_rng(seed)
        self._held: tuple[Any, dict[str, Any]] | None = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        kwargs["seed"] = int(self._rng.integers(0, 2**31 - 1))
        obs, info = self.env.reset(**kwargs)
        self.group.episodes[self.member] += 1
        self._held = (obs, info)
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        episode = self.group.episodes[self.member]
        if self.group.waiting(self.member):
            obs, info = self._held
            return obs, 0.0, False, False, {MASK_KEY: info[MASK_KEY], "time_s": info["time_s"], "dt": 0.0,
                                            PAD: True, EPISODE: episode}
        obs, reward, terminated, truncated, info = self.env.step(action)
        info[EPISODE] = episode
        return obs, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


def same_table_vec(cfg: Any) -> Any:
    """The training vector env of a run with ``input_baseline``: its ``n_envs`` envs (as
    :func:`.model_build.make_env` builds them, all with rank 0's trace windows) in one process, one group of
    :class:`SameTable` members seeded by ``cfg.seed``, masks sent with each step."""
    from gpucluster_env.agents.model_build import make_env
    from gpucluster_env.agents.vec_masks import CachedMasks
    from stable_baselines3.common.vec_env import DummyVecEnv

    if cfg.n_envs < 2:
        raise ValueError("input_baseline compares envs on one job table: give n_envs >= 2")
    group = GroupMembers(cfg.n_envs)

    def member(j: int) -> Any:
        return lambda: SameTable(make_env(cfg, 0)(), group, j, cfg.seed)

    vec = DummyVecEnv([member(j) for j in range(cfg.n_envs)])
    vec.seed(cfg.seed)  # SameTable replaces the per-env seeds by the group's
    return CachedMasks(vec)


# ---------------------------------------------------------------- the rollout buffer and its callback

@dataclass
class _Episode:
    """One member's steps on one table, across rollouts."""

    times: list[np.ndarray] = field(default_factory=list)
    dts: list[np.ndarray] = field(default_factory=list)
    rewards: list[np.ndarray] = field(default_factory=list)
    discounts: list[np.ndarray] = field(default_factory=list)
    finished: bool = False

    def add(self, times: np.ndarray, dts: np.ndarray, rewards: np.ndarray, discounts: np.ndarray) -> None:
        for name, arr in (("times", times), ("dts", dts), ("rewards", rewards), ("discounts", discounts)):
            getattr(self, name).append(np.asarray(arr, dtype=np.float64))

    def curve(self, tail: float) -> tuple[np.ndarray, Curve]:
        """The returns-to-go of all its steps and its :class:`Curve` (``tail``: the bootstrap if not finished)."""
        t, dt = np.concatenate(self.times), np.concatenate(self.dts)
        tail = 0.0 if self.finished else tail
        rtg = returns_to_go(np.concatenate(self.rewards), np.concatenate(self.discounts), tail)
        return rtg, episode_curve(t, dt, rtg, self.finished, tail)


class InputBaselineBuffer(TimeDiscountBuffer):
    """MaskablePPO's rollout buffer for :mod:`.input_baseline` (module docstring): GAE discounted by simulated time
    for the critic's targets and the fallback, then each covered step's advantage replaced by its return-to-go
    minus the other members' mean return-to-go at its simulated time; padding steps are never sampled.
    ``tau_s = inf`` for no time discount. Its steps' times, episodes and padding come from :class:`GroupSteps`."""

    def __init__(self, *args: Any, seed: int = 0, **kwargs: Any) -> None:
        self._rng = np.random.default_rng(seed)
        self._episodes: dict[tuple[int, int], _Episode] = {}
        self.covered = self.padding = 0.0
        super().__init__(*args, **kwargs)

    def reset(self) -> None:
        super().reset()
        shape = (self.buffer_size, self.n_envs)
        self.times = np.zeros(shape, dtype=np.float64)
        self.episode_ids = np.zeros(shape, dtype=np.int64)
        self.pads = np.zeros(shape, dtype=bool)
        self.ends = np.zeros(shape, dtype=bool)

    def note_dt(self, infos: list[dict[str, Any]]) -> None:
        """Record the step about to be added: its ``dt``, its decision time, episode, padding and end."""
        super().note_dt(infos)
        if self.pos < self.buffer_size:
            p = self.pos
            for j, info in enumerate(infos):
                self.times[p, j] = float(info.get("time_s", 0.0)) - float(info.get("dt", 0.0))
                self.episode_ids[p, j] = int(info.get(EPISODE, 0))
                self.pads[p, j] = bool(info.get(PAD, False))
                self.ends[p, j] = "terminal_observation" in info

    def compute_returns_and_advantage(self, last_values: Any, dones: np.ndarray) -> None:
        super().compute_returns_and_advantage(last_values, dones)  # GAE: the critic's targets and the fallback
        last = last_values.clone().cpu().numpy().flatten()
        disc = self.gamma * np.exp(-self.dts / self.tau_s)
        mine: dict[tuple[int, int], np.ndarray] = {}
        for j in range(self.n_envs):
            real = np.flatnonzero(~self.pads[:, j])
            for e in dict.fromkeys(self.episode_ids[real, j].tolist()):
                pos = real[self.episode_ids[real, j] == e]
                ep = self._episodes.setdefault((j, e), _Episode())
                ep.add(self.times[pos, j], self.dts[pos, j], self.rewards[pos, j], disc[pos, j])
                ep.finished = bool(self.ends[pos[-1], j])
                mine[(j, e)] = pos
        rtgs: dict[tuple[int, int], np.ndarray] = {}
        curves: dict[int, dict[int, Curve]] = {}
        for (j, e), ep in self._episodes.items():
            rtgs[(j, e)], curves.setdefault(e, {})[j] = ep.curve(float(last[j]))
        covered = 0
        for (j, e), pos in mine.items():
            own = rtgs[(j, e)][-len(pos):]
            base = leave_one_out(j, curves[e], self.times[pos, j])
            ok = ~np.isnan(base)
            self.advantages[pos[ok], j] = own[ok] - base[ok]
            covered += int(ok.sum())
        real_steps = int((~self.pads).sum())
        self.covered = covered / max(real_steps, 1)
        self.padding = float(self.pads.mean())
        done = {e for (_, e) in self._episodes
                if all(self._episodes.get((j, e), _Episode()).finished for j in range(self.n_envs))}
        self._episodes = {k: v for k, v in self._episodes.items() if k[1] not in done}

    def get(self, batch_size: int | None = None) -> Any:
        """Minibatches of the non-padding steps in a random order (from the buffer's own seeded generator)."""
        assert self.full, "the rollout is not complete"
        if not self.generator_ready:
            for key, obs in self.observations.items():
                self.observations[key] = self.swap_and_flatten(obs)
            for name in ("actions", "values", "log_probs", "advantages", "returns", "action_masks"):
                self.__dict__[name] = self.swap_and_flatten(self.__dict__[name])
            self.generator_ready = True
        real = np.flatnonzero(~self.pads.swapaxes(0, 1).reshape(-1))
        order = real[self._rng.permutation(len(real))]
        size = batch_size or len(order)
        for start in range(0, len(order), size):
            yield self._get_samples(order[start:start + size])


class GroupSteps(NoteStepTimes):
    """The callback of a run with ``input_baseline``: hands each step's ``info`` to the
    :class:`InputBaselineBuffer`, takes padding steps off the run's timestep count (they are no environment
    steps), and logs the share of steps with the per-time baseline and of padding at each rollout's end."""

    def _on_step(self) -> bool:
        super()._on_step()
        self.model.num_timesteps -= sum(bool(i.get(PAD, False)) for i in self.locals["infos"])
        return True

    def _on_rollout_end(self) -> None:
        buf = self.model.rollout_buffer
        if isinstance(buf, InputBaselineBuffer):
            self.logger.record("input_baseline/covered", buf.covered)
            self.logger.record("input_baseline/padding", buf.padding)


def install_buffer(model: Any, cfg: Any) -> None:
    """Give ``model`` (MaskablePPO on the job-centric process) an :class:`InputBaselineBuffer` with the run's
    discounts (``time_discount_s``; 0: ``gamma`` per step only) and a generator seeded by the run's seed."""
    tau = cfg.time_discount_s if cfg.time_discount_s else float("inf")
    model.rollout_buffer = InputBaselineBuffer(
        model.n_steps, model.observation_space, model.action_space, device=model.device, gamma=model.gamma,
        gae_lambda=model.gae_lambda, n_envs=model.n_envs, tau_s=tau, seed=cfg.seed)
