"""The discrete-event engine: cluster state in arrays, events in a heap, typed actions."""

from .actions import (
    Action,
    ActionError,
    Colocate,
    Fork,
    Place,
    Preempt,
    Squeeze,
    StalledError,
    Swell,
    Wait,
)
from .simulator import DONE, FUTURE, PENDING, RUNNING, ClusterEngine, EngineConfig

__all__ = [
    "Action", "ActionError", "ClusterEngine", "Colocate", "DONE", "EngineConfig", "FUTURE", "Fork", "PENDING",
    "Place", "Preempt", "RUNNING", "Squeeze", "StalledError", "Swell", "Wait",
]
