"""The Ray backend of a board run (``--backend ray``): cells as Ray tasks on a local instance (listening on the
loopback address only) or on a running cluster (``--address``, checked to answer within seconds first)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpucluster_env.leaderboard.board import Cell
from gpucluster_env.leaderboard.cells import cell_failure, run_cell


def _worker_path() -> str:
    """``PYTHONPATH`` for Ray's workers: the current folder (where a ``module:Class`` policy's file is) before
    what the caller had."""
    import os

    return os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH", "")) if p)


def _init_ray(ray: Any, kwargs: dict[str, Any], local: bool) -> None:
    """``ray.init`` with one-line errors (a start time-out under load, a refused connection). A ``local``
    instance listens on the loopback address only, never on the machine's interfaces: Ray picks its node
    address through ``ENABLE_RAY_CLUSTER`` (off: the loopback, as on a laptop), set off for the start alone.
    tests/leaderboard/test_leaderboard_run.py checks the address, so a Ray that changes this fails there."""
    from ray._private import ray_constants

    before = ray_constants.ENABLE_RAY_CLUSTER
    if local:
        ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        ray.init(**kwargs)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"--backend ray: Ray did not start ({type(e).__name__}: {first[:200]})") from None
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before


RAY_CONNECT_TIMEOUT_S = 5.0
"""How long ``--address HOST:PORT`` may take to accept a connection before the run says nobody answers."""


def check_reachable(address: str) -> None:
    """A one-line ``ValueError`` when nothing accepts a TCP connection at ``address`` (``HOST:PORT`` or
    ``ray://HOST:PORT``) within :data:`RAY_CONNECT_TIMEOUT_S`, instead of Ray's own wait of minutes; ``auto``
    (Ray finds a running local instance) is left to Ray."""
    import socket

    if address == "auto":
        return
    hostport = address.split("://", 1)[-1]
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"--address {address!r}: expected HOST:PORT, ray://HOST:PORT or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise ValueError(f"--address {address}: nothing answers there ({e.strerror or e}); is the Ray head "
                         "running (ray start --head)?") from None


def ray_cells(todo: list[Cell], workers: int, address: str | None) -> Iterator[tuple[Cell, dict[str, Any]]]:
    try:
        import ray
    except ImportError:
        raise ValueError("--backend ray needs Ray: pip install 'gpucluster-env[ray]'") from None
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "runtime_env": {"env_vars": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                                                              # a user's module:Class policies from here
                                                              "PYTHONPATH": _worker_path()}}}
        if address:
            check_reachable(address)
            kwargs["address"] = address
        else:
            kwargs["num_cpus"] = workers
        _init_ray(ray, kwargs, local=not address)
    remote = ray.remote(num_cpus=1)(run_cell)
    pending = {remote.remote(c): c for c in todo}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                cell = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as e:
                    raise cell_failure(cell, getattr(e, "cause", None) or e) from e
                yield cell, result
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
