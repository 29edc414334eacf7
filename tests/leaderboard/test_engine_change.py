"""The before/after section of docs/results/reproduction.md: snapshots of an earlier engine's records and their
comparison with current records."""

from __future__ import annotations

import json

import pytest
from engine_change import load_snapshot, render_change, snapshot
from render_reproduction import Results


def _row(policy: str, seed: int, jct: float) -> dict:
    return {"scenario": "castor-philly", "options": "", "xi": None, "popts": "", "policy": policy, "seed": seed,
            "avg_jct_s": jct, "avg_queue_s": jct / 2, "makespan_s": 10 * jct}


def test_snapshot_roundtrip_and_render(tmp_path):
    before = [_row("castor", s, 3600.0 * (1 + s)) for s in range(3)] + \
             [_row("sjf-ffs", s, 3600.0 * (2 + s)) for s in range(3)]
    snap = snapshot(before, "engine v1 (test)")
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap))
    snap = load_snapshot(path)
    assert snap["cells"]["castor-philly||||castor"]["avg_jct_s"] == [3600.0, 7200.0, 10800.0]
    after = Results([_row("castor", s, 1800.0 * (1 + s)) for s in range(3)]
                    + [_row("sjf-ffs", s, 3600.0 * (2 + s)) for s in range(3)])
    text = "\n".join(render_change(snap, after, ["eq. 4-5: xi on the whole iteration"]))
    assert "engine v1 (test)" in text and "- eq. 4-5: xi on the whole iteration" in text
    # castor: mean 2 h before, 1 h after: -50%.
    assert "| castor | 2.00 | 1.00 | -50.0% |" in text
    # Castor better than SJF-FFS: before 1-(1+2+3)/(2+3+4) = 33.3%; after 1 - (0.5+1+1.5)/9 = 66.7%.
    line = next(ln for ln in text.splitlines() if ln.startswith("| Castor better than SJF-FFS"))
    assert "holds: +33.3%" in line and "holds: +66.7%" in line


def test_bad_snapshot_is_one_line_error(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{}")
    with pytest.raises(ValueError, match="x.json: not a gpucluster-engine-snapshot"):
        load_snapshot(p)
    with pytest.raises(ValueError, match="cannot read"):
        load_snapshot(tmp_path / "missing.json")


def test_ablation_rows_get_their_own_table():
    snap = snapshot([_row("castor", s, 3600.0) for s in range(2)] + [_row("sjf-ffs", s, 7200.0) for s in range(2)],
                    "v1")
    abl = [dict(_row(p, s, j), options="interference_scope=compute")
           for p, j in (("castor", 3600.0), ("sjf-ffs", 5400.0)) for s in range(2)]
    now = [_row("castor", s, 1800.0) for s in range(2)] + [_row("sjf-ffs", s, 7200.0) for s in range(2)]
    text = "\n".join(render_change(snap, Results(abl + now), []))
    line = next(ln for ln in text.splitlines() if ln.startswith("| castor-philly | Castor better than SJF-FFS"))
    # v1: 1 - 1/2 = 50%; compute-only xi: 1 - 1/1.5 = 33.3%; current: 1 - 0.5/2 = 75%.
    assert "+50.0%" in line and "+33.3%" in line and "+75.0%" in line
