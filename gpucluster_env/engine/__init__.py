"""The discrete-event engine: cluster state in arrays, events in a heap, typed actions, and the read-only
:class:`ClusterView` white-box agents use (``docs/engine.md`` lists the modules)."""

from .actions import (
    Action,
    ActionError,
    Colocate,
    DropCopy,
    Fork,
    MoveCopy,
    Place,
    Preempt,
    Reallocate,
    SetStealing,
    Squeeze,
    StalledError,
    Swell,
    Wait,
)
from .simulator import DONE, FUTURE, PENDING, RUNNING, ClusterEngine, EngineConfig
from .view import ClusterView

__all__ = [
    "Action", "ActionError", "ClusterEngine", "ClusterView", "Colocate", "DONE", "EngineConfig", "FUTURE", "Fork",
    "PENDING", "Place", "Preempt", "RUNNING", "SetStealing", "Squeeze", "StalledError", "Swell", "Wait",
    "Reallocate", "DropCopy", "MoveCopy",
]
