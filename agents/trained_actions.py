"""The action kinds a model was trained on, recorded in ``meta.json["trained_actions"]`` and enforced at play
time, so a model does only what its training masks ever allowed.

A kind its training never offered (``squeeze``/``swell`` on scenarios that do not calibrate MPS shares, ``fork``
where there are no rounds) has untrained scores: on a scenario that offers it, the network's argmax may pick it
at every instant (measured: a network trained on castor-philly chose ``squeeze`` and ``swell`` 1,362 times in the
first 1,500 decisions of gimbal-philly and never finished the episode; ``docs/history/rl.md``). :class:`RLPolicy`
(:mod:`.policies`) masks such kinds; a model without the record (trained before it) plays as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpucluster_env.env.codec import COLOCATE, FORK, PLACE, PREEMPT, SHARE, SQUEEZE, SWELL, WAIT

KIND_NAMES = {WAIT: "wait", PLACE: "place", COLOCATE: "colocate", SQUEEZE: "squeeze", SWELL: "swell",
              PREEMPT: "preempt", FORK: "fork", SHARE: "share"}
"""The name of each kind of action int (:data:`gpucluster_env.env.codec.WAIT` ...), as meta.json records it."""


def action_kinds(env: Any) -> list[str | None]:
    """The kind name of each int action of ``env``'s own space (the ``sets`` view's ints included; None for an
    int of the view that stands for no action of the layout)."""
    u = env.unwrapped
    kinds: list[str | None] = [None] * int(u.action_space.n)
    for a, row in enumerate(u.codec.table):
        v = u.to_view_action(a)
        if v is not None:
            kinds[v] = KIND_NAMES[int(row[0])]
    return kinds


def seen_kinds(env: Any, masks: np.ndarray) -> list[str]:
    """The kinds of the actions any of ``masks`` (rows of ``env``'s action masks, or their union) allowed,
    sorted by name."""
    union = np.asarray(masks, dtype=bool).reshape(-1, int(env.unwrapped.action_space.n)).any(0)
    kinds = action_kinds(env)
    return sorted({kinds[a] for a in np.flatnonzero(union) if kinds[a] is not None})


def trained_mask(env: Any, trained: list[str]) -> np.ndarray:
    """Which of ``env``'s int actions are of a kind in ``trained`` (``wait`` always: an agent may always let
    time run)."""
    allowed = set(trained) | {"wait"}
    return np.array([k in allowed for k in action_kinds(env)], dtype=bool)
