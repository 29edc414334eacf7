"""The replay's views: the player's keys, frames at 80 columns in plain text, folding of large clusters,
side by side, the ``replay`` command's exits, and the live UI driven in a real terminal (tmux)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from gpucluster_env.policy import run_episode
from gpucluster_env.replay.compare import CompareView, check_comparable
from gpucluster_env.replay.frame import FOLD_NODES, FrameView, ViewOptions, sparkline
from gpucluster_env.replay.live import SPEEDS, Player, parse_time, split_keys
from gpucluster_env.replay.record import Record, read_record
from gpucluster_env.replay.recorder import recording
from gpucluster_env.replay.timeline import Timeline

GPUCLUSTER = str(Path(sys.executable).parent / "gpucluster")


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("rec")
    out = {}
    for pol in ("castor", "sjf-ffs"):
        out[pol] = d / f"{pol}.jsonl.gz"
        run_episode("castor-philly", pol, 0, scenario_options={"num_jobs": 160}, wrap=recording(out[pol]))
    out["other-seed"] = d / "seed1.jsonl"
    run_episode("castor-philly", "fifo", 1, scenario_options={"num_jobs": 160}, wrap=recording(out["other-seed"]))
    return out


def _plain(renderable, width: int = 80) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _busy_instant(tl: Timeline) -> tuple[float, int]:
    """An event time with a shared GPU (else the busiest), and the number of events by then."""
    best = (0, 0.0)
    for i in range(0, len(tl.events), 5):
        st = tl.state(i + 1)
        score = sum((len(s) > 0) + 10 * (len(s) > 1) for s in st.slots)
        if score > best[0]:
            best = (score, tl.events[i]["t"])
    t = best[1]
    return t, tl.index_at(t)


def test_player_keys():
    p = Player(times=[10.0, 20.0, 30.0], t0=0.0, t_end=30.0, zooms=["A6000"])
    assert p.playing and p.t == 0.0
    p.key(" ")
    assert not p.playing
    p.key("right")
    assert p.t == 10.0
    p.key("right")
    p.key("right")
    p.key("right")
    assert p.t == 30.0
    p.key("left")
    assert p.t == 20.0
    s = p.speed_i
    p.key("+")
    assert p.speed == SPEEDS[s + 1]
    p.key("-")
    p.key("-")
    assert p.speed == SPEEDS[max(0, s - 1)]
    for k in ("g", "1", "5", "x", "backspace", "5", "enter"):
        p.key(k)
    assert p.t == 15.0 and p.prompt is None
    p.key("g")
    p.key("9")
    p.key("esc")
    assert p.t == 15.0 and p.prompt is None
    p.key("z")
    assert p.opts.zoom == "A6000"
    p.key("z")
    assert p.opts.zoom is None
    p.key(" ")
    p.tick(1000.0)
    assert p.t == 30.0 and not p.playing
    p.key("q")
    assert p.quit


def test_keys_and_times_parse():
    assert split_keys(" \x1b[C\x1b[Dq\r\x1b[1;5Ag") == [" ", "right", "left", "q", "enter", "g"]
    assert [parse_time(x) for x in ("5400", "90m", "1.5h", "1d")] == [5400.0, 5400.0, 5400.0, 86400.0]
    with pytest.raises(ValueError, match="not a time"):
        parse_time("soon")
    assert sparkline([0.0, 0.5, 1.0, None]) == "▁▅█ "


def test_frame_at_80_columns_shows_the_jobs_on_their_gpus(records):
    tl = Timeline(read_record(records["castor"]))
    t, n = _busy_instant(tl)
    st = tl.state(n)
    text = _plain(FrameView(tl).frame(t, ViewOptions(width=80, height=60)))
    assert "\x1b[" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    rows = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\s*(\d+) A6000 (.*)$", text, re.M)}
    assert len(rows) == len(tl.node_sizes)
    for node, cells in rows.items():
        want = []
        for g in range(tl.node_start[node], tl.node_start[node] + tl.node_sizes[node]):
            want.append("◆".join(map(str, st.slots[g])) or "·")
        assert cells.split() == want, node
    running = [int(m.group(1)) for m in re.finditer(r"^\s*(\d+) \w+\s+\d+ [█░]{6}", text, re.M)]
    assert running == list(st.running)
    shares = _plain(FrameView(tl).frame(t, ViewOptions(width=80, height=60, shares=True)))
    assert any(len(s) == 2 for s in st.slots) and "100◆100" in shares and "cells: MPS share %" in shares


def test_large_clusters_fold_into_a_per_type_summary_with_zoom():
    nodes = [["V100", 4]] * 40 + [["K80", 8]] * 30
    jobs = [{"id": str(i), "model": "resnet50", "gpus": 4, "submit_s": 0.0, "iterations": 100.0} for i in range(3)]
    events = [{"t": 0.0, "kind": "arrive", "job": j} for j in range(3)]
    events += [{"t": 0.0, "kind": "start", "job": 0, "gpus": [0, 1, 2, 3], "accumulation": 1},
               {"t": 0.0, "kind": "start", "job": 1, "gpus": [160, 161, 162, 163], "accumulation": 1},
               {"t": 0.0, "kind": "start", "job": 2, "gpus": [160, 161, 162, 163], "accumulation": 1},
               {"t": 50.0, "kind": "finish", "job": 0}]
    rec = Record({"format": "gpucluster-replay", "version": 2, "scenario": "x", "seed": 0, "policy": "p",
                  "cluster": nodes, "jobs": jobs}, events=events, metrics={"jobs_done": 1})
    tl = Timeline(rec)
    assert len(nodes) > FOLD_NODES
    summary = _plain(FrameView(tl).frame(10.0, ViewOptions(width=80, height=30)))
    assert re.search(r"V100\s+40\s+160\s+4\s+0\s+156", summary) and re.search(r"K80\s+30\s+240\s+4\s+4\s+236", summary)
    zoomed = _plain(FrameView(tl).frame(10.0, ViewOptions(width=80, height=30, zoom="K80")))
    assert re.search(r"^\s*40 K80\s+1◆2\s+1◆2\s+1◆2\s+1◆2\s+·", zoomed, re.M) and "V100 " not in zoomed
    assert "page 1/" in zoomed


def test_side_by_side_differences(records):
    a, b = read_record(records["castor"]), read_record(records["sjf-ffs"])
    check_comparable(a, b)
    with pytest.raises(ValueError, match="differ in seed"):
        check_comparable(a, read_record(records["other-seed"]))
    view = CompareView(Timeline(a), Timeline(b))
    t = view.t_end
    text = _plain(view.frame(t, ViewOptions(width=80, height=40)))
    done = re.search(r"jobs done\s+(\d+)\s+(\d+)\s+(\S+)", text)
    assert done and done.group(1) == done.group(2) == "160" and done.group(3) == "0"
    jct = re.search(r"avg JCT \(done\)\s+(\S+)\s+(\S+)\s+(\S+)", text)
    assert jct and jct.group(3) != "–"
    assert "A: castor-philly · castor · seed 0" in text and "B: castor-philly · sjf-ffs · seed 0" in text


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([GPUCLUSTER, *args], capture_output=True, text=True,
                          env=dict(os.environ, COLUMNS="80", **env), stdin=subprocess.DEVNULL)


def test_replay_command_exits(records, tmp_path):
    ok = _cli("replay", str(records["castor"]), "--verify")
    assert ok.returncode == 0 and "ok:" in ok.stdout
    bad = tmp_path / "bad.jsonl"
    lines = Path(records["other-seed"]).read_text().splitlines()
    bad.write_text("\n".join(lines[:10]) + "\n")
    r = _cli("replay", str(bad))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "line 10: file ends without" in r.stderr
    tampered = tmp_path / "t.jsonl"
    tampered.write_text("\n".join(lines).replace('"kind":"start",', '"kind":"start","x":1,', 1) + "\n")
    r = _cli("replay", str(tampered), "--verify")
    assert r.returncode == 1 and re.search(r"event \d+: record has start of job", r.stderr)
    side = _cli("replay", str(records["castor"]), str(records["sjf-ffs"]), "--no-live")
    assert side.returncode == 0 and "B − A" in side.stdout and "\x1b[" not in side.stdout
    assert max(len(x) for x in side.stdout.splitlines()) <= 80
    r = _cli("replay", str(records["castor"]), str(records["other-seed"]))
    assert r.returncode == 2 and "same scenario and seed" in r.stderr
    frames = _cli("replay", str(records["castor"]), "--frames", "3", "--no-live", NO_COLOR="1")
    assert frames.returncode == 0 and frames.stdout.count("castor-philly · castor · seed 0  t=") == 3
    summary = json.loads(_cli("replay", str(records["castor"]), "--json").stdout)
    assert summary["policy"] == "castor" and summary["jobs"] == 160 and summary["gpus"] == 128
    assert summary["metrics"]["jobs_done"] == 160 and summary["actions"] > 0


def test_version_1_records_still_play(records, tmp_path):
    """A record as the runner wrote it before version 2 (header, events, metrics): it plays, with progress
    from running time, and --verify explains why it cannot check it."""
    lines = [json.loads(x) for x in Path(records["other-seed"]).read_text().splitlines()]
    head = {k: lines[0][k] for k in ("scenario", "policy", "seed", "cluster", "jobs")}
    v1 = [{"format": "gpucluster-replay", "version": 1, "options": {}, **head}]
    v1 += [x for x in lines[1:] if x.get("kind") not in ("act", "rate")]
    path = tmp_path / "v1.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in v1) + "\n")
    rec = read_record(path)
    tl = Timeline(rec)
    assert not tl.has_rates and rec.actions == []
    t, n = _busy_instant(tl)
    st = tl.state(n)
    j = next(iter(st.running))
    frac, xi = tl.progress(j, t, st)
    assert 0.0 <= frac <= 1.0 and xi is None
    text = _plain(FrameView(tl).frame(t, ViewOptions(width=80, height=40)))
    assert re.search(rf"^\s*{j} \w+\s+\d+ [█░]{{6}}\s+\d+%\s+–", text, re.M)
    r = _cli("replay", str(path), "--verify")
    assert r.returncode == 1 and "only version 2 records can be verified" in r.stderr


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", "gpucluster-replay-test", *args], capture_output=True,
                          text=True).stdout


def _screen_until(pred, timeout: float = 30.0, stable: bool = True) -> str:
    """The screen once ``pred`` holds and, with ``stable``, two captures 0.3 s apart agree (so a frame is not
    caught half drawn; a playing replay is never stable)."""
    end = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < end:
        screen = _tmux("capture-pane", "-p", "-t", "replay")
        if pred(screen) and not stable:
            return screen
        if pred(screen):
            time.sleep(0.3)
            again = _tmux("capture-pane", "-p", "-t", "replay")
            if again == screen:
                return screen
        time.sleep(0.2)
    raise AssertionError(f"screen never matched; last screen:\n{screen}")


def test_live_view_in_a_real_terminal(records):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install -y tmux): the live UI test needs a real terminal")
    tl = Timeline(read_record(records["castor"]))
    t, _ = _busy_instant(tl)
    cmd = f"{GPUCLUSTER} replay {records['castor']} --at {t!r}; echo EXITED rc=$?; sleep 60"
    _tmux("kill-server")
    _tmux("new-session", "-d", "-s", "replay", "-x", "80", "-y", "24", cmd)
    _tmux("resize-window", "-t", "replay", "-x", "80", "-y", "24")
    try:
        header = re.compile(r"t=([\d,]+)s/[\d,]+s\s+ev (\d+)/(\d+)\s+(\S) ×(\d+)")
        screen = _screen_until(lambda s: header.search(s) is not None and "q quit" in s)
        m = header.search(screen)
        assert m.group(4) == "⏸"  # --at starts paused
        n = int(m.group(2))
        st = tl.state(n)

        def check_rows(screen: str) -> list[int]:
            """The node rows on screen show exactly the jobs the record puts on each GPU."""
            shown = []
            for row in re.finditer(r"^\s*(\d+) A6000 (.*)$", screen, re.M):
                node = int(row.group(1))
                gpus = range(tl.node_start[node], tl.node_start[node] + tl.node_sizes[node])
                assert row.group(2).split() == ["◆".join(map(str, st.slots[g])) or "·" for g in gpus], screen
                shown.append(node)
            return shown

        first = check_rows(screen)
        assert first[0] == 0 and len(first) >= 8 and max(len(x) for x in screen.splitlines()) <= 80
        assert any(len(st.slots[g]) == 2 for g in range(tl.num_gpus)) and "◆" in screen
        # ] shows the next page of nodes
        _tmux("send-keys", "-t", "replay", "]")
        screen = _screen_until(lambda s: re.search(rf"^\s*{first[-1] + 1} A6000", s, re.M) is not None)
        assert check_rows(screen)[-1] == len(tl.node_sizes) - 1
        # → steps to the next event time: the event count grows, still paused
        _tmux("send-keys", "-t", "replay", "Right")
        screen = _screen_until(lambda s: (x := header.search(s)) is not None and int(x.group(2)) > n)
        n2 = int(header.search(screen).group(2))
        assert n2 == tl.index_at(tl.events[n]["t"]) and header.search(screen).group(4) == "⏸"
        # ← goes back
        _tmux("send-keys", "-t", "replay", "Left")
        _screen_until(lambda s: (x := header.search(s)) is not None and int(x.group(2)) < n2)
        # space plays: the clock moves on; space again pauses
        _tmux("send-keys", "-t", "replay", " ")
        _screen_until(lambda s: (x := header.search(s)) is not None and x.group(4) == "▶", stable=False)
        _tmux("send-keys", "-t", "replay", " ")
        _screen_until(lambda s: (x := header.search(s)) is not None and x.group(4) == "⏸")
        # g, a time, Enter: the clock jumps there, paused
        _tmux("send-keys", "-t", "replay", "g", "1", ".", "5", "h", "Enter")
        _screen_until(lambda s: (x := header.search(s)) is not None and x.group(1) == "5,400" and x.group(4) == "⏸")
        _tmux("send-keys", "-t", "replay", "q")
        _screen_until(lambda s: "EXITED rc=0" in s)
    finally:
        _tmux("kill-server")


def test_a_long_record_keeps_few_snapshots_and_every_state_is_exact(records, monkeypatch):
    """The snapshots are at most MAX_CHECKPOINTS (memory grows with the cluster and the jobs, not their
    product), and the state after any prefix of events is the one applying them all gives."""
    import gpucluster_env.replay.timeline as timeline
    from gpucluster_env.replay.record import read_record

    monkeypatch.setattr(timeline, "CHECKPOINT_EVERY", 4)
    monkeypatch.setattr(timeline, "MAX_CHECKPOINTS", 5)
    rec = read_record(next(iter(records.values())))
    tl = Timeline(rec)
    assert len(rec.events) > 5 * 4 and len(tl._checkpoints) <= 5 + 1
    st = tl.empty_state()
    for i, e in enumerate(rec.events):
        got = tl.state(i)
        assert (got.slots, got.status, got.pending, got.running, got.share) == (
            st.slots, st.status, st.pending, st.running, st.share), i
        st.apply(e)
