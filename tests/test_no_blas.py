"""No BLAS/LAPACK on the simulation or decision path: their kernels (chosen per CPU, per thread count) round
differently, so an episode would depend on the machine. ``test_golden_portable`` checks the results; this test
names the line that brings a product back, before any golden case has to diverge.

Allowed: the offline fitting modules (their outputs are shipped as data files, so a run never refits them) and
lines that say why a product is exact (``# integers: no BLAS``: integer matmuls do not call BLAS)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gpucluster_env", "baselines", "traces", "leaderboard", "agents")
OFFLINE_FITS = {"gpucluster_env/catalog/fit.py", "gpucluster_env/catalog/xi_fit.py", "gpucluster_env/catalog/demand.py",
                "gpucluster_env/catalog/comm_fit.py", "gpucluster_env/catalog/predictor.py",
                "gpucluster_env/catalog/validate.py"}
BLAS_CALLS = {"dot", "vdot", "inner", "matmul", "tensordot", "einsum", "lstsq", "solve", "inv", "pinv", "norm",
              "polyfit", "cov", "corrcoef"}


def offenders(path: Path) -> list[str]:
    """``LINE: what`` for each BLAS product or call in the file not marked ``no BLAS`` on its line."""
    src = path.read_text()
    lines = src.splitlines()
    out = []
    for node in ast.walk(ast.parse(src)):
        hit = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            hit = "@"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in BLAS_CALLS:
            hit = node.func.attr
        if hit and "no BLAS" not in lines[node.lineno - 1]:
            out.append(f"{node.lineno}: {hit}")
    return sorted(out, key=lambda o: int(o.split(":")[0]))


def test_no_blas_product_on_the_simulation_or_decision_path() -> None:
    found = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if rel not in OFFLINE_FITS:
                found += [f"{rel}:{o}" for o in offenders(path)]
    assert not found, "BLAS products outside the offline fits (sum term by term in a fixed order):\n" + "\n".join(found)


def test_the_check_finds_a_product(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("import numpy as np\nx = np.ones(3)\ny = x @ x\nz = np.dot(x, x)\nw = x @ x  # integers: no BLAS\n")
    assert offenders(f) == ["3: @", "4: dot"]
