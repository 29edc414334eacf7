"""Independent tasks run in parallel, the same way wherever the work comes from: in this process, in spawned
local processes, or as Ray tasks on a local instance (listening on the loopback address only) or on a running
cluster (``address``, checked to answer within seconds first).

The leaderboard's cells (``leaderboard run --backend ray``), the expert labels of ``train-advantage``, the
training seeds of ``rl-table`` and the episodes of ``evaluate`` (the search expert's included) all go through
:func:`run_tasks`, so a user who outgrows one machine points any of them at a Ray cluster with ``--backend ray
--address HOST:PORT``. Each task is a module-level function of one picklable argument and must be
deterministic: results come back by index, so the caller's output does not depend on the backend, the number
of workers or the order tasks finish in (tests compare local and Ray runs).
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

BACKENDS = ("local", "ray")
MAX_WORKERS = 1024
"""The most parallel tasks a run may ask for (local processes are started only as tasks need them)."""
RAY_CONNECT_TIMEOUT_S = 5.0
"""How long ``--address HOST:PORT`` may take to accept a connection before the run says nobody answers."""


class TaskFailed(Exception):
    """A task raised: ``index`` is its position in the items, ``cause`` what it raised (Ray's wrapper removed)."""

    def __init__(self, index: int, cause: BaseException) -> None:
        super().__init__(f"task {index}: {type(cause).__name__}: {cause}")
        self.index = index
        self.cause = cause


def check_backend(workers: int, backend: str, address: str | None, what: str = "--workers") -> None:
    """One-line ``ValueError``\\ s for a bad combination: workers below 1, an unknown backend, an address without
    Ray, an address nobody answers at (before anything runs)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise ValueError(f"{what} must be at least 1 and at most {MAX_WORKERS}, got {workers!r}")
    if backend not in BACKENDS:
        raise ValueError(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if address is not None and backend != "ray":
        raise ValueError("--address is the Ray cluster's address: it goes with --backend ray")
    if address is not None:
        check_reachable(address)


def check_reachable(address: str) -> None:
    """A one-line ``ValueError`` when nothing accepts a TCP connection at ``address`` (``HOST:PORT`` or
    ``ray://HOST:PORT``) within :data:`RAY_CONNECT_TIMEOUT_S`, instead of Ray's own wait of minutes; ``auto``
    (Ray finds a running local instance) is left to Ray."""
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


def _worker_path() -> str:
    """``PYTHONPATH`` for Ray's workers: the current folder (where a ``module:Class`` policy's file is) before
    what the caller had."""
    return os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH", "")) if p)


def init_ray(workers: int, address: str | None) -> Any:
    """Ray, started (a local instance of ``workers`` CPUs on the loopback address, or connected to ``address``)
    unless it already is; one-line errors for a missing Ray, a start time-out or a refused connection. A local
    instance never listens on the machine's interfaces: Ray picks its node address through
    ``ENABLE_RAY_CLUSTER`` (off: the loopback, as on a laptop), set off for the start alone
    (tests/leaderboard/test_leaderboard_run.py checks the address)."""
    try:
        import ray
    except ImportError:
        raise ValueError("--backend ray needs Ray: pip install 'gpucluster-env[ray]'") from None
    if ray.is_initialized():
        return ray
    from ray._private import ray_constants

    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "runtime_env": {"env_vars": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                                                          # a user's module:Class policies from here
                                                          "PYTHONPATH": _worker_path()}}}
    if address:
        check_reachable(address)
        kwargs["address"] = address
    else:
        kwargs["num_cpus"] = workers
    before = ray_constants.ENABLE_RAY_CLUSTER
    if not address:
        ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        ray.init(**kwargs)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"--backend ray: Ray did not start ({type(e).__name__}: {first[:200]})") from None
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before
    return ray


def one_thread() -> None:
    """One OpenMP thread per worker process: the workers are the parallelism (XGBoost, torch read this at
    import)."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


PR_SET_PDEATHSIG = 1
"""Linux ``prctl`` option: the signal a process gets when its parent dies."""


def _init_worker(parent: int) -> None:
    """Set up a local worker process: one thread, and death with the driving process ``parent``: on Linux the
    kernel sends the worker SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``); elsewhere, and for a
    parent already gone before that took effect, the worker exits at once."""
    one_thread()
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)


def run_tasks(fn: Callable[[Any], Any], items: Sequence[Any], workers: int = 1, backend: str = "local",
              address: str | None = None) -> Iterator[tuple[int, Any]]:
    """``(index, fn(items[index]))`` for every item, as each finishes (in any order): in this process when
    ``workers`` is 1 (local), in ``workers`` spawned processes (not forked: a fork after XGBoost or torch has
    started threads in this process can deadlock; one thread each, and each dies with this process even when it
    is killed with SIGKILL), or as Ray tasks of one CPU each. A task that raises stops the run with
    :class:`TaskFailed` (its index and what it raised); tasks not started are cancelled."""
    if backend == "ray":
        yield from _ray_tasks(fn, items, workers, address)
        return
    if workers <= 1 or len(items) <= 1:
        for i, item in enumerate(items):
            try:
                out = fn(item)
            except Exception as e:
                raise TaskFailed(i, e) from e
            yield i, out
        return
    ex = ProcessPoolExecutor(max_workers=min(workers, len(items)), mp_context=multiprocessing.get_context("spawn"),
                             initializer=_init_worker, initargs=(os.getpid(),))
    try:
        pending = {ex.submit(fn, item): i for i, item in enumerate(items)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                i = pending.pop(f)
                try:
                    out = f.result()
                except Exception as e:
                    raise TaskFailed(i, e) from e
                yield i, out
    finally:
        ex.shutdown(wait=False, cancel_futures=True)


def _ray_tasks(fn: Callable[[Any], Any], items: Sequence[Any], workers: int,
               address: str | None) -> Iterator[tuple[int, Any]]:
    ray = init_ray(workers, address)
    remote = ray.remote(num_cpus=1)(fn)
    pending = {remote.remote(item): i for i, item in enumerate(items)}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                i = pending.pop(ref)
                try:
                    out = ray.get(ref)
                except Exception as e:
                    cause = getattr(e, "cause", None) or e
                    raise TaskFailed(i, cause) from e
                yield i, out
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)


def in_order(results: Iterator[tuple[int, Any]], n: int, each: Callable[[int, Any], None] | None = None) -> list:
    """The ``n`` results of :func:`run_tasks` by index (``each(index, result)`` called as each arrives, for
    progress)."""
    out: list[Any] = [None] * n
    for i, r in results:
        out[i] = r
        if each is not None:
            each(i, r)
    return out
