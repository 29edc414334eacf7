"""Actions by name: ActionCodec.encode is the inverse of describe on every layout, and a name another cluster's
layout lacks fails with one line instead of meaning another action."""

from __future__ import annotations

import re

import pytest

from gpucluster_env.env import GPUClusterEnv

PATTERN = re.compile(r"(\w+)\((?:pending|running)\[(\d+)\](?:, (?:running\[(\d+)\], s=(\d+)|([\w-]+)))?\)")


def _parse(name: str) -> dict:
    if name == "wait":
        return {"kind": "wait"}
    m = PATTERN.fullmatch(name)
    assert m, name
    kind, slot, partner, accum, gtype = m.groups()
    out = {"kind": kind, "slot": int(slot)}
    if partner is not None:
        out.update(partner=int(partner), accumulation=int(accum))
    if gtype is not None:
        out["gpu_type"] = None if gtype == "any" else gtype
    return out


@pytest.mark.parametrize("scenario,layout", [("tiny", "compact"), ("tiny", "full"), ("castor-philly", "compact"),
                                             ("hadar-philly", "compact"), ("hadar-philly", "full")])
def test_encode_inverts_describe_on_every_int(scenario, layout):
    env = GPUClusterEnv(scenario, action_layout=layout, n_pending=4, n_running=3)
    for a in range(env.action_space.n):
        assert env.encode_action(**_parse(env.describe_action(a))) == a


def test_names_another_layout_lacks_are_refused():
    tiny = GPUClusterEnv("tiny")
    philly = GPUClusterEnv("castor-philly")
    with pytest.raises(ValueError, match="GPU type 'A6000' is not in this cluster"):
        tiny.encode_action("place", 0, "A6000")
    with pytest.raises(ValueError, match="outside the window"):
        philly.encode_action("preempt", 999)
    with pytest.raises(ValueError, match="unknown action kind 'start'"):
        philly.encode_action("start", 0)
    sets = GPUClusterEnv("hadar-philly", observation="sets")
    a = sets.encode_action("place", 1, sets.engine.type_names[0])
    assert sets.describe_action(a) == f"place(pending[1], {sets.engine.type_names[0]})"
