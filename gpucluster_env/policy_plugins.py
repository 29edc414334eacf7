"""A user's own policies, by reference: ``package.module:Class`` wherever a policy name is taken (``run
--policy``, ``leaderboard run --policies``, a board's ``policies``, ``evaluate --baselines``), and installed
plugins through the entry-point group :data:`ENTRY_POINT_GROUP`.

A reference is imported the first time it is named (the current folder is on the import path, so
``mymod:MyPolicy`` finds ``./mymod.py``, in the worker processes of a board too) and registered under the
reference itself, so records and boards name it as the user wrote it. The class may be a :class:`Policy`
subclass or any class whose instances have ``act(observation, env)`` (duck-typed, as :mod:`gpucluster_env.policy`
says a policy is): :func:`as_policy` adapts those. An installed package offers policies by declaring, in its
``pyproject.toml``::

    [project.entry-points."gpucluster_env.policies"]
    my-policy = "my_package.module:MyPolicy"

Neither may take a name the project already registered: a built-in name is refused, not replaced. A policy named
in a record someone sends you is never imported by ``replay --verify`` (the record's actions are replayed as
recorded instead): naming code is not a reason to run it.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import warnings
from typing import Any, ClassVar

from gpucluster_env.policy_base import POLICIES, Policy
from gpucluster_env.settings import SettingError

ENTRY_POINT_GROUP = "gpucluster_env.policies"
"""The entry-point group an installed package declares its policies in (name = ``module:Class``)."""


def is_reference(name: str) -> bool:
    """Whether ``name`` is a ``module:Class`` reference (``rl:DIR`` is a trained model, not a reference)."""
    return ":" in name and not name.startswith("rl:")


def load_reference(spec: str) -> type[Policy]:
    """The policy class ``spec`` (``package.module:Class``) names, imported and registered under ``spec``; a
    one-line ``SettingError`` when the module or class is missing or is not a policy."""
    if spec in POLICIES:
        return POLICIES[spec]
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr or not all(p.isidentifier() for p in [*module_name.split("."), *attr.split(".")]):
        raise SettingError(f"policy {spec!r}: expected package.module:Class")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)  # after the installed packages: a local file never shadows one
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise SettingError(f"policy {spec!r}: cannot import {module_name} ({e})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise SettingError(f"policy {spec!r}: {module_name} has no {attr}")
        obj = getattr(obj, part)
    return _register(spec, as_policy_class(obj, spec))


def load_entry_points() -> None:
    """Register the policies of installed plugins (:data:`ENTRY_POINT_GROUP`); one that cannot be loaded or
    that takes a built-in name is left out with a warning naming it, so one broken plugin breaks no command."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in POLICIES and getattr(POLICIES[ep.name], "_plugin", None) == ep.value:
            continue
        try:
            _register(ep.name, as_policy_class(ep.load(), ep.name), plugin=ep.value)
        except Exception as e:  # a plugin's own import error, a clash: say which and go on
            warnings.warn(f"policy plugin {ep.name!r} ({ep.value}) left out: {str(e).splitlines()[0]}",
                          stacklevel=2)


def as_policy_class(obj: Any, name: str) -> type[Policy]:
    """``obj`` as a :class:`Policy` subclass: itself when it is one, else an adapter around a class whose
    instances have ``act`` (a one-line ``SettingError`` for anything else)."""
    if isinstance(obj, type) and issubclass(obj, Policy):
        return obj
    if not isinstance(obj, type) or not callable(getattr(obj, "act", None)):
        raise SettingError(f"policy {name!r}: {obj!r} is not a policy class (a Policy subclass, or a class "
                           "whose instances have act(observation, env))")
    doc = (obj.__doc__ or "").strip().splitlines()
    return type(f"Adapted{obj.__name__}", (_Adapted,), {
        "inner_class": obj, "name": name, "description": doc[0] if doc else f"{obj.__qualname__} (user policy)",
        "needs_observation": bool(getattr(obj, "needs_observation", True)), "__module__": obj.__module__,
        "__init__": _init_like(obj)})


def _init_like(obj: type) -> Any:
    """A constructor that builds the wrapped ``obj`` and shows ``obj``'s own parameters and annotations, so the
    options of an adapted policy are checked and listed as the user declared them."""
    def __init__(self: _Adapted, *args: Any, **kwargs: Any) -> None:
        self.inner = obj(*args, **kwargs)

    own = obj.__init__
    if own is object.__init__:
        __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)])
        __init__.__annotations__ = {}
    else:
        __init__.__signature__ = inspect.signature(own)  # type: ignore[attr-defined]
        __init__.__annotations__ = dict(getattr(own, "__annotations__", {}))
    __init__.__module__ = obj.__module__  # its annotations resolve in the user's module
    return __init__


def as_policy(obj: Any) -> Policy:
    """A :class:`Policy` for ``obj``: itself, or an adapter around a duck-typed object with ``act``."""
    if isinstance(obj, Policy):
        return obj
    if not callable(getattr(obj, "act", None)):
        raise TypeError(f"policy: expected a Policy, a registered name or an object with act(observation, env), "
                        f"got {type(obj).__name__}")
    cls = as_policy_class(type(obj), getattr(obj, "name", None) or type(obj).__name__)
    pol = cls.__new__(cls)
    pol.inner = obj
    pol.needs_observation = bool(getattr(obj, "needs_observation", True))  # the object's own, where it says
    return pol


class _Adapted(Policy):
    """A duck-typed policy object behind the :class:`Policy` interface: ``act`` is its own; ``reset``,
    ``env_kwargs``, ``step_limit`` and ``episode_stats`` are its own where it has them, else the defaults."""

    inner_class: ClassVar[type] = object
    kind: ClassVar[str] = "user"

    def act(self, observation: Any, env: Any) -> Any:
        return self.inner.act(observation, env)

    @property
    def options(self) -> dict[str, Any]:
        own = getattr(self.inner, "options", None)
        return dict(own) if isinstance(own, dict) else dict(getattr(self, "_options", {}))

    def reset(self, env: Any) -> None:
        if callable(getattr(self.inner, "reset", None)):
            self.inner.reset(env)

    def env_kwargs(self) -> dict[str, Any]:
        own = getattr(self.inner, "env_kwargs", None)
        return dict(own()) if callable(own) else {}

    def step_limit(self, n_jobs: int, tick_s: float | None = None) -> int | None:
        own = getattr(self.inner, "step_limit", None)
        return own(n_jobs, tick_s) if callable(own) else None

    def episode_stats(self) -> dict[str, float]:
        own = getattr(self.inner, "episode_stats", None)
        return dict(own()) if callable(own) else {}


def _register(name: str, cls: type[Policy], plugin: str | None = None) -> type[Policy]:
    """Register ``cls`` under ``name`` unless that name is taken by another class (a one-line
    ``SettingError``: a user's policy never replaces a built-in one)."""
    have = POLICIES.get(name)
    if have is not None and have is not cls:
        raise SettingError(f"policy {name!r} is already registered ({have.__module__}.{have.__qualname__}); "
                           "a plugin cannot replace it: give yours another name")
    if plugin is not None or name != getattr(cls, "name", ""):
        cls = type(cls.__name__, (cls,), {"name": name, "_plugin": plugin, "__module__": cls.__module__,
                                          "__qualname__": cls.__qualname__})
    POLICIES[name] = cls
    return cls
