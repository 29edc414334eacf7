"""What the packing schedulers keep from one decision to the next (baselines/parts/job_shape.py FailedShapes,
gimbal_rules.py PartnerCache, packing_sets and KeptSets, gimbal_throughput.py ThroughputModel.held,
packing_walk.py HostRows' tables and partners and FreeStarts, gimbal_search.py's ended searches passed over)
gives, at every decision of real runs, the answers of the plain per-question computations they replace."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpucluster_env.baselines.gandiva import Gandiva
from gpucluster_env.baselines.gandiva_gimbal import GandivaGimbal
from gpucluster_env.baselines.lucid_gimbal import LucidGimbal
from gpucluster_env.baselines.parts.gimbal_rules import JobSet, KeptSets, packing_sets, partner_gpus
from gpucluster_env.baselines.parts.gimbal_throughput import ThroughputModel
from gpucluster_env.baselines.parts.job_shape import start_shape
from gpucluster_env.baselines.parts.packing_walk import HostRows, free_start

from gpucluster_env.engine import Action, Wait
from gpucluster_env.engine.view import ClusterView
from gpucluster_env.policy import run_episode


def plain_walk(view: ClusterView, order: list[int], start: Any) -> Action:
    """The queue walk without memory: each job in order, a shape that found nothing in this walk skipped."""
    failed: set[tuple[int, int, int]] = set()
    for j in order:
        if start_shape(view, j) in failed:
            continue
        a = start(view, j)
        if a is not None:
            return a
        failed.add(start_shape(view, j))
    return Wait()


def plain_sets(view: ClusterView) -> list[JobSet]:
    """Packing sets by walking each running job's partners."""
    seen: set[int] = set()
    out = []
    for j in view.running_jobs().tolist():
        if j in seen or not view.partners_of(j):
            continue
        comp, stack = {j}, [j]
        while stack:
            for p in view.partners_of(stack.pop()):
                if p not in comp:
                    comp.add(p)
                    stack.append(p)
        seen |= comp
        jmax = min(comp, key=lambda x: (-int(view.req_gpus[x]), x))
        out.append(JobSet(jmax, tuple(sorted(comp - {jmax}))))
    return sorted(out, key=lambda s: s.jmax)


def check_kept(host: Any, counts: dict[str, int]) -> None:
    """Make packing ``host`` (Lucid or Gandiva, after its reset) compare, at every walk, its partners worked out
    over kept tables and kept answers with those of a fresh :class:`HostRows` (nothing kept; its tables read
    afresh from the running jobs: the same as the kept tables updated from the rows forgotten), every job its walk
    passes over without asking with the plain start question (None), and every kept free start with
    :func:`free_start` asked afresh (counted in ``counts``)."""
    prepare, kept_start = host._prepare, host.free.start
    update, by_size = host.rows._update, host.rows.by_size

    def counted_update(*args: Any) -> Any:
        counts["updated"] = counts.get("updated", 0) + 1
        return update(*args)

    def counted_by_size(state: Any, jobs: np.ndarray, partial: Any = None) -> Any:
        # the jobs whose kept partner is weighed against the rows forgotten since (not worked out again)
        counts["weighed"] = counts.get("weighed", 0) + sum(len(rows) for rows in (partial or {}).values())
        return by_size(state, jobs, partial)

    host.rows._update, host.rows.by_size = counted_update, counted_by_size

    def checked_prepare(view: ClusterView, jobs: np.ndarray) -> np.ndarray:
        may = prepare(view, jobs)
        got = host._partner
        rows, host.rows = host.rows, HostRows(view, host.hosts)
        try:
            fresh = prepare(view, jobs)
        finally:
            fresh_rows, host.rows = host.rows, rows
        assert host._partner == got and np.array_equal(fresh, may)
        host._partner = got
        for n, (stamp, table) in rows._tables.items():  # a table updated from the rows forgotten: the plain one
            plain = fresh_rows._tables.get(n)
            if plain is not None and plain[0] == stamp:
                assert all(np.array_equal(a, b) for a, b in zip(table, plain[1], strict=True))
                counts["tables"] = counts.get("tables", 0) + 1
        for j in jobs[~may].tolist():  # a job the walk passes over without asking starts nowhere
            assert host.start(view, j) is None
            counts["passed_over"] = counts.get("passed_over", 0) + 1
        counts["partners"] = counts.get("partners", 0) + len(jobs)
        return may

    def checked_start(state: Any, j: int, code: int) -> Any:
        got = kept_start(state, j, code)
        assert got == free_start(host.free.view, host.rule, j)
        counts["free"] = counts.get("free", 0) + 1
        if host.free.view.num_free() >= int(host.free.view.req_gpus[j]) and host.free._refused(
                int(host.free.view.req_gpus[j])):  # refused without a placement
            counts["refused"] = counts.get("refused", 0) + 1
        return got

    host._prepare, host.free.start = checked_prepare, checked_start


def check_ticks(coord: Any, counts: dict[str, int]) -> None:
    """Make Gimbal's coordinator check after every tick what lets the next one pass over sets: every packing set
    it holds as ended has an ended search started for its very members, and no search is kept for a set gone; and
    what lets a tick skip its bookkeeping while no tenant changed: no share it held is left on a GPU of one job
    or kept for a job that stopped."""
    tick = coord.tick

    def checked_tick(view: ClusterView) -> list[Action]:
        acts = tick(view)
        keys = list(coord.shares)
        if keys:  # what a tick that reads no tenants (none changed since the last) relies on: no share left alone
            assert all(view.is_running(j) for j, _ in keys)
            assert not (view.tenants([g for _, g in keys]) < 0).any()
            counts["shares_checked"] = counts.get("shares_checked", 0) + len(keys)
        sets = packing_sets(view)
        assert coord._ticked == sets and set(coord.searches) <= {s.jmax for s in sets}
        assert set(coord._ended) <= {id(s) for s in coord._ticked}
        for s in coord._ticked:
            if id(s) in coord._ended:
                st = coord.searches[s.jmax]
                assert st.done and st.members == s.jobs
                counts["passed"] = counts.get("passed", 0) + 1
        return acts

    coord.tick = checked_tick


def check_introspection(host: Any, counts: dict[str, int]) -> None:
    """Make Gandiva ``host`` (after its reset) work out each introspection also with nothing kept from the last
    one (every settled set's state built and looked up) and compare the preemptions and what it judged."""
    introspect = host.introspect

    def checked_introspect(view: ClusterView) -> list[Action]:
        kept = (set(host._judged), set(host.harmful), host.unpacked, host._seen)
        host._seen = (None, False, {}, set())
        want = introspect(view)
        plain = (set(host._judged), set(host.harmful), host.unpacked)
        host._judged, host.harmful, host.unpacked, host._seen = kept
        got = introspect(view)
        assert got == want and (host._judged, host.harmful, host.unpacked) == plain
        counts["introspections"] = counts.get("introspections", 0) + 1
        return got

    host.introspect = checked_introspect


class _Compared:
    """Counts of the decisions a checked policy compared with the plain walk, and of those that started a job."""

    compared = 0
    started = 0

    def check(self, got: Any, want: Any) -> Any:
        """``got``, once it is ``want`` (counted)."""
        assert got == want
        self.compared += 1
        self.started += not isinstance(got, Wait)
        return got


class _CheckedLucid(_Compared, LucidGimbal):
    """Lucid+Gimbal that, before each host decision, works it out by the plain walk and compares (and checks its
    kept partners, free starts and ticks: :func:`check_kept`, :func:`check_ticks`)."""

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.counts: dict[str, int] = {}
        check_kept(self.host, self.counts)
        check_ticks(self.coordinator, self.counts)

    def act(self, observation: Any, env: Any) -> Any:
        view = self.view(env)
        if view.now < self._next_tick and view.num_pending:
            order, keys = self.host.order(view)  # kept while the queue stays: the order sorted afresh
            pend = view.pending_jobs()
            fresh = np.argsort(view.solo_time[pend] * view.req_gpus[pend], kind="stable")
            assert np.array_equal(order, pend[fresh]) and np.array_equal(keys, (view.solo_time * view.req_gpus)[order])
            want = plain_walk(view, order.tolist(), self.host.start)
            return self.check(super().act(observation, env), want)
        return super().act(observation, env)


class _CheckedGandivaWalk(_Compared, Gandiva):
    """Gandiva that, before each decision, works it out by the plain walk over ``start`` and compares (its walk
    answers the same questions over arrays, baselines/parts/packing_walk.py; its kept partners and free starts:
    :func:`check_kept`)."""

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.counts: dict[str, int] = {}
        check_kept(self, self.counts)
        check_introspection(self, self.counts)

    def act(self, observation: Any, env: Any) -> Any:
        view = self.view(env)
        if view.now < self._next_check and view.num_pending:
            want = plain_walk(view, self.order(view).tolist(), self.start)
            return self.check(super().act(observation, env), want)
        return super().act(observation, env)


class _CheckedGandiva(GandivaGimbal):
    """Gandiva+Gimbal that checks its partner answers against partner_gpus, its packing sets against the
    partners walk, and its coordinator's rates inside a tick against rates asked afresh."""

    def reset(self, env: Any) -> None:
        super().reset(env)
        self.hosts_checked = 0
        self.sets_checked = 0
        self.decisions_seen = 0
        self.sparse: KeptSets | None = None
        self.rates_checked = 0
        self.counts: dict[str, int] = {}
        check_kept(self.host, self.counts)
        check_ticks(self.coordinator, self.counts)
        check_introspection(self.host, self.counts)

    def act(self, observation: Any, env: Any) -> Any:
        view = self.view(env)
        host = self.host
        host.hosts.sync()
        run = view.running_jobs()
        for j in view.pending_jobs()[:3].tolist():
            want = [(p, g) for p in run.tolist()
                    if (g := partner_gpus(view, host.rule, j, p, host.unequal)) is not None]
            got = host.hosts.hosts(j, run)
            assert [p for p, _ in got] == [p for p, _ in want]
            assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(got, want, strict=True))
            self.hosts_checked += len(want)
        sets = packing_sets(view)
        assert sets == plain_sets(view)
        self.sets_checked += len(sets)
        self.decisions_seen += 1
        if self.sparse is None or self.sparse.view is not view:
            self.sparse = KeptSets(view)
        for kept, every in ((self.host.sets, 1), (self.sparse, 7)):  # read at every decision, or a few
            if self.decisions_seen % every == 0:
                assert kept.now() == sets
        coord = self.coordinator
        if coord is not None and coord.model is not None and sets:
            fresh = ThroughputModel(view, coord.demand)
            jobs = sets[0].jobs
            with coord.model.held():
                coord.model.read_ahead([j for s in sets for j in s.jobs])  # as a tick reads every set's at once
                for _ in range(2):  # the second round reads what the first kept
                    held = [coord.model.rate(j, coord.shares) for j in jobs]
                    times = coord.model.remaining_times(jobs, coord.shares)
            assert held == [fresh.rate(j, coord.shares) for j in jobs]
            assert np.array_equal(times, _plain_times(fresh, jobs, coord.shares))
            self.rates_checked += len(jobs)
        return super().act(observation, env)


def _plain_times(model: ThroughputModel, jobs: tuple[int, ...], shares: dict[tuple[int, int], int]) -> np.ndarray:
    """Remaining times with every rate asked again after each departure."""
    rem = model.view.remaining_now()[list(jobs)].astype(float)
    out = np.zeros(len(jobs))
    left = list(range(len(jobs)))
    gone: frozenset[int] = frozenset()
    t = 0.0
    while left:
        r = np.array([model.rate(jobs[i], shares, gone) for i in left])
        dt = rem[left] / r
        k = int(np.argmin(dt))
        t += float(dt[k])
        rem[left] -= r * float(dt[k])
        i = left.pop(k)
        out[i] = t
        gone = gone | {jobs[i]}
    return out


def test_lucid_walk_with_memory_is_the_plain_walk() -> None:
    pol = _CheckedLucid()
    run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": 250})
    assert pol.compared > 200 and pol.started > 50
    assert pol.counts["partners"] > 200 and pol.counts["free"] > 200 and pol.counts["passed"] > 10
    assert pol.counts["passed_over"] > 1000
    assert pol.counts["tables"] > 1000 and pol.counts["updated"] > 500 and pol.counts["weighed"] > 500
    assert pol.counts["refused"] > 100


def test_gandiva_walk_over_arrays_is_the_plain_walk() -> None:
    pol = _CheckedGandivaWalk()
    run_episode("gimbal-philly", pol, 0)  # packs that lose: harmful model pairs skipped
    assert pol.compared > 100 and pol.started > 50 and pol.unpacked > 0
    assert pol.counts["partners"] > 100 and pol.counts["free"] > 100 and pol.counts["passed_over"] > 1000
    assert pol.counts["introspections"] > 100
    assert pol.counts["tables"] > 300  # (equal sizes only: tables read afresh, not updated)


@pytest.mark.parametrize("jobs", [200])
def test_partner_answers_sets_and_held_rates_match_plain_ones(jobs: int) -> None:
    pol = _CheckedGandiva()
    run_episode("sjfbsbf-philly", pol, 0, scenario_options={"num_jobs": jobs})
    assert pol.hosts_checked > 100 and pol.sets_checked > 50 and pol.rates_checked > 50
    assert pol.counts["partners"] > 100 and pol.counts["free"] > 100 and pol.counts["passed"] > 10
    assert pol.counts["passed_over"] > 1000 and pol.counts["introspections"] > 100
    assert pol.counts["shares_checked"] > 100
    assert pol.counts["tables"] > 500 and pol.counts["updated"] > 300 and pol.counts["weighed"] > 300
    assert pol.counts["refused"] > 10
