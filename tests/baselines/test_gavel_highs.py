"""Gavel's LPs handed to HiGHS directly (baselines/parts/gavel_highs.py) return what scipy's ``linprog`` returns
for the same model and method, bit for bit, on the decision benchmark's problems (single, packed and partner
LPs, alike and distinct jobs); a model HiGHS cannot solve to optimality is reported, not returned."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from gpucluster_env.baselines.parts import gavel_highs
from gpucluster_env.leaderboard import decision_speed as ds
from scipy.optimize import linprog

METHODS = {"ipm": "highs-ipm", None: "highs"}


@pytest.mark.parametrize(("n", "distinct"), [(8, False), (8, True), (32, True)])
def test_same_bits_as_linprog(monkeypatch: pytest.MonkeyPatch, n: int, distinct: bool) -> None:
    direct = gavel_highs.minimize
    seen: list[tuple[str, int]] = []

    def both(cost, a_ub, b_ub, upper, a_eq=None, b_eq=None, solver="ipm", warm=None, names=None):
        assert warm is None  # the default LPs start cold, as linprog does
        x, why = direct(cost, a_ub, b_ub, upper, a_eq, b_eq, solver)
        if isinstance(a_ub, gavel_highs.Columns):
            a_ub = sp.csc_array((a_ub.data, a_ub.indices, a_ub.indptr), shape=a_ub.shape)
        res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq,
                      bounds=np.column_stack([np.zeros(len(cost)), upper]), method=METHODS[solver])
        assert res.status == 0 and why == ""
        assert x.tobytes() == res.x.tobytes()
        seen.append((METHODS[solver], len(cost)))
        return x, why

    monkeypatch.setattr(gavel_highs, "minimize", both)
    p = ds.make_problem(n, 1, distinct=distinct)
    for f in (ds.gavel_max_min, ds.gavel_makespan, ds.gavel_ftf, ds.gavel_packed, ds.gavel_packed_makespan,
              ds.gavel_packed_distinct):
        f(p)
    assert {m for m, _ in seen} == {"highs-ipm", "highs"} and len(seen) >= 6


def test_infeasible_model_is_reported() -> None:
    a = sp.csr_array(np.array([[1.0, 1.0]]))
    x, why = gavel_highs.minimize(np.array([-1.0, 0.0]), a, np.array([-1.0]), np.array([1.0, 1.0]))
    assert x is None and "Infeasible" in why


def test_columns_are_scipys_csc() -> None:
    """Entries at random places, 50 of them named twice, some rows and columns empty: the same arrays as
    scipy's CSC, bit for bit."""
    rng = np.random.default_rng(3)
    cells = rng.choice(40 * 60, 300, replace=False)
    twice = rng.choice(cells, 50, replace=False)
    cells = rng.permutation(np.concatenate([cells, twice]))
    rows, cols = cells // 60, cells % 60
    vals = rng.normal(size=len(cells))
    got = gavel_highs.columns(rows, cols, vals, (45, 70))
    want = sp.csc_array(sp.csr_array((vals, (rows, cols)), shape=(45, 70)))
    assert got.shape == want.shape and len(got.data) == 300
    assert got.indptr.tolist() == want.indptr.tolist() and got.indices.tolist() == want.indices.tolist()
    assert got.data.tobytes() == want.data.tobytes()


def test_bindings_load_without_scipy_optimize() -> None:
    """The first LP loads HiGHS' bindings without running scipy.optimize's package; a later import of
    scipy.optimize in the process uses the same module, and linprog still works."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from gpucluster_env.baselines.parts import gavel_highs\n"
        "core = gavel_highs._core()\n"
        "assert 'scipy.optimize' not in sys.modules\n"
        "import scipy.optimize._highspy._core as again\n"
        "from scipy.optimize import linprog\n"
        "assert again is core\n"
        "assert linprog([-1, 0], A_ub=[[1, 1]], b_ub=[1], bounds=[(0, 1), (0, 1)]).x.tolist() == [1.0, 0.0]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
