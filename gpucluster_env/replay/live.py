"""The interactive replay: a clock that plays a recorded episode (or two, time-aligned) in a ``rich`` Live
display, driven by single keys read from the terminal in cbreak mode.

Keys: space pause/play, ← → step to the previous/next event time, + − speed, g go to a time (type it, then
Enter; ``90m``, ``2.5h`` and ``1d`` work), m MPS shares, z zoom into a GPU type (cycles), [ ] page nodes,
q quit. :class:`Player` holds the state and handles keys; :func:`run_live` does the terminal input and output.
"""

from __future__ import annotations

import bisect
import os
import re
import select
import sys
import termios
import time
import tty
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich.console import Console, RenderableType
from rich.live import Live

from gpucluster_env.replay.frame import ViewOptions

SPEEDS = (1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800, 86400)
"""Simulated seconds per wall second the + and − keys step through."""
FPS = 10
KEYS_HELP = "space pause  ←→ step  +− speed  g go to  m shares  z zoom  [] page  q quit"
_TIME_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([smhd]?)\s*$")
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_time(text: str) -> float:
    """``"5400"``, ``"90m"``, ``"1.5h"``, ``"1d"`` as seconds; ``ValueError`` otherwise."""
    m = _TIME_RE.match(text)
    if not m:
        raise ValueError(f"not a time: {text!r} (examples: 5400, 90m, 1.5h)")
    return float(m.group(1)) * _UNIT[m.group(2)]


@dataclass
class Player:
    """The replay clock and view settings. ``times``: the sorted distinct event times (steps go between
    them; a list or a numpy array); ``zooms``: the GPU types a zoom cycles through."""

    times: Sequence[float]
    t0: float
    t_end: float
    zooms: list[str]
    t: float = 0.0
    playing: bool = True
    speed_i: int = 0
    opts: ViewOptions = field(default_factory=ViewOptions)
    prompt: str | None = None
    message: str = ""
    quit: bool = False

    def __post_init__(self) -> None:
        self.t = self.t0
        target = max(1.0, (self.t_end - self.t0) / 60.0)  # the whole episode in about a minute
        self.speed_i = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - target))

    @property
    def speed(self) -> int:
        return SPEEDS[self.speed_i]

    def status(self) -> str:
        state = "▶" if self.playing else "⏸"
        s = f"{state} ×{self.speed}"
        if self.prompt is not None:
            s += f"  go to time: {self.prompt}▏"
        elif self.message:
            s += f"  {self.message}"
        return s

    def tick(self, wall_dt: float) -> None:
        """Advance the clock by ``wall_dt`` wall seconds when playing; stop at the end."""
        if self.playing and self.prompt is None:
            self.t = min(self.t_end, self.t + self.speed * wall_dt)
            if self.t >= self.t_end:
                self.playing = False
                self.message = "end of episode"

    def step(self, direction: int) -> None:
        """Pause and move to the next (+1) or previous (-1) event time."""
        self.playing = False
        if direction > 0:
            i = bisect.bisect_right(self.times, self.t)
            self.t = float(self.times[i]) if i < len(self.times) else self.t_end
        else:
            i = bisect.bisect_left(self.times, self.t) - 1
            self.t = float(self.times[i]) if i >= 0 else self.t0

    def key(self, k: str) -> None:
        """Handle one key (``"left"``, ``"right"``, ``"enter"``, ``"esc"``, ``"backspace"`` or a character)."""
        self.message = ""
        if self.prompt is not None:
            if k == "enter":
                try:
                    self.t = min(self.t_end, max(self.t0, parse_time(self.prompt)))
                    self.playing = False
                except ValueError as e:
                    self.message = str(e)
                self.prompt = None
            elif k == "esc":
                self.prompt = None
            elif k == "backspace":
                self.prompt = self.prompt[:-1]
            elif len(k) == 1 and (k.isdigit() or k in ".smhd"):
                self.prompt += k
            return
        if k == "q":
            self.quit = True
        elif k == " ":
            if not self.playing and self.t >= self.t_end:
                self.t = self.t0
            self.playing = not self.playing
        elif k == "right":
            self.step(1)
        elif k == "left":
            self.step(-1)
        elif k in ("+", "="):
            self.speed_i = min(len(SPEEDS) - 1, self.speed_i + 1)
        elif k in ("-", "_"):
            self.speed_i = max(0, self.speed_i - 1)
        elif k == "g":
            self.prompt = ""
        elif k == "m":
            self.opts.shares = not self.opts.shares
        elif k == "z":
            cycle: list[str | None] = [None, *self.zooms]
            self.opts.zoom = cycle[(cycle.index(self.opts.zoom) + 1) % len(cycle)]
            self.opts.page = 0
            self.message = f"zoom: {self.opts.zoom or 'all'}"
        elif k == "]":
            self.opts.page += 1
        elif k == "[":
            self.opts.page = max(0, self.opts.page - 1)


_ESCAPES = {"\x1b[C": "right", "\x1b[D": "left", "\x1bOC": "right", "\x1bOD": "left"}


def split_keys(data: str) -> list[str]:
    """Keys in a chunk of terminal input (arrow escape sequences become ``"left"``/``"right"``)."""
    keys: list[str] = []
    i = 0
    while i < len(data):
        seq = data[i:i + 3]
        if seq in _ESCAPES:
            keys.append(_ESCAPES[seq])
            i += 3
            continue
        c = data[i]
        if c == "\x1b" and data[i + 1:i + 2] == "[":  # another CSI sequence: skip it
            j = i + 2
            while j < len(data) and not data[j].isalpha() and data[j] != "~":
                j += 1
            i = j + 1
            continue
        keys.append({"\r": "enter", "\n": "enter", "\x1b": "esc", "\x7f": "backspace", "\x08": "backspace"}.get(c, c))
        i += 1
    return keys


def run_live(player: Player, render: Callable[[Player], RenderableType], console: Console | None = None) -> None:
    """Play in the terminal until ``q``: redraw at :data:`FPS` frames a second (when something changed), read
    keys without waiting for Enter. Needs a terminal on stdin and stdout."""
    console = console or Console()
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        with Live(console=console, screen=True, auto_refresh=False, transient=True) as live:
            last = time.monotonic()
            drawn: tuple | None = None
            while not player.quit:
                now = time.monotonic()
                player.tick(now - last)
                last = now
                player.opts.width, player.opts.height = console.size
                key = (player.t, player.status(), player.opts.width, player.opts.height, player.opts.shares,
                       player.opts.zoom, player.opts.page)
                if key != drawn:
                    live.update(render(player), refresh=True)
                    drawn = key
                ready, _, _ = select.select([fd], [], [], 1.0 / FPS)
                if ready:
                    data = os.read(fd, 64).decode("utf-8", "replace")
                    for k in split_keys(data):
                        player.key(k)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)

