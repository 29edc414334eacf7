"""Hadar's queue as arrays, its compiled DP window and greedy tail and its kept throughput rows
(baselines/hadar.py, baselines/parts/hadar_alloc.py HadarQueue, hadar_tail.py select) give, at every round of
real runs, what the plain computations give: the DP as a memoised recursion over (job, free GPUs) and the tail
FIND_ALLOC asked job by job on the shrinking free GPUs (each call on free-GPU classes built afresh, where the
round keeps its classes through the DP's takes and give-backs and the tail's takes: hadar_free.py), the jobs
that keep their GPUs as their allocations compared with their current ones, the current allocations as each
job's GPUs grouped by (server, type), the performance model's throughputs asked afresh."""

from __future__ import annotations

from typing import Any

import numpy as np
from gpucluster_env.baselines.hadar import Hadar
from gpucluster_env.baselines.parts.hadar_alloc import (
    Choice,
    HadarJob,
    find_alloc,
    make_prices,
    select_jobs,
    select_picks,
)

from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import run_episode


def plain_tail(jobs: list[HadarJob], start: int, fr: np.ndarray, prices: Any, now: float, overhead_s: float,
               comm_weight: float) -> list[tuple[int, Choice]]:
    """The jobs after the window, in order, each FIND_ALLOC on what is still free, taken at a positive payoff."""
    out = []
    left = int(fr.sum())
    for i in range(start, len(jobs)):
        if left == 0:
            break
        if jobs[i].workers > left:
            continue
        ch = find_alloc(jobs[i], fr, prices.capacity - fr, prices, now, overhead_s, comm_weight)
        if ch is not None and ch.payoff > 0:
            out.append((i, ch))
            for h, k, c in ch.take:
                fr[h, k] -= c
                left -= c
    return out


def plain_window(jobs: list[HadarJob], win: int, fr0: np.ndarray, prices: Any, now: float, overhead_s: float,
                 comm_weight: float) -> list[tuple[int, Choice]]:
    """Algorithm 2's DP over the first ``win`` jobs as a memoised recursion (the allocator's form until the
    compiled window): each job skipped, or taken at a positive payoff when the total is strictly larger."""
    memo: dict[tuple[int, bytes], tuple[float, tuple[tuple[int, Choice], ...]]] = {}

    def dp(i: int, fr: np.ndarray) -> tuple[float, tuple[tuple[int, Choice], ...]]:
        if i == win:
            return 0.0, ()
        key = (i, fr.tobytes())
        if key not in memo:
            best = dp(i + 1, fr)
            ch = find_alloc(jobs[i], fr, prices.capacity - fr, prices, now, overhead_s, comm_weight)
            if ch is not None and ch.payoff > 0:
                nxt = fr.copy()
                for h, k, c in ch.take:
                    nxt[h, k] -= c
                val, rest = dp(i + 1, nxt)
                if val + ch.payoff > best[0]:
                    best = (val + ch.payoff, ((i, ch),) + rest)
            memo[key] = best
        return memo[key]

    return list(dp(0, np.asarray(fr0, dtype=np.int64))[1])


class _CheckedHadar(Hadar):
    def reset(self, env: Any) -> None:
        super().reset(env)
        self.rounds = self.tail_picks = self.window_picks = self.kept = 0

    def _starts(self, view: ClusterView) -> list[Any]:
        ids, q = self._queue(view)
        if ids:
            assert np.array_equal(self._tput_rows(np.array(ids)), self.tputs.matrix(ids))
            jobs = [HadarJob(int(q.workers[i]), *q.facts[i, :1].tolist(), tuple(q.tput[i].tolist()),
                             *q.facts[i, 1:3].tolist(), q.current[i], float(q.facts[i, 3])) for i in range(len(q))]
            assert [q[i] for i in range(len(q))] == jobs
            for j, cur in zip(ids, q.current, strict=True):  # each job's GPUs grouped by (server, type)
                gpus = view.gpus_of(j) if view.is_running(j) else np.zeros(0, dtype=np.int64)
                keys, cnt = np.unique(view.gpu_node[gpus].astype(np.int64) * 1000 + view.gpu_type[gpus],
                                      return_counts=True)
                assert cur == tuple((x // 1000, x % 1000, c) for x, c in zip(keys.tolist(), cnt.tolist(), strict=True))
            prices = make_prices(q, self.capacity, view.now, self.round_s, self.eta)
            free = self.capacity.copy()
            picked = select_jobs(q, free, prices, view.now, self.overhead_s, self.comm_weight, self.dp_window)
            win = min(self.dp_window, len(jobs))
            head = [(i, ch) for i, ch in picked if i < win]
            assert head == plain_window(jobs, win, free, prices, view.now, self.overhead_s, self.comm_weight)
            fr = free.copy()
            for _, ch in head:
                for h, k, c in ch.take:
                    fr[h, k] -= c
            assert picked == head + plain_tail(jobs, win, fr, prices, view.now, self.overhead_s, self.comm_weight)
            picks = select_picks(q, self.capacity.copy(), prices, view.now, self.overhead_s, self.comm_weight,
                                 self.dp_window)
            assert picks.choices() == picked
            assert picks.kept.tolist() == [bool(q.current[i]) and ch.take == q.current[i] for i, ch in picked]
            self.kept += int(picks.kept.sum())
            self.rounds += 1
            self.tail_picks += len(picked) - len(head)
            self.window_picks += len(head)
        return super()._starts(view)


def test_hadar_arrays_and_compiled_round_give_the_plain_round() -> None:
    pol = _CheckedHadar()
    run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": 300})
    assert pol.rounds > 30 and pol.tail_picks > 50 and pol.window_picks > 30 and pol.kept > 30
