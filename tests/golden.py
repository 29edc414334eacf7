"""Golden trajectories: hashes of whole episodes, so a refactor of the engine or the environment can prove it
changed no result, bit for bit.

Two families of cases:

* ``env:SCENARIO:SEED[:box]`` -- uniformly random masked actions through :class:`GPUClusterEnv` for a fixed
  number of steps (or to the end): every observation, reward, flag, mask and info, then the engine's event
  log, metrics, job table and sharing benefits.
* ``policy:SCENARIO:POLICY:SEED`` -- a reference policy played to the end through the one runner: the result
  metrics (wall time left out), event log and sharing benefits.

Metrics enter a hash only through :data:`CORE_METRICS`, a fixed set, so a metric added to the engine adds a field
to the results without rewriting every case; the actions, observations, events and job tables pin the rest.

Each case stores the trace note of the run it was recorded on (the real trace or the synthetic stand-in); a
case whose trace differs on this machine (e.g. ``../shared/data`` absent) is skipped, not failed.

The hashes hold on every machine: no result may depend on the BLAS kernel, the thread count or the CPU's vector
units (``test_golden_portable`` replays every case under several OpenBLAS kernels, thread counts and numpy/numba
CPU targets and compares).

Regenerate after an intended change of results (and say why in the commit)::

    .venv/bin/python -m tests.golden --write          # all cases
    .venv/bin/python -m tests.golden --write env:tiny:0
    .venv/bin/python -m tests.golden --hashes [CASE ...]   # print this machine's hashes as JSON
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np

GOLDEN_FILE = Path(__file__).with_name("golden_hashes.json")
CORE_METRICS = ("jobs", "jobs_done", "avg_jct_s", "median_jct_s", "p95_jct_s", "makespan_s", "avg_queue_s",
                "gpu_occupancy", "sm_activity_est", "sharing_utilization", "avg_slowdown", "colocations",
                "preemptions", "forks", "reallocations", "copy_drops", "copy_moves", "squeezes", "swells", "decisions",
                "sharing_benefit", "sharing_benefit_median", "deadline_satisfaction")
"""The metrics a golden case hashes (the engine's of 2026-12-06; gpucluster_env/engine/metric_specs.py). Fixed on
purpose: a new metric is not part of what a trajectory is."""


def core(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` without the keys a golden case does not hash: the engine metrics outside :data:`CORE_METRICS`
    (a result's other keys, a policy's own counts among them, stay)."""
    from gpucluster_env.engine.metric_specs import METRICS

    return {k: v for k, v in metrics.items() if k in CORE_METRICS or k not in METRICS}

ENV_SCENARIOS = ("tiny", "castor-philly", "castor-venus", "sjfbsbf-philly", "gimbal-philly", "gimbal-alibaba",
                 "hadar-philly", "hadare-testbed", "hadare-aws", "alibaba-hetero")
ENV_STEPS = 4000
POLICY_CASES = (
    [("tiny", p, s) for p in ("*",) for s in (0, 1)]
    + [("castor-philly", "*", 0), ("sjfbsbf-philly", "*", 0)]
    + [("hadar-philly", p, 0) for p in ("fifo", "sjf", "tiresias")]
    + [("gimbal-philly", p, 0) for p in ("fifo", "sjf-ffs", "castor")]
    + [("alibaba-hetero", p, 0) for p in ("fifo", "sjf-ffs", "castor")]
)
SEARCH_POLICIES = ("lookahead",)
"""Reference policies that search by rollouts (tens of seconds an episode on the paper scenarios): their golden
cases are on ``tiny`` only (the rollouts run the same engine the other cases pin)."""


def portable_note(note: str) -> str:
    """The trace note without the machine's data folder (``(/any/where/data/traces/x.csv)`` becomes
    ``($DATA/traces/x.csv)``), so a checkout anywhere with the same data gives the same hashes; the package's
    copy of a real trace reads as its source (the same bytes: tests/traces/test_shipped_real.py), so a machine
    with no data folder replays the real-trace cases too."""
    note = re.sub(r"\(the package's copy of (traces/[^,()]+), [^()]*\)", r"($DATA/\1)", note)
    return re.sub(r"\((?:[^()]*/)?data/", "($DATA/", note)


class Hasher:
    """A canonical, type-tolerant hash of nested Python and numpy values: an int and an ``np.int64`` of the same
    value hash alike, floats by their exact bits; arrays by dtype, shape and bytes."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()

    def update(self, v: Any) -> None:
        h = self.h
        if v is None:
            h.update(b"N")
        elif isinstance(v, bool | np.bool_):
            h.update(b"B1" if v else b"B0")
        elif isinstance(v, int | np.integer):
            h.update(b"I" + str(int(v)).encode() + b";")
        elif isinstance(v, float | np.floating):
            f = float(v)
            h.update(b"F" + (b"nan" if math.isnan(f) else struct.pack("<d", f)))
        elif isinstance(v, str):
            b = v.encode()
            h.update(b"S" + str(len(b)).encode() + b":" + b)
        elif isinstance(v, np.ndarray) and v.dtype == object:
            h.update(b"O" + str(v.shape).encode())
            for x in v.ravel().tolist():
                self.update(x)
        elif isinstance(v, np.ndarray):
            a = np.ascontiguousarray(v)
            h.update(b"A" + a.dtype.str.encode() + str(a.shape).encode())
            h.update(a.tobytes())
        elif isinstance(v, dict):
            h.update(b"D" + str(len(v)).encode())
            for k in sorted(v, key=str):
                self.update(str(k))
                self.update(v[k])
        elif isinstance(v, list | tuple):
            h.update(b"L" + str(len(v)).encode())
            for x in v:
                self.update(x)
        else:
            raise TypeError(f"cannot hash {type(v).__name__}: {v!r}")

    def hexdigest(self) -> str:
        return self.h.hexdigest()


def _engine_state(h: Hasher, eng: Any) -> None:
    h.update([list(r) for r in eng.log.records])
    h.update(core(eng.metrics()))
    jt = eng.job_table()
    h.update(list(jt.columns))
    for c in jt.columns:
        h.update(jt[c].to_numpy())
    h.update([list(x) for x in eng.sharing_benefits])


def _portable_info(info: dict[str, Any]) -> dict[str, Any]:
    out = {**info, "trace": portable_note(info["trace"])} if "trace" in info else dict(info)
    if "metrics" in out:
        out["metrics"] = core(out["metrics"])
    return out


def env_case(scenario: str, seed: int, box: bool = False) -> tuple[str, str]:
    """Random masked actions for :data:`ENV_STEPS` steps; returns (hash, trace note)."""
    from gpucluster_env.env import GPUClusterEnv

    env = GPUClusterEnv(scenario, observation="box" if box else "dict", invalid_action="wait")
    rng = np.random.default_rng(1000 + seed)
    h = Hasher()
    obs, info = env.reset(seed=seed)
    h.update(obs)
    h.update(_portable_info(info))
    for _ in range(ENV_STEPS):
        mask = env.action_masks()
        h.update(mask)
        valid = np.flatnonzero(mask)
        a = int(valid[int(rng.integers(len(valid)))])
        obs, r, term, trunc, info = env.step(a)
        h.update([obs, r, term, trunc, _portable_info(info)])
        if term or trunc:
            break
    _engine_state(h, env.engine)
    note = portable_note(env.trace_note)
    env.close()
    return h.hexdigest(), note


def policy_case(scenario: str, policy: str, seed: int) -> tuple[str, str]:
    """A reference policy to the end of the episode; returns (hash, trace note)."""
    from gpucluster_env import policy as runner
    from gpucluster_env.env import GPUClusterEnv

    envs: list[GPUClusterEnv] = []
    orig = GPUClusterEnv.close

    def keep(self: GPUClusterEnv) -> None:  # the runner closes its env; keep it for the hash
        envs.append(self)

    GPUClusterEnv.close = keep  # type: ignore[method-assign]
    try:
        res = runner.run_episode(scenario, policy, seed)
    finally:
        GPUClusterEnv.close = orig  # type: ignore[method-assign]
    h = Hasher()
    res["trace"] = portable_note(res["trace"])
    h.update(core({k: v for k, v in res.items() if k != "wall_s"}))
    _engine_state(h, envs[-1].engine)
    return h.hexdigest(), res["trace"]


def all_cases() -> list[str]:
    from gpucluster_env.policy import policy_names, registered_policies

    # the reference policies of the papers (the random floor and learned models are not golden cases)
    names = [n for n in policy_names() if registered_policies()[n].__module__.startswith("gpucluster_env.baselines")]
    out = [f"env:{s}:{seed}" for s in ENV_SCENARIOS for seed in (0, 1)]
    out += ["env:castor-philly:0:box", "env:hadar-philly:0:box"]
    for sc, pol, seed in POLICY_CASES:
        for p in names if pol == "*" else [pol]:
            if sc == "tiny" or p not in SEARCH_POLICIES:
                out.append(f"policy:{sc}:{p}:{seed}")
    return out


def run_case(case: str) -> tuple[str, str]:
    parts = case.split(":")
    if parts[0] == "env":
        return env_case(parts[1], int(parts[2]), box=len(parts) > 3 and parts[3] == "box")
    if parts[0] == "policy":
        return policy_case(parts[1], parts[2], int(parts[3]))
    raise ValueError(f"unknown golden case {case!r}")


def load() -> dict[str, dict[str, str]]:
    return json.loads(GOLDEN_FILE.read_text()) if GOLDEN_FILE.exists() else {}


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--hashes":  # {case: {hash, trace}} as JSON, for the cross-machine test
        only = argv[1:]
        out = {}
        for c in all_cases():
            if not only or c in only:
                digest, note = run_case(c)
                out[c] = {"hash": digest, "trace": note}
        print(json.dumps(out))
        return 0
    if not argv or argv[0] != "--write":
        print(__doc__)
        return 2
    only = argv[1:]
    data = load()
    for case in all_cases():
        if only and case not in only:
            continue
        digest, note = run_case(case)
        old = data.get(case, {}).get("hash")
        data[case] = {"hash": digest, "trace": note}
        print(f"{'same   ' if old == digest else 'CHANGED' if old else 'new    '} {case}", flush=True)
    GOLDEN_FILE.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
