"""The kept fewest-nodes placement (:class:`.gavel_rounds.FewestNodes`: nodes kept by free count, gang after gang)
against the plain rule recomputed from the counts at each gang."""

from __future__ import annotations

import numpy as np
from gpucluster_env.baselines.parts import gavel_rounds as R


def _plain(free: np.ndarray, need: int) -> list[tuple[int, int]] | None:
    """Best fit (lowest index among the fullest nodes that fit), else the nodes with most free GPUs first."""
    fits = np.flatnonzero(free >= need)
    if free.sum() < need:
        return None
    if len(fits):
        return [(int(fits[np.argmin(free[fits])]), need)]
    out, left = [], need
    for h in np.argsort(-free, kind="stable").tolist():
        if left and free[h]:
            out.append((h, int(min(free[h], left))))
            left -= int(min(free[h], left))
    return out


def test_kept_counts_match_the_plain_rule_gang_after_gang() -> None:
    rng = np.random.default_rng(11)
    for _ in range(300):
        free = rng.integers(0, 9, size=int(rng.integers(1, 40)))
        nodes = R.FewestNodes(free.tolist())
        for _ in range(int(rng.integers(1, 30))):
            need = int(rng.choice([1, 1, 2, 4, 8, 16]))
            want = _plain(free, need)
            got = nodes.pick(need)
            assert got == want
            if got is not None:
                nodes.take(got)
                for h, c in got:
                    free[h] -= c
            assert nodes.free == free.tolist() and nodes.total == int(free.sum())
