"""How each policy's cost grows with the jobs of a run (``gpucluster bench --growth-jobs``; issue #44's measure).

Every (policy, size) is one fresh process of ``gpucluster run --scenario S --option num_jobs=N --policy P --json``,
as a user runs it, and its cost is that process's whole CPU (user + system, read by ``os.wait4``, so imports and
the environment's build count) and peak memory. FIFO runs first at each size, in the same sitting, and again
after every few policies where asked (``fifo_every``), each ratio then over the FIFO runs beside it. A run past
``timeout_s`` of wall time is stopped and its row says so (``stopped``), with the CPU it had used.

The figure the issue sets a target on is the growth of a policy's own work: from one size to the next, how much
faster its CPU *above FIFO's* grows than its environment steps (``excess_growth``, at most 1.5 asked):
``((cpu_p(N2) - cpu_fifo(N2)) / (cpu_p(N1) - cpu_fifo(N1))) / (steps_p(N2) / steps_p(N1))``. A policy whose
decisions cost the same at any size scores about 1; one whose decisions scan every job of the trace scores
about the growth in jobs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

EXCESS_GROWTH_TARGET = 1.5
"""Issue #44: a policy's CPU above FIFO grows at most this much faster than its steps between sizes."""
MIN_OWN_CPU_S = 0.5
"""Below this much CPU above FIFO's at the smaller size, a policy's own work is within the run-to-run spread of
two processes' start-up (imports, the trace's read: about 0.1-0.2 s here), so its growth is not read."""


def run_process(scenario: str, policy: str, jobs: int, seed: int, timeout_s: float,
                cluster: str | None = None) -> dict[str, Any]:
    """One ``gpucluster run`` in a fresh process (on ``cluster``, a ``--cluster`` spec, if given): its CPU (user +
    system s), peak memory (MB), wall time, steps and average JCT; ``stopped`` when it ran past ``timeout_s``
    (killed, with the CPU it had used), ``error`` with its last line where it failed."""
    cmd = [sys.executable, "-m", "gpucluster_env.cli.main", "run", "--scenario", scenario, "--policy", policy,
           "--seed", str(seed), "--option", f"num_jobs={jobs}", "--no-progress", "--json"]
    if cluster is not None:
        cmd += ["--cluster", cluster]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, start_new_session=True)
        status, usage, stopped, peak = _reap(proc, t0 + timeout_s)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    row: dict[str, Any] = {"policy": policy, "jobs": jobs, "cluster": cluster, "wall_s": wall, "stopped": stopped,
                           "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": peak}
    if stopped:
        return row
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        row["error"] = (errors.strip().splitlines() or [f"exit status {code}"])[-1]
        return row
    result = json.loads(text)
    row.update(steps=int(result["steps"]), avg_jct_s=float(result["avg_jct_s"]))
    return row


def _reap(proc: subprocess.Popen, deadline: float) -> tuple[int, Any, bool, float | None]:
    """Wait for ``proc`` with ``os.wait4`` (which gives the child's CPU, unlike Popen's own wait), killing its
    process group at ``deadline``: its wait status, usage, whether it was stopped, and its peak resident memory
    (MB: the kernel's ``VmHWM`` of the child, read every 20 ms; wait4's ``ru_maxrss`` would include this
    process's memory at the fork; None where /proc is not there)."""
    stopped, peak = False, None
    while True:
        peak = _vm_hwm_mb(proc.pid, peak)
        pid, status, usage = os.wait4(proc.pid, 0 if stopped else os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
            return status, usage, stopped, peak
        if time.perf_counter() >= deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            stopped = True
        else:
            time.sleep(0.02)


def _vm_hwm_mb(pid: int, peak: float | None) -> float | None:
    """The larger of ``peak`` and process ``pid``'s peak resident memory so far (MB), from /proc."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    mb = int(line.split()[1]) / 1024.0
                    return mb if peak is None else max(peak, mb)
    except OSError:
        pass
    return peak


def growth_runs(sizes: tuple[int, ...], policies: list[str], scenario: str, seed: int = 0,
                timeout_s: float = 600.0, progress: Any = None, scale_cluster: bool = False,
                fifo_every: int = 0) -> list[dict[str, Any]]:
    """A :func:`run_process` row for FIFO and then each of ``policies`` at each size, with ``x_fifo_cpu`` (CPU
    over FIFO's at that size); a policy that does not apply to ``scenario`` gets a row with its reason in
    ``skipped``. ``progress(text)`` is told what runs next. ``scale_cluster``: each size runs on the scenario's
    cluster scaled by that size over the largest (:meth:`~gpucluster_env.hardware.ClusterSpec.scaled`), so the
    jobs per GPU, and with them the queues a decision walks, stay about the same while the trace grows.

    ``fifo_every`` > 0 runs FIFO again after every that many policies and after the last (rows with ``repeat``
    1, 2, ...), and each policy's ``x_fifo_cpu`` is over ``fifo_cpu_s``, the mean of the FIFO runs just before
    and just after it: on a machine whose load changes during a bench, each ratio then compares runs of about
    the same sitting. FIFO's own rows are over the mean of all its runs at that size."""
    from gpucluster_env.policy import registered_policies
    from gpucluster_env.scenarios import get_scenario

    sc = get_scenario(scenario)
    others = [n for n in policies if n != "fifo"]
    rows: list[dict[str, Any]] = []
    for n in sizes:
        cluster = sc.cluster.scaled(n / max(sizes)).to_spec() if scale_cluster else None
        order = ["fifo"]
        for i, name in enumerate(others):
            order.append(name)
            if fifo_every > 0 and ((i + 1) % fifo_every == 0 or i + 1 == len(others)):
                order.append("fifo")
        size_rows: list[dict[str, Any]] = []
        for name in order:
            cls = registered_policies()[name]
            if not cls.applies_to(sc):
                size_rows.append({"policy": name, "jobs": n, "skipped": cls.not_applicable_because(sc)})
                continue
            if progress is not None:
                progress(f"{name} on {scenario} at {n:,} jobs")
            size_rows.append(run_process(scenario, name, n, seed, timeout_s, cluster))
        rows += _fifo_ratios(size_rows)
    return rows


def _fifo_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One size's rows in run order with ``fifo_cpu_s`` and ``x_fifo_cpu`` set (see :func:`growth_runs`)."""
    fifo_at = [i for i, r in enumerate(rows) if r["policy"] == "fifo" and "cpu_s" in r]
    if not fifo_at:
        return rows
    for k, i in enumerate(fifo_at[1:], start=1):
        rows[i]["repeat"] = k
    mean_all = sum(rows[i]["cpu_s"] for i in fifo_at) / len(fifo_at)
    for i, r in enumerate(rows):
        if "cpu_s" not in r:
            continue
        if r["policy"] == "fifo":
            r["fifo_cpu_s"] = mean_all
        else:
            near = [j for j in fifo_at if j < i][-1:] + [j for j in fifo_at if j > i][:1]
            r["fifo_cpu_s"] = sum(rows[j]["cpu_s"] for j in near) / len(near)
        r["x_fifo_cpu"] = r["cpu_s"] / r["fifo_cpu_s"]
    return rows


def excess_growth(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per policy and consecutive pair of sizes both finished: how much faster its CPU above FIFO's grew than its
    steps (module docstring), with the target's verdict (``within_target``; None where the policy's own work at
    the smaller size is too small to read, under :data:`MIN_OWN_CPU_S` above FIFO)."""
    done = {(r["policy"], r["jobs"]): r for r in rows if "steps" in r and "repeat" not in r}
    sizes = sorted({r["jobs"] for r in rows})
    out = []
    for policy in dict.fromkeys(r["policy"] for r in rows if r["policy"] != "fifo"):
        for a, b in zip(sizes, sizes[1:], strict=False):
            pa, pb, fa, fb = (done.get((policy, a)), done.get((policy, b)), done.get(("fifo", a)),
                              done.get(("fifo", b)))
            if not (pa and pb and fa and fb):
                continue
            own_a = pa["cpu_s"] - pa.get("fifo_cpu_s", fa["cpu_s"])
            own_b = pb["cpu_s"] - pb.get("fifo_cpu_s", fb["cpu_s"])
            steps = pb["steps"] / pa["steps"]
            readable = own_a >= MIN_OWN_CPU_S
            ratio = (own_b / own_a) / steps if readable else None
            out.append({"policy": policy, "from_jobs": a, "to_jobs": b, "own_cpu_growth": own_b / own_a
                        if readable else None, "steps_growth": steps, "excess_growth": ratio,
                        "within_target": None if ratio is None else ratio <= EXCESS_GROWTH_TARGET})
    return out


def plot_growth(rows: list[dict[str, Any]], path: Path, scenario: str) -> Path:
    """A log-log PNG of each policy's whole-process CPU against the jobs of the run (a hollow marker where the
    run was stopped at its time limit, so its point is a lower bound), FIFO in black."""
    from gpucluster_env.leaderboard.plots import _colors, _plt, _save, _style

    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    rows = [r for r in rows if "repeat" not in r]  # FIFO's runs after the first: the ratios' yardsticks only
    policies = list(dict.fromkeys(r["policy"] for r in rows if "cpu_s" in r))
    others = [p for p in policies if p != "fifo"]
    colors = _colors(others)  # tab10 by name, the line style varying beyond ten, as the other plots
    for policy in policies:
        pts = sorted((r["jobs"], r["cpu_s"], r["stopped"]) for r in rows if r["policy"] == policy and "cpu_s" in r)
        color = "black" if policy == "fifo" else colors[policy]
        style = "-" if policy == "fifo" else _style(others, policy)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color,
                lw=2.2 if policy == "fifo" else 1.2, label=policy)
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=22, color=color,
                   facecolors=["none" if p[2] else color for p in pts], zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("jobs in the run")
    ax.set_ylabel("whole-process CPU (s), user + system")
    ax.set_title(f"cost growth on {scenario}\n(a hollow marker: the run was stopped at its time limit)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    return _save(plt, fig, path)
