"""Gavel's LPs handed to HiGHS directly: the model and options that ``scipy.optimize.linprog(method="highs-ipm")``
(or ``"highs"``) hands it, without the wrapper's per-call work.

On the small LPs of Gavel's rounds scipy's ``linprog`` cost about twice HiGHS' own time (re-checking the same
options at every call, a Python loop over every column for bound multipliers the policies never read); see
docs/performance.md, "Fifth pass". This module builds the same column-wise matrix, the same row and column
bounds (infinite ones as HiGHS' infinity) and the same option values, on a fresh solver per LP, so HiGHS returns
the same bits (checked against ``linprog`` in ``tests/baselines/test_gavel_highs.py``). It uses the HiGHS
bindings that scipy ships (``scipy.optimize._highspy._core``), so the solver is the one ``linprog`` runs.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from gpucluster_env.baselines.parts.gavel_warm import WarmStart

FEASIBILITY_TOL = float(np.sqrt(1e-9) * 10)
"""The tolerance of ``linprog``'s own check of the solution HiGHS returns (bounds and rows), kept here."""

WARM_ROWS_PER_ITERATION, WARM_ITERATIONS_MIN = 4, 50
"""A warm start (:mod:`.gavel_warm`) gives up after ``max(50, rows / 4)`` simplex iterations and the LP is solved
from scratch: from the previous allocation's basis the loaded month's LPs take 0-200 iterations, a cold solve
about one per row, and a rare start that wanders (9,869 iterations on a 1,208-job LP whose cold solve takes
~1,500) would cost more than starting over."""


@cache
def _core() -> Any:
    """scipy's HiGHS bindings, loaded at the first LP from their file: importing them by name would first run
    ``scipy.optimize``'s package (~0.5 s, most of an LP policy's start-up, for nothing it uses). The module is
    registered under its own name, so a later ``import scipy.optimize`` in the process takes this one; where
    the file is not found (another scipy layout) it is imported by name."""
    name = "scipy.optimize._highspy._core"
    if name in sys.modules:
        return sys.modules[name]
    import scipy

    folder = Path(scipy.__file__).parent / "optimize" / "_highspy"
    found = [folder / f"_core{s}" for s in importlib.machinery.EXTENSION_SUFFIXES if (folder / f"_core{s}").exists()]
    spec = importlib.util.spec_from_file_location(name, found[0]) if found else None
    if spec is None or spec.loader is None:
        return importlib.import_module(name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except ImportError:
        del sys.modules[name]
        return importlib.import_module(name)
    return module


@cache
def _options(solver: str | None) -> Any:
    """The options ``linprog`` sets for a HiGHS method (``solver``: "ipm", "simplex" or None for HiGHS' choice):
    presolve on, no output, no debugging, dual simplex strategy; everything else HiGHS' default."""
    h = _core()
    opts = h.HighsOptions()
    opts.presolve = "on"
    if solver is not None:
        opts.solver = solver
    opts.highs_debug_level = h.HighsDebugLevel.kHighsDebugLevelNone
    opts.log_to_console = False
    opts.output_flag = False
    opts.simplex_strategy = h.simplex_constants.SimplexStrategy.kSimplexStrategyDual
    return opts


class Columns(NamedTuple):
    """A sparse matrix column by column, as HiGHS takes it: column ``c``'s rows are ``indices[indptr[c]:indptr[c +
    1]]``, ascending, with values ``data`` (scipy's canonical CSC arrays, without building a scipy array)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]


def columns(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, shape: tuple[int, int]) -> Columns:
    """The matrix with ``vals`` at ``(rows, cols)``, entries at the same place summed: the arrays
    ``scipy.sparse.csc_array(scipy.sparse.csr_array((vals, (rows, cols)), shape))`` holds, for matrices where
    no place is named more than twice (a sum of two terms is the same in either order)."""
    order = np.lexsort((rows, cols))
    r, c, v = rows[order], cols[order], np.asarray(vals, dtype=float)[order]
    new = np.ones(len(r), dtype=bool)
    new[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    starts = np.flatnonzero(new)
    data = np.add.reduceat(v, starts) if len(v) else v
    indptr = np.zeros(shape[1] + 1, dtype=np.int32)
    np.cumsum(np.bincount(c[starts], minlength=shape[1]), out=indptr[1:])
    return Columns(indptr, r[starts].astype(np.int32), data, shape)


def _finite(x: np.ndarray, inf: float) -> np.ndarray:
    """A float copy of ``x`` with infinities as HiGHS' infinity, signs kept (as ``linprog`` passes them)."""
    x = np.array(x, dtype=float)
    bad = np.isinf(x)
    x[bad] = np.sign(x[bad]) * inf
    return x


def _pass_model(h: Any, highs: Any, cost: np.ndarray, a: Any, lhs: np.ndarray, rhs: np.ndarray,
                ub: np.ndarray) -> Any:
    """Hand ``highs`` the LP by its arrays (column-wise matrix ``a``, row bounds, column bounds ``[0, ub]``, every
    column continuous): HiGHS builds the same model as from a ``HighsLp`` whose fields are set one by one, without
    those copies (the same bits: docs/performance.md, "Seventh pass")."""
    n = len(cost)
    return highs.passModel(n, len(rhs), len(a.data), int(h.MatrixFormat.kColwise), int(h.ObjSense.kMinimize), 0.0,
                           cost, np.zeros(n), ub, lhs, rhs, np.asarray(a.indptr[:-1], dtype=np.int32),
                           np.asarray(a.indices, dtype=np.int32), np.asarray(a.data, dtype=float),
                           np.zeros(n, dtype=np.int32))


def minimize(cost: np.ndarray, a_ub: Any, b_ub: np.ndarray, upper: np.ndarray, a_eq: Any = None,
          b_eq: np.ndarray | None = None, solver: str | None = "ipm", warm: WarmStart | None = None,
          names: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray | None, str]:
    """Minimize ``cost @ x`` subject to ``a_ub x <= b_ub``, ``a_eq x = b_eq`` and ``0 <= x <= upper``
    (``a_ub``, ``a_eq``: scipy sparse arrays, or ``a_ub`` as :class:`Columns` when there are no equalities).
    Returns ``(x, "")`` at an optimum ``linprog`` would accept, else
    ``(None, why)``: HiGHS' model status, or a solution outside the bounds or rows by more than
    :data:`FEASIBILITY_TOL`. ``warm`` with ``names`` (each column's and row's code, :mod:`.gavel_warm`): start
    from the basis it kept of the previous LP, keep this one's final basis in it; where the warm start fails, the
    LP is solved from scratch."""
    h = _core()
    inf = h.kHighsInf
    if isinstance(a_ub, Columns) and a_eq is None:
        a = a_ub
    else:
        import scipy.sparse as sp

        a = sp.csc_array(a_ub if a_eq is None else sp.vstack((a_ub, a_eq)))
    n_eq = 0 if a_eq is None else a_eq.shape[0]
    beq = np.zeros(0) if b_eq is None else np.asarray(b_eq, dtype=float)
    lhs = _finite(np.concatenate([np.full(len(b_ub), -np.inf), beq]), inf)
    rhs = _finite(np.concatenate([np.asarray(b_ub, dtype=float), beq]), inf)
    ub = _finite(upper, inf)
    start = None if warm is None or names is None else warm.start(*names, h)
    x, why, highs = _run(h, solver, np.asarray(cost, dtype=float), a, lhs, rhs, ub, n_eq, start)
    if x is None and start is not None:
        x, why, highs = _run(h, solver, np.asarray(cost, dtype=float), a, lhs, rhs, ub, n_eq, None)
    if x is not None and warm is not None and names is not None:
        warm.keep(*names, highs.getBasis())
    return x, why


def _run(h: Any, solver: str | None, cost: np.ndarray, a: Any, lhs: np.ndarray, rhs: np.ndarray, ub: np.ndarray,
         n_eq: int, start: Any) -> tuple[np.ndarray | None, str, Any]:
    """One HiGHS solve of the model, from the basis ``start`` where given (then at most one simplex iteration per
    :data:`WARM_ROWS_PER_ITERATION` rows: a start that needs more is not worth finishing): :func:`minimize`'s
    answer and the solver (its final basis)."""
    highs = h._Highs()
    if (highs.passOptions(_options(solver)) == h.HighsStatus.kError
            or _pass_model(h, highs, cost, a, lhs, rhs, ub) == h.HighsStatus.kError
            or (start is not None and (highs.setBasis(start) == h.HighsStatus.kError or highs.setOptionValue(
                "simplex_iteration_limit", max(WARM_ITERATIONS_MIN, len(rhs) // WARM_ROWS_PER_ITERATION))
                == h.HighsStatus.kError))
            or highs.run() == h.HighsStatus.kError):
        return None, f"HiGHS: {highs.modelStatusToString(highs.getModelStatus())}", highs
    status = highs.getModelStatus()
    if status != h.HighsModelStatus.kOptimal:
        return None, f"HiGHS: {highs.modelStatusToString(status)}", highs
    sol = highs.getSolution()
    x = np.array(sol.col_value)
    slack = rhs - np.array(sol.row_value)
    tol = FEASIBILITY_TOL
    n_ub = len(rhs) - n_eq
    if (np.isnan(x).any() or (x < -tol).any() or (x > ub + tol).any() or (slack[:n_ub] < -tol).any()
            or (np.abs(slack[n_ub:]) > tol).any()):
        return None, f"the solution is outside the constraints by more than {tol:.2E}", highs
    return x, "", highs
