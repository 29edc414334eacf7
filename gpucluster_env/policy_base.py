"""The :class:`Policy` base class every agent implements, the registry of policies by name
(:data:`POLICIES`, :func:`register_policy`) and the kinds of policy (:data:`POLICY_KINDS`). Below
:mod:`gpucluster_env.policy` (making policies by name, running episodes) and
:mod:`gpucluster_env.policy_plugins` (a user's own policies), which both import it."""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any, ClassVar

from gpucluster_env.engine import Action
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy_options import check_names, check_options

if TYPE_CHECKING:
    from gpucluster_env.scenarios import Scenario

POLICIES: dict[str, type[Policy]] = {}
POLICY_KINDS: dict[str, str] = {
    "heuristic": "a rule from a paper or a classic; reads the cluster through the read-only view",
    "random": "uniformly random among the legal actions (the floor)",
    "search": "searches engine clones at play time (a clairvoyant expert, not a deployable scheduler)",
    "learned from rollouts": "a model fitted to rollouts on engine clones (needs clones to train, none to play)",
    "imitation + RL": "cloned from a heuristic's decisions, then fine-tuned by RL through the gym interface",
    "user": "a user's own policy (package.module:Class or an installed plugin); its author says what it is",
    "RL from scratch": "trained by RL through the gym interface: no expert labels, no imitation, no clones "
                       "mid-episode (its training reward may replay the episode's trace from the start with a "
                       "reference heuristic, as RLScheduler's does)",
}
"""The kinds of policy, as ``gpucluster policies`` and docs/rl.md label them."""


class Policy:
    """Base class of scheduling policies."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    kind: ClassVar[str] = "heuristic"
    """What the policy is, one of :data:`POLICY_KINDS`: every list and table of policies shows it."""
    needs_observation: ClassVar[bool] = False
    """False for white-box agents: the runner then builds the env with ``observation="none"`` (faster)."""

    @property
    def options(self) -> dict[str, Any]:
        """The constructor arguments :func:`make_policy` was given (recorded with each episode's result)."""
        return dict(getattr(self, "_options", {}))

    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for the environment this policy needs (merged under the caller's own
        ``env_kwargs`` by :func:`run_episode`). Default: none, the standard
        world. ``castor-timeslice`` asks for the time-slicing catalog this way."""
        return {}

    _view: ClusterView | None = None
    @classmethod
    def applies_to(cls, scenario: Scenario) -> bool:
        """Whether the policy can act on ``scenario`` (``--policy all`` runs those that can). Default: any;
        a trained model only on clusters with as many GPU types as it was trained on."""
        return True

    @classmethod
    def not_applicable_because(cls, scenario: Scenario) -> str:
        """Why :meth:`applies_to` is false for ``scenario``, in a few words (what ``--policy all`` prints
        for the policies it leaves out)."""
        return "does not apply to this scenario"

    def reset(self, env: Any) -> None:
        """Called after ``env.reset()``, before the first ``act``."""

    def view(self, env: Any) -> ClusterView:
        """The read-only view of ``env``'s cluster (made once per engine)."""
        eng = env.unwrapped.engine
        v = self._view
        if v is None or not v.views(eng):
            v = self._view = ClusterView(eng)
        return v

    def act(self, observation: Any, env: Any) -> Action | int | list[Action]:
        """The action(s) for the current decision point: an int of the env's action space, a typed action,
        or a list of typed actions applied one at a time."""
        raise NotImplementedError

    def step_limit(self, n_jobs: int, tick_s: float | None = None) -> int | None:
        """The most env steps an episode of ``n_jobs`` jobs (``tick_s``: the scenario's calibration tick) may
        take with this policy, or None for no limit of its own. A learned policy takes the registered ids'
        ``max_episode_steps`` (a degenerate model would otherwise play for the runner's whole step budget);
        :func:`run_episode` applies it and names it ``max_episode_steps`` when it stops an episode."""
        return None

    stat_names: ClassVar[tuple[str, ...]] = ()
    """The names :meth:`episode_stats` may return (a board may rank by them; checked before a run)."""

    def episode_stats(self) -> dict[str, float]:
        """Counts of what the policy itself did over the episode, recorded beside the environment's metrics
        (e.g. Gimbal's searches and attempts, for its §7.4 studies). Default: none."""
        return {}


def register_policy(cls: type[Policy]) -> type[Policy]:
    """Class decorator adding a policy to :data:`POLICIES` under ``cls.name``. Its constructor then checks the
    options it is given by their declared settings (:mod:`gpucluster_env.policy_options`), however it is called
    (``make_policy``, a board, or ``Lucid(threshold=5)`` in Python): a bad one is a one-line ``SettingError``
    naming the policy and the option."""
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} has no name")
    have = POLICIES.get(cls.name)
    if have is not None and (have.__module__, have.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"policy name {cls.name!r} is taken by {have.__module__}.{have.__qualname__}; "
                         f"{cls.__module__}.{cls.__qualname__} cannot replace it: give it another name")
    init = getattr(cls.__init__, "__wrapped__", cls.__init__)
    if init is not object.__init__:
        signature = inspect.signature(init)

        @functools.wraps(init)
        def checked_init(self: Policy, *args: Any, **kwargs: Any) -> None:
            try:
                given = signature.bind(self, *args, **kwargs).arguments
            except TypeError:
                check_names(cls, cls.name, kwargs)  # an unknown option: one line naming it
                raise
            given.pop(next(iter(signature.parameters)))
            check_options(cls, cls.name, dict(given), python=True)
            init(self, *args, **kwargs)

        cls.__init__ = checked_init  # type: ignore[method-assign]
    POLICIES[cls.name] = cls
    return cls
