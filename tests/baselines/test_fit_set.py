"""The fit of the jobs that should run (SRSF's and Tiresias', :func:`~gpucluster_env.baselines.parts.fit_set.
greedy_fit`) takes exactly the jobs a walk that takes each job fitting the GPUs left would take."""

from __future__ import annotations

import numpy as np
from gpucluster_env.baselines.parts.fit_set import greedy_fit
from hypothesis import given, settings
from hypothesis import strategies as st


def _walk(req: list[int], cap: int) -> list[bool]:
    take = []
    for r in req:
        take.append(r <= cap)
        if r <= cap:
            cap -= r
    return take


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([1, 1, 1, 2, 4, 8, 16, 32]), max_size=60), st.integers(-2, 80))
def test_greedy_fit_takes_what_the_walk_takes(req: list[int], cap: int) -> None:
    got = greedy_fit(np.asarray(req, dtype=np.int64), cap)
    assert got.tolist() == _walk(req, cap)


def test_greedy_fit_skips_a_job_too_big_and_takes_later_ones() -> None:
    assert greedy_fit(np.array([2, 8, 1, 4, 1]), 4).tolist() == [True, False, True, False, True]
