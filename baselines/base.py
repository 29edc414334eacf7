"""The policy interface every agent implements, and the registry the CLI and leaderboard read.

A policy is an object with ``act(observation, env) -> action``: an int of the env's action space, a typed
action (:mod:`gpucluster_env.engine.actions`) for white-box agents that need an exact GPU set, or a list of
typed actions for the current decision point (the runner hands them to the env one at a time). White-box
agents read the cluster through :meth:`Policy.view` (a read-only
:class:`~gpucluster_env.engine.view.ClusterView`) and change the world only through the actions they return.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from ..engine import Action, Place, Wait
from ..engine.view import ClusterView

if TYPE_CHECKING:
    from ..scenarios import Scenario

POLICIES: dict[str, type[Policy]] = {}


class Policy:
    """Base class of scheduling policies."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    needs_observation: ClassVar[bool] = False
    """False for white-box agents: the runner then builds the env with ``observation="none"`` (faster)."""

    @property
    def options(self) -> dict[str, Any]:
        """The constructor arguments :func:`make_policy` was given (recorded with each episode's result)."""
        return dict(getattr(self, "_options", {}))

    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for the environment this policy needs (merged under the caller's own
        ``env_kwargs`` by :func:`~gpucluster_env.leaderboard.runner.run_episode`). Default: none, the standard
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

    stat_names: ClassVar[tuple[str, ...]] = ()
    """The names :meth:`episode_stats` may return (a board may rank by them; checked before a run)."""

    def episode_stats(self) -> dict[str, float]:
        """Counts of what the policy itself did over the episode, recorded beside the environment's metrics
        (e.g. Gimbal's searches and attempts, for its §7.4 studies). Default: none."""
        return {}


def register_policy(cls: type[Policy]) -> type[Policy]:
    """Class decorator adding a policy to :data:`POLICIES` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} has no name")
    POLICIES[cls.name] = cls
    return cls


def make_policy(name: str, **kwargs: Any) -> Policy:
    """A new policy by registered name, or ``rl:DIR`` for a model trained by ``gpucluster train``."""
    _load_all()
    if name.startswith("rl:"):
        from ..agents.policies import make_rl_policy

        return make_rl_policy(name)
    try:
        cls = POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(sorted(POLICIES))}") from None
    if kwargs:
        import inspect

        init = cls.__init__
        params = [] if init is object.__init__ else [n for n in inspect.signature(init).parameters if n != "self"]
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            raise ValueError(f"policy {name!r}: unknown option(s) {', '.join(unknown)}; "
                             f"its options: {', '.join(params) or 'none'}")
    pol = cls(**kwargs)
    pol._options = dict(kwargs)
    return pol


def policy_names() -> list[str]:
    """Registered policy names, in registration order."""
    _load_all()
    return list(POLICIES)


def _load_all() -> None:
    # Importing the packages registers every reference policy, then the random floor and the shipped RL model.
    from .. import baselines  # noqa: F401
    from ..agents import policies  # noqa: F401


class QueuePolicy(Policy):
    """Exclusive-GPU list scheduling: walk the queue in priority order and start the first job that fits on
    free GPUs; with ``strict`` only the head may start (no backfilling, head-of-line blocking as in FIFO)."""

    strict: ClassVar[bool] = False

    def priority(self, env: Any) -> Callable[[Any], Any] | None:
        """A key over job indices (lower runs first), or None for queue order."""
        return None

    def act(self, observation: Any, env: Any) -> Action | int:
        view = self.view(env)
        if view.num_pending == 0:
            return Wait()
        key = self.priority(env)
        if self.strict and key is None:
            order = view.pending_head(1)
        else:
            order = view.pending_jobs()
            if key is not None:
                order = sorted(order.tolist(), key=key)
            if self.strict:
                order = order[:1]
        for j in order:
            g = view.plan_place(int(j))
            if g is not None:
                return Place(int(j), gpus=tuple(g.tolist()))
        return Wait()
