"""Reference policies' typed actions expressed in the flat action space: coverage of the action space, and the
demonstrations behaviour cloning learns from.

A typed action of a white-box policy (``Place(j, gpus=...)``, ``Colocate(j, partner, s, gpus=...)``,
``Preempt(j)``) has an *equivalent* int action when an action the mask allows starts the same job the same way
(place on free GPUs; share GPUs with running jobs -- ``share(i)`` in the compact layout, ``colocate(i, r)``
beside the same partner in the full one; preempt the same job). It is *exact* when the rule of that int action
also picks the same GPU set and accumulation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpucluster_env.engine import Action, Colocate, Place, Preempt, Wait


def _slot(window: np.ndarray, job: int) -> int | None:
    hit = np.flatnonzero(window == job)
    return int(hit[0]) if len(hit) else None


def equivalent_action(env: Any, action: Action) -> tuple[int | None, bool]:
    """The int action of ``env`` (at its current state) equivalent to typed ``action`` and whether it is exact
    (same GPUs and accumulation); ``(None, False)`` when no allowed int action is equivalent."""
    env = env.unwrapped
    L, eng = env.layout, env.engine
    mask = env.layout_action_masks()
    if isinstance(action, Wait):
        return 0, True
    if isinstance(action, Place):
        i = _slot(env.pending_window, action.job)
        if i is None:
            return None, False
        col = L.place_width - 1 if action.gpu_type is None else env.codec.type_names.index(action.gpu_type)
        a = L.place_off + i * L.place_width + col
        if not mask[a]:
            return None, False
        exact = action.gpus is None or tuple(int(x) for x in eng.plan_place(
            action.job, None if col == L.place_width - 1 else action.gpu_type)) == tuple(action.gpus)
        return a, exact and action.accumulation is None
    if isinstance(action, Colocate) and L.compact:
        i = _slot(env.pending_window, action.job)
        if i is None or not mask[L.share_off + i]:
            return None, False
        plan = env.codec.share_plan(eng, action.job, env.obs_builder.xi_tab)
        exact = plan is not None and (action.gpus is None or set(plan[1]) == set(action.gpus))
        if exact and action.accumulation is not None:
            exact = eng.accumulation_for(action.job, np.array(plan[1])) == action.accumulation
        return L.share_off + i, exact
    if isinstance(action, Colocate):
        i, r = _slot(env.pending_window, action.job), _slot(env.running_window, action.partner)
        if i is None or r is None:
            return None, False
        a = L.colocate_off + (i * L.n_running + r) * L.n_accum
        if not mask[a]:
            return None, False
        g = eng.plan_colocate(action.job, action.partner)
        exact = g is not None and (action.gpus is None or tuple(int(x) for x in g) == tuple(action.gpus))
        if exact and action.accumulation is not None:
            exact = eng.accumulation_for(action.job, g) == action.accumulation
        return a, exact
    if isinstance(action, Preempt):
        r = _slot(env.running_window, action.job)
        if r is None or not mask[L.preempt_off + r]:
            return None, False
        return L.preempt_off + r, True
    return None, False


def make_expert(spec: str) -> Any:
    """A reference policy from an expert spec: its registered name, optionally with options after colons,
    ``lookahead:horizon_s=1800:candidates=1`` (each value parsed by the option's declared type, as
    ``--policy-option`` does). Lets behaviour cloning use a cheaper setting of an expensive expert. A bad name
    or option is a one-line ``ValueError`` naming the spec."""
    from gpucluster_env.policy import make_policy, option_settings
    from gpucluster_env.settings import SettingError, parse_text

    if spec.startswith("rl:"):
        return make_policy(spec)
    name, *items = spec.split(":")
    try:
        settings = option_settings(name)
        options: dict[str, Any] = {}
        for item in items:
            key, sep, text = item.partition("=")
            if not sep or key not in settings:
                raise SettingError(f"expected KEY=VALUE with KEY one of {', '.join(settings) or 'none'}, "
                                   f"got {item!r}")
            options[key] = parse_text(settings[key][0], text, "option ")
        return make_policy(name, **options)
    except (SettingError, ValueError, TypeError) as e:
        raise ValueError(f"expert {spec!r}: {e}") from None


@dataclass
class Coverage:
    """Counts of a policy's non-wait actions with an equivalent (and an exact) int action, by kind."""

    total: dict[str, int] = field(default_factory=dict)
    equivalent: dict[str, int] = field(default_factory=dict)
    exact: dict[str, int] = field(default_factory=dict)
    decisions: int = 0

    def add(self, kind: str, eq: bool, ex: bool) -> None:
        self.total[kind] = self.total.get(kind, 0) + 1
        self.equivalent[kind] = self.equivalent.get(kind, 0) + int(eq)
        self.exact[kind] = self.exact.get(kind, 0) + int(ex)

    def summary(self) -> dict[str, Any]:
        n = sum(self.total.values())
        return {"decisions": self.decisions, "non_wait": n,
                "equivalent": sum(self.equivalent.values()) / n if n else 1.0,
                "exact": sum(self.exact.values()) / n if n else 1.0,
                "by_kind": {k: {"n": v, "equivalent": self.equivalent[k], "exact": self.exact[k]}
                            for k, v in self.total.items()}}


def play(scenario: str, policy: Any, seed: int, env_kwargs: dict[str, Any] | None = None,
         record: list[list[Any]] | None = None, scenario_options: dict[str, Any] | None = None,
         actor: Any | None = None) -> Coverage:
    """Play reference ``policy`` (a name or object) for one episode and count how many of its actions have an
    equivalent int action. With ``record``, append ``[observation, int action, mask, reward]`` for every
    decision that has one (the demonstrations of behaviour cloning; the reward is the step's).

    By default the policy's own typed actions drive the episode. With ``actor`` (an SB3 model, or any object
    with ``predict(obs, action_masks=..., deterministic=True)``) the actor's int actions drive it and the
    reference policy only labels the states the actor visits (DAgger's relabelling: the demonstrations then
    cover the states a learned policy reaches, not only the expert's)."""
    from gpucluster_env.env import GPUClusterEnv
    from gpucluster_env.registration import max_episode_steps

    pol = make_expert(policy) if isinstance(policy, str) else policy
    kwargs: dict[str, Any] = {"observation": "dict" if record is not None or actor is not None else "none"}
    kwargs.update(pol.env_kwargs())
    kwargs.update(env_kwargs or {})
    env = GPUClusterEnv(scenario, scenario_options=scenario_options, **kwargs)
    obs, _ = env.reset(seed=seed)
    pol.reset(env)
    cov = Coverage()
    limit = max_episode_steps(env.engine.n_jobs, env.engine.config.tick_s)
    while True:
        act = pol.act(obs, env)
        typed = act if not isinstance(act, int | np.integer) else env.decode_action(int(act))
        a, exact = equivalent_action(env, typed)
        if a is not None:
            a = env.to_view_action(a)  # the env's own action space (the 'sets' view maps the layout's ints)
        if not isinstance(typed, Wait):
            cov.add(type(typed).__name__.lower(), a is not None, exact)
        mask = env.action_masks()
        row = [obs, a, mask, 0.0] if record is not None and a is not None else None
        if actor is not None:
            act, _ = actor.predict(obs, action_masks=mask, deterministic=True)
            act = int(act)
        obs, reward, term, trunc, _ = env.step(act)
        if row is not None:
            row[3] = float(reward)
            record.append(row)
        cov.decisions += 1
        if term or trunc or cov.decisions >= limit:
            break
    env.close()
    return cov
